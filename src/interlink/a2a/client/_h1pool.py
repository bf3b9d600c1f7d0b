"""The A2A client's own HTTP/1.1 client: `_h1`'s parser driven by an asyncio Protocol,
with a keep-alive pool of connections per origin.

`Pool.request(method, url, headers, body)` sends one request and gives the `Response`
once its head has come; `stream=False` reads the body too (at most `MAX_BODY` bytes),
`stream=True` leaves it to `Response.aiter_bytes` / `chunks` and `aclose`.

Timeouts, as the httpx client had them: `connect_timeout` for the TCP (and TLS)
connect, `timeout` for every write and for every wait for the next bytes of the answer
(`read_timeout=None`: no bound, for streams, whose silence their reader counts); they
raise `ConnectTimeout`, `WriteTimeout` and `ReadTimeout`, which are `HttpError`s (not
`TimeoutError`). A refused or lost connection is `ConnectError` / `ReadError`.

Reuse. A connection whose answer was read to its end and may be kept alive goes back to
its origin's idle list (the most recent first, `max_idle` kept); it is taken again only
within `keepalive_expiry` of its last answer, and only if the connection saw neither
EOF nor stray bytes (the loop's word, and a zero-timeout poll of the socket, since the
server's FIN may not have been read yet). If a reused connection still turns out closed
(EOF or reset before any byte of the answer), the request is sent again on a new
connection only when its method is safe (GET, HEAD, OPTIONS, TRACE): the server did
nothing for a safe request. A POST is not resent: the server may have acted on it
(a `SendMessage` twice is two turns), and the error (`RemoteProtocolError`, "server
disconnected without sending a response") goes to the caller, as with httpx, whose
pool resends nothing once written. The expiry, below the servers' idle close, is what
keeps that rare.

Buffers are bounded: the parser holds at most the head bounds, and reading pauses while
more than `HIGH_WATER` bytes wait for the reader. HTTPS verifies by default (certifi's
bundle, as httpx has it); proxies are not spoken.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import select
import ssl
from collections.abc import AsyncIterator, Iterable
from typing import Final, cast
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from interlink.a2a.client._h1 import (
    END,
    MAX_BODY,
    MAX_HEAD,
    NEED_DATA,
    Head,
    HttpError,
    RemoteProtocolError,
    ResponseParser,
    State,
    request_bytes,
)

__all__ = [
    "HIGH_WATER",
    "KEEPALIVE_EXPIRY",
    "ConnectError",
    "ConnectTimeout",
    "Headers",
    "Pool",
    "ReadError",
    "ReadTimeout",
    "Response",
    "WriteError",
    "WriteTimeout",
]

KEEPALIVE_EXPIRY: Final = 2.0
"""Seconds an idle pooled connection is kept for reuse. Below the idle close of the
servers agents run on (uvicorn and Node's http both close after 5 s, httpx's own default):
at 5 against 5, a request sent as the server closes its end fails with a `ReadError`."""
HIGH_WATER: Final = 256 * 1024
"""Bytes read and not yet taken by the reader above which reading pauses."""
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
Origin = tuple[str, str, int]


class ConnectError(HttpError):
    """The connection could not be made (refused, name unknown, TLS refused)."""


class ConnectTimeout(HttpError):
    pass


class ReadError(HttpError):
    """The connection broke while the answer was awaited."""


class WriteError(HttpError):
    pass


class ReadTimeout(HttpError):
    pass


class WriteTimeout(HttpError):
    pass


class Headers:
    """An answer's headers: `get` by name in any case (several values: joined by ", ")."""

    __slots__ = ("raw",)

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self.raw = raw  # (names lower-cased)

    def get(self, name: str, default: str = "") -> str:
        key = name.lower().encode()
        values = [value for n, value in self.raw if n == key]
        if not values:
            return default
        return b", ".join(values).decode("latin-1")

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and any(n == name.lower().encode() for n, _ in self.raw)

    def __getitem__(self, name: str) -> str:
        if name not in self:
            raise KeyError(name)
        return self.get(name)


