"""The A2A client's own HTTP/1.1 pool (`client._h1pool`) on loopback sockets: reuse,
a server that closes idle connections (and what is resent then: only safe methods),
chunked streams, refused oversize answers, timeouts, TLS; then uvicorn (h11 and
httptools) behind it, and the A2A client on it by default."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import socket
import ssl
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
import uvicorn

from interlink.a2a import A2ATransportError, create_app
from interlink.a2a import types as t
from interlink.a2a.client._client import A2AClient
from interlink.a2a.client._h1 import RemoteProtocolError
from interlink.a2a.client._h1pool import (
    KEEPALIVE_EXPIRY,
    ConnectError,
    ConnectTimeout,
    Pool,
    PoolClosed,
    PoolTimeout,
    ReadError,
    ReadTimeout,
    Response,
    WriteTimeout,
    _split,
)
from interlink.a2a.client._http import http_pool
from tests.a2a.agents import Scripted, card
from tests.a2a.conftest import free_socket

pytestmark = [pytest.mark.timeout(20), pytest.mark.any_loop]

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


@dataclass
class Seen:
    """One request as the server read it, and the connection it came on (0, 1, ...)."""

    conn: int
    method: str
    body: bytes
    head: str = ""


Answer = Callable[[Seen, asyncio.StreamWriter], Awaitable[bool]]
"""Writes the answer; False: close the connection (without answering, or after)."""


@dataclass
class Server:
    """A keep-alive HTTP/1.1 server on 127.0.0.1 whose `answer` writes the bytes."""

    answer: Answer
    seen: list[Seen] = field(default_factory=list)
    closed: asyncio.Queue[int] = field(default_factory=asyncio.Queue)  # by us or the peer
    url: str = ""
    connections: int = 0
    context: ssl.SSLContext | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        me = asyncio.current_task()
        assert me is not None
        self._tasks.add(me)
        index = self.connections
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode().split("\r\n")
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                seen = Seen(
                    index, lines[0].split(" ")[0], await reader.readexactly(length), head.decode()
                )
                self.seen.append(seen)
                if not await self.answer(seen, writer):
                    break
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            self.closed.put_nowait(index)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Server]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.context)
        scheme = "https" if self.context else "http"
        self.url = f"{scheme}://127.0.0.1:{server.sockets[0].getsockname()[1]}/rpc"
        try:
            yield self
        finally:
            server.close()
            for task in list(self._tasks):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task


async def ok(seen: Seen, writer: asyncio.StreamWriter) -> bool:
    writer.write(OK)
    return True


def get(pool: Pool, url: str, method: str = "GET") -> Coroutine[Any, Any, Response]:
    return pool.request(method, url, [], b"{}" if method == "POST" else None)


async def test_connections_are_kept_alive_and_reused() -> None:
    async def chunked(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        if seen.method == "POST":
            writer.write(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
            )
        else:
            writer.write(OK)
        return True

    async with Server(chunked).running() as server:
        pool = Pool(5, 5)
        try:
            for method in ("GET", "POST", "GET", "POST"):
                response = await get(pool, server.url, method)
                assert (response.status_code, response.content) == (200, b"ok")
            assert [s.conn for s in server.seen] == [0, 0, 0, 0]
        finally:
            await pool.aclose()
        assert await server.closed.get() == 0  # (closed with the pool)


async def test_bytes_past_an_answer_are_never_the_next_answer() -> None:
    """A server that sends more than its answer's Content-Length (here: a whole second
    answer at once): the connection is dropped, the next request gets its own answer."""

    async def overrun(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        extra = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged" if seen.conn == 0 else b""
        writer.write(OK + extra)
        return True

    async with Server(overrun).running() as server:
        pool = Pool(5, 5)
        try:
            for _ in range(2):
                response = await get(pool, server.url, "POST")
                assert (response.status_code, response.content) == (200, b"ok")
            assert [s.conn for s in server.seen] == [0, 1]
        finally:
            await pool.aclose()


def test_an_invalid_port_is_a_connect_error() -> None:
    with pytest.raises(ConnectError, match="invalid port"):
        _split("http://127.0.0.1:99999/")


def test_a_path_goes_out_escaped_once() -> None:
    _, target, host, _ = _split("http://[::1]:8080/a b/\u00e9t\u00e9/%41?q=1 2")
    assert (target, host) == ("/a%20b/%C3%A9t%C3%A9/%41?q=1%202", "[::1]:8080")


async def test_an_expired_idle_connection_is_not_reused() -> None:
    async with Server(ok).running() as server:
        pool = Pool(5, 5, keepalive_expiry=0)
        try:
            await get(pool, server.url)
            await get(pool, server.url)
            assert [s.conn for s in server.seen] == [0, 1]
        finally:
            await pool.aclose()


async def test_connection_close_is_honoured() -> None:
    async def closing(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
        return True

    async with Server(closing).running() as server:
        pool = Pool(5, 5)
        try:
            await get(pool, server.url)
            await get(pool, server.url, "POST")
            assert [s.conn for s in server.seen] == [0, 1]
        finally:
            await pool.aclose()


async def test_a_connection_the_server_closed_while_idle_is_not_used() -> None:
    """The server answers and then closes (no `Connection: close`): the POST after it
    goes on a new connection, and nothing fails."""

    async def answer_once(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        writer.write(OK)
        return False

    async with Server(answer_once).running() as server:
        pool = Pool(5, 5)
        try:
            await get(pool, server.url)
            assert await server.closed.get() == 0
            response = await get(pool, server.url, "POST")
            assert response.content == b"ok"
            assert [(s.conn, s.method) for s in server.seen] == [(0, "GET"), (1, "POST")]
        finally:
            await pool.aclose()


def drop_the_second(seen: list[Seen]) -> Answer:
    """Answers the first request of a connection; closes at its second, unanswered (as
    a server closing an idle connection as the request arrives)."""

    async def answer(request: Seen, writer: asyncio.StreamWriter) -> bool:
        if sum(s.conn == request.conn for s in seen) > 1:
            return False
        writer.write(OK)
        return True

    return answer


async def test_a_safe_request_is_resent_when_a_reused_connection_closes_unanswered() -> None:
    seen: list[Seen] = []
    async with Server(drop_the_second(seen), seen).running() as server:
        pool = Pool(5, 5)
        try:
            await get(pool, server.url)
            response = await get(pool, server.url)
            assert response.content == b"ok"
            assert [(s.conn, s.method) for s in seen] == [(0, "GET"), (0, "GET"), (1, "GET")]
        finally:
            await pool.aclose()


async def test_a_post_is_never_resent() -> None:
    """The server may have acted on it: the caller is told, the POST went once."""
    seen: list[Seen] = []
    async with Server(drop_the_second(seen), seen).running() as server:
        pool = Pool(5, 5)
        try:
            await get(pool, server.url)
            with pytest.raises(RemoteProtocolError, match="without sending a response"):
                await get(pool, server.url, "POST")
            assert [(s.conn, s.method) for s in seen] == [(0, "GET"), (0, "POST")]
            assert (await get(pool, server.url, "POST")).content == b"ok"  # (a new one)
        finally:
            await pool.aclose()


async def test_a_chunked_stream_comes_as_it_is_sent() -> None:
    go: asyncio.Queue[bytes] = asyncio.Queue()

    async def stream(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        while chunk := await go.get():
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        return True

    async with Server(stream).running() as server:
        pool = Pool(5, 5)
        try:
            response = await pool.request("POST", server.url, [], b"{}", stream=True)
            chunks = response.chunks(5)
            for piece in (b"data: 1\n\n", b"data: 2\n\n"):
                go.put_nowait(piece)
                assert await anext(chunks) == piece
            go.put_nowait(b"")
            assert [c async for c in chunks] == []
            await response.aclose()
            go.put_nowait(b"")  # (the next one: an empty stream)
            await get(pool, server.url, "POST")  # (the same connection, read to its end)
            assert [s.conn for s in server.seen] == [0, 0]
        finally:
            await pool.aclose()


async def test_a_stream_left_early_closes_its_connection() -> None:
    async def endless(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
        return True  # (the body never ends; the server reads on, and sees the close)

    async with Server(endless).running() as server:
        pool = Pool(5, 5)
        try:
            response = await pool.request("POST", server.url, [], b"{}", stream=True)
            assert await anext(response.chunks(5)) == b"abc"
            await response.aclose()
            assert await server.closed.get() == 0
        finally:
            await pool.aclose()


@pytest.mark.parametrize(
    ("answer", "limits", "error"),
    [
        (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 5000 + b"\r\n\r\n", {"max_head": 4096},
         "head is larger"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n", {"max_body": 4096}, "body is larger"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"800\r\n" + b"x" * 2048 + b"\r\n" + b"800\r\n" + b"x" * 2048 + b"\r\n"
            + b"800\r\n" + b"x" * 2048 + b"\r\n",
            {"max_body": 4096},
            "body is larger",
        ),
    ],
)  # fmt: skip
async def test_an_oversize_answer_is_refused(
    answer: bytes, limits: dict[str, Any], error: str
) -> None:
    async def big(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        writer.write(answer)
        await writer.drain()
        await asyncio.Event().wait()  # (the client must not wait for the rest)
        return False

    async with Server(big).running() as server:
        pool = Pool(5, 5, **limits)
        try:
            with pytest.raises(RemoteProtocolError, match=error):
                await get(pool, server.url)
        finally:
            await pool.aclose()


async def test_a_server_that_does_not_answer_hits_the_read_timeout() -> None:
    async def silent(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        await asyncio.Event().wait()
        return False

    async with Server(silent).running() as server:
        pool = Pool(0.2, 5)
        try:
            with pytest.raises(ReadTimeout):
                await get(pool, server.url, "POST")
        finally:
            await pool.aclose()


async def test_a_stream_that_goes_silent_hits_its_idle_timeout() -> None:
    async def stalls(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
        await asyncio.Event().wait()
        return False

    async with Server(stalls).running() as server:
        pool = Pool(5, 5)
        try:
            response = await pool.request("POST", server.url, [], b"{}", stream=True)
            chunks = response.chunks(0.2)
            assert await anext(chunks) == b"abc"
            with pytest.raises(TimeoutError, match=r"no event or keep-alive for 0\.2 s"):
                await anext(chunks)
            await response.aclose()
        finally:
            await pool.aclose()


async def test_a_server_that_does_not_read_hits_the_write_timeout() -> None:
    reading = asyncio.Event()

    async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reading.wait()
        writer.close()

    server = await asyncio.start_server(_serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pool = Pool(0.2, 5)
    try:
        with pytest.raises(WriteTimeout):
            await pool.request("POST", f"http://127.0.0.1:{port}/", [], b"x" * (64 << 20))
    finally:
        reading.set()
        await pool.aclose()
        server.close()


async def test_a_connect_that_hangs_hits_the_connect_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop = asyncio.get_running_loop()

    async def hang(*args: object, **kwargs: object) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(loop, "create_connection", hang)
    pool = Pool(5, 0.1)
    with pytest.raises(ConnectTimeout):
        await get(pool, "http://127.0.0.1:9/")
    await pool.aclose()


async def test_a_refused_connection_is_a_connect_error() -> None:
    sock = free_socket()  # (bound, never listening)
    port = sock.getsockname()[1]
    pool = Pool(5, 5)
    try:
        with pytest.raises(ConnectError):
            await get(pool, f"http://127.0.0.1:{port}/")
    finally:
        sock.close()
        await pool.aclose()


# -- from a hostile review: cut bodies, closing, expiry, limits, sweeping, hosts ----------


def until_eof(sent: asyncio.Event) -> Answer:
    """A body framed by EOF (no Content-Length, not chunked), of which a part is sent;
    the server then holds the connection open (the rest never comes)."""

    async def answer(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\npart")
        await writer.drain()
        sent.set()
        await asyncio.Event().wait()
        return False

    return answer


@pytest.mark.parametrize("closing", ["pool", "response"])
async def test_a_body_up_to_eof_cut_by_our_own_close_is_an_error_not_an_end(
    closing: str,
) -> None:
    async with Server(until_eof(asyncio.Event())).running() as server:
        pool = Pool(5, 5)
        try:
            response = await pool.request("GET", server.url, [], stream=True)
            chunks = response.aiter_bytes()
            assert await anext(chunks) == b"part"

            async def next_chunk() -> bytes:
                return await anext(chunks)

            reading = asyncio.create_task(next_chunk())
            await asyncio.sleep(0)  # (the reader waits for the next bytes)
            await (pool.aclose() if closing == "pool" else response.aclose())
            async with asyncio.timeout(5):
                with pytest.raises(ReadError, match="closed by this client"):
                    await reading
            with pytest.raises(ReadError, match="closed by this client"):  # (and after)
                await anext(response.aiter_bytes())
        finally:
            await pool.aclose()


async def test_a_body_up_to_eof_read_whole_and_cut_by_aclose_is_an_error() -> None:
    sent = asyncio.Event()
    async with Server(until_eof(sent)).running() as server:
        pool = Pool(5, 5)
        call = asyncio.create_task(get(pool, server.url))
        try:
            async with asyncio.timeout(5):
                await sent.wait()
                await pool.aclose()
                with pytest.raises(ReadError, match="closed by this client"):
                    await call
        finally:
            call.cancel()
            await pool.aclose()


async def test_a_connect_in_flight_when_the_pool_closes_is_stopped_and_never_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The connect hangs (as to a host that drops the SYN): `aclose` stops it, and the
    # call fails at once, not when the connect would have ended.
    loop = asyncio.get_running_loop()
    real = loop.create_connection
    connecting, stopped = asyncio.Event(), asyncio.Event()
    made: list[asyncio.BaseTransport] = []

    async def held(*args: Any, **kwargs: Any) -> Any:
        connecting.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped.set()
            raise
        transport, protocol = await real(*args, **kwargs)
        made.append(transport)
        return transport, protocol

    monkeypatch.setattr(loop, "create_connection", held)
    async with Server(ok).running() as server:
        pool = Pool(5, 60)
        call = asyncio.create_task(get(pool, server.url, "POST"))
        async with asyncio.timeout(5):
            await connecting.wait()
            await pool.aclose()
            with pytest.raises(PoolClosed, match="closed while the connection was made"):
                await call
            assert stopped.is_set()
        assert made == []
        assert server.seen == []
        assert not pool._all
        assert not pool._connecting


async def test_a_connect_that_ends_as_the_pool_closes_is_never_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop = asyncio.get_running_loop()
    real = loop.create_connection
    made: list[asyncio.BaseTransport] = []
    pool = Pool(5, 5)

    async def closing_meanwhile(*args: Any, **kwargs: Any) -> Any:
        transport, protocol = await real(*args, **kwargs)
        made.append(transport)
        pool._closed = True  # (as `aclose` does, once the connect is over)
        return transport, protocol

    monkeypatch.setattr(loop, "create_connection", closing_meanwhile)
    async with Server(ok).running() as server:
        async with asyncio.timeout(5):
            with pytest.raises(PoolClosed, match="closed while the connection was made"):
                await get(pool, server.url, "POST")
            assert await server.closed.get() == 0  # (the server saw it closed, unused)
        assert len(made) == 1
        assert made[0].is_closing()
        assert server.seen == []
        assert not pool._all
    await pool.aclose()


async def test_a_connection_made_as_its_caller_is_cancelled_is_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop = asyncio.get_running_loop()
    real = loop.create_connection
    made: list[asyncio.BaseTransport] = []
    calls: list[asyncio.Task[object]] = []

    async def cancelled_meanwhile(*args: Any, **kwargs: Any) -> Any:
        transport, protocol = await real(*args, **kwargs)
        made.append(transport)
        loop.call_soon(calls[0].cancel)  # (before the caller wakes to take it)
        return transport, protocol

    monkeypatch.setattr(loop, "create_connection", cancelled_meanwhile)
    async with Server(ok).running() as server:
        pool = Pool(5, 5)
        calls.append(asyncio.create_task(get(pool, server.url, "POST")))
        async with asyncio.timeout(5):
            with pytest.raises(asyncio.CancelledError):
                await calls[0]
            assert await server.closed.get() == 0  # (closed unused, not leaked)
        assert made[0].is_closing()
        await pool.aclose()


async def test_a_caller_that_swallowed_a_cancel_before_is_told_the_pool_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (`Task.cancelling()` stays up after a cancel caught without `uncancel()`: only one
    # that comes while connecting is the caller's own)
    loop = asyncio.get_running_loop()
    connecting, waiting = asyncio.Event(), asyncio.Event()

    async def hang(*args: object, **kwargs: object) -> None:
        connecting.set()
        await asyncio.Event().wait()

    monkeypatch.setattr(loop, "create_connection", hang)
    pool = Pool(5, 60)

    async def caller() -> object:
        try:
            waiting.set()
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            pass  # (swallowed, as application code does)
        return await get(pool, "http://127.0.0.1:9/")

    call = asyncio.create_task(caller())
    async with asyncio.timeout(5):
        await waiting.wait()
        call.cancel()
        await connecting.wait()
        await pool.aclose()
        with pytest.raises(PoolClosed, match="closed while the connection was made"):
            await call


async def test_a_caller_cancelled_while_connecting_is_cancelled_not_told_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop = asyncio.get_running_loop()
    connecting = asyncio.Event()

    async def hang(*args: object, **kwargs: object) -> None:
        connecting.set()
        await asyncio.Event().wait()

    monkeypatch.setattr(loop, "create_connection", hang)
    pool = Pool(5, 60)
    call = asyncio.create_task(get(pool, "http://127.0.0.1:9/"))
    async with asyncio.timeout(5):
        await connecting.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    assert not pool._connecting
    await pool.aclose()


async def test_a_call_waiting_for_a_connection_when_the_pool_closes_fails() -> None:
    async with Server(chunks_held(asyncio.Event())).running() as server:
        pool = Pool(5, 5, max_connections=1)
        held = await pool.request("POST", server.url, [], b"hold", stream=True)
        waiting = asyncio.create_task(get(pool, server.url, "POST"))
        await asyncio.sleep(0)  # (it waits for the connection held)
        await pool.aclose()
        async with asyncio.timeout(5):
            with pytest.raises(PoolClosed, match="closed"):
                await waiting
        await held.aclose()
        assert [s.body for s in server.seen] == [b"hold"]


def test_the_keepalive_expiry_is_below_common_server_keepalives() -> None:
    """gunicorn closes an idle connection after 2 s, uvicorn and Node after 5, nginx
    after 75: at most half the shortest, so a request is not written as it closes."""
    assert KEEPALIVE_EXPIRY <= 2 / 2


async def test_idle_time_counts_from_the_last_byte_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not from when the reader let the connection go: the server's idle clock started
    when it sent its last byte. (The loop's clock is moved on 1.5 s once the answer is
    read whole: a slow reader.)"""
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"

    async def whole(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        writer.write(answer)
        return True

    loop = asyncio.get_running_loop()
    clock = loop.time
    async with Server(whole).running() as server:
        pool = Pool(5, 5, keepalive_expiry=1.0)
        try:
            response = await pool.request("POST", server.url, [], b"{}", stream=True)
            conn = response._conn
            assert conn is not None
            assert conn.parser is not None
            assert conn.parser.received == len(answer)  # (all read, in one piece)
            monkeypatch.setattr(loop, "time", lambda: clock() + 1.5)
            assert [c async for c in response.aiter_bytes()] == [b"ok"]
            assert (await get(pool, server.url, "POST")).content == b"ok"
            assert [s.conn for s in server.seen] == [0, 1]  # (idle 1.5 s: not reused)
        finally:
            monkeypatch.undo()
            await pool.aclose()


async def test_every_reuse_polls_the_socket_for_a_close_not_read_yet() -> None:
    """The server closes its idle side; the client's loop has not read the FIN yet (the
    loop is held while the server closes): the POST still goes on a new connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(5)
    port = listener.getsockname()[1]
    close, closed = threading.Event(), threading.Event()
    conns: list[socket.socket] = []

    def serve() -> None:
        with contextlib.suppress(OSError):  # (a timeout: the test fails on its own)
            for _ in range(2):
                sock, _ = listener.accept()
                sock.settimeout(5)
                conns.append(sock)
                request = b""
                while not request.endswith((b"\r\n\r\n{}", b"\r\n\r\n")):
                    if not (data := sock.recv(65536)):
                        return
                    request += data
                sock.sendall(OK)
                if len(conns) == 1:
                    close.wait(5)
                    sock.close()
                    closed.set()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    pool = Pool(5, 5)
    try:
        assert (await get(pool, f"http://127.0.0.1:{port}/")).content == b"ok"
        close.set()
        assert closed.wait(5)  # (the loop is held: the FIN is not read by it yet)
        response = await get(pool, f"http://127.0.0.1:{port}/", "POST")
        assert response.content == b"ok"
        assert len(conns) == 2
    finally:
        close.set()
        await pool.aclose()
        await asyncio.to_thread(thread.join, 5)
        for sock in conns:
            sock.close()
        listener.close()


def chunks_held(finish: asyncio.Event) -> Answer:
    """A request with body `hold`: a chunked answer whose end waits for `finish`; any
    other: `ok` at once."""

    async def answer(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        if seen.body != b"hold":
            writer.write(OK)
            return True
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
        await writer.drain()
        await finish.wait()
        writer.write(b"0\r\n\r\n")
        return True

    return answer


@pytest.mark.parametrize("limit", [1, 2])
async def test_a_burst_opens_at_most_max_connections_and_waiters_go_in_order(
    limit: int,
) -> None:
    async with Server(ok).running() as server:
        pool = Pool(5, 5, max_connections=limit)
        try:
            calls = [pool.request("POST", server.url, [], b"%d" % i) for i in range(8)]
            async with asyncio.timeout(10):
                answers = await asyncio.gather(*calls)
            assert [a.content for a in answers] == [b"ok"] * 8
            assert server.connections == limit
            bodies = [s.body for s in server.seen]
            assert (bodies if limit == 1 else sorted(bodies)) == [b"%d" % i for i in range(8)]
        finally:
            await pool.aclose()


async def test_a_call_past_the_limit_waits_at_most_the_pool_timeout() -> None:
    async with Server(chunks_held(asyncio.Event())).running() as server:
        pool = Pool(0.2, 5, max_connections=1)
        try:
            held = await pool.request("POST", server.url, [], b"hold", stream=True)
            async with asyncio.timeout(5):
                with pytest.raises(PoolTimeout, match=r"no connection came free in 0\.2 s"):
                    await get(pool, server.url, "POST")
            await held.aclose()  # (the slot comes back: the next call connects)
            assert (await get(pool, server.url, "POST")).content == b"ok"
            assert server.connections == 2
        finally:
            await pool.aclose()


@pytest.mark.parametrize("given", ["connection", "slot"])
async def test_a_waiter_cancelled_once_served_passes_it_on(given: str) -> None:
    """The connection given back (or, when it was closed, its slot) went to the first
    waiter, cancelled before it ran: the next waiter gets it, nothing is lost."""
    finish = asyncio.Event()
    async with Server(chunks_held(finish)).running() as server:
        pool = Pool(5, 5, max_connections=1)
        try:
            held = await pool.request("POST", server.url, [], b"hold", stream=True)
            chunks = held.aiter_bytes()
            assert await anext(chunks) == b"abc"
            first = asyncio.create_task(get(pool, server.url, "POST"))
            second = asyncio.create_task(get(pool, server.url, "POST"))
            await asyncio.sleep(0)  # (both wait, in order)
            (home,) = pool._origins.values()
            assert len(home.waiters) == 2
            if given == "connection":
                finish.set()
                assert [c async for c in chunks] == []  # (given back at its end)
            else:
                await held.aclose()  # (closed mid-body: its slot is given)
            first.cancel()
            async with asyncio.timeout(5):
                assert (await second).content == b"ok"
            assert first.cancelled()
            assert server.connections == (1 if given == "connection" else 2)
            assert home.count == 1
            assert (await get(pool, server.url, "POST")).content == b"ok"
        finally:
            finish.set()
            await pool.aclose()


async def test_idle_connections_of_an_origin_not_used_again_are_swept() -> None:
    async with Server(ok).running() as one, Server(ok).running() as other:
        pool = Pool(5, 5, keepalive_expiry=0.05)
        try:
            await get(pool, one.url)
            await get(pool, other.url)
            async with asyncio.timeout(5):  # (neither asked again: both closed)
                assert await one.closed.get() == 0
                assert await other.closed.get() == 0
            assert not pool._all
            assert not pool._origins
        finally:
            await pool.aclose()


def test_an_idn_host_goes_out_as_its_a_label() -> None:
    origin, _, host, bare = _split("http://B\u00fccher.example:8080/x")
    assert origin == ("http", "xn--bcher-kva.example", 8080)
    assert host == "xn--bcher-kva.example:8080"
    assert bare == "http://xn--bcher-kva.example:8080/x"
    with pytest.raises(ConnectError, match="invalid host name"):
        _split("http://a\u200db.example/")


@pytest.mark.parametrize("url", ["http://[fe80::1%25eth0]:8080/", "http://[FE80::1%eth0]:8080/"])
def test_an_ipv6_zone_id_is_escaped_in_host(url: str) -> None:
    origin, _, host, _ = _split(url)
    assert origin == ("http", "fe80::1%eth0", 8080)
    assert host == "[fe80::1%25eth0]:8080"


@pytest.mark.parametrize("url", ["http://[fe80::1%25]/", "http://[fe80::1%25a%2Fb]/"])
def test_an_invalid_ipv6_zone_id_is_refused(url: str) -> None:
    with pytest.raises(ConnectError, match=r"zone id|invalid URL"):
        _split(url)


@pytest.mark.parametrize(
    ("name", "connect", "host"),
    [
        ("b\u00fccher.example", "xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("[fe80::1%25lo]", "fe80::1%lo", "[fe80::1%25lo]"),
    ],
)
async def test_the_connect_and_the_host_header_use_the_encoded_host(
    name: str, connect: str, host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(The connect goes to the test's server on 127.0.0.1 whatever the name: nothing is
    resolved.)"""
    loop = asyncio.get_running_loop()
    real = loop.create_connection
    asked: list[object] = []

    async def to_loopback(factory: Any, host: str, port: int, **kwargs: Any) -> Any:
        asked.append(host)
        return await real(factory, "127.0.0.1", server_port, **kwargs)

    monkeypatch.setattr(loop, "create_connection", to_loopback)
    async with Server(ok).running() as server:
        server_port = int(server.url.split(":")[2].split("/")[0])
        pool = Pool(5, 5)
        try:
            assert (await get(pool, f"http://{name}:8080/rpc", "POST")).content == b"ok"
        finally:
            await pool.aclose()
    assert asked == [connect]
    assert f"\r\nHost: {host}:8080\r\n" in server.seen[0].head


# -- TLS ------------------------------------------------------------------------------------


def certificate(tmp: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1: the server's context, and a client's
    that trusts it."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    (tmp / "cert.pem").write_bytes(pem)
    (tmp / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(tmp / "cert.pem", tmp / "key.pem")
    client = ssl.create_default_context(cadata=pem.decode())
    return server, client


async def test_https_verifies_by_default_and_reuses_its_connections(tmp_path: Path) -> None:
    server_context, trusting = certificate(tmp_path)
    async with Server(ok, context=server_context).running() as server:
        pool = Pool(5, 5)
        try:
            with pytest.raises(ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await get(pool, server.url)
        finally:
            await pool.aclose()
        pool = Pool(5, 5, ssl_context=trusting)
        try:
            for method in ("GET", "POST"):
                assert (await get(pool, server.url, method)).content == b"ok"
            assert len(server.seen) == 2
            assert server.seen[0].conn == server.seen[1].conn
        finally:
            await pool.aclose()


# -- uvicorn behind it, and the A2A client on it ------------------------------------------

Parser = Literal["h11", "httptools"]


async def floor_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Each answer says which client port asked; `/sse` as an event stream (chunked)."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    port = str(scope["client"][1]).encode()
    if scope["path"] == "/sse":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
        for _ in range(3):
            await send({"type": "http.response.body", "body": b"data: " + port + b"\n\n",
                        "more_body": True})  # fmt: skip
        await send({"type": "http.response.body", "body": b""})
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(port)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": port})


@contextlib.asynccontextmanager
async def uvicorn_on(
    app: Any, http: Parser, keep_alive: int = 5
) -> AsyncIterator[tuple[str, uvicorn.Server]]:
    sock = free_socket()
    config = uvicorn.Config(app, http=http, log_level="warning", timeout_keep_alive=keep_alive)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
                await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", server
    finally:
        server.should_exit = True
        async with asyncio.timeout(10):
            await task


@pytest.mark.parametrize("http", ["h11", "httptools"])
async def test_uvicorn_answers_on_one_kept_alive_connection(http: Parser) -> None:
    async with uvicorn_on(floor_app, http) as (url, _):
        pool = Pool(5, 5)
        try:
            ports = set()
            for _ in range(3):
                ports.add((await get(pool, url + "/", "POST")).content)
                response = await pool.request("POST", url + "/sse", [], b"{}", stream=True)
                body = b"".join([c async for c in response.chunks(5)])
                await response.aclose()
                assert body.count(b"data: ") == 3
                ports.add(body.split(b"\n")[0].removeprefix(b"data: "))
            assert len(ports) == 1
        finally:
            await pool.aclose()


@pytest.mark.parametrize("http", ["h11", "httptools"])
async def test_uvicorn_closing_an_idle_connection_is_no_error(http: Parser) -> None:
    async with uvicorn_on(floor_app, http, keep_alive=1) as (url, server):
        pool = Pool(5, 5)
        try:
            first = (await get(pool, url + "/", "POST")).content
            async with asyncio.timeout(5):
                while server.server_state.connections:  # noqa: ASYNC110 - no event for it
                    await asyncio.sleep(0.01)
            second = (await get(pool, url + "/", "POST")).content
            assert first != second  # (a new connection, the POST sent once)
        finally:
            await pool.aclose()


@pytest.mark.parametrize("http", ["h11", "httptools"])
async def test_the_a2a_client_talks_over_its_own_pool(http: Parser) -> None:
    app = create_app(Scripted(), card())
    async with uvicorn_on(app, http) as (url, server), await A2AClient.connect(url + "/") as client:
        assert isinstance(client.transport._http, Pool)  # type: ignore[attr-defined]
        reply = await client.send_message("hello")
        assert isinstance(reply, t.Task | t.Message)
        events = [e async for e in client.stream_message("hello")]
        assert events
        assert len(server.server_state.connections) == 1
    with pytest.raises(A2ATransportError, match="SendMessage failed"):  # (stopped)
        async with A2AClient(client.resolved, timeout=1, connect_timeout=1) as gone:
            await gone.send_message("hello")


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "http_proxy", "ALL_PROXY"])
async def test_a_proxy_in_the_environment_is_gone_through_with_httpx(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool speaks no proxy: where the environment names one, the default client is
    httpx's, which goes through it (and honours NO_PROXY)."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    plain = http_pool(5, 5)
    monkeypatch.setenv(variable, "http://127.0.0.1:9")
    proxied = http_pool(5, 5)
    try:
        assert isinstance(plain, Pool)
        assert isinstance(proxied, httpx.AsyncClient)
    finally:
        await plain.aclose()
        await proxied.aclose()
