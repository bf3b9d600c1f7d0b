"""The A2A server over HTTP, as a plain ASGI application: the shell its bindings share.

The shell serves the agent card, authenticates, routes each request to the binding
whose route it is (JSON-RPC at `POST {rpc_path}`: `bindings/_jsonrpc`; HTTP+JSON on the
routes of a2a.proto: `bindings/_rest`; tried in that order), reads its body
(bounded: a body declared or found larger than `max_body` is refused at once, in the
binding's own terms, and the connection closes) and writes the answers: plain ones, and
SSE streams whose events each binding frames its own way (`Framing`). An error before a
stream's first event is a plain answer; after it, an SSE event carrying the error, then
the end. Comments keep idle streams alive every `keepalive` seconds. A client that stops
reading does not slow anything: the server holds one write of at most 64 KiB for it
(the events' bytes are shared by every stream of a task), its queue, bounded in events
and bytes, overflows and its stream ends (it resumes with `Last-Event-ID`).
`end_streams()` ends every stream when the server stops. `GET
/.well-known/agent-card.json`: the card, with `Cache-Control`, `ETag` and
`Last-Modified` (its interface made from the request when it lists none: see
`_card_serve`). `A2A-Version` (header or query) and `A2A-Extensions` are checked on
every call (`_calls.build_call`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import cast
from urllib.parse import parse_qs, quote, unquote

import msgspec

from interlink.a2a._card_sign import SigningKey, sign_card
from interlink.a2a._types import AgentCard, AgentInterface
from interlink.a2a.server._asgi import (
    CLOSE,
    NOT_FOUND,
    SSE,
    TENANT_SCOPE_KEY,
    Binding,
    Exchange,
    Framing,
    Handle,
    Headers,
    Message,
    Receive,
    Scope,
    Send,
    drop_body,
    headers_of,
    plain,
    read_body,
    sse_answer,
)
from interlink.a2a.server._auth import Authenticator
from interlink.a2a.server._calls import SUPPORTED_VERSIONS, CardExtensions
from interlink.a2a.server._card_serve import PublishedCard
from interlink.a2a.server._handler import A2AServer
from interlink.a2a.server._push import PushDelivery
from interlink.a2a.server._stream import StreamItem, TaskStream
from interlink.a2a.server.bindings import _rest_v03 as rest_v03
from interlink.a2a.server.bindings._jsonrpc import JsonRpcBinding, error_body
from interlink.a2a.server.bindings._rest import RestBinding
from interlink.a2a.stores._base import TaskStore
from interlink.jsonrpc import RpcError, oversize

__all__ = [
    "DEFAULT_BINDINGS",
    "DEFAULT_MAX_BODY",
    "SUPPORTED_VERSIONS",
    "TENANT_SCOPE_KEY",
    "A2AApp",
    "Binding",
    "Exchange",
    "Framing",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "error_body",
]

logger = logging.getLogger("interlink.a2a")

CARD_PATH = "/.well-known/agent-card.json"
#: the bindings an app serves unless told otherwise, in the card's order of preference
DEFAULT_BINDINGS = ("JSONRPC", "HTTP+JSON")
#: the largest request body an app (or a tenant router) reads unless told otherwise
DEFAULT_MAX_BODY = 16 * 1024 * 1024

_PING = b": keep-alive\n\n"
#: the most bytes of events a stream hands to the server in one write
_PIECE = 64 * 1024
#: the last words of a stream that ends because the server stops: reconnect in 1 s
_STOPPING = b": the server is stopping; resume with Last-Event-ID\nretry: 1000\n\n"


class A2AApp:
    """ASGI application serving one `A2AServer` (mountable under any prefix)."""

    def __init__(
        self,
        server: A2AServer,
        *,
        rpc_path: str = "/",
        max_body: int = DEFAULT_MAX_BODY,
        keepalive: float = 15.0,
        authenticators: Sequence[Authenticator] = (),
        bindings: Sequence[str] = DEFAULT_BINDINGS,
        grpc_url: str | None = None,
    ) -> None:
        self.server = server
        self.rpc_path = rpc_path
        self.max_body = max_body
        self.keepalive = keepalive
        self.authenticators = tuple(authenticators)
        unknown = [b for b in bindings if b not in (*DEFAULT_BINDINGS, "GRPC")]
        if unknown or not bindings:
            raise ValueError(f"bindings: unknown {unknown}; choose among JSONRPC, HTTP+JSON, GRPC")
        order = list(dict.fromkeys(bindings))
        if grpc_url is not None and "GRPC" not in order:
            order.append("GRPC")
        if "GRPC" in order and grpc_url is None:
            raise ValueError("the GRPC binding is served elsewhere: give its grpc_url")
        where = {"JSONRPC": rpc_path, "HTTP+JSON": "", "GRPC": grpc_url or ""}
        #: the card's interfaces when it lists none: (binding, path or URL), preferred first
        self.interfaces = tuple((name, where[name]) for name in order)
        served: dict[str, Binding] = {
            "JSONRPC": JsonRpcBinding(rpc_path),
            "HTTP+JSON": RestBinding(legacy=rest_v03.route),
        }
        #: the bindings this app serves, JSON-RPC first (its path may be any)
        self.bindings: tuple[Binding, ...] = tuple(
            served[name] for name in DEFAULT_BINDINGS if name in order
        )
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

    def list_grpc(self, url: str) -> None:
        """List the gRPC interface at `url` (`host:port`, where a gRPC server sharing
        this app's `A2AServer` listens) on the card, after the HTTP ones: among the
        interfaces made from each request, or after those the card lists itself."""
        card = self.server.card
        if card.supported_interfaces:
            grpc = AgentInterface(url=url, protocol_binding="GRPC", protocol_version="1.0")
            kept = [i for i in card.supported_interfaces if i.protocol_binding != "GRPC"]
            self.server.card = msgspec.structs.replace(card, supported_interfaces=[*kept, grpc])
        else:
            self.interfaces = (*(i for i in self.interfaces if i[0] != "GRPC"), ("GRPC", url))
        self._publish(self.server.card)

    def sign_cards(self, key: SigningKey) -> None:
        """Sign the card as served (each variant made from requests too) and the
        extended card with `key` (before the app starts)."""
        self._signer = key
        extended = self.server.extended_card
        if extended is not None:
            self.server.extended_card = sign_card(extended, key)
        self._publish(self.server.card)

    def _publish(self, card: AgentCard) -> None:
        self.published = PublishedCard(
            card, self.rpc_path, self._signer, interfaces=self.interfaces
        )
        self.extensions = CardExtensions.of(card)

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
            method = cast(str, scope["method"])
            raw = _raw_path(scope, root, path)
            for binding in self.bindings:
                handle = binding.route(method, raw)
                if handle is not None:
                    await self._serve(binding, handle, scope, receive, send)
                    return
            # answered once the request is read (and dropped): a request whose body
            # breaks HTTP is then known as such (the server answers it 400) before we
            # answer it too
            whole = await drop_body(scope, receive, self.max_body)
            if whole is None:
                return  # the client went away or broke the request
            extra = [] if whole else [CLOSE]
            if path == CARD_PATH and method in ("GET", "HEAD"):
                await self._card_response(scope, send, extra)
            else:
                await plain(send, 404, NOT_FOUND, extra)

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

    async def _card_response(self, scope: Scope, send: Send, extra: Headers) -> None:
        status, headers, body = self.published.response(scope, headers_of(scope))
        await send({"type": "http.response.start", "status": status, "headers": [*headers, *extra]})
        await send({"type": "http.response.body", "body": body})

    # -- a request of a binding -----------------------------------------------------------

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

    async def _serve(
        self,
        binding: Binding,
        handle: Handle,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        headers = headers_of(scope)
        length = headers.get("content-length", "")
        declared = int(length) if length.isdigit() else 0
        if declared > self.max_body:  # refused at once, before its body comes
            status, refusal = binding.refuse(oversize(declared, self.max_body).error)
            await plain(send, status, refusal, [CLOSE])
            return
        principal = await self._authenticate(scope) if self.authenticators else ""
        if principal is None:
            whole = await drop_body(scope, receive, self.max_body)
            if whole is None:
                return
            challenge = ", ".join(a.challenge() for a in self.authenticators).encode()
            await plain(
                send,
                401,
                b'{"error":"authentication required"}',
                [(b"www-authenticate", challenge), *([] if whole else [CLOSE])],
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
            body = await read_body(receive, self.max_body, first)
        if body is None:  # (the rest of it is not read: the connection closes)
            status, answer = binding.refuse(oversize(self.max_body + 1, self.max_body).error)
            await plain(send, status, answer, [CLOSE])
            return
        exchange = Exchange(self, scope, receive, send, headers, principal)
        await handle(exchange, body)

    # -- SSE ---------------------------------------------------------------------------

    async def stream(
        self, exchange: Exchange, stream: TaskStream, framing: Framing, extra: Headers
    ) -> None:
        """Serve one stream: events already queued go out together, in writes of at most
        `_PIECE` bytes (a large event in several), each once the server has room for it
        (uvicorn's `send` waits for the client to read), so a client that does not read
        holds one write, never a copy of its queue; an idle stream gets keep-alive
        comments, also before its first event (an agent slow to start is not taken for
        a dead server); a client that goes away ends it, so does the server's stop
        (`end_streams`)."""
        send = exchange.send
        self._streams.add(stream)
        if self._ending:
            stream.cut()
        try:
            try:
                batch = await stream.batch(self.keepalive, _PIECE)
            except RpcError as exc:  # before anything was sent: a plain answer
                if framing.errors_in_stream:
                    await sse_answer(send, framing.error_event(exc), extra)
                    return
                status, body = framing.error(exc)
                await plain(send, status, body, extra)
                return
            await send({"type": "http.response.start", "status": 200, "headers": [*SSE, *extra]})
            watcher = asyncio.create_task(_watch_disconnect(exchange.receive, stream))
            try:
                await self._events(batch, stream, framing.around, send)
            except RpcError as exc:  # after the first event: an SSE event with the error
                body = framing.error_event(exc)
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
        batch: list[StreamItem] | None,
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


def _raw_path(scope: Scope, root: str, path: str) -> str:
    """The request's path below the app's `root` as it was sent (percent-encoded, so
    a `/` inside a path segment stays `%2F`); from the decoded `path` when the server
    gives no `raw_path` or one that does not begin with the root."""
    raw = scope.get("raw_path")
    if isinstance(raw, bytes):
        text = raw.decode("latin-1").partition("?")[0]
        if root:
            base = root.rstrip("/")
            after = text[len(base) : len(base) + 1]
            if after in ("/", "") and text.startswith(base) and "%" not in base:
                return text[len(base) :] or "/"  # (the root as it was sent)
            depth = base.count("/")
            parts = text.split("/")
            if unquote("/".join(parts[: depth + 1])) == base:
                return "/" + "/".join(parts[depth + 1 :])
        elif unquote(text) == path:
            return text
    return quote(path, safe="/:@!$&'()*+,;=-._~")


class _HttpRequest:
    """What authenticators see of a request."""

    def __init__(self, scope: Scope) -> None:
        self.headers = headers_of(scope)
        self.query = parse_qs(cast(bytes, scope.get("query_string", b"")).decode("latin-1"))


def _pieces(batch: list[StreamItem], around: tuple[bytes, bytes]) -> Iterator[bytes]:
    """The SSE events of `batch` (`id: <seq>`, then `around` its payload: `data: <JSON-RPC
    response>`) in pieces of at most `_PIECE` bytes: small events together, a large one
    cut (its payload is the task's shared bytes, copied a piece at a time)."""
    buffer = bytearray()
    for seq, payload, _ in batch:
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
