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

0.3's routes (`/v1/...`, `legacy`: `bindings._rest_v03`) are served here too. Their
paths are also 1.0's, of the tenant `v1`: a request there is 0.3's when it names no
`A2A-Version` (or 0.3), else 1.0's. `serve_call` is how both versions answer a call.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, NamedTuple

import msgspec

from interlink.a2a import _codec, _routes
from interlink.a2a._errors import bad_request, details_of, status_of
from interlink.a2a._methods import SUBSCRIBE_TO_TASK
from interlink.a2a._types import Empty
from interlink.a2a.server._asgi import NOT_FOUND, Exchange, Framing, Handle, plain
from interlink.a2a.server._calls import V10_ONLY, invoke
from interlink.a2a.server._handler import Call
from interlink.a2a.server._stream import TaskStream
from interlink.a2a.server._v03 import is_v03
from interlink.jsonrpc import ErrorObject, InvalidRequest, RpcError, error_answer

__all__ = [
    "MEDIA_TYPE",
    "Answers",
    "RestBinding",
    "Router",
    "http_status_of",
    "json_object",
    "serve_call",
    "status_body",
]

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

Router = Callable[[str, str], Handle | None]
"""The handler of `verb path`, or None (`Binding.route`)."""


class RestBinding:
    """The HTTP+JSON binding, at the app's root."""

    protocol = "HTTP+JSON"

    def __init__(self, legacy: Router | None = None) -> None:
        #: the routes of another version whose paths may be 1.0's too (0.3's `/v1/...`)
        self.legacy = legacy

    def route(self, verb: str, path: str) -> Handle | None:
        current = self._route(verb, path)
        legacy = None if self.legacy is None else self.legacy(verb, path)
        if legacy is None:
            return current
        return functools.partial(_by_version, legacy, current)

    def _route(self, verb: str, path: str) -> Handle | None:
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
        async def run(call: Call) -> object:
            params = _params(route, fields, exchange, body)
            return await invoke(exchange.app.server, route.method, params, call)

        await serve_call(exchange, route.method.name, run, _ANSWERS)


class Answers(NamedTuple):
    """How a version of the binding answers: the versions it serves, its errors (the
    plain answer to one), its streams, its results' bytes and their `Content-Type`."""

    versions: Sequence[str]
    error: Callable[[BaseException], tuple[int, bytes]]
    framing: Framing
    body: Callable[[object], bytes]
    content_type: tuple[bytes, bytes]


async def serve_call(
    exchange: Exchange, name: str, run: Callable[[Call], Awaitable[object]], answers: Answers
) -> None:
    """Answer one call of method `name` that `run` carries out, as `answers` say: its
    result, its stream, or its error (and an exception that is not an `RpcError` logged:
    it is a bug). Activated extensions are echoed."""
    extra: list[tuple[bytes, bytes]] = []
    try:
        call = exchange.call(answers.versions)
        if call.extensions:
            extra.append((b"a2a-extensions", ", ".join(sorted(call.extensions)).encode()))
        result = await run(call)
    except Exception as exc:
        if not isinstance(exc, RpcError):
            logger.exception("A2A method %s failed", name)
        status, answer = answers.error(exc)
        await plain(exchange.send, status, answer, extra, answers.content_type)
        return
    if isinstance(result, TaskStream):
        await exchange.app.stream(exchange, result, answers.framing, extra)
        return
    await plain(exchange.send, 200, answers.body(result), extra, answers.content_type)


def _error_of(exc: BaseException) -> tuple[int, bytes]:
    return status_body(error_answer(None, exc).error, http_status_of(exc))


def _body_of(result: object) -> bytes:
    assert isinstance(result, msgspec.Struct)
    return b"{}" if isinstance(result, Empty) else _codec.encode(result)


_ANSWERS: Final = Answers(V10_ONLY, _error_of, _FRAMING, _body_of, _CONTENT_TYPE)


async def _by_version(
    legacy: Handle, current: Handle | None, exchange: Exchange, body: bytes
) -> None:
    """A path of both versions (`/v1/...`: 0.3's, or 1.0's of the tenant `v1`) is
    0.3's for a 0.3 request (no `A2A-Version`, or 0.3), else 1.0's."""
    if is_v03(exchange.version()):
        await legacy(exchange, body)
    elif current is not None:
        await current(exchange, body)
    else:
        await plain(exchange.send, 404, NOT_FOUND)


def json_object(exchange: Exchange, body: bytes) -> dict[str, object]:
    """The request's JSON object body (`{}` for none), of an accepted media type."""
    check_media_type(exchange)
    try:
        return _OBJECT.decode(body) if body.strip() else {}
    except msgspec.DecodeError as exc:
        raise bad_request([("", f"the body is not a JSON object: {exc}")]) from None


def check_media_type(exchange: Exchange) -> None:
    """Raise `_UnsupportedMediaType` (HTTP 415) for a body of another media type than
    JSON's (a body without `Content-Type` is JSON)."""
    kind = exchange.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind and kind not in _ACCEPTED:
        raise _UnsupportedMediaType(
            f"the body must be {MEDIA_TYPE} (or application/json), not {kind}",
            {"contentType": kind},
        )


def _params(route: _routes.Route, fields: dict[str, str], exchange: Exchange, body: bytes) -> bytes:
    """The ProtoJSON params of a request: its body or its query, with its path fields."""
    if route.rule.body != "*":
        query = exchange.query()
        if not query:
            return msgspec.json.encode(fields)
        try:
            given: dict[str, object] = _codec.from_query(route.method.params, query)
        except _codec.ValidationError as exc:
            raise bad_request((v.field, v.description) for v in exc.violations) from None
        clash = [f for f in fields if f in given and given[f] != fields[f]]
        if clash:
            raise bad_request((f, "differs from the path") for f in clash)
        return msgspec.json.encode({**given, **fields})
    if not fields:
        check_media_type(exchange)
        return body if body.strip() else b"{}"
    decoded = json_object(exchange, body)
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

    http_status = 415


def http_status_of(exc: BaseException) -> int | None:
    """The HTTP status an error asks for, whatever its code says (415), or None."""
    status = getattr(exc, "http_status", None)
    return status if isinstance(status, int) else None


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


async def _not_allowed(verbs: list[str], exchange: Exchange, body: bytes) -> None:
    error = ErrorObject(code=-32601, message=f"use {' or '.join(verbs)} on this path")
    status, answer = status_body(error, 405)
    allow = (b"allow", ", ".join(verbs).encode())
    await plain(exchange.send, status, answer, [allow], _CONTENT_TYPE)
