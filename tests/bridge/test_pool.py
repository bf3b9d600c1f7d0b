"""`interlink bridge a2a --max-agents N`: contexts spread over a pool of agent processes
(the test agent, which answers `pid` with its process id), a context kept on its
process, and a process that dies failing its own turns only."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from interlink.a2a import A2AClient
from interlink.a2a import types as t
from interlink.bridge import AcpBridge
from tests.bridge.conftest import TEST_AGENT, connected
from tests.bridge.test_bridge_a2a import collect, notes, task_of, text_of
from tests.bridge.test_sessions import turn

pytestmark = pytest.mark.timeout(90)

S = t.TaskState


async def pid_of(client: A2AClient, context_id: str) -> int:
    task = task_of(await client.send_message("pid", context_id=context_id))
    assert task.status.state == S.TASK_STATE_COMPLETED, task.status
    return int(text_of(task))


def reason(task: t.Task) -> str:
    assert task.status.message is not None
    return str(task.status.message.parts[0].text)


@pytest.mark.e2e
async def test_contexts_spread_over_the_pool_and_a_death_spares_the_others(
    tmp_path: Path,
) -> None:
    async with connected(tmp_path, TEST_AGENT, "--max-agents", "2") as client:
        first, second = await pid_of(client, "a"), await pid_of(client, "b")
        assert first != second  # a new context goes to a process that has none
        assert await pid_of(client, "a") == first  # and a context stays on its process
        assert await pid_of(client, "c") in (first, second)  # (the pool is full)
        # b's process is mid-turn (it asked) when a's process dies in a's turn
        asked = task_of(await client.send_message("ask", context_id="b"))
        assert asked.status.state == S.TASK_STATE_INPUT_REQUIRED
        died = task_of(await client.send_message("die", context_id="a"))
        assert died.status.state == S.TASK_STATE_FAILED
        assert "exited with code 3" in reason(died)
        assert "dying on purpose" in reason(died)  # (its stderr tail)
        answered = task_of(await client.send_message("1", task_id=asked.id))
        assert answered.status.state == S.TASK_STATE_COMPLETED
        assert text_of(answered) == "yes"
        events = await collect(client.stream_message("pid", context_id="b"))
        assert not any("new ACP session" in note for note in notes(events))
        assert await pid_of(client, "b") == second  # its session went on
        # a's next message opens a new session (the test agent cannot load one), saying so
        events = await collect(client.stream_message("again", context_id="a"))
        assert any("a new ACP session" in note for note in notes(events))
        last = events[-1].payload
        assert isinstance(last, t.TaskStatusUpdateEvent)
        assert last.status.state == S.TASK_STATE_COMPLETED
        # a process killed while its turn waits for an answer fails that turn with its status
        asked = task_of(await client.send_message("ask", context_id="b"))
        assert asked.status.state == S.TASK_STATE_INPUT_REQUIRED
        os.kill(second, signal.SIGKILL)
        killed = task_of(await client.send_message("1", task_id=asked.id))
        assert killed.status.state == S.TASK_STATE_FAILED
        assert "exited with code -9" in reason(killed)


async def test_processes_start_as_contexts_want_them(tmp_path: Path) -> None:
    bridge = AcpBridge(TEST_AGENT, workspace=tmp_path, max_agents=3, idle=60)
    await bridge.start()
    try:
        assert len(bridge.pool.members) == 1  # (the one whose initialize makes the card)
        for context_id in ("a", "b", "c", "d", "e"):
            done = await turn(bridge, context_id, "hello")
            assert done.states()[-1] == S.TASK_STATE_COMPLETED
        members = bridge.pool.members
        assert [sorted(m.contexts) for m in members] == [["a", "d"], ["b", "e"], ["c"]]
        assert len({m.pid for m in members}) == 3
        # idle sessions are closed on every process; their contexts stay where they were
        now = max(used for m in members for used in m.used.values()) + 61
        assert sorted(await bridge.close_idle(now)) == ["a", "b", "c", "d", "e"]
        assert all(not m.sessions for m in members)
        again = await turn(bridge, "e", "hello")
        assert again.states()[-1] == S.TASK_STATE_COMPLETED
        assert members[1].sessions.keys() == {"e"}
    finally:
        await bridge.aclose()
    assert bridge.pool.members == []
