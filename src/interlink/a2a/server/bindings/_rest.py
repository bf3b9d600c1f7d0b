"""The A2A HTTP+JSON binding (§11): the routes of a2a.proto's `google.api.http`.

Every route of the generated table (`_routes`), also under `/{tenant}/...`. A request's
params are its path fields, and its ProtoJSON body (`body: "*"`: a JSON object; a field
also in the path must agree with it) or its query parameters (no body: camelCase
names, enums by name, repeated values, RFC 3339 timestamps; `_codec.from_query`). The
body's `Content-Type` is `application/a2a+json` or `application/json` (or none); answers
are `application/a2a+json`. `SubscribeToTask` is also served on `POST`, as §11.3.2's
text has it (the proto's rule says `GET`; the official SDKs' clients post).

The answer is the method's result; `Empty` is `{}`. A stream is SSE whose events are
`id: <sequence>` and `data: <StreamResponse>`, resumed with `Last-Event-ID` as on
JSON-RPC. An error is `{"error": google.rpc.Status}` with the HTTP status and gRPC
status name of §5.4 (`status_of`), `code` the HTTP status, `details` the typed details
(an `ErrorInfo` first; a `BadRequest` for invalid params); after a stream's first event
it is an `event: error` carrying the same object. A path of a route with another verb
is 405 with `Allow`; an oversize body 413. The service parameters (`A2A-Version`,
`A2A-Extensions`) are checked as on JSON-RPC (`Exchange.call`).
"""

from __future__ import annotations

import functools
import logging

import msgspec

from interlink.a2a import _codec, _routes
from interlink.a2a._errors import bad_request, details_of, status_of
from interlink.a2a._methods import SUBSCRIBE_TO_TASK
from interlink.a2a._types import Empty
from interlink.a2a.server._asgi import Exchange, Framing, Handle, plain
from interlink.a2a.server._calls import invoke
from interlink.a2a.server._stream import TaskStream
from interlink.jsonrpc import ErrorObject, InvalidRequest, RpcError, error_answer

__all__ = ["MEDIA_TYPE", "RestBinding", "status_body"]

logger = logging.getLogger("interlink.a2a")

MEDIA_TYPE = "application/a2a+json"
_CONTENT_TYPE = (b"content-type", MEDIA_TYPE.encode())
_ACCEPTED = frozenset({MEDIA_TYPE, "application/json"})
_OBJECT = msgspec.json.Decoder(dict[str, object])


class _Status(msgspec.Struct, omit_defaults=True):
    code: int
    status: str
    message: str
    details: list[object] = []


class _Error(msgspec.Struct):
    error: _Status


def status_body(error: ErrorObject, http: int | None = None) -> tuple[int, bytes]:
    """An error as `{"error": google.rpc.Status}` and its HTTP status (§11.6; `http`
    instead of §5.4's when given)."""
    name, status = status_of(error.code)
    status = status if http is None else http
    body = _Status(status, name, error.message, details_of(error.code, error.data))
    return status, msgspec.json.encode(_Error(body))


def _error(exc: BaseException) -> tuple[int, bytes]:
    return status_body(error_answer(None, exc).error)


def _error_event(exc: RpcError) -> bytes:
    return b"event: error\ndata: " + _error(exc)[1] + b"\n\n"


_FRAMING = Framing((b"data: ", b"\n\n"), _error, _error_event)


class RestBinding:
    """The HTTP+JSON binding, at the app's root."""

    protocol = "HTTP+JSON"

    def route(self, verb: str, path: str) -> Handle | None:
        found = _routes.find(verb, path)
        if found is None and verb == "POST":  # (§11.3.2's text; see the module doc)
            found = _routes.find("GET", path)
            if found is not None and found[0].method.name != SUBSCRIBE_TO_TASK.name:
                found = None
        if found is not None:
            return functools.partial(self._handle, found[0], found[1])
        verbs = _routes.allowed(path)
        if verbs and verb != "HEAD":
            return functools.partial(_not_allowed, verbs)
        return None

    def refuse(self, error: RpcError) -> tuple[int, bytes]:
        return status_body(error.to_response(None).error, 413)

    async def _handle(
        self, route: _routes.Route, fields: dict[str, str], exchange: Exchange, body: bytes
    ) -> None:
        extra: list[tuple[bytes, bytes]] = []
        try:
            call = exchange.call()
            if call.extensions:
                extra.append((b"a2a-extensions", ", ".join(sorted(call.extensions)).encode()))
            params = _params(route, fields, exchange, body)
            result = await invoke(exchange.app.server, route.method, params, call)
        except Exception as exc:
            if not isinstance(exc, RpcError):
                logger.exception("A2A method %s failed", route.method.name)
            http = 415 if isinstance(exc, _UnsupportedMediaType) else None
            status, answer = status_body(error_answer(None, exc).error, http)
            await plain(exchange.send, status, answer, extra, _CONTENT_TYPE)
            return
        if isinstance(result, TaskStream):
            await exchange.app.stream(exchange, result, _FRAMING, extra)
            return
        answer = b"{}" if isinstance(result, Empty) else _codec.encode(result)
        await plain(exchange.send, 200, answer, extra, _CONTENT_TYPE)


def _params(route: _routes.Route, fields: dict[str, str], exchange: Exchange, body: bytes) -> bytes:
    """The ProtoJSON params of a request: its body or its query, with its path fields."""
    if route.rule.body != "*":
        try:
            given: dict[str, object] = _codec.from_query(route.method.params, exchange.query())
        except _codec.ValidationError as exc:
            raise bad_request((v.field, v.description) for v in exc.violations) from None
        clash = [f for f in fields if f in given and given[f] != fields[f]]
        if clash:
            raise bad_request((f, "differs from the path") for f in clash)
        return msgspec.json.encode({**given, **fields})
    kind = exchange.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind and kind not in _ACCEPTED:
        raise _UnsupportedMediaType(
            f"the body must be {MEDIA_TYPE} (or application/json), not {kind}",
            {"contentType": kind},
        )
    if not body.strip():
        body = b"{}"
    if not fields:
        return body
    try:
        decoded = _OBJECT.decode(body)
    except msgspec.DecodeError as exc:
        raise bad_request([("", f"the body is not a JSON object: {exc}")]) from None
    clash = [
        f
        for f in fields
        for key in (f, _snake(f))
        if key in decoded and decoded[key] not in (fields[f], "")
    ]
    if clash:
        raise bad_request((f, "differs from the path") for f in clash)
    for name in fields:
        decoded.pop(_snake(name), None)
    return msgspec.json.encode({**decoded, **fields})


class _UnsupportedMediaType(InvalidRequest):
    """A body of another media type: -32600 (INVALID_ARGUMENT), HTTP 415."""


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


async def _not_allowed(verbs: list[str], exchange: Exchange, body: bytes) -> None:
    error = ErrorObject(code=-32601, message=f"use {' or '.join(verbs)} on this path")
    status, answer = status_body(error, 405)
    allow = (b"allow", ", ".join(verbs).encode())
    await plain(exchange.send, status, answer, [allow], _CONTENT_TYPE)
