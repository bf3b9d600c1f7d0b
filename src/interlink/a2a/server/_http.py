"""The A2A JSON-RPC binding over HTTP, as a plain ASGI application.

`POST {rpc_path}`: one JSON-RPC request (batches are refused); HTTP 200 with a JSON-RPC
answer, or `text/event-stream` for the streaming methods, where each event is
`id: <sequence>` and `data: <JSON-RPC response>`. An error before the first event is a
plain JSON answer; after it, an SSE event carrying the error, then the end. Comments
keep idle streams alive every `keepalive` seconds. A client that stops reading does not
slow anything: the server holds one write of at most 64 KiB for it (the events' bytes
are shared by every stream of a task), its queue, bounded in events and bytes,
overflows and its stream ends (it resumes with `Last-Event-ID`). `end_streams()` ends
every stream when the server stops. A body declared or found larger than `max_body` is
refused at once (-32600), and the connection closes. `GET /.well-known/agent-card.json`:
the card, with `Cache-Control`, `ETag` and `Last-Modified` (its interface made from the
request when it lists none: see `_card_serve`). `A2A-Version` (header or query) and
`A2A-Extensions` are checked on every call: a request without a version, or naming 0.3,
is served in 0.3 (`_v03`), one naming 1.x in 1.0, any other is refused (-32009).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    MutableMapping,
    Sequence,
)
from typing import cast
from urllib.parse import parse_qs

import msgspec

from interlink.a2a import _codec
from interlink.a2a._card_sign import SigningKey, sign_card
from interlink.a2a._errors import (
    ExtensionSupportRequired,
    TaskNotFound,
    VersionNotSupported,
    bad_request,
    error_info,
)
from interlink.a2a._methods import METHODS
from interlink.a2a._types import AgentCard, Empty
from interlink.a2a.server._auth import Authenticator
from interlink.a2a.server._card_serve import PublishedCard
from interlink.a2a.server._handler import A2AServer, Call, Handler
from interlink.a2a.server._push import PushDelivery
from interlink.a2a.server._stream import TaskStream
from interlink.a2a.server._v03 import (
    STREAMING,
    V03,
    call_v03,
    error_body_v03,
    event_to_v03,
    is_v03,
    requested_version,
)
from interlink.a2a.stores._base import TaskStore
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
    oversize,
    read_body,
)

__all__ = ["A2AApp", "SUPPORTED_VERSIONS"]

logger = logging.getLogger("interlink.a2a")

SUPPORTED_VERSIONS = (V03, "1.0")
CARD_PATH = "/.well-known/agent-card.json"
#: the ASGI scope key under which a tenant router passes the tenant of the URL
TENANT_SCOPE_KEY = "interlink.tenant"

Scope = MutableMapping[str, object]
Message = MutableMapping[str, object]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_JSON = [(b"content-type", b"application/json")]
_SSE = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


_PING = b": keep-alive\n\n"
#: the most bytes of events a stream hands to the server in one write
_PIECE = 64 * 1024
#: the last words of a stream that ends because the server stops: reconnect in 1 s
_STOPPING = b": the server is stopping; resume with Last-Event-ID\nretry: 1000\n\n"
#: on an answer given before the request's body was read to its end
_CLOSE = (b"connection", b"close")
_NO_EXTENSIONS: frozenset[str] = frozenset()


class A2AApp:
    """ASGI application serving one `A2AServer` (mountable under any prefix)."""

    def __init__(
        self,
        server: A2AServer,
        *,
        rpc_path: str = "/",
        max_body: int = 16 * 1024 * 1024,
        keepalive: float = 15.0,
        authenticators: Sequence[Authenticator] = (),
    ) -> None:
        self.server = server
        self.rpc_path = rpc_path
        self.max_body = max_body
        self.keepalive = keepalive
        self.authenticators = tuple(authenticators)
        self._started = False
        self._starting = asyncio.Lock()
        #: the open streams, and whether they are to end (the server stops)
        self._streams: set[TaskStream] = set()
        self._ending = False
        self._signer: SigningKey | None = None
        self._publish(server.card)

    def use_store(self, store: TaskStore, *, push_allow: Iterable[str] | None = None) -> None:
        """Serve from `store` instead (before the app starts); `push_allow` replaces the
        hosts that push webhooks may use although they are not public."""
        self.server.store = store
        if self.server.push is not None:
            allow = self.server.push.allow_hosts if push_allow is None else push_allow
            self.server.push = PushDelivery(store, allow_hosts=allow)

    def use_card(self, card: AgentCard) -> None:
        """Publish `card` instead (before the app starts)."""
        self.server.card = card
        self._publish(card)

    def sign_cards(self, key: SigningKey) -> None:
        """Sign the card as served (each variant made from requests too) and the
        extended card with `key` (before the app starts)."""
        self._signer = key
        extended = self.server.extended_card
        if extended is not None:
            self.server.extended_card = sign_card(extended, key)
        self._publish(self.server.card)

    def _publish(self, card: AgentCard) -> None:
        self._published = PublishedCard(card, self.rpc_path, self._signer)
        extensions = card.capabilities.extensions
        self._supported_extensions = {e.uri for e in extensions}
        self._required_extensions = {e.uri for e in extensions if e.required}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "http":
            if not self._started:
                await self._start()
            path = cast(str, scope["path"])
            root = cast(str, scope.get("root_path", ""))
            if root and path.startswith(root):  # mounted under a prefix (Starlette, FastAPI)
                path = path[len(root) :] or "/"
            method = scope["method"]
            if path == self.rpc_path and method == "POST":
                await self._rpc(scope, receive, send)
                return
            # answered once the request is read (and dropped): a request whose body
            # breaks HTTP is then known as such (the server answers it 400) before we
            # answer it too
            whole = await _drop_body(scope, receive, self.max_body)
            if whole is None:
                return  # the client went away or broke the request
            extra = [] if whole else [_CLOSE]
            if path == CARD_PATH and method in ("GET", "HEAD"):
                await self._card_response(scope, send, extra)
            else:
                await _plain(send, 404, b'{"error":"not found"}', extra)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Start and stop the server with a host's lifespan, for a host that does not
        pass lifespan events to mounted apps: `Starlette(..., lifespan=lambda _:
        agent.lifespan())`. (Without it the app starts on its first request and is
        never stopped.)"""
        await self._start()
        try:
            yield
        finally:
            await self.server.shutdown()
            self._started = False

    async def _start(self) -> None:
        """Start the server once: from the lifespan, or on the first request when the
        host does not pass lifespan events on (a mount in Starlette or FastAPI)."""
        async with self._starting:
            if not self._started:
                await self.server.startup()
                self._started = True
                self._ending = False  # (served again after `end_streams`)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self._start()
                except Exception as exc:
                    logger.exception("A2A server start-up failed")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.server.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _card_response(
        self, scope: Scope, send: Send, extra: list[tuple[bytes, bytes]]
    ) -> None:
        status, headers, body = self._published.response(scope, _headers(scope))
        await send({"type": "http.response.start", "status": status, "headers": [*headers, *extra]})
        await send({"type": "http.response.body", "body": body})

    # -- JSON-RPC ---------------------------------------------------------------------

    async def _authenticate(self, scope: Scope) -> str | None:
        """The caller's principal; "" when the agent needs no authentication."""
        if not self.authenticators:
            return ""
        request = _HttpRequest(scope)
        for authenticator in self.authenticators:
            principal = await authenticator.authenticate(request)
            if principal is not None:
                return principal
        return None

    async def _rpc(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = _declared_length(scope)
        if declared > self.max_body:  # refused at once, before its body comes
            error = oversize(declared, self.max_body).response()
            await _plain(send, 200, error_body(error), [_CLOSE])
            return
        principal = await self._authenticate(scope) if self.authenticators else ""
        if principal is None:
            whole = await _drop_body(scope, receive, self.max_body)
            if whole is None:
                return
            challenge = ", ".join(a.challenge() for a in self.authenticators).encode()
            await _plain(
                send,
                401,
                b'{"error":"authentication required"}',
                [(b"www-authenticate", challenge), *([] if whole else [_CLOSE])],
            )
            return
        first = await receive()
        if first["type"] == "http.disconnect":
            return
        body: bytes | None
        if first["type"] == "http.request" and not first.get("more_body", False):
            body = cast(bytes, first.get("body", b""))  # the usual: all in one message
            if len(body) > self.max_body:
                body = None
        else:
            body = await _read_body(receive, self.max_body, first)
        if body is None:  # (the rest of it is not read: the connection closes)
            error = oversize(self.max_body + 1, self.max_body).response()
            await _plain(send, 200, error_body(error), [_CLOSE])
            return
        message = read_body(body)
        assert not isinstance(message, list)  # (no batches: an array is one error)
        if isinstance(message, ErrorResponse):  # no request (not JSON, a response, ...)
            await _plain(send, 200, error_body(message))
            return
        if isinstance(message, Notification):  # carried out, never answered (not even
            await self._notification(message, scope, principal)  # with an error)
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        headers = _headers(scope)
        extra: list[tuple[bytes, bytes]] = []
        # a 0.3 request is answered in 0.3, errors too; but one naming a 1.0 method comes
        # from a 1.0 client that forgot A2A-Version: its -32009 is in 1.0 form
        v03 = is_v03(requested_version(scope, headers)) and message.method not in METHODS
        errors = error_body_v03 if v03 else error_body
        in_sse = v03 and message.method in STREAMING  # (0.3: a stream's errors are in it)
        try:
            call = self._call(scope, headers, principal)
            if call.extensions:
                extra.append((b"a2a-extensions", ", ".join(sorted(call.extensions)).encode()))
            result = await self._dispatch(message, call)
        except Exception as exc:
            if not isinstance(exc, RpcError):
                logger.exception("A2A method %s failed", message.method)
            body = errors(error_answer(message.id, exc))
            await (_sse_error if in_sse else _plain)(send, 200, body, extra)
            return
        if isinstance(result, bytes):
            await _plain(send, 200, answer_body(message.id, result), extra)
        else:
            await self._stream(message.id, result, receive, send, extra, errors, in_sse)

    async def _notification(
        self, message: Notification[msgspec.Raw], scope: Scope, principal: str
    ) -> None:
        """A request without an id (JSON-RPC 2.0, 4.1): done like any other, its answer
        dropped; a stream it opens is closed at once (its task goes on)."""
        headers = _headers(scope)
        try:
            result = await self._dispatch(message, self._call(scope, headers, principal))
        except Exception as exc:
            logger.debug("A2A notification %s failed: %s", message.method, exc)
            return
        if isinstance(result, TaskStream):
            await result.aclose()

    def _call(self, scope: Scope, headers: dict[str, str], principal: str) -> Call:
        version = requested_version(scope, headers) or V03
        version = ".".join(version.split(".")[:2])  # (a patch is not negotiated)
        if version not in SUPPORTED_VERSIONS:
            raise VersionNotSupported(
                f"A2A version {version!r} is not supported; this server speaks "
                f"{', '.join(SUPPORTED_VERSIONS)}",
                supported=",".join(SUPPORTED_VERSIONS),
            )
        asked = headers.get("a2a-extensions")
        extensions = _NO_EXTENSIONS
        if asked is not None or self._required_extensions:
            requested = {u.strip() for u in (asked or "").split(",") if u.strip()}
            missing = self._required_extensions - requested
            if missing:
                raise ExtensionSupportRequired(
                    f"activate the required extension(s): {', '.join(sorted(missing))}",
                    extensions=",".join(sorted(missing)),
                )
            extensions = frozenset(requested & self._supported_extensions)
        last = headers.get("last-event-id", "").strip()
        return Call(
            principal=principal,
            version=version,
            tenant=cast(str, scope.get(TENANT_SCOPE_KEY, "")),
            extensions=extensions,
            headers=headers,
            last_event_id=int(last)
            if last.isascii() and last.isdigit() and len(last) < 19
            else None,
        )

    async def _dispatch(
        self, request: Request[msgspec.Raw] | Notification[msgspec.Raw], call: Call
    ) -> bytes | TaskStream:
        """Carry out a request by the generated table: its params decoded, its handler
        called, its result as ProtoJSON (or the stream of a streaming method). A 0.3
        request goes through `call_v03`, and its stream's events are translated."""
        if call.version == V03:
            raw_v03 = None if request.params is msgspec.UNSET else request.params
            answer = await call_v03(self.server, request.method, raw_v03, call)
            if isinstance(answer, TaskStream):
                answer.translate = event_to_v03
            return answer
        method = METHODS.get(request.method)
        if method is None:
            raise MethodNotFound(data={"method": request.method})
        raw = b"{}" if request.params is msgspec.UNSET else bytes(request.params)
        try:
            params = _codec.decode(method.params, raw)
        except _codec.ValidationError as exc:
            raise bad_request((v.field, v.description) for v in exc.violations) from None
        tenant = getattr(params, "tenant", "")
        if tenant and tenant != call.tenant:
            if call.tenant:
                raise bad_request(
                    [("tenant", f"differs from the tenant {call.tenant!r} of the URL")]
                )
            if tenant not in self.server.tenants:  # (a router gives each app its own)
                raise TaskNotFound(f"unknown tenant {tenant!r}", tenant=tenant)
            call = dataclasses.replace(call, tenant=tenant)
        handler: Handler = getattr(self.server, method.handler)
        result = await handler(params, call)
        if isinstance(result, TaskStream):
            return result
        return b"null" if isinstance(result, Empty) else _codec.encode(result)

    # -- SSE ---------------------------------------------------------------------------

    async def _stream(
        self,
        id: RequestId | None,
        stream: TaskStream,
        receive: Receive,
        send: Send,
        extra: list[tuple[bytes, bytes]],
        errors: Callable[[ErrorResponse], bytes],
        in_sse: bool = False,
    ) -> None:
        """Serve one stream: events already queued go out together, in writes of at most
        `_PIECE` bytes (a large event in several), each once the server has room for it
        (uvicorn's `send` waits for the client to read), so a client that does not read
        holds one write, never a copy of its queue; an idle stream gets keep-alive
        comments, also before its first event (an agent slow to start is not taken for
        a dead server); a client that goes away ends it, so does the server's stop
        (`end_streams`). `errors` shapes an error for the client's version; `in_sse`:
        every error is an event of the stream, unnamed (0.3), even before the first."""
        # each event's data is the JSON-RPC answer around its payload (shared bytes)
        envelope = answer_body(id, b"")  # (`{...,"result":}`)
        around = (b"data: " + envelope[:-1], envelope[-1:] + b"\n\n")
        self._streams.add(stream)
        if self._ending:
            stream.cut()
        try:
            try:
                batch = await stream.batch(self.keepalive, _PIECE)
            except RpcError as exc:  # before anything was sent: a plain JSON answer
                body = errors(error_answer(id, exc))
                await (_sse_error if in_sse else _plain)(send, 200, body, extra)
                return
            await send({"type": "http.response.start", "status": 200, "headers": [*_SSE, *extra]})
            watcher = asyncio.create_task(_watch_disconnect(receive, stream))
            try:
                await self._events(batch, stream, around, send)
            except RpcError as exc:  # after the first event: an SSE event with the error
                error = errors(error_answer(id, exc))
                body = (b"data: " if in_sse else b"event: error\ndata: ") + error + b"\n\n"
                with contextlib.suppress(OSError):
                    await send({"type": "http.response.body", "body": body, "more_body": True})
            except OSError:
                pass
            finally:
                watcher.cancel()
                with contextlib.suppress(BaseException):
                    await watcher
            with contextlib.suppress(OSError):
                end = _STOPPING if self._ending else b""
                await send({"type": "http.response.body", "body": end, "more_body": False})
        finally:
            self._streams.discard(stream)
            await stream.aclose()

    async def _events(
        self,
        batch: list[tuple[int | None, bytes]] | None,
        stream: TaskStream,
        around: tuple[bytes, bytes],
        send: Send,
    ) -> None:
        """Write the stream's events from `batch` on until it is over. Cancelled (the
        host gave up waiting for it to end) while it waits for events, it just ends."""
        while batch is not None:
            for piece in _pieces(batch, around) if batch else (_PING,):
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            try:
                batch = await stream.batch(self.keepalive, _PIECE)
            except asyncio.CancelledError:
                # the host stops and cancels the streams it waited for: the stream ends
                # as it would have on `end_streams` (nothing is lost: all is stored)
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()
                return

    def end_streams(self) -> None:
        """The server stops: every open stream ends now, after what it has queued (its
        client resumes with `Last-Event-ID`), and a stream opened from now on ends after
        its first events; a blocking `SendMessage` answers with its task as it stands.
        `interlink a2a serve` calls this when it is told to stop; another host can call
        it from its own shutdown."""
        self._ending = True
        self.server.answer_now()
        for stream in list(self._streams):
            stream.cut()


class _HttpRequest:
    """What authenticators see of a request."""

    def __init__(self, scope: Scope) -> None:
        self.headers = _headers(scope)
        self.query = parse_qs(cast(bytes, scope.get("query_string", b"")).decode("latin-1"))


_REASONS = {
    -32700: "PARSE_ERROR",
    -32600: "INVALID_REQUEST",
    -32601: "METHOD_NOT_FOUND",
    -32602: "INVALID_PARAMS",
    -32603: "INTERNAL_ERROR",
}


def error_body(response: ErrorResponse) -> bytes:
    """A JSON-RPC error as the A2A binding shapes it: `data` is an array of typed
    details whose first is a `google.rpc.ErrorInfo` (the core's errors carry a plain
    object, which becomes the ErrorInfo's metadata)."""
    error = response.error
    if not isinstance(error.data, list):
        metadata: dict[str, str] = {}
        if isinstance(error.data, dict):
            metadata = {
                str(k): v if isinstance(v, str) else msgspec.json.encode(v).decode()
                for k, v in error.data.items()
            }
        reason = _REASONS.get(error.code, "ERROR")
        error = ErrorObject(
            code=error.code, message=error.message, data=error_info(reason, metadata)
        )
        response = ErrorResponse(id=response.id, error=error)
    return encode(response)


def _pieces(batch: list[tuple[int | None, bytes]], around: tuple[bytes, bytes]) -> Iterator[bytes]:
    """The SSE events of `batch` (`id: <seq>`, then `around` its payload: `data: <JSON-RPC
    response>`) in pieces of at most `_PIECE` bytes: small events together, a large one
    cut (its payload is the task's shared bytes, copied a piece at a time)."""
    buffer = bytearray()
    for seq, payload in batch:
        head = around[0]
        if seq is not None:
            head = b"id: %d\n" % seq + head
        if buffer and len(buffer) + len(head) > _PIECE:
            yield bytes(buffer)
            buffer.clear()
        buffer += head
        view = memoryview(payload)
        while len(buffer) + len(view) > _PIECE:
            take = max(_PIECE - len(buffer), 0)
            buffer += view[:take]
            view = view[take:]
            yield bytes(buffer)
            buffer.clear()
        buffer += view
        buffer += around[1]
    if buffer:
        yield bytes(buffer)


async def _watch_disconnect(receive: Receive, stream: TaskStream) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    stream.cut()


async def _read_body(receive: Receive, limit: int, message: Message) -> bytes | None:
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


def _declared_length(scope: Scope) -> int:
    """The request's `Content-Length` (0 when it gives none or one that is no number)."""
    for name, value in cast(list[tuple[bytes, bytes]], scope.get("headers", [])):
        if name.lower() == b"content-length":
            return int(value) if value.isdigit() else 0
    return 0


async def _drop_body(scope: Scope, receive: Receive, limit: int) -> bool | None:
    """Read the request's body and drop it: `True` once read to its end, `False` when it
    is (or says it is) larger than `limit` (reading stops there), `None` when the
    client went away or sent a request the server refused (its answer is given)."""
    if _declared_length(scope) > limit:
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


def _headers(scope: Scope) -> dict[str, str]:
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


async def _sse_error(
    send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    """An error as the one event of an SSE stream (0.3's answer to a streaming call)."""
    headers = [*_SSE, *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"data: " + body + b"\n\n"})


async def _plain(
    send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [*_JSON, (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
