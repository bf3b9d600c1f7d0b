"""Replicas sharing a PostgreSQL store, in one process: two servers, each with a store
(pool) and a hub (LISTEN connection) of its own, on real uvicorn servers, so each step
of the protocol between replicas can be driven and observed: wake-ups, catch-up after a
lost LISTEN connection, cancel requests and their fallback, lease take-over, follow-ups
racing on two replicas, retention. (`test_replicas.py` runs real processes.)
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import asyncpg
import pytest

from interlink.a2a import AgentExecutor, EventSink, RequestContext, TaskUpdater, create_app
from interlink.a2a.stores._postgres import PostgresTaskStore
from tests.a2a.agents import card, message
from tests.a2a.conftest import Json, Served
from tests.a2a.test_store_postgres import drop_schema, server_url

pytestmark = pytest.mark.timeout(60)


class Stepper(AgentExecutor):
    """`steps`: works, then publishes one artifact chunk per `step()` and completes on
    `finish()`; `hang`: works until cancelled. Records what it saw."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.started = asyncio.Event()
        self.cancels: list[str] = []
        self.cancelled = asyncio.Event()
        self.runs = 0

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        self.runs += 1
        task = TaskUpdater(context, events)
        if context.task is not None and context.task.status.state == "TASK_STATE_INPUT_REQUIRED":
            await task.complete(f"got {context.text}")
            return
        if context.text == "ask":
            await task.requires_input("say more")
            return
        await task.working("started")
        self.started.set()
        try:
            if context.text == "hang":
                await asyncio.Event().wait()
            n = 0
            while (text := await self.queue.get()) is not None:
                await task.add_artifact(text=text, artifact_id="out", append=n > 0)
                n += 1
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        await task.complete()

    def step(self, text: str) -> None:
        self.queue.put_nowait(text)

    def finish(self) -> None:
        self.queue.put_nowait(None)

    async def cancel(self, context: RequestContext, events: EventSink) -> None:
        self.cancels.append(context.task_id)
        await TaskUpdater(context, events).working("cancel seen")


class ResumableStepper(Stepper):
    resumable = True


@dataclass
class Replica:
    served: Served
    agent: Stepper
    store: PostgresTaskStore


Start = Callable[..., Awaitable[Replica]]


@pytest.fixture
async def shared_schema() -> AsyncIterator[tuple[str, str]]:
    """(server URL, a fresh schema name); the schema is dropped after the servers stop."""
    url = await server_url()
    schema = f"t_rr_{secrets.token_hex(6)}"
    try:
        yield url, schema
    finally:
        await drop_schema(url, schema)


@pytest.fixture
async def replicas(
    shared_schema: tuple[str, str], serve: Callable[..., Awaitable[Served]]
) -> Start:
    """`await start(**server_options)`: one more replica on a shared fresh schema."""
    url, schema = shared_schema

    async def start(
        *, resumable: bool = False, cancel_wait: float = 5.0, **options: object
    ) -> Replica:
        agent = ResumableStepper() if resumable else Stepper()
        store = PostgresTaskStore(url, schema=schema, max_size=4)
        app = create_app(agent, card(), store=store, **options)  # type: ignore[arg-type]
        app.server.cancel_wait = cancel_wait
        return Replica(await serve(app), agent, store)

    return start


def send(text: str, **ids: str) -> Json:
    return {**message(text, **ids), "configuration": {"returnImmediately": True}}


async def started(replica: Replica, text: str = "steps") -> str:
    result = await replica.served.result("SendMessage", send(text))
    task = result["task"]
    assert isinstance(task, dict)
    await asyncio.wait_for(replica.agent.started.wait(), 10)
    return str(task["id"])


