"""The bindings `interlink a2a check` speaks: one method call or stream, in the binding's
own wire form, read back as one shape the cases judge.

A case names the operation by its JSON-RPC method (`GetTask`) and gives its parameters as
ProtoJSON. `JsonRpc` sends them as they are; `Rest` puts them where §11.3 and §11.5 say
(path, query, body); each answer is a `Reply` whose `result` is the operation's result and
whose `code` is the JSON-RPC code of the error (§5.4), so that one case judges every
binding. An HTTP+JSON error has the code of its ErrorInfo reason only when its HTTP status
is the one §5.4 maps that reason to; otherwise its `code` says what came instead.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import quote, urlencode

import httpx

from interlink.a2a import ERROR_DOMAIN as DOMAIN
from interlink.a2a import REASON_CODES, status_of
from interlink.check._a2a_wire import (
    A2A_VERSION,
    Headers,
    Json,
    Reply,
    SseEvent,
    Stream,
    Version,
    Wire,
)
from interlink.check._cases import Fail

__all__ = [
    "BINDINGS",
    "GRPC",
    "HTTP_JSON",
    "JSONRPC",
    "KINDS",
    "Binding",
    "Events",
    "JsonRpc",
    "Rest",
    "RestReply",
    "a2a_code",
    "Unavailable",
    "contactable",
    "grpc_target",
    "http_form",
    "make_binding",
]

JSONRPC = "JSONRPC"
HTTP_JSON = "HTTP+JSON"
GRPC = "GRPC"
KINDS = ("task", "message", "statusUpdate", "artifactUpdate")
REST_MEDIA = {"Content-Type": "application/a2a+json"}


@dataclass
class Events:
    """One streaming call's answer: `reply` when the server refused it with a plain answer
    (an error), else the StreamResponses as `next()` reads them. `ids` holds each event's
    SSE `id:` (None when it had none)."""

    content_type: str = ""
    reply: Reply | None = None
    ids: list[str | None] = field(default_factory=list)
    closed: bool = False
    _stream: Stream | None = None
    _decode: Callable[[SseEvent], tuple[str, Json]] | None = None

    async def next(self) -> tuple[str, Json] | None:
        """The next StreamResponse as (its kind, the object), or None once the server
        closed the stream; FAIL when an event is not one StreamResponse. A JSON-RPC error
        event is the kind "error" with the error object."""
        if self.closed or self._stream is None or self._decode is None:
            return None
        event = await self._stream.next()
        if event is None:
            self.closed = True
            return None
        self.ids.append(event.id)
        return self._decode(event)


class Binding(Protocol):
    name: str
    url: str

    async def call(
        self, method: str, params: Json, *, version: Version = A2A_VERSION, headers: Headers = None
    ) -> Reply: ...

    def stream(
        self, method: str, params: Json, *, headers: Mapping[str, str] | None = None
    ) -> contextlib.AbstractAsyncContextManager[Events]: ...

    def speaks(self, reply: Reply) -> bool:
        """Whether `reply` is an answer in this binding's form (an error of it counts)."""
        ...


def one_kind(body: object, raw: str) -> tuple[str, Json]:
    """The StreamResponse `body` as (kind, object); FAIL unless it has exactly one kind."""
    kinds = [k for k in KINDS if isinstance(body, dict) and isinstance(body.get(k), dict)]
    if not isinstance(body, dict) or len(kinds) != 1 or len(body) != 1:
        raise Fail(f"an event that is not one StreamResponse: {raw[:200]!r}")
    return kinds[0], body[kinds[0]]


class JsonRpc:
    """The JSON-RPC binding (§9) at `url`."""

    name = JSONRPC

    def __init__(self, wire: Wire, url: str) -> None:
        self.wire, self.url = wire, url

    async def call(
        self, method: str, params: Json, *, version: Version = A2A_VERSION, headers: Headers = None
    ) -> Reply:
        return await self.wire.rpc(self.url, method, params, version=version, headers=headers)

    def speaks(self, reply: Reply) -> bool:
        return reply.obj.get("jsonrpc") == "2.0"

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, params: Json, *, headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[Events]:
        async with self.wire.stream(self.url, method, params, headers=headers) as stream:

            def decode(event: SseEvent) -> tuple[str, Json]:
                return _rpc_event(event, stream.request_id)

            yield Events(stream.content_type, stream.reply, _stream=stream, _decode=decode)


