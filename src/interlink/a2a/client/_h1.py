"""HTTP/1.1 for the A2A client, with no I/O: the bytes of a request, and the events of
its answer from the bytes that come back.

`request_bytes` writes a request whole (request line, `Host`, the headers, and
`Content-Length` when there is a body), refusing a header that would break the framing
(`LocalProtocolError`). `ResponseParser(method)` is fed what the connection reads
(`feed`, and `feed_eof` at its end) and gives, one `next_event()` at a time: the `Head`
(interim 1xx answers are skipped), the body as `bytes` (as much as has come, chunks of
a chunked body joined), then `END`; `NEED_DATA` while it waits for more bytes.

Theory of operation. The answer's framing is RFC 9112 §6.3's, decided from the head:
no body for HEAD, 204 and 304; chunked when `Transfer-Encoding` is `chunked` (the only
coding spoken: another one is refused); else `Content-Length` (all its values equal);
else the body runs to EOF. The parser is in one `State` at a time; `_STEPS` maps each to
the method that advances it, and a step returns an event or `None` (no progress: need
data). `keep_alive`, once `END` is given, says whether the connection can carry the
next request (HTTP/1.1 unless `Connection: close`; 1.0 only with `keep-alive`; never
after a body framed by EOF).

Bounds: the head, a chunk's size line and the trailers each at most `max_head` bytes;
the body at most `max_body` (None: unbounded, as an event stream is: its events are
bounded by the SSE parser). Strict where a lenient read could be read otherwise behind
us: a status is three digits from 100, and a head holds no CTL but HTAB (a bare CR
included). Whatever the peer does wrong is a `RemoteProtocolError`;
`received` (bytes fed so far) tells a connection closed before any byte of the answer
(which a pool may retry, for a safe method) from one closed in the middle.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Sequence
from typing import Final, NamedTuple

__all__ = [
    "END",
    "MAX_BODY",
    "MAX_HEAD",
    "NEED_DATA",
    "Head",
    "HttpError",
    "LocalProtocolError",
    "RemoteProtocolError",
    "ResponseParser",
    "State",
    "request_bytes",
]

MAX_HEAD: Final = 100 * 1024
"""Bytes of an answer's head (also of a chunk size line, and of the trailers): httpx's
(httpcore's) limit, which the client had before."""
MAX_BODY: Final = 64 * 1024 * 1024
"""Bytes of an answer read whole: the size of one SSE event the client accepts."""


class HttpError(Exception):
    """Anything that went wrong with an HTTP exchange (the pool's I/O errors too)."""


class LocalProtocolError(HttpError):
    """We were asked to send something HTTP/1.1 cannot carry."""


class RemoteProtocolError(HttpError):
    """The server's bytes break HTTP/1.1 (or our bounds), or it closed too soon."""


class Head(NamedTuple):
    status: int
    reason: bytes
    headers: list[tuple[bytes, bytes]]
    """(name lower-cased, value) in the order received."""
    http10: bool = False


class _Sentinel(enum.Enum):
    NEED_DATA = "NEED_DATA"
    END = "END"


NEED_DATA: Final = _Sentinel.NEED_DATA
END: Final = _Sentinel.END
Event = Head | bytes | _Sentinel


class State(enum.Enum):
    HEAD = "head"
    LENGTH = "body by Content-Length"
    CHUNK_SIZE = "chunk size line"
    CHUNK_DATA = "chunk data"
    CHUNK_END = "CRLF after chunk data"
    TRAILERS = "trailers"
    UNTIL_EOF = "body up to EOF"
    DONE = "done"


_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(rb"[\x00\r\n]")
_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([1-9][0-9]{2})(?: ([^\r\n]*))?")
_BAD_HEAD = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)")
"""What a head may not hold (RFC 9110 §5.5, RFC 9112 §2.2): a CTL other than HTAB, and
a CR that does not end a line."""
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_HEX = re.compile(rb"[0-9A-Fa-f]+")
_NO_BODY_STATUS = frozenset({204, 304})


def _check_header(name: bytes, value: bytes) -> None:
    if not _TOKEN.fullmatch(name):
        raise LocalProtocolError(f"illegal header name {name!r}")
    if _BAD_VALUE.search(value):
        raise LocalProtocolError(f"illegal header value {value!r}")


