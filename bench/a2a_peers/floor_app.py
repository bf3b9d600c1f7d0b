"""The floors: servers that answer every call of the bench with fixed bytes, what the
server under the app costs per request and no more.

`create_app(chunks)` is a hand-written ASGI callable for both HTTP bindings: it reads the
request body and answers on the route a real server would (JSON-RPC on `/`, by the
method named in the body; HTTP+JSON by path) with a fixed `SendMessageResponse`, `Task`,
or a stream of `chunks` artifact events between a task and a final status update, one
body message per event as a streaming server writes them. `grpc_handler(chunks)` is the
same for a bare `grpc.aio` server: a generic handler answering the service's methods
with fixed serialized messages.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec

from bench.a2a_peers import proto

if TYPE_CHECKING:
    import grpc

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_TASK: dict[str, Any] = {
    "id": "floor",
    "contextId": "ctx",
    "status": {"state": "TASK_STATE_COMPLETED"},
    "artifacts": [{"artifactId": "echo", "name": "echo", "parts": [{"text": "echo 1"}]}],
}
_EVENTS: list[dict[str, Any]] = [
    {"task": {**_TASK, "artifacts": []}},
    {
        "artifactUpdate": {
            "taskId": "floor",
            "contextId": "ctx",
            "artifact": {"artifactId": "echo", "name": "echo", "parts": [{"text": "c0 "}]},
            "append": True,
        }
    },
    {"statusUpdate": {"taskId": "floor", "contextId": "ctx", "status": _TASK["status"]}},
]


def _jsonrpc(result: object) -> bytes:
    return msgspec.json.encode({"jsonrpc": "2.0", "id": 1, "result": result})


def _sse(data: bytes) -> bytes:
    return b"data: " + data + b"\r\n\r\n"


def _head(content_type: bytes, body: bytes | None) -> Message:
    headers = [(b"content-type", content_type)]
    if body is not None:
        headers.append((b"content-length", b"%d" % len(body)))
    return {"type": "http.response.start", "status": 200, "headers": headers}


def create_app(chunks: int) -> App:
    encode = msgspec.json.encode
    bodies = {  # (JSON-RPC?, kind) -> body, or the stream's events
        (True, "send"): _jsonrpc({"task": _TASK}),
        (True, "get"): _jsonrpc(_TASK),
        (False, "send"): encode({"task": _TASK}),
        (False, "get"): encode(_TASK),
    }
    streams = {
        rpc: [_sse(wrap(e)) for e in (_EVENTS[0], *[_EVENTS[1]] * chunks, _EVENTS[2])]
        for rpc, wrap in ((True, _jsonrpc), (False, encode))
    }
    heads = {
        (True, "send"): _head(b"application/json", bodies[True, "send"]),
        (True, "get"): _head(b"application/json", bodies[True, "get"]),
        (False, "send"): _head(b"application/a2a+json", bodies[False, "send"]),
        (False, "get"): _head(b"application/a2a+json", bodies[False, "get"]),
    }
    stream_head = _head(b"text/event-stream", None)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message: Message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        more = True
        while more:  # read the body, as a real app would
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        path: str = scope["path"]
        rpc = path == "/"
        if (b'"SendStreamingMessage"' in body) if rpc else path.endswith(":stream"):
            await send(stream_head)
            for event in streams[rpc]:
                await send({"type": "http.response.body", "body": event, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        kind = "get" if (b'"GetTask"' in body if rpc else scope["method"] == "GET") else "send"
        await send(heads[rpc, kind])
        await send({"type": "http.response.body", "body": bodies[rpc, kind]})

    return app


def grpc_handler(chunks: int) -> grpc.GenericRpcHandler:
    import grpc

    task = proto.task("floor", "echo 1")
    send_response = proto.send_message_response(task)
    events = [
        proto.stream_response("task", "floor", ""),
        *[proto.stream_response("artifact", "floor", "c0 ")] * chunks,
        proto.stream_response("status", "floor", ""),
    ]

    async def send_message(request: bytes, context: object) -> bytes:
        return send_response

    async def get_task(request: bytes, context: object) -> bytes:
        return task

    async def stream(request: bytes, context: object) -> AsyncIterator[bytes]:
        for event in events:
            yield event

    return grpc.method_handlers_generic_handler(
        proto.SERVICE.strip("/"),
        {
            "SendMessage": grpc.unary_unary_rpc_method_handler(send_message),
            "GetTask": grpc.unary_unary_rpc_method_handler(get_task),
            "SendStreamingMessage": grpc.unary_stream_rpc_method_handler(stream),
        },
    )