def _rpc_event(event: SseEvent, request_id: int) -> tuple[str, Json]:
    """FAIL unless the SSE event is one JSON-RPC response to the request (§9.4.2)."""
    body = event.json()
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
        raise Fail(f"an SSE event that is not a JSON-RPC response: {event.data[:200]!r}")
    if body.get("id") != request_id:
        raise Fail(f"an SSE event with id {body.get('id')!r}, the request's is {request_id}")
    if "error" in body:
        return "error", body["error"] if isinstance(body["error"], dict) else {}
    return one_kind(body.get("result"), event.data)


# -- HTTP+JSON ---------------------------------------------------------------------------

#: method -> (HTTP method, path; `{field}` takes that parameter, URL-encoded), §11.3
ROUTES = {
    "SendMessage": ("POST", "/message:send"),
    "SendStreamingMessage": ("POST", "/message:stream"),
    "GetTask": ("GET", "/tasks/{id}"),
    "ListTasks": ("GET", "/tasks"),
    "CancelTask": ("POST", "/tasks/{id}:cancel"),
    "SubscribeToTask": ("POST", "/tasks/{id}:subscribe"),
    "CreateTaskPushNotificationConfig": ("POST", "/tasks/{taskId}/pushNotificationConfigs"),
    "GetTaskPushNotificationConfig": ("GET", "/tasks/{taskId}/pushNotificationConfigs/{id}"),
    "ListTaskPushNotificationConfigs": ("GET", "/tasks/{taskId}/pushNotificationConfigs"),
    "DeleteTaskPushNotificationConfig": (
        "DELETE",
        "/tasks/{taskId}/pushNotificationConfigs/{id}",
    ),
    "GetExtendedAgentCard": ("GET", "/extendedAgentCard"),
}


