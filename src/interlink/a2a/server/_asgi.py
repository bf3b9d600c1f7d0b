"""ASGI plumbing the HTTP bindings share: types, the request a binding handles
(`Exchange`), what a binding is (`Binding`, `Framing`), bounded body reading, plain
answers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, NamedTuple, Protocol, cast
from urllib.parse import unquote

from interlink.a2a._types import AgentInterface
from interlink.a2a.server._calls import V10_ONLY, build_call
from interlink.a2a.server._handler import Call
from interlink.a2a.server._v03 import requested_version
from interlink.jsonrpc import RpcError

if TYPE_CHECKING:
    from interlink.a2a.server._http import A2AApp

__all__ = [
    "CLOSE",
    "NOT_FOUND",
    "SSE",
    "Binding",
    "Exchange",
    "Framing",
    "Handle",
    "Headers",
    "TENANT_SCOPE_KEY",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "declared_length",
    "drop_body",
    "headers_of",
    "parse_query",
    "plain",
    "read_body",
    "sse_answer",
]

#: the ASGI scope key under which a tenant router passes the tenant of the URL
TENANT_SCOPE_KEY = "interlink.tenant"

Scope = MutableMapping[str, object]
Message = MutableMapping[str, object]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_JSON = (b"content-type", b"application/json")
#: the head of an SSE answer
SSE: Final = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
#: on an answer given before the request's body was read to its end
CLOSE = (b"connection", b"close")
#: the body of a 404: no binding serves the path
NOT_FOUND: Final = b'{"error":"not found"}'
Headers = list[tuple[bytes, bytes]]


@dataclass
class Exchange:
    """One HTTP request as a binding sees it, once the shell has authenticated it."""

    app: A2AApp
    scope: Scope
    receive: Receive
    send: Send
    headers: dict[str, str]
    principal: str

    def query(self) -> dict[str, list[str]]:
        """The query parameters, each with its values in order."""
        raw = cast(bytes, self.scope.get("query_string", b""))
        return parse_query(raw.decode("latin-1")) if raw else {}

    def version(self) -> str:
        """The `A2A-Version` asked for (header, else query parameter), "" for none."""
        return requested_version(self.scope, self.headers)

    def call(self, versions: Sequence[str] = V10_ONLY) -> Call:
        """The `Call` of this request (raises `VersionNotSupported`,
        `ExtensionSupportRequired`) for a binding serving `versions`: the service
        parameters are headers; `A2A-Version` may be a query parameter too."""
        params = self.headers
        version = self.version()
        if version and not params.get("a2a-version", "").strip():
            params = {**params, "a2a-version": version}
        return build_call(
            params,
            self.app.extensions,
            principal=self.principal,
            tenant=cast(str, self.scope.get(TENANT_SCOPE_KEY, "")),
            headers=self.headers,
            versions=versions,
        )

    def interfaces(self) -> list[AgentInterface]:
        """The card's interfaces as served for this request (see `PublishedCard`)."""
        return self.app.published.served_interfaces(self.scope, self.headers)

    async def answer(self, status: int, body: bytes, extra: Headers | None = None) -> None:
        """A whole JSON answer."""
        await plain(self.send, status, body, extra)


Handle = Callable[[Exchange, bytes], Awaitable[None]]
"""A binding's handler of one request, given its whole body."""


class Framing(NamedTuple):
    """How a binding frames a stream: the bytes `around` each event's payload (the
    ProtoJSON `StreamResponse`), its plain answer (status, body) to an error before the
    first event, and the SSE event carrying an error after it."""

    around: tuple[bytes, bytes]
    error: Callable[[RpcError], tuple[int, bytes]]
    error_event: Callable[[RpcError], bytes]
    #: an error before the first event is the one event of an SSE answer instead (A2A
    #: 0.3, whose clients read nothing but SSE from a streaming method)
    errors_in_stream: bool = False


class Binding(Protocol):
    """A protocol binding the shell serves."""

    #: the card's `protocolBinding` for it (`JSONRPC`, `HTTP+JSON`)
    protocol: str

    def route(self, verb: str, path: str) -> Handle | None:
        """The handler of a request to `verb path` (the app's own path), or `None`."""

    def refuse(self, error: RpcError) -> tuple[int, bytes]:
        """The plain answer (status, body) to an error found before the request is
        read (an oversize body)."""


def parse_query(query: str) -> dict[str, list[str]]:
    """A query string's parameters, each with its values in order: what `parse_qs(query,
    keep_blank_values=True)` gives (`&` between them, `+` a space, percent-escapes of
    UTF-8, a name without `=` has the value ""), without its cost per parameter."""
    params: dict[str, list[str]] = {}
    for pair in query.split("&"):
        if not pair:
            continue
        name, _, value = pair.partition("=")
        if "+" in pair or "%" in pair:
            name, value = unquote(name.replace("+", " ")), unquote(value.replace("+", " "))
        values = params.get(name)
        if values is None:
            params[name] = [value]
        else:
            values.append(value)
    return params


async def read_body(receive: Receive, limit: int, message: Message) -> bytes | None:
    """The request body, from its first `message` on, or `None` when it is larger than
    `limit` (reading stops there)."""
    chunks: list[bytes] = []
    size = 0
    while message["type"] != "http.disconnect":
        chunk = cast(bytes, message.get("body", b""))
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
        message = await receive()
    return b"".join(chunks)


def declared_length(scope: Scope) -> int:
    """The request's `Content-Length` (0 when it gives none or one that is no number)."""
    for name, value in cast(list[tuple[bytes, bytes]], scope.get("headers", [])):
        if name.lower() == b"content-length":
            return int(value) if value.isdigit() else 0
    return 0


async def drop_body(scope: Scope, receive: Receive, limit: int) -> bool | None:
    """Read the request's body and drop it: `True` once read to its end, `False` when it
    is (or says it is) larger than `limit` (reading stops there), `None` when the
    client went away or sent a request the server refused (its answer is given)."""
    if declared_length(scope) > limit:
        return False
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        size += len(cast(bytes, message.get("body", b"")))
        if size > limit:
            return False
        if not message.get("more_body", False):
            return True


def headers_of(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name; a header given on several lines is one
    comma-separated value (RFC 9110, 5.3)."""
    raw = cast(list[tuple[bytes, bytes]], scope.get("headers", []))
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}
    if len(headers) < len(raw):
        headers = {}
        for k, v in raw:
            name, value = k.decode("latin-1").lower(), v.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


async def sse_answer(send: Send, event: bytes, extra: Headers | None = None) -> None:
    """An SSE answer of one `event` (its bytes, framed), then the end."""
    await send({"type": "http.response.start", "status": 200, "headers": [*SSE, *(extra or [])]})
    await send({"type": "http.response.body", "body": event})


async def plain(
    send: Send,
    status: int,
    body: bytes,
    extra: list[tuple[bytes, bytes]] | None = None,
    content_type: tuple[bytes, bytes] = _JSON,
) -> None:
    """A whole answer: `status`, `body` (JSON unless `content_type` says otherwise)."""
    headers = [content_type, (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