@functools.lru_cache(maxsize=256)
def _split(url: str) -> tuple[Origin, str, str, str]:
    """The origin, the target (path and query), the `Host` and the URL without its query."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ConnectError(f"unsupported URL scheme in {url!r}")
    host = parts.hostname
    if not host:
        raise ConnectError(f"no host in {url!r}")
    default = 443 if scheme == "https" else 80
    try:
        port = parts.port or default
    except ValueError:  # (not a number, or out of range)
        raise ConnectError(f"invalid port in {url!r}") from None
    shown = f"[{host}]" if ":" in host else host
    authority = shown if port == default else f"{shown}:{port}"
    path = quote(parts.path or "/", safe=_PATH_SAFE)  # (what is escaped already stays)
    target = path + (f"?{quote(parts.query, safe=_PATH_SAFE + '?')}" if parts.query else "")
    bare = f"{scheme}://{authority}{path}"
    return (scheme, host, port), target, authority, bare


def _with_query(target: str, query: Iterable[tuple[str, str]]) -> str:
    """`target` with parameters added, as `httpx.URL.copy_merge_params` merges them (a
    name already in the query gets the new values, where it was)."""
    extra = list(query)
    if not extra:
        return target
    path, _, old = target.partition("?")
    merged: dict[str, list[str]] = {}
    for name, value in parse_qsl(old, keep_blank_values=True):
        merged.setdefault(name, []).append(value)
    new: dict[str, list[str]] = {}
    for name, value in extra:
        new.setdefault(name, []).append(value)
    merged.update(new)
    return f"{path}?{urlencode([(n, v) for n, values in merged.items() for v in values])}"


_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
"""What a path may hold unescaped (RFC 3986 pchar and `/`, and `%` of an escape)."""


def _poll_readable(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def _select_readable(fd: int) -> bool:  # pragma: no cover (where there is no poll)
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


_readable = _poll_readable if hasattr(select, "poll") else _select_readable
"""Whether `fd` has something to read now (poll: no limit on descriptor numbers, as
select has at 1024)."""


@functools.cache
def _default_ssl() -> ssl.SSLContext:
    """Verifying, with the CA bundle of `SSL_CERT_FILE`/`SSL_CERT_DIR` where the
    environment names one (as httpx's default does), else certifi's."""
    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    if cafile or capath:
        context = ssl.create_default_context(cafile=cafile or None, capath=capath or None)
    else:
        try:
            import certifi

            context = ssl.create_default_context(cafile=certifi.where())
        except ImportError:  # pragma: no cover (httpx brings certifi)
            context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


class _Connection(asyncio.Protocol):
    """One connection: feeds what it reads into the parser of the answer awaited."""

    def __init__(self, loop: asyncio.AbstractEventLoop, origin: Origin) -> None:
        self.loop = loop
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.parser: ResponseParser | None = None
        self.idle_since = 0.0
        self.closed = False  # EOF read, connection lost, stray bytes, or closed by us
        self._lost: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        self._writable = True
        self._drained: asyncio.Future[None] | None = None

    # -- asyncio.Protocol --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # (uvloop's is no subclass)

    def data_received(self, data: bytes) -> None:
        parser = self.parser
        if parser is None:  # (bytes nobody asked for: the connection is not reusable)
            self.close()
            return
        parser.feed(data)
        if parser.buffered > HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool | None:
        self.closed = True
        if self.parser is not None:
            self.parser.feed_eof()
        self._wake()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed and self.parser is not None:
            self.parser.feed_eof()
        self.closed = True
        self._lost = exc
        self._wake()
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_exception(WriteError(f"connection lost: {exc!r}"))

    def pause_writing(self) -> None:
        self._writable = False

    def resume_writing(self) -> None:
        self._writable = True
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- used by the pool ----------------------------------------------------------------

    def usable(self) -> bool:
        """Whether an idle connection may carry another request: not closed, and its
        socket has nothing to read (what an idle connection reads is EOF, or junk)."""
        transport = self.transport
        if self.closed or transport is None or transport.is_closing():
            return False
        sock = transport.get_extra_info("socket")
        if sock is None:
            return True
        try:
            return not _readable(sock.fileno())
        except (OSError, ValueError):
            return False

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()
        self._wake()

    async def send(self, data: bytes, parser: ResponseParser, within: float | None) -> None:
        if self.closed or self.transport is None:
            raise WriteError("the connection is closed")
        self.parser = parser
        self.transport.write(data)
        if not self._writable:
            self._drained = self.loop.create_future()
            await self._wait(self._drained, within, WriteTimeout)

    async def next_event(self, within: float | None) -> Head | bytes | object:
        """The parser's next event, waiting up to `within` seconds for each read."""
        parser = self.parser
        assert parser is not None
        while True:
            event = parser.next_event()
            if event is not NEED_DATA:
                if self._paused and parser.buffered < HIGH_WATER // 2:
                    self._resume()
                return event
            if self._paused:
                self._resume()
            if self.closed:  # (the parser saw EOF, or we closed: it says which)
                if self._lost is not None and not parser.received:
                    raise ReadError(f"connection lost: {self._lost!r}")
                parser.feed_eof()
                continue
            self._waiter = self.loop.create_future()
            try:
                await self._wait(self._waiter, within, ReadTimeout)
            finally:
                self._waiter = None

    def _resume(self) -> None:
        self._paused = False
        if self.transport is not None:
            self.transport.resume_reading()

    async def _wait(
        self, future: asyncio.Future[None], within: float | None, error: type[HttpError]
    ) -> None:
        if within is None:
            await future
            return
        handle = self.loop.call_later(within, _expire, future, error, within)
        try:
            await future
        finally:
            handle.cancel()


def _expire(future: asyncio.Future[None], error: type[HttpError], timeout: float) -> None:
    if not future.done():
        future.set_exception(error(f"nothing for {timeout} s"))


class Response:
    """An answer: its status and headers, its body read whole (`content`, after
    `aread`) or as it comes (`aiter_bytes`, `chunks`). `aclose` gives the connection
    back when the body was read to its end, else closes it."""

    def __init__(
        self,
        pool: Pool,
        conn: _Connection,
        head: Head,
        url: str,
        read_timeout: float | None,
    ) -> None:
        self.status_code = head.status
        self.headers = Headers(head.headers)
        self.url = url
        """The URL asked, without its query (an API key may be in it)."""
        self.content = b""
        self._pool = pool
        self._conn: _Connection | None = conn
        self._read_timeout = read_timeout

    @property
    def text(self) -> str:
        """The body read, as UTF-8."""
        return self.content.decode("utf-8", "replace")

    async def aread(self) -> bytes:
        parts = [chunk async for chunk in self.aiter_bytes()]
        self.content = b"".join(parts)
        return self.content

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body as it comes, each read within the read timeout (`ReadTimeout`)."""
        return self._chunks(self._read_timeout, idle=False)

    def chunks(self, idle: float | None) -> AsyncIterator[bytes]:
        """The body as it comes; `TimeoutError` when no byte comes for `idle` seconds."""
        return self._chunks(idle, idle=True)

    async def _chunks(self, within: float | None, *, idle: bool) -> AsyncIterator[bytes]:
        while (conn := self._conn) is not None:
            try:
                event = await conn.next_event(within)
            except ReadTimeout:
                if not idle:
                    raise
                raise TimeoutError(f"no event or keep-alive for {within} s") from None
            if event is END:
                self._release()
                return
            assert isinstance(event, bytes)
            yield event

    def _release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._pool._release(conn)

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            parser = conn.parser
            if parser is not None and parser.state is State.DONE:
                self._pool._release(conn)
            else:
                self._pool._discard(conn)


class Pool:
    """Keep-alive connections per origin (see the module)."""

    def __init__(
        self,
        timeout: float | None = 60.0,
        connect_timeout: float | None = 10.0,
        *,
        keepalive_expiry: float = KEEPALIVE_EXPIRY,
        max_idle: int = 20,
        ssl_context: ssl.SSLContext | None = None,
        max_head: int = MAX_HEAD,
        max_body: int = MAX_BODY,
    ) -> None:
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.keepalive_expiry = keepalive_expiry
        self.max_idle = max_idle
        self.max_head = max_head
        self.max_body = max_body
        self._ssl = ssl_context
        self._idle: dict[Origin, list[_Connection]] = {}
        self._all: set[_Connection] = set()
        self._closed = False

    async def request(
        self,
        method: str,
        url: str,
        headers: list[tuple[bytes, bytes]],
        body: bytes | None = None,
        query: Iterable[tuple[str, str]] = (),
        *,
        stream: bool = False,
    ) -> Response:
        """The answer to one request, its head read (its body too unless `stream`)."""
        if self._closed:
            raise RuntimeError("the HTTP pool is closed")
        origin, target, authority, bare = _split(url)
        data = request_bytes(method, _with_query(target, query), authority, headers, body)
        read_timeout = None if stream else self.timeout
        max_body = None if stream else self.max_body
        while True:
            conn, reused = await self._acquire(origin)
            if conn.closed:  # (closed since it was taken: nothing was sent on it)
                self._discard(conn)
                continue
            parser = ResponseParser(method, max_head=self.max_head, max_body=max_body)
            try:
                await conn.send(data, parser, self.timeout)
                head = await conn.next_event(read_timeout)
            except (ReadError, WriteError, RemoteProtocolError):
                self._discard(conn)
                if reused and not parser.received and method in SAFE_METHODS:
                    continue  # (a stale connection: the server did nothing; a new one)
                raise
            except BaseException:
                self._discard(conn)
                raise
            assert isinstance(head, Head)
            response = Response(self, conn, head, bare, read_timeout)
            if not stream:
                try:
                    await response.aread()
                finally:
                    await response.aclose()
            return response

    async def _acquire(self, origin: Origin) -> tuple[_Connection, bool]:
        idle = self._idle.get(origin)
        if idle:
            now = asyncio.get_running_loop().time()
            while idle:
                conn = idle.pop()
                if now - conn.idle_since < self.keepalive_expiry and conn.usable():
                    conn.parser = None
                    return conn, True
                self._discard(conn)
        return await self._connect(origin), False

    async def _connect(self, origin: Origin) -> _Connection:
        scheme, host, port = origin
        loop = asyncio.get_running_loop()
        context = (self._ssl or _default_ssl()) if scheme == "https" else None
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, conn = await loop.create_connection(
                    lambda: _Connection(loop, origin),
                    host,
                    port,
                    ssl=context,
                    server_hostname=host if context is not None else None,
                )
        except TimeoutError:
            raise ConnectTimeout(
                f"no connection to {host}:{port} in {self.connect_timeout} s"
            ) from None
        except OSError as exc:  # (refused, unreachable, name unknown, TLS refused)
            raise ConnectError(f"{host}:{port}: {exc}") from exc
        self._all.add(conn)
        return conn

    def _release(self, conn: _Connection) -> None:
        parser = conn.parser
        if (
            self._closed
            or conn.closed
            or parser is None
            or not parser.keep_alive
            or parser.buffered
        ):
            # (bytes past the answer's end: not an answer to the next request)
            self._discard(conn)
            return
        conn.parser = None
        now = asyncio.get_running_loop().time()
        conn.idle_since = now
        idle = self._idle.setdefault(conn.origin, [])
        while idle and (
            now - idle[0].idle_since >= self.keepalive_expiry or len(idle) >= self.max_idle
        ):
            self._discard(idle.pop(0))
        idle.append(conn)

    def _discard(self, conn: _Connection) -> None:
        conn.close()
        self._all.discard(conn)

    async def aclose(self) -> None:
        self._closed = True
        self._idle.clear()
        for conn in list(self._all):
            self._discard(conn)
        with contextlib.suppress(Exception):
            await asyncio.sleep(0)  # (let the transports close)
