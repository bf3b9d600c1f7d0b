"""The A2A JSON-RPC binding (§9): `POST {rpc_path}`, one JSON-RPC request a call.

Batches are refused. HTTP 200 with a JSON-RPC answer, or `text/event-stream` for the
streaming methods, where each event is `id: <sequence>` and `data: <JSON-RPC
response>` whose result is the `StreamResponse`; an error after the first event is an
`event: error` whose data is the JSON-RPC error. A request without an id is carried out
and never answered (HTTP 204). An oversize body is a -32600 answer. Errors carry
`google.rpc.ErrorInfo` details (DECISIONS.md, A2A 1.0: Errors).

A request without `A2A-Version` (or naming 0.3) is A2A 0.3 (§3.6.2): its 0.3 method,
params, results, stream events and errors are translated at this edge (`server._v03`),
its stream's errors are unnamed SSE events, before the first event too (what 0.3
clients read). One naming a 1.0 method comes from a 1.0 client that forgot the header:
its -32009 is in 1.0 form.
"""

from __future__ import annotations

import logging
from urllib.parse import unquote

import msgspec

from interlink.a2a import _codec
from interlink.a2a._errors import details_of
from interlink.a2a._methods import METHODS
from interlink.a2a._types import Empty
from interlink.a2a.server._asgi import Exchange, Framing, Handle, sse_answer
from interlink.a2a.server._calls import SUPPORTED_VERSIONS, invoke
from interlink.a2a.server._handler import Call
from interlink.a2a.server._stream import TaskStream
from interlink.a2a.server._v03 import (
    STREAMING,
    V03,
    call_v03,
    error_body_v03,
    event_to_v03,
    is_v03,
)
from interlink.jsonrpc import (
    ErrorObject,
    ErrorResponse,
    MethodNotFound,
    Notification,
    Request,
    RequestId,
    RpcError,
    answer_body,
    encode,
    error_answer,
    read_body,
)

__all__ = ["JsonRpcBinding", "error_body"]

logger = logging.getLogger("interlink.a2a")


class JsonRpcBinding:
    """The JSON-RPC binding at `rpc_path`."""

    protocol = "JSONRPC"

    def __init__(self, rpc_path: str = "/") -> None:
        self.rpc_path = rpc_path

    def route(self, verb: str, path: str) -> Handle | None:
        return self._handle if verb == "POST" and unquote(path) == self.rpc_path else None

    def refuse(self, error: RpcError) -> tuple[int, bytes]:
        return 200, error_body(error.to_response(None))

    async def _handle(self, exchange: Exchange, body: bytes) -> None:
        message = read_body(body)
        assert not isinstance(message, list)  # (no batches: an array is one error)
        if isinstance(message, ErrorResponse):  # no request (not JSON, a response, ...)
            await exchange.answer(200, error_body(message))
            return
        if isinstance(message, Notification):  # carried out, never answered (not even
            await self._notification(message, exchange)  # with an error)
            await exchange.send({"type": "http.response.start", "status": 204, "headers": []})
            await exchange.send({"type": "http.response.body", "body": b""})
            return
        extra: list[tuple[bytes, bytes]] = []
        v03 = is_v03(exchange.version()) and message.method not in METHODS
        try:
            call = exchange.call(SUPPORTED_VERSIONS)
            if call.extensions:
                extra.append((b"a2a-extensions", ", ".join(sorted(call.extensions)).encode()))
            result = await _dispatch(exchange, message, call)
        except Exception as exc:
            if not isinstance(exc, RpcError):
                logger.exception("A2A method %s failed", message.method)
                exc = RpcError.internal_error()
            framing = _framing(message.id, v03, v03 and message.method in STREAMING)
            if framing.errors_in_stream:
                await sse_answer(exchange.send, framing.error_event(exc), extra)
            else:
                await exchange.answer(*framing.error(exc), extra)
            return
        if isinstance(result, TaskStream):
            framing = _framing(message.id, v03, v03 and message.method in STREAMING)
            await exchange.app.stream(exchange, result, framing, extra)
        else:
            await exchange.answer(200, answer_body(message.id, result), extra)

    async def _notification(self, message: Notification[msgspec.Raw], exchange: Exchange) -> None:
        """A request without an id (JSON-RPC 2.0, 4.1): done like any other, its answer
        dropped; a stream it opens is closed at once (its task goes on)."""
        try:
            result = await _dispatch(exchange, message, exchange.call(SUPPORTED_VERSIONS))
        except Exception as exc:
            logger.debug("A2A notification %s failed: %s", message.method, exc)
            return
        if isinstance(result, TaskStream):
            await result.aclose()


async def _dispatch(
    exchange: Exchange,
    request: Request[msgspec.Raw] | Notification[msgspec.Raw],
    call: Call,
) -> bytes | TaskStream:
    """Carry out a request by the generated table; its result as ProtoJSON (`null` for
    `Empty`), or the stream of a streaming method. A 0.3 request goes through
    `call_v03`, and its stream's events are translated."""
    if call.version == V03:
        params = None if request.params is msgspec.UNSET else msgspec.json.decode(request.params)
        answer = await call_v03(
            exchange.app.server, request.method, params, call, exchange.interfaces
        )
        if isinstance(answer, TaskStream):
            answer.translate = event_to_v03
            return answer
        return msgspec.json.encode(answer)
    method = METHODS.get(request.method)
    if method is None:
        raise MethodNotFound(data={"method": request.method})
    raw = b"{}" if request.params is msgspec.UNSET else bytes(request.params)
    result = await invoke(exchange.app.server, method, raw, call)
    if isinstance(result, TaskStream):
        return result
    return b"null" if isinstance(result, Empty) else _codec.encode(result)


def _framing(id: RequestId | None, v03: bool = False, in_stream: bool = False) -> Framing:
    """Each event's data is the JSON-RPC answer around its payload (shared bytes); the
    errors in 0.3 form for `v03`, and for `in_stream` (a 0.3 streaming method) each an
    unnamed event of the stream, also before the first."""
    envelope = answer_body(id, b"")  # (`{...,"result":}`)
    shape = error_body_v03 if v03 else error_body
    event = b"data: " if in_stream else b"event: error\ndata: "

    def error(exc: RpcError) -> tuple[int, bytes]:
        return 200, shape(error_answer(id, exc))

    def error_event(exc: RpcError) -> bytes:
        return event + shape(error_answer(id, exc)) + b"\n\n"

    around = (b"data: " + envelope[:-1], envelope[-1:] + b"\n\n")
    return Framing(around, error, error_event, errors_in_stream=in_stream)


def error_body(response: ErrorResponse) -> bytes:
    """A JSON-RPC error as the A2A binding shapes it: `data` is an array of typed
    details whose first is a `google.rpc.ErrorInfo` (the core's errors carry a plain
    object, which becomes the ErrorInfo's metadata)."""
    error = response.error
    if not isinstance(error.data, list):
        error = ErrorObject(
            code=error.code, message=error.message, data=details_of(error.code, error.data)
        )
        response = ErrorResponse(id=response.id, error=error)
    return encode(response)
