"""NDJSON framing: bytes in, whole lines out.

One message per line, delimited by `\\n`; a trailing `\\r` is tolerated and blank lines
carry no message. The size limit counts a line's bytes without its `\\n`. A line over
the limit is never held whole: once the pending bytes pass the limit the framer
discards until the next newline and then reports one `Oversize` for the line, so memory
stays bounded by the limit and the stream goes on.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_MAX_MESSAGE_SIZE", "LineFramer", "Oversize"]

DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024
_CR = ord("\r")
_LF = ord("\n")
_SPLIT_FROM = 1024  # bytes: a smaller chunk is scanned line by line (a few lines at most)
HEAD_SIZE = 256
"""How much of a skipped line `Oversize.head` keeps."""


class Oversize:
    """A line over the limit was skipped; `size` is its length in bytes, `head` its first
    `HEAD_SIZE` bytes (enough to tell, often, which request a too-large answer was for).
    Equal by `size` alone. (A plain class: no `dataclasses` at start-up.)"""

    __slots__ = ("head", "size")

    def __init__(self, size: int, head: bytes = b"") -> None:
        self.size = size
        self.head = head

    def __eq__(self, other: object) -> bool:
        if type(other) is not Oversize:
            return NotImplemented
        return other.size == self.size

    def __hash__(self) -> int:
        return hash(self.size)

    def __repr__(self) -> str:
        return f"Oversize(size={self.size!r}, head={self.head!r})"


class LineFramer:
    """Splits a byte stream into lines of at most `max_size` bytes."""

    __slots__ = ("_buf", "_discarded", "_discarding", "_head", "max_size")

    def __init__(self, max_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        if max_size < 1:
            raise ValueError("max_size must be positive")
        self.max_size = max_size
        self._buf = bytearray()
        self._discarding = False
        self._discarded = 0
        self._head = b""

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete line."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes | Oversize]:
        """Take the next chunk of the stream; return the lines it completes."""
        buf = self._buf
        end = len(data)
        limit = self.max_size
        if (  # (a line ends in a large chunk, none over the limit or ending in `\r`:
            # split in C; the ints make memchr calls, bytes would raise and fall back first)
            end > _SPLIT_FROM
            and _LF in data
            and not self._discarding
            and len(buf) + end <= limit
            and _CR not in data
            and not buf.endswith(b"\r")
        ):
            lines: list[Any] = data.split(b"\n")  # (the last is held)
            if buf:  # the held start of the first line
                buf += lines[0]
                lines[0] = bytes(buf)
                buf.clear()
            rest = lines.pop()
            if rest:
                buf += rest
            if not all(lines) or any(map(bytes.isspace, lines)):  # blank lines: no message
                lines = [line for line in lines if line and not line.isspace()]
            return lines
        if not buf and not self._discarding:  # (one whole line, the usual small chunk)
            nl = data.find(b"\n")
            if nl == end - 1 and 0 < nl <= limit and data[nl - 1] != _CR and not data.isspace():
                return [data[:nl]]
        out: list[bytes | Oversize] = []
        pos = 0
        while pos < end:
            nl = data.find(b"\n", pos)
            if self._discarding:
                if nl < 0:
                    self._discarded += end - pos
                    break
                out.append(Oversize(self._discarded + nl - pos, self._head))
                self._discarding = False
                self._discarded = 0
                pos = nl + 1
                continue
            if nl < 0:
                buf += data[pos:] if pos else data
                if len(buf) > limit:
                    self._discarding = True
                    self._discarded = len(buf)
                    self._head = bytes(buf[:HEAD_SIZE])
                    buf.clear()
                break
            if buf:
                buf += data[pos:nl]
                line = bytes(buf)
                buf.clear()
            else:
                line = data[pos:nl]
            pos = nl + 1
            if 0 < len(line) <= limit and line[-1] != _CR and not line.isspace():
                out.append(line)  # (the usual line, without a call)
            else:
                self._emit(line, out)
        return out

    def close(self) -> list[bytes | Oversize]:
        """End of stream: a last line without its newline still counts."""
        out: list[bytes | Oversize] = []
        if self._discarding:
            out.append(Oversize(self._discarded, self._head))
            self._discarding = False
            self._discarded = 0
        elif self._buf:
            line = bytes(self._buf)
            self._buf.clear()
            self._emit(line, out)
        return out

    def _emit(self, line: bytes, out: list[bytes | Oversize]) -> None:
        if len(line) > self.max_size:
            out.append(Oversize(len(line), line[:HEAD_SIZE]))
            return
        if line[-1:] == b"\r":
            line = line[:-1]
        if line and not line.isspace():
            out.append(line)