class Stream:
    """A `SubscribeToTask` SSE stream read in the background: (id, result) pairs."""

    def __init__(self, served: Served, task_id: str) -> None:
        self.events: list[tuple[str | None, Json]] = []
        self.changed = asyncio.Event()
        self.opened = asyncio.Event()
        self._task = asyncio.create_task(self._read(served, task_id))

    async def _read(self, served: Served, task_id: str) -> None:
        body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
        headers = {"A2A-Version": "1.0"}
        async with served.client.stream("POST", served.url, json=body, headers=headers) as r:
            event_id: str | None = None
            async for line in r.aiter_lines():
                if line.startswith("id: "):
                    event_id = line[4:]
                elif line.startswith("data: "):
                    answer = json.loads(line[6:])
                    self.events.append((event_id, answer["result"]))
                    event_id = None
                    self.opened.set()
                    self.changed.set()

    async def until(self, count: int) -> None:
        async with asyncio.timeout(15):
            while len(self.events) < count:
                self.changed.clear()
                await self.changed.wait()

    async def end(self) -> list[tuple[str | None, Json]]:
        await asyncio.wait_for(self._task, 15)
        return self.events


def seqs(events: list[tuple[str | None, Json]]) -> list[int]:
    return [int(i) for i, _ in events[1:] if i is not None]


def kinds(events: list[tuple[str | None, Json]]) -> list[str]:
    return [next(iter(result)) for _, result in events]


async def test_a_subscriber_on_another_replica_sees_every_event_once_in_order(
    replicas: Start,
) -> None:
    a, b = await replicas(), await replicas()
    task_id = await started(a)
    on_b, on_a = Stream(b.served, task_id), Stream(a.served, task_id)
    await on_b.until(1)
    await on_a.until(1)
    for i in range(20):
        a.agent.step(f"{i},")
    await on_b.until(1 + 20)
    a.agent.finish()
    from_b, from_a = await on_b.end(), await on_a.end()
    assert kinds(from_b)[0] == "task"
    first = int(from_b[0][0] or 0)  # the snapshot: the seq it stands for
    assert seqs(from_b) == list(range(first + 1, first + 1 + len(from_b) - 1))
    assert from_b[1:] == from_a[1:]  # identical sequences on both replicas
    final = await b.served.result("GetTask", {"id": task_id})
    assert final["status"]["state"] == "TASK_STATE_COMPLETED"  # type: ignore[index]
    text = "".join(p["text"] for p in final["artifacts"][0]["parts"])  # type: ignore[index]
    assert text == "".join(f"{i}," for i in range(20))


