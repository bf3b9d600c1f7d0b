"""Replicas (PostgreSQL) and group commit where work changes hands, each case once a
bug: a write cancelled mid-way, an event refused because the task ended elsewhere, two
publishers at once, follow-ups and cancels across replicas, lost leases, a take-over
during shutdown, a task nobody runs, a failed catch-up."""

from __future__ import annotations

import asyncio
import secrets
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import msgspec
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
    _codec,
)
from interlink.a2a import types as t
from interlink.a2a.server._executor import InvalidEventSequence
from interlink.a2a.server._runtime import task_row
from interlink.a2a.stores._base import StoreError, TaskRow
from interlink.a2a.stores._memory import MemoryTaskStore
from interlink.a2a.stores._postgres import PostgresTaskStore
from interlink.a2a.stores._sqlite import SqliteTaskStore
from tests.a2a.agents import card
from tests.a2a.stores import HookedStore
from tests.a2a.test_server_concurrency import send
from tests.a2a.test_store_postgres import drop_schema, server_url

pytestmark = pytest.mark.timeout(30)
_T = TypeVar("_T")
CALL = Call()


async def until(condition: object, within: float = 5.0) -> None:
    """Polls `condition()` until true."""
    assert callable(condition)
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110 - polling runtime state on purpose
            await asyncio.sleep(0.005)


def kinds(payloads: Sequence[bytes]) -> list[str]:
    return [next(iter(msgspec.json.decode(p))) for p in payloads]


# -- 1. a cancelled write that lands after the "landed?" check is written twice ------------


class Batch(AgentExecutor):
    """WORKING, then on `go`: three chunks and a status (one append), then waits."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.go = asyncio.Event()

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        await task.working()
        self.started.set()
        await self.go.wait()
        for i in range(3):
            await task.add_artifact(text=f"{i},", artifact_id="out", append=i > 0)
        await task.working("three chunks")
        await asyncio.Event().wait()

    async def cancel(self, context: RequestContext, events: EventSink) -> None:
        return None


class SlowSqlite(SqliteTaskStore):
    """`hold`: the next job waits for it on the writer's thread (a slow commit: the job
    runs, so cancelling its caller does not stop it)."""

    hold: threading.Event | None = None
    holding = threading.Event()

    async def _run(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        hold, self.hold = self.hold, None
        if hold is None:
            return await super()._run(fn)
        holding = self.holding

        def slow(conn: sqlite3.Connection) -> _T:
            holding.set()
            hold.wait()
            return fn(conn)

        return await super()._run(slow)


async def test_a_cancelled_write_that_lands_late_is_not_written_twice(tmp_path: Path) -> None:
    store = SlowSqlite(tmp_path / "t.db")
    store.holding = threading.Event()
    agent = Batch()
    server = A2AServer(agent, card(push_notifications=False), store)
    await server.startup()
    blocker = threading.Event()
    try:
        answer = await server.send_message(send("go", immediately=True), CALL)
        assert isinstance(answer.task, t.Task)
        task_id = answer.task.id
        await agent.started.wait()
        live = server.live[("", task_id)]
        store.hold = blocker
        agent.go.set()
        # the runner's append (3 chunks + status) runs on the writer's thread, held
        await until(store.holding.is_set)
        assert len(live._staged) == 4
        cancel = asyncio.create_task(server.cancel_task(t.CancelTaskRequest(id=task_id), CALL))
        await asyncio.sleep(0.2)  # the runner was cancelled and looked: "not landed"
        blocker.set()  # now the held append commits, then the cancel's append runs
        canceled = await asyncio.wait_for(cancel, 10)
        assert canceled.status.state == t.TaskState.TASK_STATE_CANCELED
        logged = kinds([e.payload for e in await store.events("", task_id)])
        assert logged.count("artifactUpdate") == 3, logged
    finally:
        blocker.set()
        await server.shutdown()


# -- 2. the runner's own write finds the task ended elsewhere: the executor runs on -------


class Steps(AgentExecutor):
    """WORKING; on each `go`: one more WORKING status; records how it ended."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.go: asyncio.Queue[str] = asyncio.Queue()
        self.published: list[str] = []
        self.refused: list[BaseException] = []
        self.cancelled = asyncio.Event()
        self.stopped = asyncio.Event()

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        await task.working()
        self.started.set()
        try:
            while True:
                text = await self.go.get()
                await task.working(text)
                self.published.append(text)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        except Exception as exc:
            self.refused.append(exc)
            raise
        finally:
            self.stopped.set()

    async def cancel(self, context: RequestContext, events: EventSink) -> None:
        return None


