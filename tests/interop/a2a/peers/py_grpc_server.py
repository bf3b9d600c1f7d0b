"""A peer A2A agent on the official Python SDK (`a2a-sdk[grpc]`) offering only gRPC,
through its public API: the `GrpcHandler` servicer over `DefaultRequestHandler` on a
grpc.aio server, and the agent card (its one interface `GRPC`, `127.0.0.1:GRPC_PORT`)
from `create_agent_card_routes` on uvicorn.

`python py_grpc_server.py HTTP_PORT GRPC_PORT`. The agent is `py_server.PeerExecutor`:
`echo X`, `slow` (cancellable), `ask`, `message`.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import grpc
import uvicorn
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import create_agent_card_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, a2a_pb2_grpc
from starlette.applications import Starlette

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))  # (run as a script)
from tests.interop.a2a.peers.py_server import PeerExecutor


async def serve(http_port: int, grpc_port: int) -> None:
    card = AgentCard(
        name="py grpc sdk peer",
        description="echo, slow, ask, message",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=f"127.0.0.1:{grpc_port}", protocol_binding="GRPC", protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echoes.", tags=["peer"])],
    )
    handler = DefaultRequestHandler(PeerExecutor(), InMemoryTaskStore(), card)
    server = grpc.aio.server()
    servicer = GrpcHandler(handler)
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    server.add_insecure_port(f"127.0.0.1:{grpc_port}")
    await server.start()
    app = Starlette(routes=create_agent_card_routes(card))
    config = uvicorn.Config(app, host="127.0.0.1", port=http_port, log_level="warning")
    try:
        await uvicorn.Server(config).serve()
    finally:
        await server.stop(1)


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1]), int(sys.argv[2])))
