"""The A2A JSON-RPC binding (§9): `POST {rpc_path}`, one JSON-RPC request a call.

Batches are refused. HTTP 200 with a JSON-RPC answer, or `text/event-stream` for the
streaming methods, where each event is `id: <sequence>` and `data: <JSON-RPC
response>` whose result is the `StreamResponse`; an error after the first event is an
`event: error` whose data is the JSON-RPC error. A request without an id is carried out
and never answered (HTTP 204). An oversize body is a -32600 answer. Errors carry
`google.rpc.ErrorInfo` details (DECISIONS.md, A2A 1.0: Errors).
"""

from __future__ import annotations

import logging
from urllib.parse import unquote

import msgspec

from interlink.a2a import _codec
from interlink.a2a._errors import details_of
from interlink.a2a._methods import METHODS
from interlink.a2a._types import Empty
from interlink.a2a.server._asgi import Exchange, Framing, Handle
from interlink.a2a.server._calls import invoke
from interlink.a2a.server._handler import Call
from interlink.a2a.server._stream import TaskStream
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
        try:
            call = exchange.call()
            if call.extensions:
                extra.append((b"a2a-extensions", ", ".join(sorted(call.extensions)).encode()))
            result = await _dispatch(exchange, message, call)
        except Exception as exc:
            if not isinstance(exc, RpcError):
                logger.exception("A2A method %s failed", message.method)
            await exchange.answer(200, error_body(error_answer(message.id, exc)), extra)
            return
        if isinstance(result, TaskStream):
            await exchange.app.stream(exchange, result, _framing(message.id), extra)
        else:
            await exchange.answer(200, answer_body(message.id, result), extra)

    async def _notification(self, message: Notification[msgspec.Raw], exchange: Exchange) -> None:
        """A request without an id (JSON-RPC 2.0, 4.1): done like any other, its answer
        dropped; a stream it opens is closed at once (its task goes on)."""
        try:
            result = await _dispatch(exchange, message, exchange.call())
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
    `Empty`), or the stream of a streaming method."""
    method = METHODS.get(request.method)
    if method is None:
        raise MethodNotFound(data={"method": request.method})
    raw = b"{}" if request.params is msgspec.UNSET else bytes(request.params)
    result = await invoke(exchange.app.server, method, raw, call)
    if isinstance(result, TaskStream):
        return result
    return b"null" if isinstance(result, Empty) else _codec.encode(result)


def _framing(id: RequestId | None) -> Framing:
    """Each event's data is the JSON-RPC answer around its payload (shared bytes)."""
    envelope = answer_body(id, b"")  # (`{...,"result":}`)

    def error(exc: RpcError) -> tuple[int, bytes]:
        return 200, error_body(error_answer(id, exc))

    def error_event(exc: RpcError) -> bytes:
        return b"event: error\ndata: " + error_body(error_answer(id, exc)) + b"\n\n"

    return Framing((b"data: " + envelope[:-1], envelope[-1:] + b"\n\n"), error, error_event)


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
