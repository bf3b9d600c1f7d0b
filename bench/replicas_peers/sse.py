"""A minimal Server-Sent Events client for `python -m bench replicas`: one POST on a fresh
HTTP/1.1 connection, its `text/event-stream` answer parsed where its bytes arrive.

Each event's `data` is handed over with the wall-clock time (`time.time_ns()`) at which
the read that completed it returned: the arrival of its last byte as this process sees
it, before any parsing. It speaks just enough HTTP/1.1 for uvicorn: a `chunked` or
`Content-Length` body, or one that ends with the connection.
"""

from __future__ import annotations

import asyncio
import re
import time

__all__ = ["SseError", "SseStream", "open_stream"]

_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_LINE_END = re.compile(rb"\r\n|\n|\r")


class SseError(Exception):
    """Not an event stream (an HTTP error, or a plain JSON answer), or a broken one."""


class SseStream(asyncio.Protocol):
    """Events, in order, as `(arrival_ns, data)` in `events`; `None` there once the
    stream has ended."""

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport
        self.events: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue()
        self.status = 0
        self.head: asyncio.Future[None] = loop.create_future()
        self.ended: asyncio.Future[None] = loop.create_future()
        self.failure: str | None = None
        self._raw = bytearray()  # received, not yet parsed (the head, chunk framing)
        self._body = bytearray()  # the body so far, not yet split into events
        self._chunked = False
        self._length = -1
        self._sse = False
        self._state = "size"  # chunked: at a "size" line, in "data", at the "crlf" after it
        self._left = 0  # chunked: bytes left of the current chunk

    @property
    def is_sse(self) -> bool:
        return self._sse

    def body_text(self) -> str:
        return bytes(self._body)[:300].decode(errors="replace")

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.head.done():
            self.head.set_exception(SseError(f"connection closed before an answer: {exc}"))
        if not self.ended.done():
            self.ended.set_result(None)
            self.events.put_nowait(None)

    def close(self) -> None:
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        now = time.time_ns()
        try:
            self._feed(data, now)
        except (ValueError, IndexError) as exc:
            self.failure = f"bad HTTP from the server: {exc}"
            self.transport.close()

    def _feed(self, data: bytes, now: int) -> None:
        self._raw += data
        if not self.status:
            end = self._raw.find(b"\r\n\r\n")
            if end < 0:
                return
            self._head(bytes(self._raw[:end]))
            del self._raw[: end + 4]
        if self._chunked:
            self._dechunk()
        else:
            self._body += self._raw
            self._raw.clear()
            if self._length >= 0 and len(self._body) >= self._length:
                self.transport.close()
        if not self._sse:
            return
        while True:
            match = _EVENT_END.search(self._body)
            if match is None:
                break
            block = bytes(self._body[: match.start()])
            del self._body[: match.end()]
            lines = [
                line[5:].removeprefix(b" ")
                for line in _LINE_END.split(block)
                if line.startswith(b"data:")
            ]
            if lines:
                self.events.put_nowait((now, b"\n".join(lines)))

    def _head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        self.status = int(lines[0].split(b" ", 2)[1])
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                self._length = int(value)
            elif name == b"transfer-encoding":
                self._chunked = b"chunked" in value.lower()
            elif name == b"content-type":
                self._sse = value.strip().lower().startswith(b"text/event-stream")
        self._sse = self._sse and self.status == 200
        self.head.set_result(None)

    def _dechunk(self) -> None:
        raw = self._raw
        pos = 0
        while pos < len(raw):
            if self._state == "size":
                line_end = raw.find(b"\r\n", pos)
                if line_end < 0:
                    break
                self._left = int(bytes(raw[pos:line_end]).split(b";", 1)[0], 16)
                pos = line_end + 2
                if not self._left:  # the last chunk
                    self.transport.close()
                    break
                self._state = "data"
            elif self._state == "data":
                take = min(self._left, len(raw) - pos)
                self._body += raw[pos : pos + take]
                pos += take
                self._left -= take
                if not self._left:
                    self._state = "crlf"
            else:
                if len(raw) - pos < 2:
                    break
                pos += 2
                self._state = "size"
        del raw[:pos]


async def open_stream(
    host: str, port: int, body: bytes, headers: dict[str, str], patience: float
) -> SseStream:
    """POST `body` to http://host:port/ and return the stream once its head has come;
    `SseError` when the answer is not an event stream (with its body, for the reason)."""
    loop = asyncio.get_running_loop()
    _, stream = await asyncio.wait_for(loop.create_connection(SseStream, host, port), patience)
    head = [f"POST / HTTP/1.1\r\nHost: {host}:{port}\r\n"]
    head += [f"{name}: {value}\r\n" for name, value in headers.items()]
    head.append(f"Content-Length: {len(body)}\r\n\r\n")
    stream.transport.write("".join(head).encode() + body)
    try:
        await asyncio.wait_for(asyncio.shield(stream.head), patience)
        if not stream.is_sse:
            await asyncio.wait_for(asyncio.shield(stream.ended), patience)
            raise SseError(f"HTTP {stream.status}, not an event stream: {stream.body_text()}")
    except BaseException:
        stream.close()
        raise
    return stream