async def test_a_lost_listen_connection_catches_up_from_the_log(replicas: Start) -> None:
    a, b = await replicas(), await replicas()
    task_id = await started(a)
    on_b = Stream(b.served, task_id)
    await on_b.until(1)
    a.agent.step("before,")
    await on_b.until(2)
    conn = await asyncpg.connect(await server_url())
    try:
        killed = await conn.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = $1 AND pid <> pg_backend_pid()",
            f"interlink listen {b.store.schema}",
        )
    finally:
        await conn.close()
    assert killed == 2  # both replicas' LISTEN connections: nothing hears of commits now
    for i in range(5):
        a.agent.step(f"{i},")  # committed while nobody listens
    a.agent.finish()
    events = await on_b.end()  # the reconnected replica read them from the log
    assert kinds(events)[-1] == "statusUpdate"
    assert events[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"  # type: ignore[index]
    first = int(events[0][0] or 0)
    assert seqs(events) == list(range(first + 1, first + len(events)))
    texts = [
        e["artifactUpdate"]["artifact"]["parts"][0]["text"]  # type: ignore[index]
        for _, e in events
        if "artifactUpdate" in e
    ]
    assert texts == ["before,", "0,", "1,", "2,", "3,", "4,"]


async def test_cancel_on_another_replica_reaches_the_executor(replicas: Start) -> None:
    a, b = await replicas(), await replicas()
    task_id = await started(a, "hang")
    canceled = await b.served.result("CancelTask", {"id": task_id})
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"  # type: ignore[index]
    assert a.agent.cancels == [task_id]
    await asyncio.wait_for(a.agent.cancelled.wait(), 10)
    history = [m["parts"][0]["text"] for m in canceled["history"]]  # type: ignore[attr-defined]
    assert "cancel seen" in history
    again = await a.served.result("CancelTask", {"id": task_id})  # idempotent, anywhere
    assert again["status"]["state"] == "TASK_STATE_CANCELED"  # type: ignore[index]


async def test_an_unanswered_cancel_waits_for_the_lease_of_the_running_replica(
    replicas: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = await replicas(lease_ttl=0.4)
    b = await replicas(cancel_wait=0.2, lease_ttl=60)  # B sweeps once, at its start
    task_id = await started(a, "hang")
    monkeypatch.setattr(a.served.app.server._member, "remote_cancel", lambda tenant, task_id: None)
    # A is alive and holds the lease but does not answer: B may not overrule it
    refused = await b.served.call("CancelTask", {"id": task_id})
    assert refused["error"]["code"] == -32002, refused  # type: ignore[index]
    assert "did not cancel it" in refused["error"]["message"]  # type: ignore[index]
    assert not a.agent.cancelled.is_set()
    # A dies (no renewals, deaf): once its lease is over, B writes the cancel itself
    hub = a.served.app.server.replicas
    assert hub is not None
    await hub._stop()
    async with asyncio.timeout(10):
        while "error" in (answer := await b.served.call("CancelTask", {"id": task_id})):
            assert answer["error"]["code"] == -32002, answer  # type: ignore[index]
    assert answer["result"]["status"]["state"] == "TASK_STATE_CANCELED"  # type: ignore[index]
    assert a.agent.cancels == []  # never asked


async def test_a_dead_replicas_task_is_failed_by_a_survivor(replicas: Start) -> None:
    a, b = await replicas(lease_ttl=0.4), await replicas(lease_ttl=0.4)
    task_id = await started(a)
    on_b = Stream(b.served, task_id)
    await on_b.until(1)
    hub = a.served.app.server.replicas
    assert hub is not None
    assert hub._loop is not None
    hub._loop.cancel()  # A stops renewing its leases, as a dead replica would
    events = await on_b.end()  # B takes the task over and fails it
    final = events[-1][1]["statusUpdate"]["status"]  # type: ignore[index]
    assert final["state"] == "TASK_STATE_FAILED"
    assert "lease expired" in final["message"]["parts"][0]["text"]
    # A still listens: the write reached it and stopped its executor
    await asyncio.wait_for(a.agent.cancelled.wait(), 10)


async def test_a_resumable_task_is_rerun_by_a_survivor(replicas: Start) -> None:
    a = await replicas(lease_ttl=0.4, resumable=True)
    b = await replicas(lease_ttl=0.4, resumable=True)
    task_id = await started(a)
    hub = a.served.app.server.replicas
    assert hub is not None
    assert hub._loop is not None
    hub._loop.cancel()
    await asyncio.wait_for(b.agent.started.wait(), 10)  # re-run on B
    assert b.agent.runs == 1
    stream = Stream(b.served, task_id)
    await stream.until(1)  # subscribed while it runs
    b.agent.finish()
    events = await stream.end()
    assert events[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"  # type: ignore[index]


async def test_follow_ups_racing_on_two_replicas_run_the_agent_once(replicas: Start) -> None:
    a, b = await replicas(), await replicas()
    first = await a.served.result("SendMessage", message("ask"))
    task = first["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"  # type: ignore[index]
    task_id = str(task["id"])  # type: ignore[index]
    answers = await asyncio.gather(
        a.served.call("SendMessage", message("one", taskId=task_id)),
        b.served.call("SendMessage", message("two", taskId=task_id)),
    )
    ok = [x for x in answers if "result" in x]
    refused = [x for x in answers if "error" in x]
    assert len(ok) == 1, answers
    assert len(refused) == 1, answers
    assert refused[0]["error"]["code"] == -32004  # type: ignore[index]
    assert a.agent.runs + b.agent.runs == 2  # ask, then exactly one follow-up
    final = await a.served.result("GetTask", {"id": task_id})
    assert final["status"]["state"] == "TASK_STATE_COMPLETED"  # type: ignore[index]


async def test_retention_prunes_the_logs_of_finished_tasks(replicas: Start) -> None:
    a = await replicas(lease_ttl=0.4, retention=0.001)
    task_id = await started(a)
    stream = Stream(a.served, task_id)
    await stream.until(1)
    assert await a.store.events("", task_id)  # running: its log stays
    a.agent.finish()
    await stream.end()
    async with asyncio.timeout(10):
        while await a.store.events("", task_id):  # noqa: ASYNC110 - no event says "pruned"
            await asyncio.sleep(0.05)
    task = await a.served.result("GetTask", {"id": task_id})  # the snapshot stays
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"  # type: ignore[index]
