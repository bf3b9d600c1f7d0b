"""The bench's echo agent on interlink (`interlink.a2a.create_app`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.a2a_peers import PROTOCOL_BINDINGS, stream_chunks
from interlink.a2a import A2AApp, AgentExecutor, EventSink, RequestContext, TaskUpdater
from interlink.a2a import create_app as _create_app
from interlink.a2a import types as t

if TYPE_CHECKING:
    from interlink.a2a.grpc import GrpcServer


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        text = context.text
        chunks = stream_chunks(text)
        if chunks is None:
            await task.add_artifact(text=text, name="echo")
        else:
            artifact = None
            for i, chunk in enumerate(chunks):
                artifact = await task.add_artifact(
                    text=chunk,
                    artifact_id=artifact,
                    name="echo",
                    append=i > 0,
                    last_chunk=i == len(chunks) - 1,
                )
        await task.complete()


def _card(url: str, binding: str) -> t.AgentCard:
    return t.AgentCard(
        name="bench echo",
        description="Echoes the text as an artifact; `stream N` streams N chunks.",
        version="1.0.0",
        supported_interfaces=[
            t.AgentInterface(
                url=url, protocol_binding=PROTOCOL_BINDINGS[binding], protocol_version="1.0"
            )
        ],
        capabilities=t.AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[t.AgentSkill(id="echo", name="Echo", description="Echoes.", tags=["bench"])],
    )


def create_app(store: str, url: str, binding: str) -> A2AApp:
    """The agent's app; it serves both HTTP bindings."""
    return _create_app(EchoExecutor(), _card(url, binding), store=store)


def create_grpc_server(store: str, url: str) -> GrpcServer:
    """The agent's gRPC server (`interlink.a2a.grpc`)."""
    from interlink.a2a.grpc import create_grpc_server

    return create_grpc_server(EchoExecutor(), _card(url, "grpc"), store=store)
