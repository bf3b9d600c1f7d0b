"""A2A 0.3 peer server on the official Python SDK (PyPI ``a2a-sdk==0.3.26``), public API
only: ``DefaultRequestHandler``, ``InMemoryTaskStore``, ``A2AStarletteApplication``
(JSON-RPC) on uvicorn, or with ``--rest`` ``A2ARESTFastAPIApplication`` (HTTP+JSON only:
the card's ``preferredTransport``, push configs kept in ``InMemoryPushNotificationConfigStore``).

``PYTHONPATH=DIR python py_v03_server.py PORT [--rest]`` (DIR holds ``pip install
--target DIR 'a2a-sdk[http-server]==0.3.26'``). Agent: ``echo X`` (artifact X), ``slow`` (working
0..6 every 0.3 s, then completed; cancellable), ``ask`` (input-required, completed by
the follow-up), ``message`` (a direct reply) -- the agent of ``py_server.py``.
"""

from __future__ import annotations

import asyncio
import sys

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2ARESTFastAPIApplication, A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Part, TaskState, TextPart
from a2a.utils import new_agent_text_message, new_task


def text_part(text: str) -> Part:
    return Part(root=TextPart(text=text))


class PeerExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        text = context.get_user_input().strip()
        current = context.current_task
        if text == "message" and current is None:
            reply = new_agent_text_message("direct", context_id=context.context_id)
            await event_queue.enqueue_event(reply)
            return
        if current is None:
            current = new_task(message)
            await event_queue.enqueue_event(current)
        task = TaskUpdater(event_queue, current.id, current.context_id)
        if current.status.state == TaskState.input_required:
            await task.add_artifact([text_part(f"got {text}")], name="answer")
            await task.complete()
        elif text == "ask":
            await task.requires_input(task.new_agent_message([text_part("say more")]), final=True)
        elif text == "slow":
            await task.start_work(task.new_agent_message([text_part("0")]))
            for i in range(1, 7):
                await asyncio.sleep(0.3)
                await task.start_work(task.new_agent_message([text_part(str(i))]))
            await task.complete()
        else:
            await task.start_work()
            await task.add_artifact([text_part(text.removeprefix("echo "))], name="echo")
            await task.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id
        assert context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def main() -> None:
    port = int(sys.argv[1])
    rest = "--rest" in sys.argv[2:]
    card = AgentCard(
        name="py sdk 0.3 peer",
        description="echo, slow, ask, message",
        url=f"http://127.0.0.1:{port}" if rest else f"http://127.0.0.1:{port}/",
        preferred_transport="HTTP+JSON" if rest else "JSONRPC",
        version="1.0.0",
        protocol_version="0.3.0",
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echoes.", tags=["peer"])],
    )
    handler = DefaultRequestHandler(
        PeerExecutor(),
        InMemoryTaskStore(),
        push_config_store=InMemoryPushNotificationConfigStore(),
    )
    if rest:
        app = A2ARESTFastAPIApplication(agent_card=card, http_handler=handler).build()
    else:
        app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
