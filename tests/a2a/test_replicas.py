"""Several real server processes (`interlink a2a serve`) on different ports sharing one
PostgreSQL schema: streams and subscriptions across replicas, cancel across replicas, a
replica killed mid-task (a survivor fails the task when its lease expires), ListTasks
from every replica, many tasks through random replicas, a lost LISTEN connection, push
delivery by two outbox workers, and `interlink a2a db upgrade`.

The ground truth is the stored event log (`events` of the test's schema): every stream
is compared to it event by event, and GetTask to what the log builds. The database is
found as in `test_store_postgres.py` (`$INTERLINK_TEST_POSTGRES_URL`; skipped without one,
failed under CI=true); each test makes its own schema `t_replicas_<hex>` and drops it.
"""

from __future__ import annotations

import asyncio
import collections
import json
import random
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from interlink.a2a.stores._postgres import SCHEMA_VERSION
from tests.a2a.replica_agent import chunk
from tests.a2a.replicas_support import (
    Cluster,
    Event,
    Json,
    Replica,
    Webhook,
    check_sent_stream,
    check_subscription,
    check_task,
    describe,
    fold,
    reap,
    send,
    start_process,
    state_of,
    status_text,
)
from tests.a2a.test_store_postgres import drop_schema, server_url

pytestmark = pytest.mark.e2e

LEASE_TTL = 2.0
"""`--lease-ttl` of every replica (seconds)."""
COMPLETED = "TASK_STATE_COMPLETED"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    """A fresh schema; `await cluster.start(n)` starts replicas on it. At teardown every
    replica is stopped (SIGTERM, SIGKILL after 5 s) and the schema dropped."""
    url = await server_url()
    schema = f"t_replicas_{secrets.token_hex(6)}"
    replicas = Cluster(url, schema, tmp_path)
    try:
        yield replicas
    finally:
        try:
            await replicas.close()
        finally:
            await drop_schema(url, schema)


def texts(events: list[Event]) -> list[str]:
    return [status_text(e.result) for e in events if "statusUpdate" in e.result]


def ticks(count: int) -> str:
    return "".join(chunk(i) for i in range(count))


async def list_all(replica: Replica, **params: object) -> list[Json]:
    """Every task ListTasks pages through, two at a time."""
    tasks: list[Json] = []
    token = ""
    for _ in range(100):
        page = await replica.result("ListTasks", {**params, "pageSize": 2, "pageToken": token})
        tasks += page.get("tasks", [])
        token = page.get("nextPageToken", "")
        if not token:
            return tasks
    raise AssertionError("ListTasks never ended")


# -- streams across replicas ---------------------------------------------------------------


@pytest.mark.timeout(60)
async def test_a_stream_from_one_replica_is_followed_on_another(cluster: Cluster) -> None:
    a, b = await cluster.start(2)
    sent = a.stream("SendStreamingMessage", send("tick 8 100"))
    await sent.wait_seq(3)  # working and the first chunk are stored
    task_id = sent.events[0].result["task"]["id"]
    followed = b.subscribe(task_id)
    on_a, on_b = await sent.finish(), await followed.finish()

    log = await cluster.log(task_id)
    check_sent_stream(on_a, log)
    first = check_subscription(on_b, log, task_id)
    assert first >= 4, "B subscribed after event 3"
    assert [e.result for e in on_b[1:]] == [e.result for e in on_a[first - 1 :]]
    assert state_of(on_b[-1].result) == COMPLETED
    task = await b.task(task_id)
    folded = check_task(task, log)
    assert folded.artifacts == {"ticks": ticks(8)}
    assert folded.messages == [f"running in pid {a.pid}", "done"]


@pytest.mark.timeout(60)
async def test_two_subscribers_on_different_replicas_see_the_same_events(
    cluster: Cluster,
) -> None:
    a, b, c = await cluster.start(3)
    task = (await a.result("SendMessage", send("tick 10 100", returnImmediately=True)))["task"]
    task_id = task["id"]
    on_b, on_c = b.subscribe(task_id), c.subscribe(task_id)
    # a third from the start of the log, on the replica running the task
    whole = a.subscribe(task_id, last_event_id=0)
    got_b, got_c, got_whole = await on_b.finish(), await on_c.finish(), await whole.finish()

    log = await cluster.log(task_id)
    first_b = check_subscription(got_b, log, task_id)
    first_c = check_subscription(got_c, log, task_id)
    check_subscription(got_whole, log, task_id, after=0)
    common = max(first_b, first_c)
    tail_b = [(e.id, e.result) for e in got_b[1:] if e.id is not None and e.id >= common]
    tail_c = [(e.id, e.result) for e in got_c[1:] if e.id is not None and e.id >= common]
    assert tail_b == tail_c
    assert len(tail_b) >= 2, "both saw at least the last chunks and the end"
    assert state_of(got_b[-1].result) == state_of(got_c[-1].result) == COMPLETED
    assert check_task(await c.task(task_id), log).artifacts == {"ticks": ticks(10)}


