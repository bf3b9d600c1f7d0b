"""The load generator's HTTP clients: a hand-written HTTP/1.1 keep-alive client (one
connection per worker, one request in flight on it) and `httpx.AsyncClient` behind the
same interface (`load.Caller`).

The hand-written one exists because on two cores the client competes with the server for
CPU: httpx spends several times more per request than the bare ASGI floor spends to
answer it, so with httpx the floor measures the client. It speaks just enough HTTP/1.1
for these servers: `Content-Length` and `chunked` bodies, keep-alive, reconnect after
`Connection: close` or any failure. It is an `asyncio.Protocol` rather than streams: a
response is parsed where its bytes arrive, which halves the client's CPU per request.
"""

from __future__ import annotations

import asyncio

import httpx

from bench.a2a_peers.load import Answer, Call, Caller

__all__ = ["RawPoster", "HttpxPoster", "open_posters"]


class RawPoster:
    """A keep-alive HTTP/1.1 connection, opened on first use and after a failure."""

    def __init__(self, host: str, port: int, headers: tuple[tuple[str, str], ...]) -> None:
        self._host = host
        self._port = port
        lines = [f" HTTP/1.1\r\nHost: {host}:{port}\r\n"]
        lines += [f"{name}: {value}\r\n" for name, value in headers]
        self._head = "".join(lines).encode()
        self._protocol: _ResponseReader | None = None

    async def call(self, call: Call) -> Answer:
        if self._protocol is None:
            loop = asyncio.get_running_loop()
            _, self._protocol = await loop.create_connection(
                _ResponseReader, self._host, self._port
            )
        protocol = self._protocol
        try:
            status, answer, keep = await protocol.exchange(
                b"%s %s%sContent-Length: %d\r\n\r\n%s"
                % (call.method.encode(), call.path.encode(), self._head, len(call.body), call.body)
            )
        except BaseException:  # a broken or cancelled exchange leaves the stream unusable
            await self.aclose()
            raise
        if not keep:
            await self.aclose()
        return status, [answer]

    async def aclose(self) -> None:
        protocol, self._protocol = self._protocol, None
        if protocol is not None:
            protocol.transport.close()


class _ResponseReader(asyncio.Protocol):
    """Parses one response at a time as its bytes arrive (no per-read coroutine hops)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport
        self._buffer = bytearray()
        self._waiter: asyncio.Future[tuple[int, bytes, bool]] | None = None
        self._reset()

    def _reset(self) -> None:
        self._status = 0  # 0: the head has not arrived
        self._length = -1
        self._chunked = False
        self._keep = True
        self._pos = 0  # where the body, or the next chunk's size line, starts
        self._chunks: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc or ConnectionError("connection closed mid-response"))

    async def exchange(self, request: bytes) -> tuple[int, bytes, bool]:
        self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return await self._waiter

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        try:
            done = self._parse()
        except ValueError as exc:
            if self._waiter is not None and not self._waiter.done():
                self._waiter.set_exception(exc)
            return
        if done is not None and self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(done)

    def _parse(self) -> tuple[int, bytes, bool] | None:
        buffer = self._buffer
        if not self._status:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return None
            self._head(bytes(buffer[:end]))
            self._pos = end + 4
        if self._chunked:
            while True:
                line_end = buffer.find(b"\r\n", self._pos)
                if line_end < 0:
                    return None
                size = int(bytes(buffer[self._pos : line_end]).split(b";", 1)[0], 16)
                if size == 0:  # the last chunk, then no trailers: a blank line
                    if len(buffer) < line_end + 4:
                        return None
                    return self._finish(b"".join(self._chunks), line_end + 4)
                if len(buffer) < line_end + 2 + size + 2:
                    return None
                self._chunks.append(bytes(buffer[line_end + 2 : line_end + 2 + size]))
                self._pos = line_end + 2 + size + 2
        if self._length < 0:
            raise ValueError("a response without Content-Length or chunked encoding")
        if len(buffer) < self._pos + self._length:
            return None
        return self._finish(bytes(buffer[self._pos : self._pos + self._length]), 0)

    def _head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        self._status = int(lines[0].split(b" ", 2)[1])
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                self._length = int(value)
            elif name == b"transfer-encoding":
                self._chunked = b"chunked" in value.lower()
            elif name == b"connection":
                self._keep = b"close" not in value.lower()

    def _finish(self, body: bytes, end: int) -> tuple[int, bytes, bool]:
        result = (self._status, body, self._keep)
        del self._buffer[: end or self._pos + self._length]
        self._reset()
        return result


class HttpxPoster:
    """A worker's view of one shared `httpx.AsyncClient` (pool sized to the workers)."""

    def __init__(self, client: httpx.AsyncClient, url: str, owner: bool) -> None:
        self._client = client
        self._url = url
        self._owner = owner

    async def call(self, call: Call) -> Answer:
        response = await self._client.request(call.method, self._url + call.path, content=call.body)
        return response.status_code, [response.content]

    async def aclose(self) -> None:
        if self._owner:
            await self._client.aclose()


def open_posters(
    kind: str, host: str, port: int, headers: tuple[tuple[str, str], ...], workers: int
) -> list[Caller]:
    """`workers` callers of `kind` (`raw` or `httpx`) to http://host:port."""
    if kind == "raw":
        return [RawPoster(host, port, headers) for _ in range(workers)]
    limits = httpx.Limits(max_connections=workers, max_keepalive_connections=workers)
    client = httpx.AsyncClient(headers=list(headers), limits=limits, timeout=None)
    url = f"http://{host}:{port}"
    return [HttpxPoster(client, url, owner=i == 0) for i in range(workers)]
