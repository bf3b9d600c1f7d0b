"""Server-Sent Events for the A2A client: a sans-IO parser and a reader over an HTTP
answer (httpx's, or the client's own pool's: an `Answer`).

`SSEParser` turns bytes into `SSEEvent`s as the WHATWG EventSource rules say: lines end
in CR, LF or CRLF (also across chunk boundaries); `:` lines are comments; `data:` lines
are joined with `\\n`; `event:`, `id:` (ignored when it holds NUL) and `retry:` (digits
only) set the event's fields; a blank line dispatches an event that has data. At EOF
(`close()`) a last event without its blank line is still dispatched. `id` is the id
given on that very event (`None` when it gave none), so a resumed stream's snapshot,
which the server sends without an id, is told apart from the replayed events.

`read_events(response)` drives the parser over the answer's body and applies the
JSON-RPC rules of the A2A binding: a plain JSON answer instead of a stream (an error
before the first event) and an `event: error` are raised as the typed `RpcError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Final, NamedTuple, Protocol

from interlink.a2a._errors import InvalidAgentResponse
from interlink.a2a.client._h1pool import Response
from interlink.jsonrpc import ErrorResponse, Invalid, RpcError, SuccessResponse, decode_message

__all__ = [
    "DEFAULT_MAX_EVENT_SIZE",
    "Answer",
    "SSEError",
    "SSEEvent",
    "SSEParser",
    "UnexpectedResponse",
    "error_of",
    "read_events",
]

DEFAULT_MAX_EVENT_SIZE: Final = 64 * 1024 * 1024


class _Fields(Protocol):
    def get(self, key: str, default: str, /) -> str: ...


class Answer(Protocol):
    """What is read of an HTTP answer (`httpx.Response` is one; so is the pool's)."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> _Fields: ...

    @property
    def content(self) -> bytes: ...

    async def aread(self) -> bytes: ...

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


class SSEEvent(NamedTuple):
    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEError(InvalidAgentResponse, ValueError):
    """The stream is not one we can read (an event over the size limit): an
    `InvalidAgentResponse` (a `ValueError` too, as it always was)."""


class UnexpectedResponse(InvalidAgentResponse):
    """The server answered a streaming call with something that is neither an event
    stream nor a JSON-RPC error (an `InvalidAgentResponse`, as for a blocking call)."""

    def __init__(self, detail: str, status: int, body: bytes) -> None:
        super().__init__(f"{detail} (HTTP {status}): {body[:200]!r}")
        self.status = status
        self.body = body


class SSEParser:
    """Feed bytes, get events. No I/O; `close()` at the end of the stream."""

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.max_event_size = max_event_size
        #: the last `id:` seen (it persists across events, as in EventSource)
        self.last_event_id: str | None = None
        #: the last valid `retry:` in milliseconds
        self.retry: int | None = None
        self._buffer = bytearray()
        self._skip_lf = False  # the previous chunk ended in CR: a leading LF belongs to it
        self._first = True  # a UTF-8 BOM may start the stream
        self._data: list[str] = []
        self._size = 0
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        if not chunk:
            return []  # (an LF still owed to a CR stays owed)
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = False
        buffer = self._buffer
        scanned = len(buffer)  # what was pending holds no line end: not searched again
        buffer += chunk
        events: list[SSEEvent] = []
        if b"\r" not in chunk:  # (the usual: LF line ends only, the pending part has none)
            return self._feed_lf(events)
        start = 0
        # the next CR and LF at or after `start` (-1: none in the rest of the buffer);
        # each is searched for again only once passed, so every byte is looked at once
        cr = buffer.find(b"\r", scanned)
        lf = buffer.find(b"\n", scanned)
        while cr >= 0 or lf >= 0:
            if cr < 0 or (0 <= lf < cr):
                end, after = lf, lf + 1
            elif cr + 1 < len(buffer):
                end, after = cr, cr + 2 if buffer[cr + 1] == 0x0A else cr + 1
            else:  # CR at the very end: the LF may come in the next chunk
                end, after = cr, cr + 1
                self._skip_lf = True
            self._line(bytes(buffer[start:end]), events)
            start = after
            if 0 <= cr < after:
                cr = buffer.find(b"\r", after)
            if 0 <= lf < after:
                lf = buffer.find(b"\n", after)
        del buffer[:start]
        if len(buffer) + self._size > self.max_event_size:
            raise SSEError(f"an event is larger than {self.max_event_size} bytes")
        return events

    def _feed_lf(self, events: list[SSEEvent]) -> list[SSEEvent]:
        """`feed` when the buffer's line ends are all LF: split at once, and a `data: `
        line (the most of them) taken without the general rules."""
        buffer = self._buffer
        if b"\n" not in buffer:
            lines = []
        else:
            lines = bytes(buffer).split(b"\n")
            del buffer[: len(buffer) - len(lines[-1])]
            lines.pop()
        data = self._data
        for raw in lines:
            if raw[:6] == b"data: " and not self._first:
                self._size += len(raw)
                if self._size > self.max_event_size:
                    raise SSEError(f"an event is larger than {self.max_event_size} bytes")
                data.append(raw[6:].decode("utf-8", "replace"))
            else:
                self._line(raw, events)
                data = self._data  # (a dispatch starts a new list)
        if len(buffer) + self._size > self.max_event_size:
            raise SSEError(f"an event is larger than {self.max_event_size} bytes")
        return events

    def close(self) -> list[SSEEvent]:
        """The stream ended: the pending line and event, if any."""
        events: list[SSEEvent] = []
        if self._buffer:
            self._line(bytes(self._buffer), events)
            self._buffer.clear()
        self._dispatch(events)
        return events

    def _line(self, raw: bytes, events: list[SSEEvent]) -> None:
        if self._first:
            self._first = False
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        if not raw:
            self._dispatch(events)
            return
        if raw[:1] == b":":
            return
        line = raw.decode("utf-8", "replace")
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._size += len(raw)
            if self._size > self.max_event_size:
                raise SSEError(f"an event is larger than {self.max_event_size} bytes")
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = self.last_event_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = self.retry = int(value)
        # other field names are ignored

    def _dispatch(self, events: list[SSEEvent]) -> None:
        if self._data:
            event = self._event or "message"
            events.append(SSEEvent("\n".join(self._data), event, self._id, self._retry))
        self._data = []
        self._size = 0
        self._event = ""
        self._id = None
        self._retry = None


def error_of(body: bytes, protocol: str = "a2a") -> RpcError | None:
    """The typed error a JSON-RPC error response stands for; `None` for anything else."""
    message = decode_message(body)
    if isinstance(message, ErrorResponse):
        return RpcError.from_error_object(message.error, protocol)
    return None


async def read_events(
    response: Answer,
    *,
    idle_timeout: float | None = None,
    max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
    parser: SSEParser | None = None,
    errors: Callable[[bytes], RpcError | None] = error_of,
) -> AsyncGenerator[SSEEvent, None]:
    """The events of a streaming JSON-RPC answer.

    A JSON body (the server's error before the first event) raises its typed
    `RpcError`; a successful JSON answer is given as one event. `event: error` raises
    its typed `RpcError`. With `idle_timeout`, no bytes at all (keep-alive comments
    count) for that long raises `TimeoutError`. Pass `parser` to read its `retry` and
    `last_event_id` afterwards; `errors` reads an error response (`error_of`: A2A 1.0).
    """
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "text/event-stream":
        body = await response.aread()
        error = errors(body)
        if error is not None:
            raise error
        message = decode_message(body)
        if kind == "application/json" and isinstance(message, SuccessResponse):
            yield SSEEvent(body.decode("utf-8", "replace"))
            return
        detail = message.error.message if isinstance(message, Invalid) else "not an event stream"
        raise UnexpectedResponse(detail, response.status_code, body)
    sse = parser or SSEParser(max_event_size=max_event_size)
    if isinstance(response, Response):  # (the pool's answer bounds silence itself)
        chunks = response.chunks(idle_timeout)
    else:
        chunks = _timed(response.aiter_bytes(), idle_timeout)
    async for chunk in chunks:
        for event in sse.feed(chunk):
            _check(event, errors)
            yield event
    for event in sse.close():
        _check(event, errors)
        yield event


async def _timed(chunks: AsyncIterator[bytes], idle: float | None) -> AsyncIterator[bytes]:
    """`chunks`, `TimeoutError` when the next one takes more than `idle` seconds."""
    while True:
        try:
            async with asyncio.timeout(idle):
                chunk = await anext(chunks)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise TimeoutError(f"no event or keep-alive for {idle} s") from None
        yield chunk


def _check(event: SSEEvent, errors: Callable[[bytes], RpcError | None]) -> None:
    if event.event == "error":
        body = event.data.encode()
        error = errors(body)
        if error is None:
            error = RpcError(f"the stream ended with an error event: {event.data[:200]}", code=0)
        raise error