def request_bytes(
    method: str,
    target: str,
    host: str,
    headers: Sequence[tuple[bytes, bytes]],
    body: bytes | None,
) -> bytes:
    """A whole request: `target` is the origin form (path and query), `host` the `Host`
    (unless `headers` has one). A body gets its `Content-Length`."""
    if not _TOKEN.fullmatch(method.encode()) or _BAD_VALUE.search(target.encode()) or " " in target:
        raise LocalProtocolError(f"illegal request line {method!r} {target!r}")
    names = set()
    lines = [f"{method} {target} HTTP/1.1\r\n".encode()]
    for name, value in headers:
        _check_header(name, value)
        lower = name.lower()
        if lower in (b"content-length", b"transfer-encoding"):
            continue  # (the body's framing is ours to write)
        names.add(lower)
        lines.append(b"%s: %s\r\n" % (name, value))
    if b"host" not in names:
        _check_header(b"Host", host.encode())
        lines.insert(1, b"Host: %s\r\n" % host.encode())
    if b"accept" not in names:
        lines.append(b"Accept: */*\r\n")
    if body is not None:
        lines.append(b"Content-Length: %d\r\n" % len(body))
    lines.append(b"\r\n")
    if body:
        lines.append(body)
    return b"".join(lines)


class ResponseParser:
    """The answer to one request (see the module). No I/O."""

    def __init__(
        self, method: str, *, max_head: int = MAX_HEAD, max_body: int | None = MAX_BODY
    ) -> None:
        self.max_head = max_head
        self.max_body = max_body
        self.state = State.HEAD
        self.keep_alive = False
        #: bytes fed so far: 0 means the server said nothing at all yet
        self.received = 0
        self._head_only = method == "HEAD"
        self._buffer = bytearray()
        self._eof = False
        self._left = 0  # bytes still due: of the Content-Length body, or of the chunk
        self._body = 0  # body bytes given so far
        self._close_after = False

    @property
    def buffered(self) -> int:
        """Bytes fed and not given back yet (the connection pauses reading above a mark)."""
        return len(self._buffer)

    def feed(self, data: bytes) -> None:
        if self._eof:
            raise RuntimeError("bytes fed after EOF")
        self.received += len(data)
        self._buffer += data

    def feed_eof(self) -> None:
        self._eof = True

    def next_event(self) -> Event:
        """The next event; `NEED_DATA` until more is fed (or EOF, which ends a body
        framed by it and is a `RemoteProtocolError` anywhere else)."""
        while self.state is not State.DONE:
            event = _STEPS[self.state](self)
            if event is not None:
                return event
            if not self._eof:
                return NEED_DATA
            if self.state is State.UNTIL_EOF:
                self.state = State.DONE
                return END
            raise RemoteProtocolError(self._eof_error())
        return END

    def _eof_error(self) -> str:
        if self.state is State.HEAD:
            if not self.received:
                return "server disconnected without sending a response"
            return "server disconnected in the middle of the response head"
        if self.state is State.LENGTH:
            return (
                "peer closed connection without sending complete message body: "
                f"{self._left} bytes of the Content-Length missing"
            )
        return (
            "peer closed connection without sending complete message body: incomplete chunked read"
        )

    # -- the steps: an event, or None when they need more bytes ----------------------------

    def _head(self) -> Event | None:
        buffer = self._buffer
        while True:  # (interim 1xx answers are skipped)
            match = _HEAD_END.search(buffer)
            if match is None or match.end() > self.max_head:
                if len(buffer) > self.max_head:
                    raise RemoteProtocolError(
                        f"the response head is larger than {self.max_head} bytes"
                    )
                return None
            raw = bytes(buffer[: match.start()])
            del buffer[: match.end()]
            head = _parse_head(raw)
            if head.status == 101:
                raise RemoteProtocolError("the server switched protocols, unasked")
            if head.status >= 200:
                self._frame(head)
                return head

    def _frame(self, head: Head) -> None:
        headers = head.headers
        connection = {
            token.strip().lower()
            for name, value in headers
            if name == b"connection"
            for token in value.split(b",")
        }
        self.keep_alive = b"keep-alive" in connection if head.http10 else b"close" not in connection
        codings = [
            coding.strip().lower()
            for name, value in headers
            if name == b"transfer-encoding"
            for coding in value.split(b",")
        ]
        lengths = {value.strip() for name, value in headers if name == b"content-length"}
        if self._head_only or head.status in _NO_BODY_STATUS:
            self.state = State.DONE
        elif codings:
            if codings != [b"chunked"]:
                raise RemoteProtocolError(f"unsupported Transfer-Encoding {codings!r}")
            if lengths:
                self.keep_alive = False  # (RFC 9112 §6.1: both sent, close after)
            self.state = State.CHUNK_SIZE
        elif lengths:
            values = {v.strip() for value in lengths for v in value.split(b",")}
            if len(values) != 1 or not (length := values.pop()).isdigit() or len(length) > 18:
                raise RemoteProtocolError(f"invalid Content-Length {sorted(lengths)!r}")
            self._left = int(length)
            self._check_body(self._left)
            self.state = State.LENGTH if self._left else State.DONE
        else:
            self.keep_alive = False
            self.state = State.UNTIL_EOF

    def _check_body(self, more: int) -> None:
        if self.max_body is not None and self._body + more > self.max_body:
            raise RemoteProtocolError(f"the response body is larger than {self.max_body} bytes")

    def _length(self) -> Event | None:
        buffer = self._buffer
        if not buffer:
            return None
        take = min(self._left, len(buffer))
        data = bytes(buffer[:take])
        del buffer[:take]
        self._left -= take
        self._body += take
        if not self._left:
            self.state = State.DONE
        return data

    def _until_eof(self) -> Event | None:
        buffer = self._buffer
        if not buffer:
            return None
        self._check_body(len(buffer))
        data = bytes(buffer)
        buffer.clear()
        self._body += len(data)
        return data

    def _chunks(self) -> Event | None:
        """As much of a chunked body as has come, across chunks (one event); at its
        last chunk, the trailers."""
        parts: list[bytes] = []
        buffer = self._buffer
        start = 0
        while True:
            state = self.state
            if state is State.CHUNK_SIZE:
                end = buffer.find(b"\n", start)
                if end < 0:
                    if len(buffer) - start > self.max_head:
                        raise RemoteProtocolError("a chunk size line is too long")
                    break
                line = bytes(buffer[start:end]).rstrip(b"\r")
                size = line.split(b";", 1)[0].strip()
                if not _HEX.fullmatch(size):
                    raise RemoteProtocolError(f"invalid chunk size line {line[:40]!r}")
                self._left = int(size, 16)
                start = end + 1
                if self._left:
                    self._check_body(self._left)
                    self.state = State.CHUNK_DATA
                else:
                    self.state = State.TRAILERS
            elif state is State.CHUNK_DATA:
                take = min(self._left, len(buffer) - start)
                if not take:
                    break
                parts.append(bytes(buffer[start : start + take]))
                start += take
                self._left -= take
                self._body += take
                if not self._left:
                    self.state = State.CHUNK_END
            elif state is State.CHUNK_END:
                if len(buffer) - start < 1 or (buffer[start] == 0x0D and len(buffer) - start < 2):
                    break
                if buffer[start] == 0x0A:
                    start += 1
                elif buffer[start : start + 2] == b"\r\n":
                    start += 2
                else:
                    raise RemoteProtocolError("a chunk does not end in CRLF")
                self.state = State.CHUNK_SIZE
            else:  # TRAILERS
                del buffer[:start]
                start = 0
                if parts:
                    break  # (the data first; the trailers on the next call)
                return self._trailers()
        del buffer[:start]
        if parts:
            return parts[0] if len(parts) == 1 else b"".join(parts)
        return None

    def _trailers(self) -> Event | None:
        buffer = self._buffer
        if buffer[:2] == b"\r\n" or buffer[:1] == b"\n":
            del buffer[: 2 if buffer[:1] == b"\r" else 1]
            self.state = State.DONE
            return END
        match = _HEAD_END.search(buffer)
        if match is None:
            if len(buffer) > self.max_head:
                raise RemoteProtocolError(f"the trailers are larger than {self.max_head} bytes")
            return None
        del buffer[: match.end()]  # (trailers are read and dropped)
        self.state = State.DONE
        return END


