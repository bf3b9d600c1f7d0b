"""A2A 0.3 over HTTP+JSON: the `/v1/...` routes of 0.3's proto, served by the 1.0 handler.

`RestBinding` hands a request on one of these paths here when it is 0.3 (no
`A2A-Version`, or 0.3; one naming 1.x is the 1.0 route of the tenant `v1`). Its path,
query and ProtoJSON body become the params of the 0.3 JSON-RPC call it is
(`compat._v03_rest_calls.ROUTES`), carried out as on JSON-RPC (`server._v03.call_v03`), and
the result goes back as ProtoJSON (`result_to_rest`), `application/json` as 0.3 says; a
stream's events each as a `StreamResponse` in an SSE `data:` (with `id:`, resumed with
`Last-Event-ID` as everywhere).

An error is the 0.3 error object, `{"code", "message", "data"}` as 0.3 JSON-RPC has it
(`compat.error_to_v03`), with the HTTP status the official 0.3 SDK's server gives that
error (`HTTP_STATUS`; its body is `{"message"}`, which ours has too, and its clients
read the status alone); after a stream's first event, an `event: error` carrying the
same object. A path of 0.3 routes of other verbs is 405 with `Allow`.
"""

from __future__ import annotations

import functools

import msgspec

from interlink.a2a.compat import _v03 as compat
from interlink.a2a.compat._v03_rest_calls import HTTP_STATUS, RestRoute, find, result_to_rest
from interlink.a2a.server._asgi import Exchange, Framing, Handle
from interlink.a2a.server._calls import SUPPORTED_VERSIONS
from interlink.a2a.server._handler import Call
from interlink.a2a.server._stream import TaskStream
from interlink.a2a.server._v03 import bad_params, call_v03, event_v03
from interlink.a2a.server.bindings._rest import Answers, http_status_of, json_object, serve_call
from interlink.jsonrpc import MethodNotFound, RpcError, error_answer

__all__ = ["HTTP_STATUS", "route"]

_JSON = (b"content-type", b"application/json")


def route(verb: str, path: str) -> Handle | None:
    """The handler of a 0.3 request to `verb path`, None for a path of no 0.3 route."""
    found = find(verb, path)
    if found is None or (isinstance(found, list) and verb == "HEAD"):
        return None  # (HEAD as on the 1.0 routes: not found rather than not allowed)
    if isinstance(found, list):
        return functools.partial(_not_allowed, found)
    return functools.partial(_handle, *found)


async def _handle(
    entry: RestRoute, fields: dict[str, str], exchange: Exchange, body: bytes
) -> None:
    async def run(call: Call) -> object:
        try:
            params = entry.params(fields, exchange.query(), json_object(exchange, body))
        except ValueError as exc:
            raise bad_params(exc) from None
        answer = await call_v03(
            exchange.app.server, entry.method, params, call, exchange.interfaces
        )
        if isinstance(answer, TaskStream):
            answer.translate = functools.partial(_event, entry.method)
        return answer

    answers = Answers(
        SUPPORTED_VERSIONS, error, _FRAMING, functools.partial(_body, entry.method), _JSON
    )
    await serve_call(exchange, entry.method, run, answers)


def error(exc: BaseException) -> tuple[int, bytes]:
    """The HTTP status and body of an error."""
    old = compat.error_to_v03(error_answer(None, exc).error)
    status = http_status_of(exc) or HTTP_STATUS.get(old.code, 500)
    return status, msgspec.json.encode(old)


def _body(method: str, result: object) -> bytes:
    return msgspec.json.encode(result_to_rest(method, msgspec.to_builtins(result)))


def _event(method: str, payload: bytes) -> bytes:
    return _body(method, event_v03(payload))


def _error_event(exc: RpcError) -> bytes:
    return b"event: error\ndata: " + error(exc)[1] + b"\n\n"


_FRAMING = Framing((b"data: ", b"\n\n"), error, _error_event)


async def _not_allowed(verbs: list[str], exchange: Exchange, body: bytes) -> None:
    wrong = MethodNotFound(f"use {' or '.join(verbs)} on this path")
    allow = (b"allow", ", ".join(verbs).encode())
    await exchange.answer(405, error(wrong)[1], [allow])