def _query_value(value: object) -> str:
    """§11.5: booleans lowercase, numbers decimal, strings as they are."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def a2a_code(
    details: list[Json], got: object, expected: Callable[[int], object], shown: str
) -> object:
    """The JSON-RPC code of an HTTP+JSON or gRPC error: that of the reason of its first
    ErrorInfo in the a2a-protocol.org domain, when `got` (its HTTP or gRPC status) is
    `expected(code)`, the status §5.4 maps that code to; else what came, as text
    (`shown` names the status)."""
    reasons = [
        str(d.get("reason"))
        for d in details
        if str(d.get("@type", "")).endswith("google.rpc.ErrorInfo") and d.get("domain") == DOMAIN
    ]
    if not reasons:
        return f"{shown} without an a2a-protocol.org ErrorInfo"
    code = REASON_CODES.get(reasons[0])
    if code is None:
        return f"{shown} with reason {reasons[0]}"
    want = expected(code)
    return code if want == got else f"{shown} with reason {reasons[0]} (§5.4 maps it to {want})"


@dataclass
class RestReply(Reply):
    """An HTTP+JSON answer read as a JSON-RPC one: a 2xx body is the result (an empty one
    is `{}`), any other answer is the error, its code the JSON-RPC code of its ErrorInfo
    reason when the HTTP status matches §5.4 (else a string that says what came)."""

    @property
    def result(self) -> object:
        if 200 <= self.status < 300 and "error" not in self.obj:
            return self.body if self.raw.strip() else {}
        return None

    @property
    def error(self) -> Json | None:
        if self.result is not None:
            return None
        status = self.obj.get("error")
        status = status if isinstance(status, dict) else {}
        details = status.get("details")
        items = [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []
        code = a2a_code(items, self.status, lambda c: status_of(c)[1], f"HTTP {self.status}")
        message = status.get("message") if status else self.raw[:120].decode("utf-8", "replace")
        return {"code": code, "message": message, "data": items}

    def describe(self) -> str:
        if self.error is not None:
            return f"error {self.error['code']}: {str(self.error.get('message'))[:200]}"
        return super().describe()


def _as_rest(reply: Reply) -> RestReply:
    return RestReply(reply.status, reply.headers, reply.raw, reply.body, reply.json_error)


class Rest:
    """The HTTP+JSON binding (§11) at `url`."""

    name = HTTP_JSON

    def __init__(self, wire: Wire, url: str) -> None:
        self.wire, self.url = wire, url
        self.base = url.rstrip("/")

    def request(self, method: str, params: Mapping[str, object]) -> tuple[str, str, bytes | None]:
        """(HTTP method, URL, body) of an operation: path fields first, then the query
        (GET, DELETE) or the JSON body (POST) with the rest."""
        verb, path = ROUTES[method]
        rest = dict(params)
        while "{" in path:
            name = path[path.index("{") + 1 : path.index("}")]
            value = rest.pop(name, "")
            path = path.replace("{" + name + "}", quote(str(value), safe=""), 1)
        url = self.base + path
        if verb != "POST":
            query = urlencode({k: _query_value(v) for k, v in rest.items()})
            return verb, url + ("?" + query if query else ""), None
        return verb, url, json.dumps(rest).encode()

    async def call(
        self, method: str, params: Json, *, version: Version = A2A_VERSION, headers: Headers = None
    ) -> Reply:
        verb, url, body = self.request(method, params)
        sent = {**REST_MEDIA, **(headers or {})}
        return _as_rest(await self.wire.send(verb, url, body, version=version, headers=sent))

    def speaks(self, reply: Reply) -> bool:
        return reply.result is not None or isinstance(reply.obj.get("error"), dict)

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, params: Json, *, headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[Events]:
        _, url, body = self.request(method, params)
        sent = {**REST_MEDIA, **(headers or {})}
        async with self.wire.open_stream(url, body, headers=sent) as stream:
            reply = None if stream.reply is None else _as_rest(stream.reply)

            def decode(event: SseEvent) -> tuple[str, Json]:
                """§11.7: each `data` is one bare StreamResponse."""
                return one_kind(event.json(), event.data)

            yield Events(stream.content_type, reply, _stream=stream, _decode=decode)


# -- choosing one ----------------------------------------------------------------------


class Unavailable(Exception):
    """This checker cannot speak the binding here (its extra is not installed)."""


def _grpc(wire: Wire, url: str) -> Binding:
    """The gRPC binding, imported here: grpcio and protobuf are an extra."""
    try:
        from interlink.check._a2a_grpc import Grpc
    except ImportError as exc:
        raise Unavailable(
            f"checking the gRPC interface needs interlink[grpc] (grpcio, protobuf): {exc}"
        ) from None
    return Grpc(wire, url)


BINDINGS: dict[str, Callable[[Wire, str], Binding]] = {
    JSONRPC: JsonRpc,
    HTTP_JSON: Rest,
    GRPC: _grpc,
}
"""The bindings this version checks, by their `protocolBinding`."""


def grpc_target(url: str) -> tuple[str, bool]:
    """The gRPC target (`host:port`) of an interface URL and whether it wants TLS:
    `host:port`, `grpc://host:port`, or an http(s) URL whose path is ignored."""
    if "://" not in url:
        return url, False
    parsed = httpx.URL(url.replace("grpc://", "http://", 1).replace("grpcs://", "https://", 1))
    tls = parsed.scheme == "https"
    port = parsed.port or (443 if tls else 80)
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    return f"{host}:{port}", tls


def http_form(url: str) -> str:
    """The interface as an http(s) URL (for the contact policy)."""
    where, tls = grpc_target(url)
    return f"{'https' if tls else 'http'}://{where}/"


def contactable(wire: Wire, binding: str, url: str) -> bool:
    """Whether the contact policy lets the checker reach this interface (a gRPC target
    `host:port` is judged as the http(s) URL of that host and port)."""
    return wire.allowed(http_form(url) if binding == GRPC else url)


def make_binding(wire: Wire, binding: str, url: str) -> Binding:
    """The binding `binding` at `url`; `Unavailable` when it cannot be spoken here."""
    return BINDINGS[binding](wire, url)