async def end_elsewhere(store: MemoryTaskStore, task_id: str, state: t.TaskState) -> None:
    """What another replica's write does (a fallback cancel, a take-over's FAILED)."""
    row = await store.get("", task_id)
    assert row is not None
    task = _codec.decode(t.Task, row.task)
    status = t.TaskStatus(state=state, timestamp=datetime.now(UTC))
    task = msgspec.structs.replace(task, status=status)
    event = t.StreamResponse(
        status_update=t.TaskStatusUpdateEvent(
            task_id=task_id, context_id=task.context_id, status=status
        )
    )
    await store.append(
        "",
        task_id,
        expected_version=row.version,
        task=_codec.encode(task),
        state=str(state),
        status_time=int(status.timestamp.timestamp() * 1_000_000),  # type: ignore[union-attr]
        events=[_codec.encode(event)],
    )


async def test_an_executor_whose_write_finds_the_task_canceled_is_stopped() -> None:
    store = MemoryTaskStore()
    agent = Steps()
    server = A2AServer(agent, card(push_notifications=False), store)
    await server.startup()
    try:
        answer = await server.send_message(send("go", immediately=True), CALL)
        assert isinstance(answer.task, t.Task)
        task_id = answer.task.id
        await agent.started.wait()
        # another replica wrote CANCELED; its NOTIFY has not been handled here yet
        await end_elsewhere(store, task_id, t.TaskState.TASK_STATE_CANCELED)
        agent.go.put_nowait("still here")
        await asyncio.wait_for(agent.stopped.wait(), 5)  # its executor is stopped ...
        assert agent.published == []  # ... its publish was refused, not acknowledged
        assert [type(e) for e in agent.refused] == [InvalidEventSequence]
        row = await store.get("", task_id)
        assert row is not None
        assert row.state == "TASK_STATE_CANCELED"  # the staged status was dropped
    finally:
        await server.shutdown()


# -- 3. two publishers share one `_write_error`: the wrong one gets it, the other is told
#       its unstored event was stored ---------------------------------------------------


class YieldingStore(HookedStore):
    """Appends yield to the loop (as a real store's do); append number `fail` fails."""

    def __init__(self, fail: int) -> None:
        super().__init__()
        self.fail = fail

    async def before_append(self, number: int) -> None:
        await asyncio.sleep(0)
        if number == self.fail:
            raise StoreError("disk full")


