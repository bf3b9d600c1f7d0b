"""Raw HTTP for `interlink a2a check`: JSON-RPC calls, SSE streams, the loopback webhook.

The checker speaks the wire itself (httpx, no A2A client): it must be able to send what a
client library refuses to send, and to see exactly what came back (status, headers, the
bytes). Every request has a timeout; every body and SSE event is bounded in bytes.

Only the origin the user gave and loopback are ever contacted: `Wire.allowed` is asked
before every request, and httpx ignores proxy settings from the environment
(`trust_env=False`) so that nothing is routed elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import itertools
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field

import httpx

__all__ = [
    "MAX_BODY",
    "Delivery",
    "Json",
    "Refused",
    "Reply",
    "SseEvent",
    "Stream",
    "Webhook",
    "Wire",
    "is_loopback",
]

MAX_BODY = 16 * 1024 * 1024  # a response body or one SSE event
_EOL = re.compile(rb"\r\n|\r|\n")
A2A_VERSION = "1.0"

Json = dict[str, object]
Version = str | None
"""An `A2A-Version` to send (None: the header is left out)."""
Headers = Mapping[str, str] | None
"""Headers to send beside the ones a call sets."""


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Refused(Exception):
    """The checker will not contact this URL (not the given origin, not loopback)."""


@dataclass
class Reply:
    """One HTTP answer: its status, headers, raw bytes and, when they are JSON, the value."""

    status: int
    headers: httpx.Headers
    raw: bytes
    body: object = None
    json_error: str = ""

    @property
    def obj(self) -> Json:
        return self.body if isinstance(self.body, dict) else {}

    @property
    def result(self) -> object:
        return self.obj.get("result")

    @property
    def error(self) -> Json | None:
        error = self.obj.get("error")
        return error if isinstance(error, dict) else None

    @property
    def code(self) -> object:
        return (self.error or {}).get("code")

    def describe(self) -> str:
        """What came back, short enough for a report line."""
        if self.error is not None:
            return f"error {self.error.get('code')}: {str(self.error.get('message'))[:200]}"
        if self.json_error:
            return f"HTTP {self.status}, not JSON ({self.json_error}): {self.raw[:120]!r}"
        text = json.dumps(self.body, ensure_ascii=False)
        return f"HTTP {self.status}: {text[:300]}{'...' if len(text) > 300 else ''}"


def _parse(status: int, headers: httpx.Headers, raw: bytes) -> Reply:
    reply = Reply(status, headers, raw)
    try:
        reply.body = json.loads(raw)
    except ValueError as exc:
        reply.json_error = str(exc)
    return reply


@dataclass
class SseEvent:
    data: str
    event: str = ""
    id: str | None = None

    def json(self) -> object:
        try:
            return json.loads(self.data)
        except ValueError:
            return None


@dataclass
class Stream:
    """An open SSE response, or the plain JSON reply a server gave instead."""

    response: httpx.Response
    timeout: float
    request_id: int = 0
    reply: Reply | None = None  # set when the answer was not text/event-stream
    events: list[SseEvent] = field(default_factory=list)
    closed: bool = False  # the server ended the stream
    _lines: AsyncIterator[bytes] | None = None

    @property
    def content_type(self) -> str:
        return str(self.response.headers.get("content-type", ""))

    async def _line_iter(self) -> AsyncIterator[bytes]:
        buffer = b""
        async for chunk in self.response.aiter_bytes():
            buffer += chunk
            start = 0
            for end in _EOL.finditer(buffer):
                if end.group() == b"\r" and end.end() == len(buffer):
                    break  # a CR that ends the chunk may be half of a CRLF
                yield buffer[start : end.start()]
                start = end.end()
            buffer = buffer[start:]
            if len(buffer) > MAX_BODY:
                raise ValueError(f"an SSE line over {MAX_BODY} bytes")
        if buffer:
            yield buffer.rstrip(b"\r")

    async def _next_event(self) -> SseEvent | None:
        if self._lines is None:
            self._lines = self._line_iter()
        data: list[str] = []
        event, event_id, size = "", None, 0
        async for raw in self._lines:
            line = raw.decode("utf-8", "replace")
            if not line:
                if data:
                    return SseEvent("\n".join(data), event, event_id)
                event = ""
                continue
            if line.startswith(":"):
                continue  # a comment (keep-alive)
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                size += len(value)
                if size > MAX_BODY:
                    raise ValueError(f"an SSE event over {MAX_BODY} bytes")
                data.append(value)
            elif name == "event":
                event = value
            elif name == "id":
                event_id = value
        if data:  # the stream ended without the blank line that dispatches the event
            return SseEvent("\n".join(data), event, event_id)
        return None

    async def next(self) -> SseEvent | None:
        """The next event, or None once the server closed the stream. Raises
        `TimeoutError` when none came within the timeout."""
        if self.closed:
            return None
        event = await asyncio.wait_for(self._next_event(), self.timeout)
        if event is None:
            self.closed = True
        else:
            self.events.append(event)
        return event

    async def read_all(self, limit: int = 1000) -> list[SseEvent]:
        """Every event until the server closes the stream (at most `limit`)."""
        while not self.closed and len(self.events) < limit:
            await self.next()
        return self.events


class Wire:
    """The HTTP side of one check run: `origin` is the user's URL's origin."""

    def __init__(
        self,
        origin: httpx.URL,
        timeout: float,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.origin = origin
        self.timeout = timeout
        self.closers: list[Callable[[], Awaitable[None]]] = []  # (other bindings' channels)
        #: the card's required extensions, activated on every request whose case does not
        #: set `A2A-Extensions` itself (so an agent that requires one can be checked)
        self.activate = ""
        self._ids = itertools.count(1)
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout),
            follow_redirects=False,
            trust_env=False,
            limits=httpx.Limits(max_connections=32),
            transport=transport,
        )

    async def aclose(self) -> None:
        for close in self.closers:
            await close()
        await self.http.aclose()

    def allowed(self, url: str | httpx.URL) -> bool:
        try:
            target = httpx.URL(url)
        except (httpx.InvalidURL, TypeError):
            return False
        if target.scheme not in ("http", "https"):
            return False
        same = (target.scheme, target.host, target.port) == (
            self.origin.scheme,
            self.origin.host,
            self.origin.port,
        )
        return same or is_loopback(target.host)

    def _check(self, url: str) -> None:
        if not self.allowed(url):
            raise Refused(f"not contacted: {url} is neither {self.origin} nor loopback")

    async def _read(self, response: httpx.Response) -> bytes:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > MAX_BODY:
                raise ValueError(f"a response body over {MAX_BODY} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def get(self, url: str, headers: Mapping[str, str] | None = None) -> Reply:
        """A GET as a 1.0 client sends it (`A2A-Version: 1.0`: a server that negotiates
        its card on the version serves the 1.0 card, whose signatures cover it)."""
        self._check(url)
        sent = {"A2A-Version": A2A_VERSION, **(headers or {})}
        async with self.http.stream("GET", url, headers=sent) as response:
            raw = await self._read(response)
        return _parse(response.status_code, response.headers, raw)

    def next_id(self) -> int:
        return next(self._ids)

    def _headers(self, version: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if version is not None:
            headers["A2A-Version"] = version
        return self.with_extensions({**headers, **(extra or {})})

    def with_extensions(self, headers: dict[str, str]) -> dict[str, str]:
        """`headers` with `A2A-Extensions: <the required ones>` unless they name the header
        (an empty value: the case sends none)."""
        named = {k.lower(): k for k in headers}
        if "a2a-extensions" not in named:
            if self.activate:
                headers["A2A-Extensions"] = self.activate
        elif not headers[named["a2a-extensions"]]:
            del headers[named["a2a-extensions"]]
        return headers

    async def post(
        self, url: str, body: bytes, *, version: Version = A2A_VERSION, headers: Headers = None
    ) -> Reply:
        return await self.send("POST", url, body, version=version, headers=headers)

    async def send(
        self,
        method: str,
        url: str,
        body: bytes | None = None,
        *,
        version: Version = A2A_VERSION,
        headers: Headers = None,
    ) -> Reply:
        """One HTTP request (JSON body, A2A-Version unless None); the whole answer."""
        self._check(url)
        sent = self._headers(version, headers)
        async with self.http.stream(method, url, content=body, headers=sent) as response:
            raw = await self._read(response)
        return _parse(response.status_code, response.headers, raw)

    async def rpc(
        self,
        url: str,
        method: str,
        params: object = None,
        *,
        id: object = None,
        version: Version = A2A_VERSION,
        headers: Headers = None,
    ) -> Reply:
        request: Json = {"jsonrpc": "2.0", "id": self.next_id() if id is None else id}
        request["method"] = method
        if params is not None:
            request["params"] = params
        body = json.dumps(request).encode()
        return await self.post(url, body, version=version, headers=headers)

    @contextlib.asynccontextmanager
    async def stream(
        self,
        url: str,
        method: str,
        params: object,
        *,
        version: Version = A2A_VERSION,
        headers: Headers = None,
    ) -> AsyncIterator[Stream]:
        """A streaming JSON-RPC call: yields a `Stream` whose `reply` is set when the
        server answered with something other than `text/event-stream` (an error)."""
        request_id = self.next_id()
        request: Json = {"jsonrpc": "2.0", "id": request_id, "method": method}
        request["params"] = params
        body = json.dumps(request).encode()
        async with self.open_stream(url, body, version=version, headers=headers) as stream:
            stream.request_id = request_id
            yield stream

    @contextlib.asynccontextmanager
    async def open_stream(
        self,
        url: str,
        body: bytes | None,
        *,
        version: Version = A2A_VERSION,
        headers: Headers = None,
    ) -> AsyncIterator[Stream]:
        """POST `body` and yield the SSE response (or, in `reply`, the other answer)."""
        self._check(url)
        sent = self._headers(version, headers)
        sent["Accept"] = "text/event-stream"
        async with self.http.stream("POST", url, content=body, headers=sent) as response:
            stream = Stream(response, self.timeout)
            if not stream.content_type.startswith("text/event-stream"):
                raw = await self._read(response)
                stream.reply = _parse(response.status_code, response.headers, raw)
            yield stream


# -- the loopback webhook -------------------------------------------------------------------


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    raw: bytes

    def json(self) -> object:
        try:
            return json.loads(self.raw)
        except ValueError:
            return None


class Webhook:
    """An HTTP server on 127.0.0.1 (ephemeral port) that records each POST and answers 204.
    Requests are bounded (64 KiB of headers, `MAX_BODY` of body)."""

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self._arrived = asyncio.Condition()
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self.url = self.path = ""

    async def __aenter__(self) -> Webhook:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=65536)
        port = self._server.sockets[0].getsockname()[1]
        self.path = "/a2a-check"
        self.url = f"http://127.0.0.1:{port}{self.path}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop listening and close the connections a sender keeps alive (their handlers
        then end on EOF, not by cancellation at the loop's end)."""
        if self._server is not None:
            self._server.close()
            for writer in list(self._open):
                writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                parts = lines[0].split(" ")
                headers = {}
                for line in lines[1:]:
                    name, sep, value = line.partition(":")
                    if sep:
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0") or 0)
                if length > MAX_BODY or "chunked" in headers.get("transfer-encoding", ""):
                    writer.write(b"HTTP/1.1 413 Too Large\r\nContent-Length: 0\r\n\r\n")
                    await writer.drain()
                    return
                raw = await reader.readexactly(length)
                path = parts[1] if len(parts) > 1 else ""
                async with self._arrived:
                    self.deliveries.append(Delivery(path, headers, raw))
                    self._arrived.notify_all()
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    return
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, OSError):
            return
        finally:
            self._open.discard(writer)
            writer.close()

    async def wait(self, count: int, seconds: float) -> list[Delivery]:
        """The deliveries once there are `count` of them, or all there are at the timeout."""
        async with self._arrived:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._arrived.wait_for(lambda: len(self.deliveries) >= count), seconds
                )
            return list(self.deliveries)
