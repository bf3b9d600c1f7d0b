"""Leases between replicas and writes settled across cancellation: a cancel right after a
write landed, follow-ups and cancels in the moment an executor returns from asking for
input, and the writes the lease rule must still allow."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from interlink.a2a import (
    AgentExecutor,
    EventSink,
    RequestContext,
    TaskUpdater,
)
from interlink.a2a import types as t
from interlink.a2a.server._runtime import LiveTask
from interlink.a2a.stores._base import TaskRow
from tests.a2a.stores import HookedStore
from tests.a2a.test_replica_handoffs import CALL, SlowFollowUp, Start, replicas, until
from tests.a2a.test_server_concurrency import send

__all__ = ["replicas"]  # the fixture, imported for the tests below

pytestmark = pytest.mark.timeout(30)


# -- 1. `_settled`: a cancellation landing after the write finished, before the caller
#       resumed, loses the stored row (memory falls behind the store) -------------------


class CancelsOnAppend(HookedStore):
    """A store whose writes suspend (as SQLite's and PostgreSQL's do); the next append
    calls `on_append` right as it completes (a cancel arriving in that very tick)."""

    writes_never_suspend = False

    def __init__(self) -> None:
        super().__init__()
        self.on_append: Callable[[], object] | None = None

    def after_append(self, row: TaskRow) -> None:
        hook, self.on_append = self.on_append, None
        if hook is not None:
            hook()


def _context(task_id: str) -> RequestContext:
    message = t.Message(
        message_id="m1", role=t.Role.ROLE_USER, parts=[t.Part(text="hi")], task_id=task_id
    )
    return RequestContext(message=message, task_id=task_id, context_id="c1", task=None)


async def test_a_cancel_right_after_a_write_landed_keeps_memory_in_step() -> None:
    store = CancelsOnAppend()
    live = LiveTask(store, tenant="", task_id="t1", context_id="c1", owner="")
    context = _context("t1")
    await live.publish(
        t.TaskStatusUpdateEvent(
            status=t.TaskStatus(state=t.TaskState.TASK_STATE_WORKING, timestamp=None)
        ),
        context,
    )
    publisher = asyncio.create_task(
        live.publish(
            t.TaskStatusUpdateEvent(
                status=t.TaskStatus(
                    state=t.TaskState.TASK_STATE_WORKING, timestamp=datetime.now(UTC)
                )
            ),
            context,
        )
    )
    store.on_append = publisher.cancel  # e.g. a CancelTask or lease_lost in that tick
    with pytest.raises(asyncio.CancelledError):
        await publisher
    row = await store.get("", "t1")
    assert row is not None
    # the docstring's promise: memory follows what the store holds
    assert (live.version, live.last_seq, len(live._staged)) == (row.version, row.last_seq, 0)


# -- 2. a follow-up sent to another replica right after the answer "input required" ----


class AsksThenTidiesUp(AgentExecutor):
    """Asks for input, then tidies up for a moment before returning (closes a session,
    writes a log): the client already has its answer."""

    def __init__(self) -> None:
        self.follow_ups: list[str] = []

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        if context.task is None:
            await task.requires_input("say more")
            await asyncio.sleep(0.5)
            return
        self.follow_ups.append(context.text)
        await task.complete("thanks")


async def test_a_follow_up_right_after_the_answer_is_taken_on_another_replica(
    replicas: Start,
) -> None:
    agent_a, agent_b = AsksThenTidiesUp(), AsksThenTidiesUp()
    a, b = await replicas(agent_a), await replicas(agent_b)
    first = await a.send_message(send("ask"), CALL)
    assert isinstance(first.task, t.Task)
    assert first.task.status.state == t.TaskState.TASK_STATE_INPUT_REQUIRED
    answer = await b.send_message(send("more", task_id=first.task.id), CALL)
    assert isinstance(answer.task, t.Task)
    assert answer.task.status.state == t.TaskState.TASK_STATE_COMPLETED


async def test_the_same_follow_up_on_the_same_replica_waits_and_is_taken(
    replicas: Start,
) -> None:
    agent = AsksThenTidiesUp()
    a = await replicas(agent)
    first = await a.send_message(send("ask"), CALL)
    assert isinstance(first.task, t.Task)
    answer = await a.send_message(send("more", task_id=first.task.id), CALL)
    assert isinstance(answer.task, t.Task)
    assert answer.task.status.state == t.TaskState.TASK_STATE_COMPLETED


async def test_a_follow_up_once_the_lease_is_released_is_taken_on_another_replica(
    replicas: Start,
) -> None:
    agent_a, agent_b = AsksThenTidiesUp(), AsksThenTidiesUp()
    a, b = await replicas(agent_a), await replicas(agent_b)
    first = await a.send_message(send("ask"), CALL)
    assert isinstance(first.task, t.Task)
    await until(lambda: not a.live)  # returned, lease released, evicted
    answer = await b.send_message(send("more", task_id=first.task.id), CALL)
    assert isinstance(answer.task, t.Task)
    assert answer.task.status.state == t.TaskState.TASK_STATE_COMPLETED
    assert agent_b.follow_ups == ["more"]


# -- 3. a cancel of a follow-up that runs on another replica, before its first status ---


async def test_a_follow_up_running_on_another_replica_can_be_canceled(
    replicas: Start,
) -> None:
    agent_a, agent_b = SlowFollowUp(), SlowFollowUp()
    a = await replicas(agent_a)
    b = await replicas(agent_b, cancel_wait=1.0)
    first = await a.send_message(send("ask"), CALL)
    assert isinstance(first.task, t.Task)
    task_id = first.task.id
    await until(lambda: not a.live)  # A's executor returned; its lease is released
    await b.send_message(send("one", task_id=task_id, immediately=True), CALL)
    await until(lambda: agent_b.follow_ups == ["one"])  # B runs it, nothing published yet
    try:
        canceled = await a.cancel_task(t.CancelTaskRequest(id=task_id), CALL)
        assert canceled.status.state == t.TaskState.TASK_STATE_CANCELED
    finally:
        agent_b.release.set()


async def test_a_cancel_of_an_interrupted_task_is_written_on_another_replica(
    replicas: Start,
) -> None:
    agent_a, agent_b = SlowFollowUp(), SlowFollowUp()
    a, b = await replicas(agent_a), await replicas(agent_b)
    first = await a.send_message(send("ask"), CALL)
    assert isinstance(first.task, t.Task)
    await until(lambda: not a.live)
    canceled = await b.cancel_task(t.CancelTaskRequest(id=first.task.id), CALL)
    assert canceled.status.state == t.TaskState.TASK_STATE_CANCELED


async def test_a_cancel_elsewhere_during_the_tidy_up_reaches_the_executor(
    replicas: Start,
) -> None:
    """(The window of test 2, for cancels: the lease shows the executor still runs on A,
    so B asks A, which cancels it.)"""
    agent_a, agent_b = AsksThenTidiesUp(), AsksThenTidiesUp()
    a, b = await replicas(agent_a), await replicas(agent_b, cancel_wait=2.0)
    first = await a.send_message(send("ask"), CALL)
    assert isinstance(first.task, t.Task)
    canceled = await b.cancel_task(t.CancelTaskRequest(id=first.task.id), CALL)
    assert canceled.status.state == t.TaskState.TASK_STATE_CANCELED