class TwoAtOnce(AgentExecutor):
    """WORKING, then two status updates published at once (say, two sub-tasks
    reporting); records what each publish did."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}
        self.done = asyncio.Event()

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        await task.working()

        async def report(text: str) -> None:
            try:
                await task.working(text)
                self.outcomes[text] = "stored"
            except StoreError:
                self.outcomes[text] = "failed"

        await asyncio.gather(report("a"), report("b"))
        self.done.set()
        await task.complete()


async def test_each_publisher_learns_the_fate_of_its_own_event() -> None:
    store = YieldingStore(fail=2)  # 1: a; 2: b (the task and first WORKING are a create)
    agent = TwoAtOnce()
    server = A2AServer(agent, card(push_notifications=False), store)
    await server.startup()
    try:
        answer = await server.send_message(send("go", immediately=True), CALL)
        assert isinstance(answer.task, t.Task)
        await asyncio.wait_for(agent.done.wait(), 5)
        updates = [
            _codec.decode(t.StreamResponse, e.payload).status_update
            for e in await store.events("", answer.task.id)
        ]
        texts = [u.status.message.parts[0].text for u in updates if u and u.status.message]
        stored = {text: ("stored" if text in texts else "failed") for text in ("a", "b")}
        assert agent.outcomes == stored
    finally:
        await server.shutdown()


# -- replicas on PostgreSQL: A2AServers sharing a fresh schema, each with its own hub ------


Start = Callable[..., Awaitable[A2AServer]]


class FailingPostgres(PostgresTaskStore):
    """`fail`, `fail_gets`: how many of the next appends, gets fail (a database blip)."""

    fail = 0
    fail_gets = 0

    async def get(self, tenant: str, task_id: str) -> TaskRow | None:
        if self.fail_gets > 0:
            self.fail_gets -= 1
            raise StoreError("connection lost")
        return await super().get(tenant, task_id)

    async def append(
        self,
        tenant: str,
        task_id: str,
        *,
        expected_version: int,
        task: bytes,
        state: str,
        status_time: int,
        events: Sequence[bytes],
    ) -> TaskRow:
        if self.fail > 0:
            self.fail -= 1
            raise StoreError("connection lost")
        return await super().append(
            tenant,
            task_id,
            expected_version=expected_version,
            task=task,
            state=state,
            status_time=status_time,
            events=events,
        )


@pytest.fixture
async def replicas() -> AsyncIterator[Start]:
    """`await start(agent, **server_options)`: one more replica (started) on a shared
    fresh schema; stopped (unless the test did) and the schema dropped afterwards."""
    url = await server_url()
    schema = f"t_review_{secrets.token_hex(6)}"
    servers: list[A2AServer] = []

    async def start(agent: AgentExecutor, **options: Any) -> A2AServer:
        store = FailingPostgres(url, schema=schema, max_size=4)
        server = A2AServer(agent, card(push_notifications=False), store, **options)
        await server.startup()
        servers.append(server)
        return server

    try:
        yield start
    finally:
        for server in servers:
            if server.replicas is not None:  # not stopped by the test
                await server.shutdown()
            leaked = [live.runner for live in server.live.values() if live.runner]
            for runner in leaked:
                runner.cancel()
            if leaked:
                await asyncio.wait(leaked)
        await drop_schema(url, schema)


def store_of(server: A2AServer) -> FailingPostgres:
    assert isinstance(server.store, FailingPostgres)
    return server.store


# -- 4. a follow-up accepted on one replica is accepted again on another -------------------


class SlowFollowUp(AgentExecutor):
    """`ask` asks for input; a follow-up holds the task without publishing until
    `release` (an agent thinking before its first status)."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.follow_ups: list[str] = []

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        if context.task is None:
            await task.requires_input("say more")
            return
        self.follow_ups.append(context.text)
        await self.release.wait()
        await task.complete(f"got {context.text}")


async def test_a_follow_up_running_on_one_replica_is_refused_on_another(
    replicas: Start,
) -> None:
    agent_a, agent_b = SlowFollowUp(), SlowFollowUp()
    a, b = await replicas(agent_a), await replicas(agent_b)
    first = await a.send_message(send("ask"), CALL)
    assert isinstance(first.task, t.Task)
    task_id = first.task.id
    await a.send_message(send("one", task_id=task_id, immediately=True), CALL)
    with pytest.raises(UnsupportedOperation):  # as A itself answers (its runner is busy)
        await a.send_message(send("again", task_id=task_id, immediately=True), CALL)
    try:
        with pytest.raises(UnsupportedOperation):
            await b.send_message(send("two", task_id=task_id, immediately=True), CALL)
    finally:
        agent_a.release.set()
        agent_b.release.set()
    assert agent_a.follow_ups + agent_b.follow_ups == ["one"]


class AsksThenTidies(SlowFollowUp):
    """A `SlowFollowUp` whose `ask` returns only on `tidied` (an agent tidying up after
    its question)."""

    def __init__(self) -> None:
        super().__init__()
        self.tidied = asyncio.Event()

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        await super().execute(context, events)
        if context.task is None:
            await self.tidied.wait()