# -- cancel across replicas ----------------------------------------------------------------


@pytest.mark.timeout(60)
async def test_a_cancel_on_one_replica_reaches_the_executor_on_another(cluster: Cluster) -> None:
    a, b, c = await cluster.start(3)
    task = (await a.result("SendMessage", send("hang", returnImmediately=True)))["task"]
    task_id = task["id"]
    watch = c.subscribe(task_id)
    await watch.wait_until("the snapshot", lambda events: len(events) >= 1)

    canceled = await b.result("CancelTask", {"id": task_id})
    assert canceled["id"] == task_id
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    events = await watch.finish(10)

    log = await cluster.log(task_id)
    check_subscription(events, log, task_id)
    assert state_of(events[-1].result) == "TASK_STATE_CANCELED"
    seen = f"cancel seen in pid {a.pid}"
    assert seen in texts(events), f"A's executor.cancel() published nothing: {texts(events)}"
    assert fold(log).messages[:2] == [f"hanging in pid {a.pid}", seen]
    check_task(canceled, log)
    stored = [await r.task(task_id) for r in (a, b, c)]
    assert stored[0] == stored[1] == stored[2]
    check_task(stored[0], log)
    again = await c.result("CancelTask", {"id": task_id})  # idempotent, from anywhere
    assert again["status"]["state"] == "TASK_STATE_CANCELED"


# -- a replica dies ------------------------------------------------------------------------


@pytest.mark.timeout(60)
async def test_a_killed_replicas_task_is_failed_by_a_survivor_within_the_lease_bound(
    cluster: Cluster,
) -> None:
    a, b, c = await cluster.start(3, lease_ttl=LEASE_TTL)
    hung = (await a.result("SendMessage", send("hang", returnImmediately=True)))["task"]
    # runs on a live replica for twice the lease: renewed, never taken for dead
    steady = (await b.result("SendMessage", send("tick 16 250", returnImmediately=True)))["task"]
    watchers = [b.subscribe(hung["id"]), c.subscribe(hung["id"])]
    steady_watch = c.subscribe(steady["id"])
    for watch in [*watchers, steady_watch]:
        await watch.wait_until("the snapshot", lambda events: len(events) >= 1)
    assert status_text({"task": await c.task(hung["id"])}) == f"hanging in pid {a.pid}"

    await a.kill()
    killed = time.monotonic()
    bound = 3 * LEASE_TTL
    state = ""
    while time.monotonic() - killed < bound:
        state = (await b.task(hung["id"]))["status"]["state"]
        if state == "TASK_STATE_FAILED":
            break
        await asyncio.sleep(0.1)
    failed_after = time.monotonic() - killed
    assert state == "TASK_STATE_FAILED", f"still {state} {bound} s after its replica died"

    log = await cluster.log(hung["id"])
    for watch in watchers:
        events = await watch.finish(5)
        check_subscription(events, log, hung["id"])
        last = events[-1].result
        assert state_of(last) == "TASK_STATE_FAILED"
        assert "lease expired" in status_text(last), describe(last)
    for replica in (b, c):
        task = await replica.task(hung["id"])
        check_task(task, log)
        assert "lease expired" in status_text({"task": task})
    assert failed_after <= bound

    steady_events = await steady_watch.finish(20)
    steady_log = await cluster.log(steady["id"])
    check_subscription(steady_events, steady_log, steady["id"])
    assert state_of(steady_events[-1].result) == COMPLETED, describe(steady_events[-1].result)
    assert check_task(await c.task(steady["id"]), steady_log).artifacts == {"ticks": ticks(16)}

    for replica in (b, c):
        states = {t["id"]: t["status"]["state"] for t in await list_all(replica)}
        assert states == {hung["id"]: "TASK_STATE_FAILED", steady["id"]: COMPLETED}


# -- ListTasks -----------------------------------------------------------------------------


