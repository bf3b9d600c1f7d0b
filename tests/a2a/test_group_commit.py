"""Group commit: an agent streaming artifact chunks has them written together, streams
still see only what was stored, and a failed write reaches the agent. Retention."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest

from interlink.a2a import A2AServer, AgentExecutor, Call, EventSink, RequestContext, TaskUpdater
from interlink.a2a import types as t
from interlink.a2a.server._runtime import STAGE_LIMIT
from interlink.a2a.stores._base import StoreError
from interlink.a2a.stores._sqlite import SqliteTaskStore
from tests.a2a.agents import card
from tests.a2a.stores import HookedStore
from tests.a2a.test_server_concurrency import send

pytestmark = pytest.mark.timeout(30)
CALL = Call()


class CountingStore(HookedStore):
    """Counts appends; fails the appends whose numbers are in `fail`."""

    def __init__(self, fail: Sequence[int] = ()) -> None:
        super().__init__()
        self.fail = set(fail)

    async def before_append(self, number: int) -> None:
        if number in self.fail:
            raise StoreError("disk full")


class Chunks(AgentExecutor):
    """Publishes `n` chunks without pausing, then completes; records what it raised."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.raised: list[BaseException] = []
        self.stored_after_working: list[str] = []

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        await task.working()
        try:
            for i in range(self.n):
                await task.add_artifact(text=f"{i},", artifact_id="out", append=i > 0)
        except StoreError as exc:
            self.raised.append(exc)
            raise
        await task.complete()


async def test_chunks_are_written_together_and_streamed_in_order() -> None:
    store = CountingStore()
    server = A2AServer(Chunks(500), card(), store)
    await server.startup()
    try:
        stream = await server.send_streaming_message(send("go"), CALL)
        received: list[bytes] = []
        try:
            while (batch := await stream.batch(5)) is not None:
                received += [payload for _, payload, _ in batch]
        finally:
            await stream.aclose()
    finally:
        await server.shutdown()
    artifact_events = [p for p in received if b'"artifactUpdate"' in p]
    assert len(artifact_events) == 500
    updates = [msgspec.json.decode(p)["artifactUpdate"] for p in artifact_events]
    assert [u["artifact"]["parts"][0]["text"] for u in updates] == [f"{i}," for i in range(500)]
    # far fewer writes than events, none bigger than the bound (+ the status after it)
    assert sum(store.appends) == len(received) - 2  # all but the task and its first status
    assert len(store.appends) <= 500 // STAGE_LIMIT + 3
    assert max(store.appends) <= STAGE_LIMIT + 1


async def test_a_failed_write_reaches_the_agent_and_fails_the_task() -> None:
    store = CountingStore(fail=[2])  # 1: WORKING; 2: the first batch of chunks
    agent = Chunks(200)
    server = A2AServer(agent, card(), store)
    await server.startup()
    try:
        answer = await asyncio.wait_for(server.send_message(send("go"), CALL), 10)
    finally:
        await server.shutdown()
    task = answer.task
    assert isinstance(task, t.Task)
    assert [type(e) for e in agent.raised] == [StoreError]
    status = task.status
    assert status.state == t.TaskState.TASK_STATE_FAILED
    assert status.message is not None
    assert status.message.parts[0].text == (
        "the agent failed: the task store failed (the server's log says why)"
    )
    # what the failed write held never reached the log; what followed did, in order
    row = await store.get("", task.id)
    assert row is not None
    events = await store.events("", task.id)
    assert [e.seq for e in events] == list(range(1, row.last_seq + 1))


async def test_retention_prunes_finished_tasks_on_a_store_of_one_process(tmp_path: Path) -> None:
    store = SqliteTaskStore(tmp_path / "a2a.db")
    server = A2AServer(Chunks(3), card(), store, retention=0.001)
    await server.startup()
    try:
        answer = await asyncio.wait_for(server.send_message(send("go"), CALL), 10)
        task = answer.task
        assert isinstance(task, t.Task)
        assert task.status.state == t.TaskState.TASK_STATE_COMPLETED
        async with asyncio.timeout(10):  # the next prune, a second later at most
            while await store.events("", task.id):  # noqa: ASYNC110 - no event says "pruned"
                await asyncio.sleep(0.05)
        kept = await server.get_task(t.GetTaskRequest(id=task.id), CALL)
        assert kept.status.state == t.TaskState.TASK_STATE_COMPLETED  # the task stays
    finally:
        await server.shutdown()