async def test_a_follow_up_that_waited_for_the_asking_executor_keeps_its_task() -> None:
    """(The race above, on one server: "one" waited for the asking executor, whose end
    forgot the task; "one" ran on that forgotten copy, so "again" was taken as well.)"""
    agent = AsksThenTidies()
    server = A2AServer(agent, card(push_notifications=False), MemoryTaskStore())
    await server.startup()
    try:
        asked = await server.send_message(send("ask"), CALL)  # (its executor runs on)
        assert isinstance(asked.task, t.Task)
        task_id = asked.task.id
        one = asyncio.create_task(
            server.send_message(send("one", task_id=task_id, immediately=True), CALL)
        )
        for _ in range(5):  # "one" waits for the asking executor to return
            await asyncio.sleep(0)
        assert not one.done()
        agent.tidied.set()  # it returns: the task is idle a moment, then "one" runs
        await one
        live = server.live.get(("", task_id))
        assert live is not None  # "one"'s task is not forgotten while it runs ...
        assert live.running
        with pytest.raises(UnsupportedOperation):  # ... so it takes no other message
            await server.send_message(send("again", task_id=task_id, immediately=True), CALL)
        agent.release.set()
        assert live.runner is not None
        await live.runner
        assert agent.follow_ups == ["one"]
    finally:
        agent.release.set()
        await server.shutdown()


# -- 5. the hub keeps sweeping while the server stops: a take-over starts a runner that
#       nobody stops ----------------------------------------------------------------------


class SlowToStop(AgentExecutor):
    """Resumable; WORKING, then waits; takes `stop_delay` s to stop when cancelled."""

    resumable = True

    def __init__(self, stop_delay: float = 0.0) -> None:
        self.stop_delay = stop_delay
        self.runs: list[str] = []
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.go: asyncio.Queue[str] = asyncio.Queue()

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        self.runs.append(context.task_id)
        task = TaskUpdater(context, events)
        await task.working()
        self.started.set()
        try:
            while True:
                text = await self.go.get()
                await task.working(text)
        except asyncio.CancelledError:
            self.cancelled.set()
            await asyncio.sleep(self.stop_delay)
            raise

    async def cancel(self, context: RequestContext, events: EventSink) -> None:
        return None


async def dead_replicas_task(url: str, schema: str) -> str:
    """A WORKING task whose lease (held by a replica that died) has expired."""
    store = PostgresTaskStore(url, schema=schema, max_size=1)
    store.lease_owner, store.lease_ttl = "dead", 0
    await store.open()
    try:
        user = t.Message(message_id="m-dead", role=t.Role.ROLE_USER, parts=[t.Part(text="x")])
        status = t.TaskStatus(state=t.TaskState.TASK_STATE_WORKING, timestamp=datetime.now(UTC))
        task = t.Task(id=f"dead-{secrets.token_hex(4)}", context_id="c", status=status)
        task = msgspec.structs.replace(task, history=[user])
        await store.create(task_row(task, tenant="", owner=""), [])
    finally:
        await store.close()
    return task.id


async def test_no_runner_is_left_behind_when_a_take_over_lands_during_shutdown(
    replicas: Start,
) -> None:
    agent = SlowToStop(stop_delay=1.0)
    a = await replicas(agent, lease_ttl=0.4)
    answer = await a.send_message(send("go", immediately=True), CALL)
    assert isinstance(answer.task, t.Task)
    await agent.started.wait()
    stopping = asyncio.create_task(a.shutdown())
    await asyncio.wait_for(agent.cancelled.wait(), 5)  # shutdown is stopping the runner
    store = store_of(a)
    dead = await dead_replicas_task(store.dsn, store.schema)
    await asyncio.wait_for(stopping, 10)
    left = [task_id for (_, task_id), live in a.live.items() if live.running]
    assert left == [], f"still running after shutdown: {left} (dead: {dead})"


# -- 6. a take-over of a replica that is alive (its renewals late): two executors ---------


