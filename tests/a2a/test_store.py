"""The `TaskStore` contract, run against every implementation (memory, SQLite, PostgreSQL).

SQLite-only tests and `open_store` are in `test_store_sqlite.py`, PostgreSQL-only ones
(and how the tests find a server) in `test_store_postgres.py`.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interlink.a2a.stores._base import (
    PushConfig,
    StoreError,
    TaskExists,
    TaskRow,
    TaskStore,
    VersionConflict,
)
from interlink.a2a.stores._memory import MemoryTaskStore
from interlink.a2a.stores._sqlite import SqliteTaskStore

WORKING = "TASK_STATE_WORKING"
SUBMITTED = "TASK_STATE_SUBMITTED"
COMPLETED = "TASK_STATE_COMPLETED"
INPUT = "TASK_STATE_INPUT_REQUIRED"


def make_store(kind: str, directory: Path) -> TaskStore:
    if kind == "memory":
        return MemoryTaskStore()
    if kind == "postgres":  # a schema of its own, dropped by close(); skips without a server
        from tests.a2a.test_store_postgres import DisposableStore

        return DisposableStore()
    return SqliteTaskStore(directory / "a2a.db")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    opened = make_store(request.param, tmp_path)
    await opened.open()
    try:
        yield opened
    finally:
        await opened.close()


def row(
    task_id: str,
    *,
    tenant: str = "",
    context_id: str = "ctx",
    owner: str = "alice",
    state: str = WORKING,
    status_time: int = 1_000,
) -> TaskRow:
    return TaskRow(
        tenant=tenant,
        task_id=task_id,
        context_id=context_id,
        owner=owner,
        state=state,
        status_time=status_time,
        version=0,
        last_seq=0,
        task=f"task {task_id}".encode(),
    )


async def touch(store: TaskStore, tenant: str, task_id: str, status_time: int) -> TaskRow:
    """One status update: a new snapshot and one event."""
    current = await store.get(tenant, task_id)
    assert current is not None
    return await store.append(
        tenant,
        task_id,
        expected_version=current.version,
        task=current.task,
        state=current.state,
        status_time=status_time,
        events=[f"at {status_time}".encode()],
    )


async def walk(store: TaskStore, page_size: int, **filters: str | int) -> list[str]:
    """Every task id that `list` pages through, in order."""
    seen: list[str] = []
    before: tuple[int, str] | None = None
    while True:
        page = await store.list("", page_size=page_size, before=before, **filters)  # type: ignore[arg-type]
        seen.extend(r.task_id for r in page)
        if len(page) < page_size:
            return seen
        before = (page[-1].status_time, page[-1].task_id)


# -- tasks and the event log ------------------------------------------------------------


async def test_create_and_get(store: TaskStore) -> None:
    created = await store.create(row("t1"), [b"e1", b"e2"])
    assert (created.version, created.last_seq, created.task) == (1, 2, b"task t1")
    assert await store.get("", "t1") == created
    assert await store.get("", "nope") is None
    assert [(e.seq, e.payload) for e in await store.events("", "t1")] == [(1, b"e1"), (2, b"e2")]


async def test_create_twice_raises_task_exists(store: TaskStore) -> None:
    first = await store.create(row("t1"), [b"e1"])
    with pytest.raises(TaskExists):
        await store.create(row("t1", owner="mallory"), [b"other"])
    assert await store.get("", "t1") == first
    assert [e.payload for e in await store.events("", "t1")] == [b"e1"]


async def test_append_numbers_events_and_checks_version(store: TaskStore) -> None:
    await store.create(row("t1"), [b"e1"])
    new = await store.append(
        "",
        "t1",
        expected_version=1,
        task=b"v2",
        state=INPUT,
        status_time=2_000,
        events=[b"e2", b"e3"],
    )
    assert (new.version, new.last_seq, new.state, new.status_time, new.task) == (
        2,
        3,
        INPUT,
        2_000,
        b"v2",
    )
    assert (new.context_id, new.owner) == ("ctx", "alice")
    assert await store.get("", "t1") == new

    with pytest.raises(VersionConflict) as conflict:
        await store.append(
            "",
            "t1",
            expected_version=1,
            task=b"lost",
            state=COMPLETED,
            status_time=3_000,
            events=[b"lost"],
        )
    assert (conflict.value.task_id, conflict.value.expected, conflict.value.actual) == ("t1", 1, 2)
    assert await store.get("", "t1") == new
    assert [e.payload for e in await store.events("", "t1")] == [b"e1", b"e2", b"e3"]

    empty = await store.append(
        "", "t1", expected_version=2, task=b"v3", state=INPUT, status_time=2_000, events=[]
    )
    assert (empty.version, empty.last_seq) == (3, 3)


async def test_append_to_unknown_task_is_a_conflict_with_no_actual(store: TaskStore) -> None:
    with pytest.raises(VersionConflict) as conflict:
        await store.append(
            "", "ghost", expected_version=1, task=b"", state=WORKING, status_time=1, events=[b"e"]
        )
    assert conflict.value.actual is None
    assert await store.events("", "ghost") == []


async def test_events_after_seq_and_limit(store: TaskStore) -> None:
    await store.create(row("t1"), [f"e{i}".encode() for i in range(1, 11)])
    assert [e.seq for e in await store.events("", "t1", after_seq=7)] == [8, 9, 10]
    assert [e.seq for e in await store.events("", "t1", after_seq=2, limit=3)] == [3, 4, 5]
    assert await store.events("", "t1", after_seq=10) == []
    assert await store.events("", "t1", limit=0) == []
    assert (await store.events("", "t1", after_seq=4, limit=1))[0].payload == b"e5"


async def test_concurrent_writers_with_the_same_version_exactly_one_wins(
    store: TaskStore,
) -> None:
    await store.create(row("t1"), [b"e1"])
    results = await asyncio.gather(
        *(
            store.append(
                "",
                "t1",
                expected_version=1,
                task=f"w{i}".encode(),
                state=WORKING,
                status_time=2_000,
                events=[f"w{i}".encode()],
            )
            for i in range(5)
        ),
        return_exceptions=True,
    )
    winners = [r for r in results if isinstance(r, TaskRow)]
    losers = [r for r in results if isinstance(r, VersionConflict)]
    assert (len(winners), len(losers)) == (1, 4)
    assert all(c.actual == 2 for c in losers)
    events = await store.events("", "t1")
    assert [e.payload for e in events] == [b"e1", winners[0].task]


# -- listing -----------------------------------------------------------------------------


async def test_list_orders_by_status_time_then_task_id_descending(store: TaskStore) -> None:
    for task_id, time in [("a", 5), ("b", 9), ("c", 5), ("d", 1), ("e", 9)]:
        await store.create(row(task_id, status_time=time), [])
    assert [r.task_id for r in await store.list("")] == ["e", "b", "c", "a", "d"]
    assert [r.task_id for r in await store.list("", page_size=2)] == ["e", "b"]
    assert [r.task_id for r in await store.list("", before=(9, "b"))] == ["c", "a", "d"]
    assert [r.task_id for r in await store.list("", before=(5, "b"))] == ["a", "d"]


async def test_list_and_count_filters(store: TaskStore) -> None:
    specs = [
        ("t1", "alice", "c1", WORKING, 10),
        ("t2", "bob", "c1", COMPLETED, 20),
        ("t3", "alice", "c2", COMPLETED, 30),
        ("t4", "alice", "c1", COMPLETED, 40),
        ("t5", "", "c3", SUBMITTED, 50),
    ]
    for task_id, owner, context, state, time in specs:
        await store.create(
            row(task_id, owner=owner, context_id=context, state=state, status_time=time), []
        )
    cases: list[tuple[dict[str, str | int], list[str]]] = [
        ({}, ["t5", "t4", "t3", "t2", "t1"]),
        ({"owner": "alice"}, ["t4", "t3", "t1"]),
        ({"owner": ""}, ["t5"]),
        ({"context_id": "c1"}, ["t4", "t2", "t1"]),
        ({"state": COMPLETED}, ["t4", "t3", "t2"]),
        ({"status_after": 20}, ["t5", "t4", "t3"]),
        ({"owner": "alice", "context_id": "c1", "state": COMPLETED}, ["t4"]),
        ({"owner": "alice", "status_after": 40}, []),
        ({"context_id": "nope"}, []),
    ]
    for filters, expected in cases:
        assert [r.task_id for r in await store.list("", **filters)] == expected, filters  # type: ignore[arg-type]
        assert await store.count("", **filters) == len(expected), filters  # type: ignore[arg-type]
        assert await walk(store, 1, **filters) == expected, filters


async def test_keyset_paging_with_equal_timestamps_returns_every_task_once(
    store: TaskStore,
) -> None:
    ids = [f"task-{i:03}" for i in range(57)]
    for task_id in ids:
        await store.create(row(task_id, status_time=7), [])
    for page_size in (1, 10, 57, 100):
        assert await walk(store, page_size) == sorted(ids, reverse=True)
    assert await store.count("") == 57


async def test_keyset_paging_while_tasks_change(store: TaskStore) -> None:
    """What a keyset walk guarantees when tasks are updated between pages: a returned
    task that moves up is not returned again; an unchanged task is returned exactly once;
    a task not yet returned that moves up past the cursor is left to a newer walk."""
    for i in range(30):
        await store.create(row(f"t{i:02}", status_time=100 + i), [])
    first = await store.list("", page_size=10)
    assert [r.task_id for r in first] == [f"t{i:02}" for i in range(29, 19, -1)]
    await touch(store, "", "t25", 1_000)  # returned already, now the newest task
    await touch(store, "", "t05", 1_001)  # not returned yet, jumps past the cursor
    rest: list[str] = []
    before = (first[-1].status_time, first[-1].task_id)
    while page := await store.list("", page_size=10, before=before):
        rest.extend(r.task_id for r in page)
        before = (page[-1].status_time, page[-1].task_id)
    assert rest == [f"t{i:02}" for i in range(19, -1, -1) if i != 5]
    # A new walk sees both moved tasks first.
    assert [r.task_id for r in await store.list("", page_size=2)] == ["t05", "t25"]
    assert [r.task_id for r in await store.list("", status_after=129)] == ["t05", "t25"]


async def test_tenants_never_see_each_other(store: TaskStore) -> None:
    await store.create(row("same", tenant="acme", owner="a"), [b"acme-1"])
    await store.create(row("same", tenant="umbrella", owner="u"), [b"umb-1", b"umb-2"])
    await store.put_push_config("acme", "same", "cfg", b"acme-config")
    acme = await store.get("acme", "same")
    assert acme is not None
    assert acme.owner == "a"
    assert await store.get("", "same") is None
    assert [e.payload for e in await store.events("umbrella", "same")] == [b"umb-1", b"umb-2"]
    assert [r.owner for r in await store.list("acme")] == ["a"]
    assert await store.list("") == []
    assert await store.count("umbrella") == 1
    assert await store.list_push_configs("umbrella", "same") == []
    assert await store.get_push_config("umbrella", "same", "cfg") is None
    await store.delete_push_config("umbrella", "same", "cfg")
    assert await store.get_push_config("acme", "same", "cfg") == b"acme-config"
    await touch(store, "umbrella", "same", 2_000)  # no configs there: nothing queued
    assert await store.claim_deliveries(10**18, 10, 1) == []
    with pytest.raises(VersionConflict):  # acme's version is 1, umbrella's now 2
        await store.append(
            "acme", "same", expected_version=2, task=b"", state=WORKING, status_time=1, events=[]
        )


async def test_active_lists_running_tasks_of_every_tenant(store: TaskStore) -> None:
    await store.create(row("w", tenant="x", state=WORKING), [])
    await store.create(row("s", tenant="y", state=SUBMITTED), [])
    await store.create(row("i", state=INPUT), [])
    await store.create(row("c", state=WORKING), [])
    await store.append(
        "", "c", expected_version=1, task=b"", state=COMPLETED, status_time=2, events=[b"done"]
    )
    assert sorted((r.tenant, r.task_id) for r in await store.active()) == [("x", "w"), ("y", "s")]


# -- push configs and the outbox ---------------------------------------------------------


async def test_push_config_crud(store: TaskStore) -> None:
    await store.create(row("t1"), [])
    for config_id in ("c", "a", "b"):
        await store.put_push_config("", "t1", config_id, f"{config_id}-1".encode())
    await store.put_push_config("", "t1", "a", b"a-2")  # a replacement keeps its place
    assert await store.list_push_configs("", "t1") == [("c", b"c-1"), ("a", b"a-2"), ("b", b"b-1")]
    assert await store.get_push_config("", "t1", "a") == b"a-2"
    await store.delete_push_config("", "t1", "c")
    await store.delete_push_config("", "t1", "c")
    await store.delete_push_config("", "nope", "c")
    for config_id in ("a", "b"):
        await store.delete_push_config("", "t1", config_id)
    assert await store.list_push_configs("", "t1") == []
    await store.put_push_config("", "t1", "a", b"a-3")
    await store.put_push_config("", "t1", "b", b"b-3")
    assert await store.get_push_config("", "t1", "c") is None
    await store.put_push_config("", "t1", "c", b"c-2")  # created again: now the newest
    assert [c for c, _ in await store.list_push_configs("", "t1")] == ["a", "b", "c"]
    with pytest.raises(StoreError):
        await store.put_push_config("", "nope", "c", b"x")


async def test_append_queues_one_delivery_per_config_and_event(store: TaskStore) -> None:
    await store.create(row("t1"), [b"e1"])
    await store.put_push_config("", "t1", "hook-a", b"A")
    await store.put_push_config("", "t1", "hook-b", b"B")
    await store.append(
        "", "t1", expected_version=1, task=b"", state=WORKING, status_time=2, events=[b"e2", b"e3"]
    )
    # two lanes (one per config); each offers its head, event 2, first
    heads = await store.claim_deliveries(now=100, limit=10, lease=50)
    assert [(d.seq, d.config_id, d.config, d.payload, d.attempts) for d in heads] == [
        (2, "hook-a", b"A", b"e2", 0),
        (2, "hook-b", b"B", b"e2", 0),
    ]
    assert {(d.tenant, d.task_id) for d in heads} == {("", "t1")}
    for d in heads:
        await store.finish_delivery(d.id)
    nexts = await store.claim_deliveries(now=100, limit=10, lease=50)
    assert [(d.seq, d.config_id, d.payload) for d in nexts] == [
        (3, "hook-a", b"e3"),
        (3, "hook-b", b"e3"),
    ]
    assert len({d.id for d in heads + nexts}) == 4


async def test_a_lane_is_offered_head_first_through_leases_retries_and_drops(
    store: TaskStore,
) -> None:
    await store.create(row("t1"), [])
    await store.put_push_config("", "t1", "hook", b"H")
    for time in range(2, 7):
        await touch(store, "", "t1", time)  # 5 deliveries, one lane
    (first,) = await store.claim_deliveries(now=1_000, limit=10, lease=100)
    assert first.seq == 1
    assert await store.claim_deliveries(now=1_050, limit=10, lease=100) == []  # leased
    # the lease runs out: the head is offered again, attempts not counted
    (again,) = await store.claim_deliveries(now=1_100, limit=10, lease=100)
    assert (again.id, again.seq, again.attempts) == (first.id, 1, 0)
    await store.finish_delivery(again.id)
    (second,) = await store.claim_deliveries(now=1_100, limit=10, lease=100)
    assert second.seq == 2
    await store.retry_delivery(second.id, next_at=2_000, error="HTTP 503")
    # event 3 waits behind the retry of event 2: order is kept
    assert await store.claim_deliveries(now=1_500, limit=10, lease=100) == []
    (retried,) = await store.claim_deliveries(now=2_000, limit=10, lease=100)
    assert (retried.id, retried.seq, retried.attempts) == (second.id, 2, 1)
    await store.drop_delivery(retried.id, error="gave up")
    await store.finish_delivery(retried.id)  # gone already: nothing happens
    await store.retry_delivery(retried.id, next_at=0, error="late")
    for seq in (3, 4, 5):
        (d,) = await store.claim_deliveries(now=2_000, limit=10, lease=100)
        assert d.seq == seq
        await store.finish_delivery(d.id)
    assert await store.claim_deliveries(now=10**15, limit=10, lease=100) == []


async def test_claims_respect_the_limit_across_lanes(store: TaskStore) -> None:
    for task_id in ("t1", "t2", "t3"):
        await store.create(row(task_id), [])
        await store.put_push_config("", task_id, "hook", b"H")
        await touch(store, "", task_id, 2)
        await touch(store, "", task_id, 3)
    first = await store.claim_deliveries(now=100, limit=2, lease=10)
    rest = await store.claim_deliveries(now=100, limit=10, lease=10)
    assert len(first) == 2
    assert [d.seq for d in first + rest] == [1, 1, 1]  # every lane's head, each once
    assert len({d.task_id for d in first + rest}) == 3


async def test_deliveries_of_a_deleted_config_disappear(store: TaskStore) -> None:
    await store.create(row("t1"), [])
    await store.put_push_config("", "t1", "gone", b"G")
    await store.put_push_config("", "t1", "kept", b"K")
    await store.put_push_config("", "t1", "reborn", b"R1")
    await touch(store, "", "t1", 2)
    await touch(store, "", "t1", 3)
    await store.delete_push_config("", "t1", "gone")
    await store.delete_push_config("", "t1", "reborn")
    # Put again after the events were queued: the old queue was for the deleted config.
    await store.put_push_config("", "t1", "reborn", b"R2")
    claimed = await store.claim_deliveries(now=100, limit=2, lease=10)
    assert [(d.config_id, d.seq) for d in claimed] == [("kept", 1)]
    assert await store.claim_deliveries(now=100, limit=10, lease=10) == []
    await touch(store, "", "t1", 4)
    # At 105 kept's head is still leased (its event 3 waits); the new config's lane
    # starts with the new event
    fresh = await store.claim_deliveries(105, 10, 10)
    assert [(d.config_id, d.config, d.seq) for d in fresh] == [("reborn", b"R2", 3)]
    await store.finish_delivery(claimed[0].id)
    after = await store.claim_deliveries(105, 10, 10)
    assert [(d.config_id, d.seq) for d in after] == [("kept", 2)]


# -- a random walk against a model ---------------------------------------------------------

_step = st.tuples(
    st.sampled_from(["t1", "t2"]),
    st.integers(0, 2),  # version offset: 0 = the right version, else stale or future
    st.lists(st.binary(max_size=4), max_size=3),
    st.integers(0, 50),
)


# -- retention -------------------------------------------------------------------------------


async def test_prune_drops_the_logs_of_old_finished_tasks(store: TaskStore) -> None:
    await store.create(row("old-done", state=COMPLETED, status_time=100), [b"1", b"2"])
    await store.create(row("old-done", tenant="t", state=COMPLETED, status_time=50), [b"1"])
    await store.create(row("old-running", state=WORKING, status_time=100), [b"1"])
    await store.create(row("new-done", state=COMPLETED, status_time=1_000), [b"1"])
    await store.create(row("finishing"), [b"1"])
    await store.put_push_config("", "finishing", "hook", b"H")
    await store.append(
        "", "finishing", expected_version=1, task=b"", state=COMPLETED, status_time=200,
        events=[b"done"],
    )  # fmt: skip
    assert await store.prune(older_than=100) == 1  # strictly older only
    assert await store.prune(older_than=500) == 4
    assert await store.prune(older_than=500) == 0
    for tenant, task_id in [("", "old-done"), ("t", "old-done"), ("", "finishing")]:
        assert await store.events(tenant, task_id) == []
        kept = await store.get(tenant, task_id)
        assert isinstance(kept, TaskRow)
    assert len(await store.events("", "old-running")) == 1
    assert len(await store.events("", "new-done")) == 1
    assert await store.claim_deliveries(now=10**15, limit=10, lease=1) == []


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
@settings(max_examples=25)
@given(steps=st.lists(_step, max_size=12), put_config=st.booleans())
def test_random_appends_match_a_model(
    kind: str, steps: list[tuple[str, int, list[bytes], int]], put_config: bool
) -> None:
    async def run(directory: Path) -> None:
        store = make_store(kind, directory)
        await store.open()
        try:
            model: dict[str, tuple[int, list[bytes], int]] = {}
            for task_id in ("t1", "t2"):
                await store.create(row(task_id, status_time=0), [b"first"])
                model[task_id] = (1, [b"first"], 0)
            if put_config:
                await store.put_push_config("", "t1", "hook", b"H")
            queued = 0
            for task_id, offset, events, time in steps:
                version, log, _ = model[task_id]
                expected = version - offset if offset == 1 else version + offset
                append = store.append(
                    "",
                    task_id,
                    expected_version=expected,
                    task=b"",
                    state=WORKING,
                    status_time=time,
                    events=events,
                )
                if offset:
                    with pytest.raises(VersionConflict) as conflict:
                        await append
                    assert conflict.value.actual == version
                else:
                    await append
                    model[task_id] = (version + 1, log + events, time)
                    queued += len(events) if put_config and task_id == "t1" else 0
            for task_id, (version, log, time) in model.items():
                got = await store.get("", task_id)
                assert got is not None
                assert (got.version, got.last_seq, got.status_time) == (version, len(log), time)
                stored = await store.events("", task_id)
                assert [(e.seq, e.payload) for e in stored] == list(enumerate(log, 1))
            order = sorted(model, key=lambda t: (model[t][2], t), reverse=True)
            assert await walk(store, 1) == order
            # one lane (t1 to its hook): its head is offered while anything is queued
            assert len(await store.claim_deliveries(1, 1_000, 1)) == min(queued, 1)
        finally:
            await store.close()

    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(run(Path(directory)))


LATER_US = 2**62
"""A `now` at which every queued delivery is due."""


async def test_a_config_keeps_the_version_of_its_client(store: TaskStore) -> None:
    await store.create(row("t1"), [b"e1"], [PushConfig("old", b"O", "0.3"), ("new", b"N")])
    await store.put_push_config("", "t1", "set", b"S", "0.3")
    await touch(store, "", "t1", 2_000)
    heads = await store.claim_deliveries(LATER_US, 10, 1)
    assert {(d.config_id, d.seq, d.protocol) for d in heads} == {
        ("old", 1, "0.3"),
        ("new", 1, "1.0"),
        ("set", 2, "0.3"),
    }
    assert await store.list_push_configs("", "t1") == [("old", b"O"), ("new", b"N"), ("set", b"S")]
    # set again by a client of the other version: it is that version's now
    await store.put_push_config("", "t1", "old", b"O2")
    await store.put_push_config("", "t1", "new", b"N2", "0.3")
    again = await store.claim_deliveries(LATER_US + 10, 10, 1)  # (the claims ran out)
    assert {(d.config_id, d.config, d.protocol) for d in again} == {
        ("old", b"O2", "1.0"),
        ("new", b"N2", "0.3"),
        ("set", b"S", "0.3"),
    }


async def delivers_as_1_0(store: TaskStore) -> None:
    """Open `store`, whose one queued delivery (event `E` of task `t1` to config `h`) was
    stored before configs had a version, and find it 1.0's."""
    await store.open()
    try:
        (delivery,) = await store.claim_deliveries(LATER_US, 10, 1)
        assert (delivery.config_id, delivery.protocol, delivery.payload) == ("h", "1.0", b"E")
    finally:
        await store.close()
