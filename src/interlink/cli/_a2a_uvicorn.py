"""uvicorn as `interlink a2a serve` runs it: open streams end when the server stops.

uvicorn stops by closing its listeners, then waiting for every response to finish
(`GRACE` seconds at most), then cancelling what is left and only then telling the app
(lifespan). A stream of a task that goes on would keep it waiting the whole grace
period and then be cancelled mid-response (uvicorn logs that as an exception). So
`StreamingServer.shutdown` first ends the app's streams (`A2AApp.end_streams`: each sends
what it has queued, a `retry:` hint and the end of its body; clients resume with
`Last-Event-ID`), and a connection whose client does not read (uvicorn waits for it
to drain before it writes more) is closed halfway through the grace period.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Literal

import uvicorn

from interlink.a2a import A2AApp

__all__ = ["GRACE", "StreamingServer", "config"]

GRACE = 5
"""Seconds that responses in progress get to finish when the server stops."""


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


def _not_reading(connection: object) -> bool:
    """Whether uvicorn waits for this connection's client to read before writing more."""
    flow = getattr(connection, "flow", None)
    return bool(getattr(flow, "write_paused", False)) and hasattr(connection, "transport")
