"""`python -m bench.replicas_peers.sdk_serve --port P --dsn postgresql://... --schema S`:
one replica of the tick agent on the official SDK (`a2a-sdk`) in its cluster mode, on
uvicorn (one worker, warning logs, the asyncio loop), until SIGTERM.

Cluster mode, as the SDK composes it: `DefaultRequestHandler` (its v2 handler) over a
`VersionedDatabaseTaskStore` (tasks, task versions and an append-only `task_events` log
in SQL, written in the transaction that saves each event) and a
`DatabaseTaskEventStream` on the same engine, which serves `SubscribeToTask` for a task
running on another replica by polling `task_events` every `poll_interval_s` (0.5 s by
default). Here SQLAlchemy on asyncpg, the tables in schema S (the connections'
`search_path`), which must exist; they are created at start-up, before serving.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import time

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.cluster import DatabaseTaskEventStream, VersionedDatabaseTaskStore
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from starlette.applications import Starlette

from bench.replicas_peers import ARTIFACT, arm_watchdog, parse_tick, run_ticks

DEFAULT_POLL = 0.5
"""`DatabaseTaskEventStream`'s default poll interval (seconds), passed explicitly."""


class TickExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        assert context.task_id is not None
        assert context.context_id is not None
        if context.current_task is None:  # the SDK wants the executor to publish it
            await event_queue.enqueue_event(new_task_from_user_message(message))
        task = TaskUpdater(event_queue, context.task_id, context.context_id)
        plan = parse_tick(context.get_user_input())
        await task.start_work()
        artifact = f"{context.task_id}-{ARTIFACT}"

        async def publish(seq: int) -> None:
            await task.add_artifact(
                [new_text_part(f"{seq} {time.time_ns()}")],
                artifact_id=artifact,
                name=ARTIFACT,
                append=seq > 0,
            )

        published = await run_ticks(plan, publish)
        await task.complete(new_text_message(f"done {published}"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def create_app(
    engine: AsyncEngine, url: str, poll: float
) -> tuple[Starlette, VersionedDatabaseTaskStore, DatabaseTaskEventStream]:
    card = AgentCard(
        name="bench tick",
        description="`tick count=N ...`: N artifact chunks stamped with their publish time.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="tick", name="Tick", description="Ticks.", tags=["bench"])],
    )
    store = VersionedDatabaseTaskStore(engine)
    stream = DatabaseTaskEventStream(engine, poll_interval_s=poll)
    handler = DefaultRequestHandler(TickExecutor(), store, card, event_stream=stream)
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
    return Starlette(routes=routes), store, stream


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.replicas_peers.sdk_serve")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dsn", required=True, help="postgresql://user@host:port/db")
    parser.add_argument("--schema", required=True, help="an existing schema for the tables")
    parser.add_argument("--poll", type=float, default=DEFAULT_POLL, help="poll interval, s")
    args = parser.parse_args()
    arm_watchdog()

    dsn = args.dsn.replace("postgresql://", "postgresql+asyncpg://", 1)
    engine = create_async_engine(
        dsn,
        connect_args={
            "server_settings": {"search_path": args.schema, "application_name": args.schema}
        },
    )
    url = f"http://127.0.0.1:{args.port}/"
    app, store, stream = create_app(engine, url, args.poll)

    async def create_tables() -> None:
        await store.initialize()
        await stream.initialize()
        await engine.dispose()  # its connections belong to this loop, not uvicorn's

    asyncio.run(create_tables())
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        http=http,
        loop="asyncio",
        lifespan="on",
        workers=1,
    )


if __name__ == "__main__":
    main()
