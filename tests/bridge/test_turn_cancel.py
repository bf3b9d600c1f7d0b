"""A cancel meeting a turn's drive, in process: `AcpBridge.cancel` and the drive of
`execute` (or of a follow-up's `_answer`) with a stand-in agent and event sinks whose
writes are held open, so that each interleaving is made on purpose, not hoped for.
(The same races against real processes: `test_bridge_a2a.py`.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from interlink.a2a import RequestContext, TaskUpdater, new_id
from interlink.a2a import types as t
from interlink.acp import schema as s
from interlink.bridge import AcpBridge
from interlink.bridge._a2a import _Ask, _End, _Turn
from interlink.bridge._pool import Launch, Member

pytestmark = pytest.mark.timeout(20)

S = t.TaskState


class HeldSink:
    """An event sink whose write of `held` (a task state, or "artifact") waits until
    `release`, then raises `fails` if given: as a store's write, in its own time."""

    def __init__(self, held: str = "", fails: Exception | None = None) -> None:
        self.held = held
        self.fails = fails
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.events: list[object] = []

    async def publish(self, event: object) -> None:
        kind = "artifact" if isinstance(event, t.TaskArtifactUpdateEvent) else ""
        if isinstance(event, t.TaskStatusUpdateEvent):
            kind = str(event.status.state)
        if kind == self.held:
            self.entered.set()
            await self.release.wait()
            if self.fails is not None:
                raise self.fails
        self.events.append(event)

    def states(self) -> list[str]:
        return [str(e.status.state) for e in self.events if isinstance(e, t.TaskStatusUpdateEvent)]


class Agent:
    """`session/cancel` as an ACP agent takes it: what it still sends (`then`), then the
    turn's end, `cancelled` (the connection answers its pending permission request)."""

    def __init__(self, turn: _Turn, then: list[t.TaskArtifactUpdateEvent]) -> None:
        self.turn = turn
        self.then = then

    async def cancel(self, session_id: str) -> None:
        for event in self.then:
            assert await self.turn.put(event, 1)
        self.turn.put_now(_End(s.PromptResponse(stop_reason="cancelled"), None))


def ask() -> _Ask:
    request = s.RequestPermissionRequest(
        session_id="sess",
        tool_call=s.ToolCallUpdate(tool_call_id="c1", title="Do it", kind="other"),
        options=[s.PermissionOption(option_id="yes", name="Yes", kind="allow_once")],
    )
    return _Ask(request, asyncio.get_running_loop().create_future())


def context(text: str) -> RequestContext:
    message = t.Message(
        message_id=new_id(),
        role=t.Role.ROLE_USER,
        parts=[t.Part(text=text)],
        task_id="task",
        context_id="ctx",
    )
    return RequestContext(message=message, task_id="task", context_id="ctx", task=None)


def chunk() -> t.TaskArtifactUpdateEvent:
    artifact = t.Artifact(artifact_id="a1", parts=[t.Part(text="late")])
    return t.TaskArtifactUpdateEvent(task_id="task", context_id="ctx", artifact=artifact)


def bridge_with_turn(
    tmp_path: Path, then: list[t.TaskArtifactUpdateEvent]
) -> tuple[AcpBridge, _Turn]:
    # (cancel_wait far above the test's own timeouts: a cancel that waits for it fails)
    bridge = AcpBridge(["true"], workspace=tmp_path, cancel_wait=60.0)
    member: Member[_Turn] = Member(0, Launch(["true"], s.ClientCapabilities()))
    turn = _Turn("task", "ctx", "sess", 1 << 20, member)
    member.agent = Agent(turn, then)  # type: ignore[assignment]
    member.turns["sess"] = turn
    bridge._turns["task"] = turn
    bridge._busy["ctx"] = "task"
    return bridge, turn


async def test_a_cancel_while_the_question_is_stored_waits_for_the_end_driven_on(
    tmp_path: Path,
) -> None:
    # `execute`'s drive publishes the agent's question (its write takes a moment); the
    # cancel comes meanwhile and waits for that drive, which goes on to the end.
    bridge, turn = bridge_with_turn(tmp_path, [])
    question = ask()
    turn.put_now(question)
    sink = HeldSink(held=S.TASK_STATE_INPUT_REQUIRED)
    driving = asyncio.create_task(bridge._drive(turn, TaskUpdater(context("ask"), sink)))
    async with asyncio.timeout(5):
        await sink.entered.wait()
        cancelling = asyncio.create_task(bridge.cancel(context("ask"), HeldSink()))
        await asyncio.sleep(0)  # (it asked the agent to cancel, and waits for the drive)
        sink.release.set()
        await cancelling
        await driving
    assert question.answer.done()
    assert question.answer.result() is None
    assert sink.states() == [S.TASK_STATE_INPUT_REQUIRED, S.TASK_STATE_CANCELED]
    assert turn.ended.is_set()
    assert "ctx" not in bridge._busy  # (the context takes its next message)


async def test_a_follow_up_waiting_on_a_cancels_drive_that_fails_drives_the_turn_on(
    tmp_path: Path,
) -> None:
    # No executor ran when the cancel came (the task waited for input): it drives the
    # turn, and its write of the agent's last chunk fails. The follow-up that waited for
    # that drive takes the turn on to its end instead of waiting for ever.
    bridge, turn = bridge_with_turn(tmp_path, [chunk()])
    turn.question = ask()
    cancel_sink = HeldSink(held="artifact", fails=OSError("database is locked"))
    answer_sink = HeldSink()
    async with asyncio.timeout(5):
        cancelling = asyncio.create_task(bridge.cancel(context("stop"), cancel_sink))
        await cancel_sink.entered.wait()
        answering = asyncio.create_task(
            bridge._answer(turn, context("yes"), TaskUpdater(context("yes"), answer_sink))
        )
        await asyncio.sleep(0)  # (it waits for the cancel's drive)
        assert not answering.done()
        cancel_sink.release.set()
        with pytest.raises(OSError, match="locked"):
            await cancelling
        await answering
    assert answer_sink.states() == [S.TASK_STATE_WORKING, S.TASK_STATE_CANCELED]
    assert turn.ended.is_set()
    assert not turn.driving
