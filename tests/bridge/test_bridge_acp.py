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

import msgspec
import pytest

from interlink.acp import (
    AgentProcess,
    LocalClient,
    Transcript,
    allow_first,
    content_text,
    reject_first,
    spawn_agent,
)
from interlink.acp import schema as s
from interlink.jsonrpc import RpcError
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


class Replay:
    """The updates of `session/load`s, into a transcript per session."""

    def __init__(self) -> None:
        self.sessions: dict[str, Transcript] = {}

    async def __call__(self, notification: s.SessionNotification) -> None:
        self.sessions.setdefault(notification.session_id, Transcript()).add(notification.update)


def said_in_turns(transcript: Transcript) -> list[tuple[str, str]]:
    """Who said what, in order (consecutive chunks joined)."""
    turns: list[tuple[str, str]] = []
    for update in transcript.updates:
        if isinstance(update, s.UserMessageChunk | s.AgentMessageChunk):
            who = "user" if isinstance(update, s.UserMessageChunk) else "agent"
            text = content_text(update.content)
            if turns and turns[-1][0] == who:
                turns[-1] = (who, turns[-1][1] + text)
            else:
                turns.append((who, text))
    return turns


async def test_sessions_are_listed_and_loaded_from_the_agents_tasks(tmp_path: Path) -> None:
    async with a2a_example(tmp_path) as url:
        async with (
            LocalClient(tmp_path) as local,
            spawn_agent(bridge_acp(url), local) as agent,
        ):
            info = await agent.agent.initialize(LocalClient.capabilities())
            caps = info.agent_capabilities
            assert isinstance(caps, s.AgentCapabilities)
            assert caps.load_session is True  # (the agent serves ListTasks)
            assert isinstance(caps.session_capabilities, s.SessionCapabilities)
            assert isinstance(caps.session_capabilities.list_, s.SessionListCapabilities)
            first = (await agent.agent.new_session(tmp_path)).session_id
            await agent.agent.prompt_transcript(first, "echo hello   there")
            await agent.agent.prompt_transcript(first, "ask")
            await agent.agent.prompt_transcript(first, "blue")
            second = (await agent.agent.new_session(tmp_path)).session_id
            await agent.agent.prompt_transcript(second, "ask")  # (left asking)
            listed = await agent.agent.list_sessions()
            assert [i.session_id for i in listed.sessions] == [second, first]  # newest first
            assert [i.title for i in listed.sessions] == ["ask", "echo hello there"]
            assert {i.cwd for i in listed.sessions} == {str(tmp_path)}  # (where they opened)
            assert all(isinstance(i.updated_at, str) for i in listed.sessions)
            assert listed.next_cursor is msgspec.UNSET
            assert (await agent.agent.list_sessions(cwd="/elsewhere")).sessions == []
        # an editor started again: the sessions are the agent's tasks, loaded again
        replay = Replay()
        async with (
            LocalClient(tmp_path, on_update=replay) as local,
            spawn_agent(bridge_acp(url), local, cwd=tmp_path) as agent,
        ):
            await agent.agent.initialize(LocalClient.capabilities())
            listed = await agent.agent.list_sessions()
            assert [i.session_id for i in listed.sessions] == [second, first]
            assert {i.cwd for i in listed.sessions} == {str(tmp_path)}  # (the bridge's)
            await agent.agent.load_session(first, tmp_path)
            told = replay.sessions[first]
            assert told.user_text == "echo hello   thereaskblue"
            assert told.text == (
                "hello   there"
                "What should I do? Send a follow-up message to this task."  # (it asked)
                "thanks, you said: blue"
            )
            assert told.thoughts == "done"
            assert said_in_turns(told) == [
                ("user", "echo hello   there"),
                ("agent", "hello   there"),
                ("user", "ask"),
                ("agent", "What should I do? Send a follow-up message to this task."),
                ("user", "blue"),
                ("agent", "thanks, you said: blue"),
            ]
            response, transcript = await agent.agent.prompt_transcript(first, "echo again")
            assert (response.stop_reason, transcript.text) == ("end_turn", "again")
            # a session loaded while its task asks: the next prompt answers the question
            await agent.agent.load_session(second, tmp_path)
            assert replay.sessions[second].text == (
                "What should I do? Send a follow-up message to this task."
            )
            response, transcript = await agent.agent.prompt_transcript(second, "green")
            assert transcript.text == "thanks, you said: green"
            listed = await agent.agent.list_sessions()
            assert [i.session_id for i in listed.sessions] == [second, first]
            with pytest.raises(RpcError) as unknown:
                await agent.agent.load_session("no-such-context", tmp_path)
            assert unknown.value.code == -32002
            with pytest.raises(RpcError) as bad:
                await agent.agent.list_sessions(cursor="not ours")
            assert bad.value.code == -32602
