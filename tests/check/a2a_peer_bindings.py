"""A peer A2A server on the official Python SDK (`a2a-sdk`) that declares several
bindings over one `DefaultRequestHandler` with the agent of
`tests/interop/a2a/peers/py_server.py`: JSON-RPC at `/`, HTTP+JSON at `/rest` (the SDK's
`create_rest_routes`) and, given a second port, gRPC there (the SDK's `GrpcHandler`,
`a2a-sdk[grpc]`). Beside what that peer offers, it declares push notifications (the SDK's
in-memory config store and its sender) and turns on the SDK's check of message parts
against the card's input modes (`validate_input_modes`).

`python -m tests.check.a2a_peer_bindings PORT [GRPC_PORT]` (from the repository root).
"""

from __future__ import annotations

import asyncio
import sys

import httpx
import uvicorn
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
)
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette

from tests.interop.a2a.peers.py_server import PeerExecutor


async def serve(port: int, grpc_port: int | None) -> None:
    base = f"http://127.0.0.1:{port}"
    interfaces = [
        AgentInterface(url=f"{base}/", protocol_binding="JSONRPC", protocol_version="1.0"),
        AgentInterface(url=f"{base}/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"),
    ]
    if grpc_port is not None:
        where = f"127.0.0.1:{grpc_port}"  # a2a.proto: for gRPC, "hostname:port"
        interfaces.append(
            AgentInterface(url=where, protocol_binding="GRPC", protocol_version="1.0")
        )
    card = AgentCard(
        name="py sdk peer, several bindings",
        description="echo, slow, ask, message",
        version="1.0.0",
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echoes.", tags=["peer"])],
    )
    configs = InMemoryPushNotificationConfigStore()
    handler = DefaultRequestHandler(
        PeerExecutor(),
        InMemoryTaskStore(),
        card,
        push_config_store=configs,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(timeout=5), configs),
        validate_input_modes=True,
    )
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url="/"),
        *create_rest_routes(handler, path_prefix="/rest"),
    ]
    config = uvicorn.Config(
        Starlette(routes=routes), host="127.0.0.1", port=port, log_level="warning"
    )
    if grpc_port is None:
        await uvicorn.Server(config).serve()
        return
    import grpc.aio
    from a2a.server.request_handlers.grpc_handler import GrpcHandler
    from a2a.types.a2a_pb2_grpc import add_A2AServiceServicer_to_server

    server = grpc.aio.server()
    add_A2AServiceServicer_to_server(GrpcHandler(handler), server)  # type: ignore[no-untyped-call]
    server.add_insecure_port(f"127.0.0.1:{grpc_port}")
    await server.start()
    try:
        await uvicorn.Server(config).serve()
    finally:
        await server.stop(None)


def main() -> None:
    port = int(sys.argv[1])
    grpc_port = int(sys.argv[2]) if len(sys.argv) > 2 else None
    asyncio.run(serve(port, grpc_port))


if __name__ == "__main__":
    main()
