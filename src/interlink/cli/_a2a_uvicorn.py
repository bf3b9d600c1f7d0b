"""uvicorn as `interlink a2a serve` runs it: open streams end when the server stops.

uvicorn stops by closing its listeners, then waiting for every response to finish
(`GRACE` seconds at most), then cancelling what is left and only then telling the app
(lifespan). A stream of a task that goes on would keep it waiting the whole grace
period and then be cancelled mid-response (uvicorn logs that as an exception). So
`StreamingServer.shutdown` first ends the app's streams (`A2AApp.end_streams`: each sends
what it has queued, a `retry:` hint and the end of its body; clients resume with
`Last-Event-ID`), and a connection whose client does not read (uvicorn waits for it
to drain before it writes more) is closed halfway through the grace period.

On glibc, buffers of 128 KiB and more are given back to the system when freed
(`M_MMAP_THRESHOLD` fixed): with its default, that threshold rises to the size of the
largest buffer freed, and the buffers of closed streams (large events, the snapshots of
large tasks) stay in the heap, fragmented (120 streams of a 600 KB answer left 200 MiB
behind; a second round grew it).
"""

from __future__ import annotations

import asyncio
import ctypes
import platform
import socket
import sys
from typing import Literal

import uvicorn

from interlink.a2a import A2AApp

__all__ = ["GRACE", "AnnouncingServer", "StreamingServer", "config", "give_large_buffers_back"]

GRACE = 5
"""Seconds that responses in progress get to finish when the server stops."""
_M_MMAP_THRESHOLD = -3  # (glibc's malloc.h)
_LARGE = 128 * 1024


def give_large_buffers_back() -> bool:
    """On glibc: buffers of `_LARGE` bytes and more are mapped on their own, so freeing
    one gives it back to the system. Whether that was done."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, _LARGE))
    except (OSError, AttributeError):
        return False


def config(
    app: A2AApp,
    *,
    host: str,
    port: int,
    log_level: str = "info",
    http: Literal["auto", "h11", "httptools"] = "auto",
) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=http,
        lifespan="on",
        timeout_graceful_shutdown=GRACE,
    )


class StreamingServer(uvicorn.Server):
    """A uvicorn server for one `A2AApp` that ends its streams when it stops."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        assert isinstance(config.app, A2AApp)
        self.app = config.app
        give_large_buffers_back()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()  # (uvicorn does it again: no new connection meanwhile)
        self.app.end_streams()
        grace = self.config.timeout_graceful_shutdown
        if grace is not None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + grace / 2
            while self.server_state.tasks and loop.time() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.05)  # (uvicorn itself polls them so)
        for connection in list(self.server_state.connections):
            if _not_reading(connection):
                connection.transport.abort()
        await super().shutdown(sockets)


class AnnouncingServer(StreamingServer):
    """Once the socket listens and the app has started: `serving on URL` on stdout (a
    script reads this line to learn that and where it serves; a failed start closes
    stdout without it) and `what` on stderr (for people)."""

    def __init__(self, config: uvicorn.Config, url: str, what: str) -> None:
        super().__init__(config)
        self.url = url
        self.what = what

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            print(f"serving on {self.url}", flush=True)
            print(self.what, file=sys.stderr, flush=True)


def _not_reading(connection: object) -> bool:
    """Whether uvicorn waits for this connection's client to read before writing more."""
    flow = getattr(connection, "flow", None)
    return bool(getattr(flow, "write_paused", False)) and hasattr(connection, "transport")
