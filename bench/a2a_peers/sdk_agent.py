"""The bench's echo agent on the official SDK (`a2a-sdk`), through its public API:
`DefaultRequestHandler` with `InMemoryTaskStore` or `DatabaseTaskStore` (SQLAlchemy on
aiosqlite); for the HTTP bindings, routes from `create_jsonrpc_routes` or
`create_rest_routes` and `create_agent_card_routes` in a Starlette app, for gRPC its
`GrpcHandler` on a `grpc.aio` server, as its documentation composes them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import DatabaseTaskStore, InMemoryTaskStore, TaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from sqlalchemy.ext.asyncio import create_async_engine
from starlette.applications import Starlette

from bench.a2a_peers import PROTOCOL_BINDINGS, stream_chunks

if TYPE_CHECKING:
    import grpc.aio


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        assert context.task_id is not None
        assert context.context_id is not None
        if context.current_task is None:  # the SDK wants the executor to publish it
            await event_queue.enqueue_event(new_task_from_user_message(message))
        task = TaskUpdater(event_queue, context.task_id, context.context_id)
        text = context.get_user_input()
        chunks = stream_chunks(text)
        if chunks is None:
            await task.add_artifact([new_text_part(text)], name="echo")
        else:
            artifact = f"{context.task_id}-echo"
            for i, chunk in enumerate(chunks):
                await task.add_artifact(
                    [new_text_part(chunk)],
                    artifact_id=artifact,
                    name="echo",
                    append=i > 0,
                    last_chunk=i == len(chunks) - 1,
                )
        await task.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def _handler(store: str, url: str, binding: str) -> tuple[DefaultRequestHandler, AgentCard]:
    """`store`: `memory:` or `sqlite:///abs/path.db`."""
    card = AgentCard(
        name="bench echo",
        description="Echoes the text as an artifact; `stream N` streams N chunks.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=url, protocol_binding=PROTOCOL_BINDINGS[binding], protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echoes.", tags=["bench"])],
    )
    task_store: TaskStore
    if store == "memory:":
        task_store = InMemoryTaskStore()
    else:
        path = store.removeprefix("sqlite://")
        task_store = DatabaseTaskStore(create_async_engine(f"sqlite+aiosqlite:///{path}"))
    return DefaultRequestHandler(EchoExecutor(), task_store, card), card


def create_app(store: str, url: str, binding: str) -> Starlette:
    """The agent on `binding` (`jsonrpc` or `rest`); the card route first, as the REST
    routes end with a catch-all `/{tenant}` mount."""
    handler, card = _handler(store, url, binding)
    if binding == "rest":
        routes = [*create_agent_card_routes(card), *create_rest_routes(handler)]
    else:
        routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
    return Starlette(routes=routes)


def add_to_grpc_server(server: grpc.aio.Server, store: str, url: str) -> None:
    """The agent's `A2AService` on `server`."""
    from a2a.server.request_handlers.grpc_handler import GrpcHandler
    from a2a.types.a2a_pb2_grpc import add_A2AServiceServicer_to_server

    handler, _ = _handler(store, url, "grpc")
    add_A2AServiceServicer_to_server(GrpcHandler(handler), server)  # type: ignore[no-untyped-call]
