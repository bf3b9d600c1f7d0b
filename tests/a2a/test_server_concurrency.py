"""Concurrency and lifecycle of the A2A server: a cancel that
lands during a store write, concurrent follow-ups, refusals, shutdowns, shared stores."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from interlink.a2a import (
    A2AServer,
    AgentExecutor,
    Call,
    EventSink,
    RequestContext,
    TaskNotCancelable,
    TaskUpdater,
    UnsupportedOperation,
)
from interlink.a2a import types as t
from interlink.a2a.stores._memory import MemoryTaskStore
from interlink.a2a.stores._sqlite import SqliteTaskStore
from tests.a2a.agents import Scripted, card

CALL = Call()


def send(text: str, *, task_id: str = "", immediately: bool = False) -> t.SendMessageRequest:
    message = t.Message(
        message_id=f"m-{text}-{task_id}",
        role=t.Role.ROLE_USER,
        parts=[t.Part(text=text)],
        task_id=task_id,
    )
    configuration = t.SendMessageConfiguration(return_immediately=True) if immediately else None
    return t.SendMessageRequest(message=message, configuration=configuration)


class Busy(AgentExecutor):
    """Publishes artifacts until cancelled; `cancel` leaves the stopping to the server."""

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        await task.working()
        self.started.set()
        i = 0
        while True:
            await task.add_artifact(text=str(i), artifact_id="a", append=i > 0)
            i += 1

    async def cancel(self, context: RequestContext, events: EventSink) -> None:
        return None  # the server cancels `execute`, then writes CANCELED


async def test_a_cancel_during_a_store_write_still_cancels_the_task(tmp_path: Path) -> None:
    server = A2AServer(Busy(), card(), SqliteTaskStore(tmp_path / "t.db"))
    await server.startup()
    try:
        async with asyncio.timeout(20):
            started = await server.send_message(send("go", immediately=True), CALL)
            assert isinstance(started.task, t.Task)
            task_id = started.task.id
            executor = server.executor
            assert isinstance(executor, Busy)
            await executor.started.wait()
            for _ in range(5):  # several tries: land the cancel inside a write
                await asyncio.sleep(0)
            canceled = await server.cancel_task(t.CancelTaskRequest(id=task_id), CALL)
            assert canceled.status.state == t.TaskState.TASK_STATE_CANCELED
            row = await server.store.get("", task_id)
            assert row is not None
            assert row.state == "TASK_STATE_CANCELED"
            again = await server.get_task(t.GetTaskRequest(id=task_id), CALL)
            assert again.status.state == t.TaskState.TASK_STATE_CANCELED
    finally:
        await server.shutdown()


async def test_concurrent_follow_ups_start_one_executor_and_keep_both_messages() -> None:
    server = A2AServer(Scripted(), card(), MemoryTaskStore())
    await server.startup()
    try:
        async with asyncio.timeout(10):
            asked = await server.send_message(send("ask"), CALL)
            assert isinstance(asked.task, t.Task)
            task_id = asked.task.id
            results = await asyncio.gather(
                server.send_message(send("A", task_id=task_id), CALL),
                server.send_message(send("B", task_id=task_id), CALL),
                return_exceptions=True,
            )
            refused = [r for r in results if isinstance(r, UnsupportedOperation)]
            answered = [r for r in results if isinstance(r, t.SendMessageResponse)]
            assert len(refused) == 1
            assert len(answered) == 1
            task = answered[0].task
            assert isinstance(task, t.Task)
            assert task.status.state == t.TaskState.TASK_STATE_COMPLETED
            texts = [p.text for m in task.history for p in m.parts]
            assert texts.count("A") + texts.count("B") == 1  # the accepted one, once
    finally:
        await server.shutdown()


class Refusing(Scripted):
    async def cancel(self, context: RequestContext, events: EventSink) -> None:
        raise TaskNotCancelable("payment in flight")


async def test_an_executor_may_refuse_to_cancel() -> None:
    agent = Refusing()
    server = A2AServer(agent, card(), MemoryTaskStore())
    await server.startup()
    try:
        async with asyncio.timeout(10):
            started = await server.send_message(send("slow", immediately=True), CALL)
            assert isinstance(started.task, t.Task)
            await agent.started.wait()
            with pytest.raises(TaskNotCancelable, match="payment in flight"):
                await server.cancel_task(t.CancelTaskRequest(id=started.task.id), CALL)
            agent.release.set()
            live = server.live.get(("", started.task.id))
            if live is not None and live.runner is not None:
                await live.runner
            done = await server.get_task(t.GetTaskRequest(id=started.task.id), CALL)
            assert done.status.state == t.TaskState.TASK_STATE_COMPLETED
    finally:
        await server.shutdown()


async def test_a_refused_inline_webhook_changes_nothing_and_leaks_nothing() -> None:
    server = A2AServer(Scripted(), card(), MemoryTaskStore())
    await server.startup()
    try:
        bad = t.SendMessageConfiguration(
            task_push_notification_config=t.TaskPushNotificationConfig(url="http://10.0.0.1/hook")
        )
        request = send("ask")
        for _ in range(3):
            with pytest.raises(Exception, match="Private-Use"):
                await server.send_message(
                    t.SendMessageRequest(message=request.message, configuration=bad), CALL
                )
        assert server.live == {}
        asked = await server.send_message(send("ask"), CALL)
        assert isinstance(asked.task, t.Task)
        follow = send("more", task_id=asked.task.id)
        with pytest.raises(Exception, match="Private-Use"):
            await server.send_message(
                t.SendMessageRequest(message=follow.message, configuration=bad), CALL
            )
        task = await server.get_task(t.GetTaskRequest(id=asked.task.id), CALL)
        assert [p.text for m in task.history for p in m.parts] == ["ask", "say more"]
    finally:
        await server.shutdown()


class Resumable(Busy):
    resumable = True


@pytest.mark.parametrize("resumable", [False, True])
async def test_a_graceful_shutdown_fails_or_keeps_running_tasks(
    tmp_path: Path, resumable: bool
) -> None:
    executor: Busy = Resumable() if resumable else Busy()
    path = tmp_path / "t.db"
    server = A2AServer(executor, card(), SqliteTaskStore(path))
    await server.startup()
    async with asyncio.timeout(20):
        started = await server.send_message(send("go", immediately=True), CALL)
        await executor.started.wait()
        await server.shutdown()
    assert isinstance(started.task, t.Task)
    store = SqliteTaskStore(path)
    await store.open()
    try:
        row = await store.get("", started.task.id)
        assert row is not None
        if resumable:
            assert row.state == "TASK_STATE_WORKING"  # re-run at the next start
        else:
            assert row.state == "TASK_STATE_FAILED"
            assert b"server stopped" in row.task
    finally:
        await store.close()


async def test_tenants_sharing_a_store_each_recover_their_own_tasks(tmp_path: Path) -> None:
    from interlink.a2a.server._runtime import task_row

    path = tmp_path / "t.db"
    store = SqliteTaskStore(path)
    await store.open()
    for tenant in ("a", "b"):
        working = t.Task(
            id=f"task-{tenant}",
            context_id="c",
            status=t.TaskStatus(state=t.TaskState.TASK_STATE_WORKING),
            history=[
                t.Message(message_id="u", role=t.Role.ROLE_USER, parts=[t.Part(text="echo x")])
            ],
        )
        await store.create(task_row(working, tenant=tenant, owner=""), [])
    await store.close()

    shared = SqliteTaskStore(path)
    first = A2AServer(Scripted(), card(), shared)
    second = A2AServer(Scripted(), card(), shared)
    first.tenants, second.tenants = frozenset({"a"}), frozenset({"b"})
    await first.startup()
    await second.startup()
    try:
        a = await shared.get("a", "task-a")
        b = await shared.get("b", "task-b")
        assert a is not None
        assert b is not None
        assert a.state == b.state == "TASK_STATE_FAILED"  # each by its own server, once
        assert a.version == b.version == 2
    finally:
        await first.shutdown()
        b_still_open = await shared.get("b", "task-b")  # the second tenant still uses it
        assert b_still_open is not None
        await second.shutdown()