async def test_a_replica_that_lost_its_lease_stops_its_executor(replicas: Start) -> None:
    agent_a, agent_b = SlowToStop(), SlowToStop()
    a = await replicas(agent_a, lease_ttl=0.4)
    b = await replicas(agent_b, lease_ttl=0.4)
    answer = await a.send_message(send("go", immediately=True), CALL)
    assert isinstance(answer.task, t.Task)
    task_id = answer.task.id
    await agent_a.started.wait()
    hub = a.replicas
    assert hub is not None
    assert hub._loop is not None
    hub._loop.cancel()  # A's renewals stall (a pause, a network blip to the database)
    await asyncio.wait_for(agent_b.started.wait(), 10)  # B took the task over, re-ran it
    runner = a.live[("", task_id)].runner
    assert runner is not None
    agent_a.go.put_nowait("from A")  # its write is refused: B holds the lease ...
    agent_b.go.put_nowait("from B")
    await asyncio.wait([runner], timeout=10)  # ... and its executor is stopped
    assert runner.done()
    async with asyncio.timeout(10):  # B's write lands (it runs the task now)
        while True:
            row = await store_of(b).get("", task_id)
            assert row is not None
            history = [m.parts[0].text for m in _codec.decode(t.Task, row.task).history]
            if "from B" in history:
                break
            await asyncio.sleep(0.02)
    assert "from A" not in history, history


# -- 7. an executor's refusal to cancel is overridden when the cancel comes via another
#       replica -----------------------------------------------------------------------------


class Refuses(SlowToStop):
    resumable = False

    async def cancel(self, context: RequestContext, events: EventSink) -> None:
        raise TaskNotCancelable("this one cannot stop now", taskId=context.task_id)


async def test_a_refused_cancel_is_refused_on_every_replica(replicas: Start) -> None:
    agent_a = Refuses()
    a = await replicas(agent_a)
    b = await replicas(Refuses(), cancel_wait=0.3)
    answer = await a.send_message(send("go", immediately=True), CALL)
    assert isinstance(answer.task, t.Task)
    task_id = answer.task.id
    await agent_a.started.wait()
    with pytest.raises(TaskNotCancelable):  # on the replica running it
        await a.cancel_task(t.CancelTaskRequest(id=task_id), CALL)
    try:
        with pytest.raises(TaskNotCancelable):  # the same request on another replica
            await b.cancel_task(t.CancelTaskRequest(id=task_id), CALL)
    finally:
        row = await store_of(a).get("", task_id)
        assert row is not None
    assert row.state == "TASK_STATE_WORKING"
    assert not agent_a.cancelled.is_set()


# -- 8. leases are renewed by owner name, not for tasks an executor runs here ---------------


class Breaks(SlowToStop):
    resumable = False

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        await task.working()
        self.started.set()
        await self.go.get()
        raise ValueError("the agent broke")


async def test_an_active_task_nobody_runs_is_taken_over(replicas: Start) -> None:
    agent = Breaks()
    a = await replicas(agent, lease_ttl=0.4)
    answer = await a.send_message(send("go", immediately=True), CALL)
    assert isinstance(answer.task, t.Task)
    task_id = answer.task.id
    await agent.started.wait()
    store_of(a).fail = 2  # the blip: _run's FAILED and _finish's FAILED both fail
    agent.go.put_nowait("break")
    await until(lambda: not a.live.get(("", task_id)) or not a.live[("", task_id)].running)
    assert store_of(a).fail == 0
    await asyncio.sleep(2.0)  # 5 x lease_ttl, with the database back
    row = await store_of(a).get("", task_id)
    assert row is not None
    assert row.state == "TASK_STATE_FAILED"


# -- 9. a catch-up that fails is not tried again: the wake-up is lost ----------------------


async def test_a_failed_catch_up_is_retried(replicas: Start) -> None:
    agent = SlowToStop()
    a, b = await replicas(agent), await replicas(SlowToStop())
    answer = await a.send_message(send("go", immediately=True), CALL)
    assert isinstance(answer.task, t.Task)
    task_id = answer.task.id
    await agent.started.wait()
    stream = await b.subscribe_to_task(t.SubscribeToTaskRequest(id=task_id), CALL)
    try:
        assert await stream.batch(5)  # the snapshot
        follower = b.live[("", task_id)]._follower
        await until(lambda: follower is None or follower.done())  # subscribe's catch-up
        store_of(b).fail_gets = 1  # B's next read fails once (a blip)
        agent.go.put_nowait("news")
        received = await stream.batch(3)
        assert received, "B's stream never got the event A stored"
    finally:
        await stream.aclose()
