"""A peer A2A server on the official Python SDK (`a2a-sdk`), through its public API:
`DefaultRequestHandler`, `InMemoryTaskStore`, `create_jsonrpc_routes` (or
`create_rest_routes`) and `create_agent_card_routes` in a Starlette app on uvicorn.

`python py_server.py PORT [MODE]`. Agent: `echo X` (artifact X), `slow` (a working
status, then one more every 0.3 s for 2 s, then done; cancellable), `ask`
(input-required, completed by the follow-up), `message` (a direct reply). MODE:
`jsonrpc` (the default: JSON-RPC only), `rest` (HTTP+JSON only), `fallback` (HTTP+JSON
only, but the card lists first a JSON-RPC interface on a port that refuses, then one
at `/jsonrpc`, which nothing serves, then the HTTP+JSON one).
"""

from __future__ import annotations

import asyncio
import sys

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette
from starlette.routing import BaseRoute


class PeerExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        assert context.task_id
        assert context.context_id
        text = context.get_user_input().strip()
        current = context.current_task
        if text == "message" and current is None:
            await event_queue.enqueue_event(
                new_text_message("direct", context_id=context.context_id)
            )
            return
        if current is None:
            await event_queue.enqueue_event(new_task_from_user_message(message))
        task = TaskUpdater(event_queue, context.task_id, context.context_id)
        if current is not None and current.status.state == 6:  # TASK_STATE_INPUT_REQUIRED
            await task.add_artifact([new_text_part(f"got {text}")], name="answer")
            await task.complete()
        elif text == "ask":
            await task.requires_input(task.new_agent_message([new_text_part("say more")]))
        elif text == "slow":
            await task.start_work(task.new_agent_message([new_text_part("0")]))
            for i in range(1, 7):
                await asyncio.sleep(0.3)
                await task.start_work(task.new_agent_message([new_text_part(str(i))]))
            await task.complete()
        else:
            await task.start_work()
            await task.add_artifact([new_text_part(text.removeprefix("echo "))], name="echo")
            await task.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id
        assert context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def interfaces(url: str, mode: str) -> list[AgentInterface]:
    if mode == "jsonrpc":
        return [AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")]
    rest = AgentInterface(url=url, protocol_binding="HTTP+JSON", protocol_version="1.0")
    if mode == "rest":
        return [rest]
    assert mode == "fallback", mode
    return [
        AgentInterface(
            url="http://127.0.0.1:1/", protocol_binding="JSONRPC", protocol_version="1.0"
        ),
        AgentInterface(url=url + "jsonrpc", protocol_binding="JSONRPC", protocol_version="1.0"),
        rest,
    ]


def main() -> None:
    port = int(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else "jsonrpc"
    url = f"http://127.0.0.1:{port}/"
    card = AgentCard(
        name="py sdk peer",
        description="echo, slow, ask, message",
        version="1.0.0",
        supported_interfaces=interfaces(url, mode),
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echoes.", tags=["peer"])],
    )
    handler = DefaultRequestHandler(PeerExecutor(), InMemoryTaskStore(), card)
    served: list[BaseRoute] = []
    if mode == "jsonrpc":
        served += create_jsonrpc_routes(handler, rpc_url="/")
    else:
        served += create_rest_routes(handler)
    routes = [*create_agent_card_routes(card), *served]
    uvicorn.run(Starlette(routes=routes), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
