"""The terminal helpers the commands share: ANSI styling or none (`Style`, `colors`), and
lines from the person's input without a thread (`LineReader`)."""

from __future__ import annotations

import contextlib
import os
from collections import deque
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import asyncio

__all__ = ["LineReader", "Style", "colors"]


def colors(stream: TextIO) -> bool:
    """Whether to write ANSI colours on `stream`: a terminal, and `NO_COLOR` unset or empty."""
    return stream.isatty() and not os.environ.get("NO_COLOR")


class Style:
    """ANSI styling, or none."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, *codes: str) -> str:
        return f"\x1b[{';'.join(codes)}m{text}\x1b[0m" if self.color and text else text

    def dim(self, text: str) -> str:
        return self(text, "2")


class LineReader:
    """Lines from a file descriptor without a thread: the fd is read only while a line is
    awaited, so type-ahead stays in the terminal and cancelling a read loses nothing."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.tty = os.isatty(fd)
        self._lines: deque[str | None] = deque()
        self._partial = b""
        self._closed = False

    def _read(self, waiter: asyncio.Future[None]) -> None:
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            data = b""
        if data:
            *lines, self._partial = (self._partial + data).split(b"\n")
            self._lines.extend(line.decode(errors="replace").rstrip("\r") for line in lines)
        else:  # EOF: final on a pipe or file; once per Ctrl-D on a terminal
            if self._partial:
                self._lines.append(self._partial.decode(errors="replace"))
                self._partial = b""
            self._lines.append(None)
            self._closed = not self.tty
        if self._lines and not waiter.done():
            waiter.set_result(None)

    async def readline(self) -> str | None:
        """The next line without its newline; None at end of input."""
        import asyncio

        loop = asyncio.get_running_loop()
        while not self._lines:
            if self._closed:
                return None
            waiter: asyncio.Future[None] = loop.create_future()
            try:
                loop.add_reader(self.fd, self._read, waiter)
            except (PermissionError, ValueError):  # a regular file: reads never block
                self._read(waiter)
                continue
            try:
                await waiter
            finally:
                loop.remove_reader(self.fd)
        return self._lines.popleft()

    def discard_typeahead(self) -> None:
        """Before a question that must not be answered by a line typed earlier."""
        self._lines = deque(line for line in self._lines if line is None)
        if self.tty:
            import termios

            with contextlib.suppress(termios.error):
                termios.tcflush(self.fd, termios.TCIFLUSH)
