"""`interlink bridge acp URL`: A2A agents served as ACP agents on stdio, real processes.

Behind it: our example A2A agent (`a2a serve examples/a2a_agent.py:app`) and, for the
round trip, `bridge a2a` in front of our example ACP agent: our ACP client -> `bridge
acp` -> `bridge a2a` -> the ACP agent, with text, permission and cancel intact."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from interlink.acp import (
    AgentProcess,
    LocalClient,
    Transcript,
    allow_first,
    reject_first,
    spawn_agent,
)
from interlink.acp import schema as s
from tests.bridge.conftest import EXAMPLE_AGENT, ROOT, START_TIMEOUT, bridge

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


def bridge_acp(url: str) -> list[str]:
    return [sys.executable, "-m", "interlink", "bridge", "acp", url]


@contextlib.asynccontextmanager
async def a2a_example(tmp: Path) -> AsyncIterator[str]:
    """`interlink a2a serve examples/a2a_agent.py:app` on a free port; its URL."""
    command = [sys.executable, "-m", "interlink", "a2a", "serve", "examples/a2a_agent.py:app"]
    proc = await asyncio.create_subprocess_exec(
        *command,
        *("--port", "0", "--store", "memory:", "--log-level", "warning"),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(START_TIMEOUT):
            line = (await proc.stdout.readline()).decode()
        assert line.startswith("serving on "), line
        yield line.split()[-1]
    finally:
        if proc.returncode is None:
            proc.terminate()
            await proc.wait()


class Seen:
    """Set once the agent says or thinks something (`arm()` first)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.armed = False

    def arm(self) -> None:
        self.event.clear()
        self.armed = True

    async def __call__(self, notification: s.SessionNotification) -> None:
        if self.armed and isinstance(
            notification.update, s.AgentMessageChunk | s.AgentThoughtChunk
        ):
            self.event.set()


async def cancelled_turn(
    agent: AgentProcess, session: str, prompt: str, seen: Seen
) -> tuple[s.PromptResponse, Transcript]:
    """`prompt`, cancelled once the agent said or thought something."""
    seen.arm()
    turn = asyncio.create_task(agent.agent.prompt_transcript(session, prompt))
    async with asyncio.timeout(20):
        await seen.event.wait()
    await agent.agent.cancel(session)
    async with asyncio.timeout(20):
        return await turn


async def test_an_a2a_agent_in_an_editor(tmp_path: Path) -> None:
    seen = Seen()
    async with (
        a2a_example(tmp_path) as url,
        LocalClient(tmp_path, on_update=seen) as local,
        spawn_agent(bridge_acp(url), local) as agent,
    ):
        info = await agent.agent.initialize(LocalClient.capabilities())
        assert isinstance(info.agent_info, s.Implementation)
        assert info.agent_info.name == "interlink example agent"
        session = (await agent.agent.new_session(tmp_path)).session_id
        response, transcript = await agent.agent.prompt_transcript(session, "echo hello there")
        assert (response.stop_reason, transcript.text) == ("end_turn", "hello there")
        # a question ends the turn; the next prompt answers it
        response, transcript = await agent.agent.prompt_transcript(session, "ask")
        assert response.stop_reason == "end_turn"
        assert transcript.text == "What should I do? Send a follow-up message to this task."
        response, transcript = await agent.agent.prompt_transcript(session, "blue")
        assert transcript.text == "thanks, you said: blue"
        assert transcript.thoughts == "done"  # (the final status's message)
        # working statuses are thoughts; a cancel cancels the task
        response, transcript = await cancelled_turn(agent, session, "slow 20", seen)
        assert response.stop_reason == "cancelled"
        assert transcript.thoughts.startswith("working for 20 s")


async def test_the_round_trip_keeps_text_permission_and_cancel(tmp_path: Path) -> None:
    answers: list[str | None] = []
    seen = Seen()

    async def ask(request: s.RequestPermissionRequest) -> str | None:
        choice = await (allow_first if not answers else reject_first)(request)
        answers.append(choice)
        return choice

    async with (
        bridge(tmp_path, EXAMPLE_AGENT) as served,
        LocalClient(tmp_path, ask_permission=ask, on_update=seen) as local,
        spawn_agent(bridge_acp(served.url), local) as agent,
    ):
        info = await agent.agent.initialize(LocalClient.capabilities())
        assert isinstance(info.agent_info, s.Implementation)
        assert info.agent_info.name == "interlink-example-agent"
        session = (await agent.agent.new_session(tmp_path)).session_id
        response, transcript = await agent.agent.prompt_transcript(session, "round and round")
        assert (response.stop_reason, transcript.text) == ("end_turn", "round and round")
        assert [entry.content for entry in transcript.plan] == ["Read the prompt", "Answer"]
        # the ACP agent's permission request reaches this client as one, through both
        folder = tmp_path / "ws" / session  # (the A2A context is the session)
        (folder / "notes.txt").write_text("seven!!")
        response, transcript = await agent.agent.prompt_transcript(session, "tool notes.txt")
        assert answers == ["allow"]
        assert (response.stop_reason, transcript.text) == ("end_turn", "read 7 characters")
        assert transcript.tool_calls["call_1"].status == "completed"
        response, transcript = await agent.agent.prompt_transcript(session, "tool notes.txt")
        assert answers == ["allow", "reject"]
        assert transcript.tool_calls["call_1"].status == "failed"
        # a cancel goes through to the ACP agent
        response, transcript = await cancelled_turn(agent, session, "slow", seen)
        assert response.stop_reason == "cancelled"
        assert transcript.text.startswith("working")
