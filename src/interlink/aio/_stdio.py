"""Byte streams over this process's stdin and stdout, and over a child's pipes.

`open_stdio()` gives the reader/writer pair a stdio server (an ACP agent) speaks on. It
works when stdout is a pipe, a socket, a terminal or a regular file (asyncio's pipe
transport refuses regular files; those get a small blocking writer, which cannot stall
on a file). The stdio file descriptors are duplicated so that closing the connection
never closes fd 0/1 under the rest of the program.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys

__all__ = ["FileWriter", "open_stdio"]

#: what the reader buffers ahead of the connection (the transport pauses at twice it):
#: small, so that a connection that stops reading pushes back on the peer at once
_STREAM_LIMIT = 256 * 1024


class FileWriter:
    """A `ByteWriter` over a file descriptor that cannot block (a regular file)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._closed = False

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self._fd)

    async def wait_closed(self) -> None:
        return None


async def open_stdio(
    stdin_fd: int | None = None, stdout_fd: int | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter | FileWriter]:
    """Async streams over (duplicates of) stdin and stdout."""
    loop = asyncio.get_running_loop()
    in_fd = os.dup(sys.stdin.fileno() if stdin_fd is None else stdin_fd)
    out_fd = os.dup(sys.stdout.fileno() if stdout_fd is None else stdout_fd)
    reader = asyncio.StreamReader(limit=_STREAM_LIMIT)
    in_mode = os.fstat(in_fd).st_mode
    if stat.S_ISREG(in_mode):
        _feed_file(reader, in_fd)
    else:
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(in_fd, "rb", buffering=0)
        )
    if stat.S_ISREG(os.fstat(out_fd).st_mode):
        return reader, FileWriter(out_fd)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()),
        os.fdopen(out_fd, "wb", buffering=0),
    )
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


def _feed_file(reader: asyncio.StreamReader, fd: int) -> None:
    """A regular file as stdin: it is all there already, so read it whole."""
    with os.fdopen(fd, "rb") as file:
        reader.feed_data(file.read())
    reader.feed_eof()
