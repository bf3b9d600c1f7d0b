"""`interlink a2a serve --grpc-port`: the gRPC binding beside the HTTP app, one server.

Imported only with `--grpc-port` (it imports grpcio). The gRPC server shares the app's
`A2AServer` (`GrpcServer.for_app`): the app's lifespan starts and stops it, the gRPC
side starts once the app has and stops before it (its streams end first). The card
lists the interface (`GRPC`, `host:port`, A2A 1.0) after the HTTP ones (`A2AApp.list_grpc`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from interlink.a2a import A2AApp
from interlink.a2a.grpc import GrpcServer

__all__ = ["GrpcSide"]

#: `--host` on every address: the card names loopback, as for HTTP
_UNSPECIFIED = {"0.0.0.0": "127.0.0.1", "::": "::1"}


class GrpcSide:
    def __init__(self, app: A2AApp, host: str, port: int, listed: str | None) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.public_host = urlsplit(listed).hostname if listed else None
        self.server = GrpcServer.for_app(app)

    async def start(self) -> str:
        """Listen and serve; the `host:port` the card lists."""
        bind = f"[{self.host}]" if ":" in self.host else self.host
        port = await self.server.start(f"{bind}:{self.port}")
        if port == 0:
            raise RuntimeError(f"cannot listen on {bind}:{self.port}")
        name = self.public_host or _UNSPECIFIED.get(self.host, self.host)
        where = f"[{name}]:{port}" if ":" in name else f"{name}:{port}"
        self.app.list_grpc(where)
        self.server.binding.use_card(self.app.server.card)
        return where

    async def stop(self) -> None:
        await self.server.stop(grace=5)