def _parse_head(raw: bytes) -> Head:
    bad = _BAD_HEAD.search(raw)
    if bad is not None:
        raise RemoteProtocolError(f"a control character {bad[0]!r} in the response head")
    lines = raw.split(b"\n")
    status_line = lines[0].rstrip(b"\r")
    match = _STATUS_LINE.fullmatch(status_line)
    if match is None:
        raise RemoteProtocolError(f"invalid status line {status_line[:80]!r}")
    headers: list[tuple[bytes, bytes]] = []
    for line in lines[1:]:
        line = line.rstrip(b"\r")
        if line[:1] in (b" ", b"\t"):  # obsolete line folding: one value, a space between
            if not headers:
                raise RemoteProtocolError("a header line starts with whitespace")
            name, value = headers[-1]
            headers[-1] = (name, value + b" " + line.strip(b" \t"))
            continue
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name):
            raise RemoteProtocolError(f"invalid header line {line[:80]!r}")
        headers.append((name.lower(), value.strip(b" \t")))
    return Head(int(match[2]), match[3] or b"", headers, match[1] == b"0")


def _done(parser: ResponseParser) -> Event | None:
    return END


_STEPS: Final[dict[State, Callable[[ResponseParser], Event | None]]] = {
    State.HEAD: ResponseParser._head,
    State.LENGTH: ResponseParser._length,
    State.CHUNK_SIZE: ResponseParser._chunks,
    State.CHUNK_DATA: ResponseParser._chunks,
    State.CHUNK_END: ResponseParser._chunks,
    State.TRAILERS: ResponseParser._chunks,
    State.UNTIL_EOF: ResponseParser._until_eof,
    State.DONE: _done,
}
"""The step that advances each state."""
