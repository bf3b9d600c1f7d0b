"""The bridge's sessions, driven in process (the executor called as the A2A server calls
it, the example agent a real subprocess): idle sessions are closed, and a context's next
message loads its session again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from interlink.a2a import Event, RequestContext, new_id
from interlink.a2a import types as t
from interlink.bridge import AcpBridge
from tests.bridge.conftest import EXAMPLE_AGENT

pytestmark = pytest.mark.timeout(60)


class Events:
    def __init__(self) -> None:
        self.items: list[Event] = []

    async def publish(self, event: Event) -> None:
        self.items.append(event)

    def states(self) -> list[t.TaskState]:
        return [e.status.state for e in self.items if isinstance(e, t.TaskStatusUpdateEvent)]

    def notes(self) -> list[str]:
        return [
            str(part.text)
            for e in self.items
            if isinstance(e, t.TaskStatusUpdateEvent) and e.status.message is not None
            for part in e.status.message.parts
            if isinstance(part.text, str)
        ]


async def turn(bridge: AcpBridge, context_id: str, text: str) -> Events:
    task_id = new_id()
    message = t.Message(
        message_id=new_id(),
        context_id=context_id,
        task_id=task_id,
        role=t.Role.ROLE_USER,
        parts=[t.Part(text=text)],
    )
    events = Events()
    context = RequestContext(message=message, task_id=task_id, context_id=context_id, task=None)
    await bridge.execute(context, events)
    return events


async def test_an_idle_session_is_closed_and_loaded_again(tmp_path: Path) -> None:
    bridge = AcpBridge(EXAMPLE_AGENT, workspace=tmp_path, idle=60)
    await bridge.start()
    try:
        first = await turn(bridge, "c", "hello")
        assert first.states()[-1] == t.TaskState.TASK_STATE_COMPLETED
        sessions = json.loads((tmp_path / ".interlink-sessions.json").read_text())
        asked = await turn(bridge, "busy", "tool notes.txt")  # (waits for an answer)
        assert asked.states()[-1] == t.TaskState.TASK_STATE_INPUT_REQUIRED
        now = asyncio.get_running_loop().time()
        assert await bridge.close_idle(now + 30) == []
        assert await bridge.close_idle(now + 61) == ["c"]  # (not the one that asks)
        assert await bridge.close_idle(now + 62) == []
        again = await turn(bridge, "c", "again")
        assert again.states()[-1] == t.TaskState.TASK_STATE_COMPLETED
        assert not any("new ACP session" in note for note in again.notes())
        after = json.loads((tmp_path / ".interlink-sessions.json").read_text())
        assert after["c"] == sessions["c"]  # session/load took it up again
    finally:
        await bridge.aclose()
