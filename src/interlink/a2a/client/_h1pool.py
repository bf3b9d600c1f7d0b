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

Reuse. A connection whose answer was read to its end and may be kept alive goes to the
first call waiting for one of its origin, else back to its origin's idle list (the most
recent last, `max_idle` kept). An idle connection is taken again only within
`keepalive_expiry` of the last byte it read (not of when its reader let it go: the
server's idle clock started when it wrote that byte), and only if it saw neither EOF nor
stray bytes: the loop's word, and, on every reuse, a zero-timeout poll of the socket
(the server's FIN may not have been read yet). If a reused connection still turns out
closed (EOF or reset before any byte of the answer), the request is sent again on a new
connection only when its method is safe (GET, HEAD, OPTIONS, TRACE): the server did
nothing for a safe request. A POST is not resent: the server may have acted on it (a
`SendMessage` twice is two turns), and the error (`RemoteProtocolError`, "server
disconnected without sending a response") goes to the caller, as with httpx, whose pool
resends nothing once written.

The expiry is what keeps that rare: a POST written as the server closes its idle side
is lost. Servers' idle close: gunicorn 2 s, uvicorn 5 s, Node's http 5 s, nginx 75 s,
httpx's own pool 5 s. `KEEPALIVE_EXPIRY` is 1 s, half the shortest (at 2 against 2 the
two ends race); a connection idle longer is closed, and a timer sweeps every origin's
expired idle connections, so an origin not asked again keeps no socket open.

Limits. At most `max_connections` connections per origin are open or being opened
(httpx allows 100 in all, keeps 20 idle); a call past them waits, in order, for one to
come back or close, within the pool's `timeout` (`PoolTimeout`). A waiter cancelled
once given a connection or a slot passes it to the next one. `aclose` closes every
connection and stops the connects in flight; a call waiting or connecting then fails
at once (`PoolClosed`), and a body cut by it is a `ReadError`, never an end (a body
framed by EOF would otherwise seem whole).

Hosts. A name goes out IDNA-encoded (its A-label, in `Host` and for the connect, as
httpx has it); an IPv6 literal's zone id (`[fe80::1%25eth0]`, or the bare `%eth0`) is
connected to as `fe80::1%eth0` and written `%25` in `Host` (RFC 6874).

Buffers are bounded: the parser holds at most the head bounds, and reading pauses while
more than `HIGH_WATER` bytes wait for the reader. HTTPS verifies by default (certifi's
bundle, as httpx has it); proxies are not spoken.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import os
import re
import select
import ssl
from collections.abc import AsyncIterator, Iterable
from typing import Final, cast
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

import idna

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
    "MAX_CONNECTIONS",
    "ConnectError",
    "ConnectTimeout",
    "Headers",
    "Pool",
    "PoolClosed",
    "PoolTimeout",
    "ReadError",
    "ReadTimeout",
    "Response",
    "WriteError",
    "WriteTimeout",
]

KEEPALIVE_EXPIRY: Final = 1.0
"""Seconds an idle pooled connection is kept for reuse, counted from the last byte read
(see the module: half the shortest common server keep-alive, gunicorn's 2 s)."""
MAX_CONNECTIONS: Final = 100
"""Connections open (or being opened) to one origin at most: httpx's total limit."""
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


class PoolTimeout(HttpError):
    """Every connection the origin may have was busy for the whole pool timeout."""


class PoolClosed(HttpError, RuntimeError):
    """The pool was closed: before the request, or while it waited or connected."""


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
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # (a bracketed host that is no IPv6 address)
        raise ConnectError(f"invalid URL {url!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ConnectError(f"unsupported URL scheme in {url!r}")
    if not parts.hostname:
        raise ConnectError(f"no host in {url!r}")
    default = 443 if scheme == "https" else 80
    try:
        port = parts.port or default
    except ValueError:  # (not a number, or out of range)
        raise ConnectError(f"invalid port in {url!r}") from None
    host, shown = _host(parts.netloc, parts.hostname, url)
    authority = shown if port == default else f"{shown}:{port}"
    path = quote(parts.path or "/", safe=_PATH_SAFE)  # (what is escaped already stays)
    target = path + (f"?{quote(parts.query, safe=_PATH_SAFE + '?')}" if parts.query else "")
    bare = f"{scheme}://{authority}{path}"
    return (scheme, host, port), target, authority, bare


_ZONE = re.compile(r"[A-Za-z0-9._~-]+")


def _host(netloc: str, hostname: str, url: str) -> tuple[str, str]:
    """The host to connect to, and as `Host` shows it: a name IDNA-encoded (its A-label,
    in both), an IPv6 literal in brackets, its zone id (`fe80::1%eth0`, or RFC 6874's
    `%25eth0`) with the `%` escaped as `%25` in `Host`."""
    if netloc.rpartition("@")[2].startswith("["):  # (urlsplit checked the address)
        literal = netloc.rpartition("@")[2][1:].partition("]")[0]
        address, percent, zone = literal.partition("%")
        if not percent:
            return hostname, f"[{hostname}]"
        zone = unquote(zone[2:]) if zone.startswith("25") else zone
        if not _ZONE.fullmatch(zone):
            raise ConnectError(f"invalid IPv6 zone id in {url!r}")
        address = address.lower()
        return f"{address}%{zone}", f"[{address}%25{zone}]"
    if hostname.isascii():
        return hostname, hostname
    try:
        encoded = idna.encode(hostname, uts46=True).decode("ascii")
    except idna.IDNAError as exc:
        raise ConnectError(f"invalid host name in {url!r}: {exc}") from None
    return encoded, encoded


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

    def __init__(self, loop: asyncio.AbstractEventLoop, home: _Origin) -> None:
        self.loop = loop
        self.home = home
        self.transport: asyncio.Transport | None = None
        self.parser: ResponseParser | None = None
        self.last_read = 0.0  # (the loop's time of the last bytes read)
        self.idle_since = 0.0
        self.closed = False  # EOF read, connection lost, stray bytes, or closed by us
        self.closed_by_us = False
        self._lost: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        self._writable = True
        self._drained: asyncio.Future[None] | None = None

    # -- asyncio.Protocol --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # (uvloop's is no subclass)

    def data_received(self, data: bytes) -> None:
        self.last_read = self.loop.time()
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
        if not self.closed:
            self.closed_by_us = True
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
                if self.closed_by_us:  # (never an end: a body up to EOF would seem whole)
                    raise ReadError("the connection was closed by this client mid-answer")
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
        self._ended = False

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
        while (conn := self._conn) is not None or not self._ended:
            if conn is None:
                raise ReadError("the answer was closed by this client before its end")
            try:
                event = await conn.next_event(within)
            except ReadTimeout:
                if not idle:
                    raise
                raise TimeoutError(f"no event or keep-alive for {within} s") from None
            if event is END:
                self._ended = True
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
                self._ended = True
                self._pool._release(conn)
            else:
                self._pool._discard(conn)


class _Origin:
    """One origin's connections: the idle ones (the most recent last), how many are
    open or being opened (`count`, at most the pool's `max_connections`), and the calls
    waiting for one, in order (each future gets a connection given back, or None: a
    slot to open one with)."""

    __slots__ = ("count", "idle", "waiters")

    def __init__(self) -> None:
        self.idle: list[_Connection] = []
        self.count = 0
        self.waiters: collections.deque[asyncio.Future[_Connection | None]] = collections.deque()


class Pool:
    """Keep-alive connections per origin (see the module)."""

    def __init__(
        self,
        timeout: float | None = 60.0,
        connect_timeout: float | None = 10.0,
        *,
        keepalive_expiry: float = KEEPALIVE_EXPIRY,
        max_idle: int = 20,
        max_connections: int = MAX_CONNECTIONS,
        ssl_context: ssl.SSLContext | None = None,
        max_head: int = MAX_HEAD,
        max_body: int = MAX_BODY,
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.keepalive_expiry = keepalive_expiry
        self.max_idle = max_idle
        self.max_connections = max_connections
        self.max_head = max_head
        self.max_body = max_body
        self._ssl = ssl_context
        self._origins: dict[Origin, _Origin] = {}
        self._all: set[_Connection] = set()
        self._sweeper: asyncio.TimerHandle | None = None
        self._closed = False
        #: the connects in flight (`aclose` stops them)
        self._connecting: set[asyncio.Task[tuple[asyncio.Transport, _Connection]]] = set()

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
            raise PoolClosed("the HTTP pool is closed")
        origin, target, authority, bare = _split(url)
        data = request_bytes(method, _with_query(target, query), authority, headers, body)
        read_timeout = None if stream else self.timeout
        max_body = None if stream else self.max_body
        while True:
            conn, reused = await self._acquire(origin)
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
        """A connection to `origin` (reused: True), open and with nothing unread."""
        if self._closed:
            raise PoolClosed("the HTTP pool is closed")
        home = self._origins.get(origin)
        if home is None:
            home = self._origins[origin] = _Origin()
        idle = home.idle
        if idle:
            now = asyncio.get_running_loop().time()
            while idle:
                conn = idle.pop()
                if self._reusable(conn, now):
                    return conn, True
                self._discard(conn)
        if home.count < self.max_connections and not home.waiters:
            home.count += 1
            return await self._connect(origin, home), False
        return await self._wait(origin, home)

    def _reusable(self, conn: _Connection, now: float) -> bool:
        return now - conn.idle_since < self.keepalive_expiry and conn.usable()

    async def _wait(self, origin: Origin, home: _Origin) -> tuple[_Connection, bool]:
        """A connection given back, or a slot to open one, when `home` is full: in the
        order asked, within the pool's timeout (`PoolTimeout`)."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[_Connection | None] = loop.create_future()
        home.waiters.append(waiter)
        timeout = self.timeout
        handle = None if timeout is None else loop.call_later(timeout, _no_slot, waiter, timeout)
        try:
            got = await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._pass_on(home, waiter.result())  # (given, then cancelled: not lost)
            else:
                with contextlib.suppress(ValueError):
                    home.waiters.remove(waiter)
            raise
        finally:
            if handle is not None:
                handle.cancel()
        if got is not None:
            if self._reusable(got, loop.time()):
                return got, True
            got.close()  # (its slot is ours: a new connection in its place)
            self._all.discard(got)
        if self._closed:
            self._free(home)
            raise PoolClosed("the HTTP pool was closed while the request waited")
        return await self._connect(origin, home), False

    async def _connect(self, origin: Origin, home: _Origin) -> _Connection:
        """A new connection, on the slot of `home` taken for it (given back on failure)."""
        scheme, host, port = origin
        loop = asyncio.get_running_loop()
        context = (self._ssl or _default_ssl()) if scheme == "https" else None
        # (a task of its own, which `aclose` stops: the caller is not cancelled by it)
        job = asyncio.ensure_future(
            loop.create_connection(
                lambda: _Connection(loop, home),
                host,
                port,
                ssl=context,
                server_hostname=host if context is not None else None,
            )
        )
        self._connecting.add(job)
        caller = asyncio.current_task()
        # (a cancel of the caller itself counts from here: one it swallowed before does not)
        cancels = caller.cancelling() if caller is not None else 0
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, conn = await job
        except asyncio.CancelledError:
            self._free(home)
            _close_made(job)
            by_caller = caller is not None and caller.cancelling() > cancels
            if job.cancelled() and self._closed and not by_caller:
                raise PoolClosed("the HTTP pool was closed while the connection was made") from None
            raise
        except TimeoutError:
            self._free(home)
            _close_made(job)
            raise ConnectTimeout(
                f"no connection to {host}:{port} in {self.connect_timeout} s"
            ) from None
        except OSError as exc:  # (refused, unreachable, name unknown, TLS refused)
            self._free(home)
            raise ConnectError(f"{host}:{port}: {exc}") from exc
        except BaseException:
            self._free(home)
            raise
        finally:
            self._connecting.discard(job)
        if self._closed:  # (closed as the connect ended: never used, never leaked)
            conn.close()
            self._free(home)
            raise PoolClosed("the HTTP pool was closed while the connection was made")
        self._all.add(conn)
        return conn

    def _release(self, conn: _Connection) -> None:
        """An answer read to its end: its connection to the first waiter, or idle."""
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
        conn.idle_since = conn.last_read
        home = conn.home
        if self._hand(home, conn):
            return
        idle = home.idle
        loop = asyncio.get_running_loop()
        now = loop.time()
        while idle and (
            now - idle[0].idle_since >= self.keepalive_expiry or len(idle) >= self.max_idle
        ):
            self._discard(idle.pop(0))
        idle.append(conn)
        if self._sweeper is None:
            self._sweeper = loop.call_at(conn.idle_since + self.keepalive_expiry, self._sweep)

    @staticmethod
    def _hand(home: _Origin, given: _Connection | None) -> bool:
        """`given` (a connection, or None: a slot) to the first call still waiting."""
        waiters = home.waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(given)
                return True
        return False

    def _pass_on(self, home: _Origin, given: _Connection | None) -> None:
        """What a waiter was given and cannot use (it was cancelled) to the next one."""
        if given is None:
            self._free(home)
        elif not self._hand(home, given):
            self._discard(given)

    def _free(self, home: _Origin) -> None:
        """A slot of `home` given back: to the first waiter, else counted free."""
        if not self._hand(home, None):
            home.count -= 1

    def _discard(self, conn: _Connection) -> None:
        conn.close()
        if conn in self._all:
            self._all.discard(conn)
            self._free(conn.home)

    def _sweep(self) -> None:
        """Every origin's expired idle connections closed (a timer, set while some are
        idle: an origin not asked again keeps no socket open)."""
        self._sweeper = None
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        now, expiry = loop.time(), self.keepalive_expiry
        soonest: float | None = None
        for origin, home in list(self._origins.items()):
            idle = home.idle
            while idle and now - idle[0].idle_since >= expiry:
                self._discard(idle.pop(0))
            if idle:
                due = idle[0].idle_since + expiry
                soonest = due if soonest is None else min(soonest, due)
            elif not home.count and not home.waiters:
                del self._origins[origin]
        if soonest is not None:
            self._sweeper = loop.call_at(soonest, self._sweep)

    async def aclose(self) -> None:
        """Closes every connection: a call waiting for one, or connecting, or reading,
        fails (`PoolClosed`, or `ReadError` mid-answer); none is used after."""
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for home in self._origins.values():
            home.idle.clear()
            while home.waiters:
                waiter = home.waiters.popleft()
                if not waiter.done():
                    waiter.set_exception(PoolClosed("the HTTP pool was closed"))
        for job in list(self._connecting):
            job.cancel()  # (its caller fails with `PoolClosed`)
        for conn in list(self._all):
            self._discard(conn)
        with contextlib.suppress(Exception):
            await asyncio.sleep(0)  # (let the transports close)


def _close_made(job: asyncio.Task[tuple[asyncio.Transport, _Connection]]) -> None:
    """Close the connection of a connect that ended as its caller stopped waiting."""
    if job.done() and not job.cancelled() and job.exception() is None:
        job.result()[0].close()


def _no_slot(waiter: asyncio.Future[_Connection | None], timeout: float) -> None:
    if not waiter.done():
        waiter.set_exception(PoolTimeout(f"no connection came free in {timeout} s"))