@pytest.mark.timeout(60)
async def test_list_tasks_is_the_same_from_every_replica(cluster: Cluster) -> None:
    replicas = await cluster.start(3)
    done, hanging = [], []
    for replica in replicas:
        finished = (await replica.result("SendMessage", send("tick 1 0")))["task"]
        assert finished["status"]["state"] == COMPLETED
        done.append(finished["id"])
        started = await replica.result("SendMessage", send("hang", returnImmediately=True))
        hanging.append(started["task"]["id"])

    async def everywhere(expected: dict[str, str]) -> None:
        answers = [await r.result("ListTasks", {"includeArtifacts": True}) for r in replicas]
        assert answers[0] == answers[1] == answers[2]
        assert answers[0]["totalSize"] == len(expected)
        got = {t["id"]: t["status"]["state"] for t in answers[0]["tasks"]}
        assert got == expected
        pages = [[t["id"] for t in await list_all(r)] for r in replicas]
        assert pages[0] == pages[1] == pages[2] == [t["id"] for t in answers[0]["tasks"]]
        for replica in replicas:
            working = await replica.result("ListTasks", {"status": "TASK_STATE_WORKING"})
            want = {i for i, s in expected.items() if s == "TASK_STATE_WORKING"}
            assert {t["id"] for t in working.get("tasks", [])} == want

    expected = dict.fromkeys(done, COMPLETED) | dict.fromkeys(hanging, "TASK_STATE_WORKING")
    await everywhere(expected)
    for i, task_id in enumerate(hanging):  # each cancelled through the next replica
        canceled = await replicas[(i + 1) % 3].result("CancelTask", {"id": task_id})
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        expected[task_id] = "TASK_STATE_CANCELED"
        await everywhere(expected)  # at once, from every replica


# -- many tasks ------------------------------------------------------------------------------


TASKS = 500
IN_FLIGHT = 50


@pytest.mark.timeout(60)
async def test_many_tasks_through_random_replicas_every_event_exactly_once(
    cluster: Cluster,
) -> None:
    replicas = await cluster.start(3)
    seed = secrets.randbits(32)
    pick = random.Random(seed)
    plan = [(pick.choice(replicas), pick.choice(replicas)) for _ in range(TASKS)]
    slots = asyncio.Semaphore(IN_FLIGHT)

    async def one(sender: Replica, follower: Replica) -> tuple[str, list[Event], list[Event]]:
        async with slots:
            sent = sender.stream("SendStreamingMessage", send("tick 2 0"))
            await sent.wait_until("the task", lambda events: len(events) >= 1)
            task_id = sent.events[0].result["task"]["id"]
            # acknowledged event 1 (the task); everything after it, from anywhere
            followed = follower.subscribe(task_id, last_event_id=1)
            return task_id, await sent.finish(), await followed.finish()

    async with asyncio.timeout(45):
        runs = await asyncio.gather(*(one(s, f) for s, f in plan))

    logs = await cluster.logs()
    assert len({task_id for task_id, _, _ in runs}) == TASKS
    for (task_id, sent, followed), (sender, follower) in zip(runs, plan, strict=True):
        where = f"seed {seed}, task {task_id} sent to {sender.name}, followed on {follower.name}"
        log = logs.get(task_id)
        assert log is not None, where
        try:
            check_sent_stream(sent, log)
            check_subscription(followed, log, task_id, after=1)
        except AssertionError as exc:
            raise AssertionError(f"{where}: {exc}") from exc
        assert state_of(sent[-1].result) == COMPLETED, where
    for replica in replicas:
        listed = await replica.result("ListTasks", {"status": COMPLETED, "pageSize": 1})
        assert listed["totalSize"] == TASKS
    sample = pick.sample(runs, 20)
    for task_id, _, _ in sample:
        check_task(await pick.choice(replicas).task(task_id), logs[task_id])


# -- a lost LISTEN connection ----------------------------------------------------------------


@pytest.mark.timeout(60)
async def test_after_a_lost_listen_connection_a_replica_catches_up_from_the_log(
    cluster: Cluster,
) -> None:
    a, b = await cluster.start(2)
    task = (await a.result("SendMessage", send("tick 30 100", returnImmediately=True)))["task"]
    watch = b.subscribe(task["id"])
    name = f"interlink listen {cluster.schema}"
    conn = await cluster.connect()
    try:
        for cut in (4, 14):
            await watch.wait_seq(cut)
            deadline = time.monotonic() + 10
            while (
                await conn.fetchval(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name
                )
                < 2
            ):  # each replica listens (again, after the first cut)
                assert time.monotonic() < deadline, f"not every replica has its {name!r}"
                await asyncio.sleep(0.05)
            killed = await conn.fetchval(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) AS ok"
                " FROM pg_stat_activity WHERE application_name = $1) AS t WHERE ok",
                name,
            )
            assert killed >= 2, "B's LISTEN connection was among those cut"
    finally:
        await conn.close()
    events = await watch.finish(30)

    log = await cluster.log(task["id"])
    first = check_subscription(events, log, task["id"])
    assert first <= 4, "the subscription started before the first cut"
    assert state_of(events[-1].result) == COMPLETED
    assert check_task(await b.task(task["id"]), log).artifacts == {"ticks": ticks(30)}


# -- push delivery ---------------------------------------------------------------------------


@pytest.mark.timeout(60)
async def test_two_outbox_workers_deliver_each_event_exactly_once(cluster: Cluster) -> None:
    hook = Webhook()
    await hook.start()
    try:
        replicas = await cluster.start(2, "--push-allow", "127.0.0.1")
        card = await replicas[0].client.get(replicas[0].url + ".well-known/agent-card.json")
        assert card.json()["capabilities"]["pushNotifications"] is True

        async def one(i: int) -> str:
            config = {"url": hook.url, "token": f"token-{i}"}
            params = send("tick 3 10", taskPushNotificationConfig=config)
            task = (await replicas[i % 2].result("SendMessage", params))["task"]
            assert task["status"]["state"] == COMPLETED
            return str(task["id"])

        task_ids = await asyncio.gather(*(one(i) for i in range(20)))
        logs = await cluster.logs()
        expected = {f"{t}:{seq}": logs[t][seq - 1] for t in task_ids for seq in range(1, 7)}
        assert all(len(logs[t]) == 6 for t in task_ids), "task, working, 3 chunks, completed"
        await hook.wait_for(lambda pushes: {p.key for p in pushes} >= expected.keys(), 30)

        conn = await cluster.connect()
        try:  # nothing is left to deliver (or being delivered twice)
            deadline = time.monotonic() + 10
            while await conn.fetchval(f'SELECT count(*) FROM "{cluster.schema}".outbox'):
                assert time.monotonic() < deadline, "the outbox did not drain"
                await asyncio.sleep(0.05)
        finally:
            await conn.close()
    finally:
        await hook.close()

    keys = [p.key for p in hook.pushes]
    twice = [k for k, n in collections.Counter(keys).items() if n > 1]
    assert not twice, f"delivered more than once: {twice[:5]}"
    assert set(keys) == expected.keys()
    tokens = {t: f"token-{i}" for i, t in enumerate(task_ids)}
    order: dict[str, list[int]] = {}
    for push in hook.pushes:
        task_id, _, seq = push.key.rpartition(":")
        assert json.loads(push.body) == expected[push.key], push.key
        assert push.token == tokens[task_id]
        order.setdefault(task_id, []).append(int(seq))
    assert all(seqs == sorted(seqs) for seqs in order.values()), "a lane out of order"


# -- db upgrade ------------------------------------------------------------------------------


@pytest.mark.timeout(60)
async def test_db_upgrade_creates_the_schema_and_replicas_use_it(cluster: Cluster) -> None:
    for attempt in range(2):  # creates, then finds nothing to do
        log = cluster.tmp / f"upgrade{attempt}.log"
        proc = await start_process("a2a", "db", "upgrade", "--store", cluster.store, log=log)
        try:
            code = await asyncio.wait_for(proc.wait(), 30)
        finally:
            await reap(proc)
        assert code == 0, log.read_text(errors="replace")
        conn = await cluster.connect()
        try:
            version = await conn.fetchval(
                f'SELECT max(version) FROM "{cluster.schema}".schema_migrations'
            )
            tables = await conn.fetchval(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1"
                " AND table_name IN ('tasks', 'events', 'outbox', 'push_configs')",
                cluster.schema,
            )
        finally:
            await conn.close()
        assert version == SCHEMA_VERSION
        assert tables == 4

    (replica,) = await cluster.start(1)
    task = (await replica.result("SendMessage", send("tick 2 0")))["task"]
    assert task["status"]["state"] == COMPLETED
    check_task(await replica.task(task["id"]), await cluster.log(task["id"]))
