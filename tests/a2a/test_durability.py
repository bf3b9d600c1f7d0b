"""The durable side of the A2A server: what the other store, restart and push tests do
not cover. Stores compared on unusual values (unicode, NUL, long keys, big
payloads, concurrent creates, appends after `prune`); a first write that fails with an
inline push config; ListTasks paging over old timestamps; push attempts against their
claim's lease; per-tenant webhook allow lists on a shared store; push after a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from interlink.a2a import (
    A2AServer,
    AgentExecutor,
    Call,
    EventSink,
    RequestContext,
    TaskNotFound,
)
from interlink.a2a import types as t
from interlink.a2a._codec import encode
from interlink.a2a.server._push import PushDelivery
from interlink.a2a.server._runtime import task_row
from interlink.a2a.stores._base import Delivery, StoreError, TaskExists, TaskRow, TaskStore
from interlink.a2a.stores._memory import MemoryTaskStore
from interlink.a2a.stores._sqlite import SqliteTaskStore
from interlink.jsonrpc import InvalidParams
from tests.a2a.agents import Scripted, card
from tests.a2a.stores import HookedStore
from tests.a2a.test_push import Receiver
from tests.a2a.test_server_concurrency import send
from tests.a2a.test_store import COMPLETED, WORKING, make_store, row, walk

pytestmark = pytest.mark.timeout(30)

WAIT = 10.0
"""Seconds any wait on an event may take before the test fails."""

KINDS = ["memory", "sqlite", "postgres"]


@contextlib.asynccontextmanager
async def opened(kind: str, directory: Path) -> AsyncIterator[TaskStore]:
    """A store of `kind`, open (PostgreSQL: a schema of its own; skips without a server)."""
    store = make_store(kind, directory)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


# -- the stores agree on unusual values ------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_unicode_ids_sort_and_page_in_code_point_order(kind: str, tmp_path: Path) -> None:
    ids = ["a", "B", "Z", "z", "aa", "é", "a\u0301", "ä", "\uffff", "\U0001d11e", "\U0001f600"]
    async with opened(kind, tmp_path) as store:
        for task_id in ids:
            await store.create(row(task_id, status_time=5), [])
        await store.create(row("later", status_time=6), [])
        expected = ["later", *sorted(ids, reverse=True)]
        assert [r.task_id for r in await store.list("", page_size=100)] == expected
        for page_size in (1, 2, 5):
            assert await walk(store, page_size) == expected
        # a cursor inside the ties, on a non-ASCII id
        rest = await store.list("", before=(5, "é"), page_size=100)
        assert [r.task_id for r in rest] == [i for i in expected[1:] if i < "é"]


@pytest.mark.parametrize("kind", KINDS)
async def test_big_values_round_trip(kind: str, tmp_path: Path) -> None:
    big = secrets.token_bytes(3 * 1024 * 1024)
    owner = "ö" * 300
    async with opened(kind, tmp_path) as store:
        created = await store.create(row("t1", owner=owner, status_time=2**62), [big])
        await store.put_push_config("", "t1", "hook", big[:1000])
        appended = await store.append(
            "", "t1", expected_version=1, task=big, state=WORKING, status_time=2**62 + 1,
            events=[big[::-1], b""],
        )  # fmt: skip
        assert (created.owner, appended.last_seq, appended.version) == (owner, 3, 2)
        got = await store.get("", "t1")
        assert got == appended
        assert [(e.seq, e.payload) for e in await store.events("", "t1")] == [
            (1, big),
            (2, big[::-1]),
            (3, b""),
        ]
        heads = await store.claim_deliveries(now=2**62, limit=10, lease=1)
        assert [(d.seq, d.payload, d.config) for d in heads] == [(2, big[::-1], big[:1000])]


@pytest.mark.parametrize("kind", KINDS)
async def test_concurrent_creates_of_one_id_exactly_one_wins(kind: str, tmp_path: Path) -> None:
    async with opened(kind, tmp_path) as store:
        results = await asyncio.gather(
            *(store.create(row("t1", owner=f"o{i}"), [f"e{i}".encode()]) for i in range(6)),
            return_exceptions=True,
        )
        winners = [r for r in results if isinstance(r, TaskRow)]
        assert len(winners) == 1
        assert all(isinstance(r, TaskExists) for r in results if r is not winners[0])
        assert await store.get("", "t1") == winners[0]
        events = await store.events("", "t1")
        assert [e.payload for e in events] == [f"e{winners[0].owner[1:]}".encode()]


@pytest.mark.parametrize("kind", KINDS)
async def test_ids_no_store_holds_alike_are_refused_alike(kind: str, tmp_path: Path) -> None:
    """PostgreSQL's TEXT takes no NUL and its indexes no very long value; memory and
    SQLite would. So the server refuses such client-chosen ids itself, the same on every
    store: -32602 where the client names a new one, not found where it looks one up."""
    odd_ids = ["a\x00b", secrets.token_hex(2000)]
    async with opened(kind, tmp_path) as store:
        server = A2AServer(Scripted(), card(), store)
        await server.startup()
        try:
            for odd in odd_ids:
                message = send("echo x").message
                for field, changed in (
                    ("message.contextId", {"context_id": odd}),
                    ("message.messageId", {"message_id": odd}),
                ):
                    request = t.SendMessageRequest(
                        message=msgspec.structs.replace(message, **changed)
                    )
                    with pytest.raises(InvalidParams) as info:
                        await server.send_message(request, Call())
                    assert info.value.message.startswith(f"Invalid params: {field}: ")
                with pytest.raises(TaskNotFound):
                    await server.get_task(t.GetTaskRequest(id=odd), Call())
                answer = await server.send_message(send("echo y"), Call())
                assert isinstance(answer.task, t.Task)
                config = t.TaskPushNotificationConfig(
                    task_id=answer.task.id, id=odd, url="https://example.com/hook"
                )
                with pytest.raises(InvalidParams):
                    await server.create_task_push_notification_config(config, Call())
                with pytest.raises(TaskNotFound):
                    await server.get_task_push_notification_config(
                        t.GetTaskPushNotificationConfigRequest(task_id=answer.task.id, id=odd),
                        Call(),
                    )
        finally:
            await server.shutdown()


@pytest.mark.parametrize("kind", KINDS)
async def test_create_with_push_configs_queues_its_first_events(kind: str, tmp_path: Path) -> None:
    async with opened(kind, tmp_path) as store:
        await store.create(row("t1"), [b"e1", b"e2"], [("c1", b"H1"), ("c2", b"H2")])
        assert await store.list_push_configs("", "t1") == [("c1", b"H1"), ("c2", b"H2")]
        heads = await store.claim_deliveries(now=2**62, limit=10, lease=1)  # lane heads
        assert sorted((d.config_id, d.seq, d.payload) for d in heads) == [
            ("c1", 1, b"e1"),
            ("c2", 1, b"e1"),
        ]


@pytest.mark.parametrize("kind", KINDS)
async def test_an_append_after_prune_is_numbered_after_last_seq(kind: str, tmp_path: Path) -> None:
    async with opened(kind, tmp_path) as store:
        await store.create(row("t1", state=COMPLETED, status_time=1), [b"1", b"2"])
        await store.put_push_config("", "t1", "hook", b"H")
        assert await store.prune(older_than=10) == 2
        appended = await store.append(
            "", "t1", expected_version=1, task=b"", state=COMPLETED, status_time=2, events=[b"3"]
        )
        assert appended.last_seq == 3
        assert [(e.seq, e.payload) for e in await store.events("", "t1")] == [(3, b"3")]
        assert [(e.seq, e.payload) for e in await store.events("", "t1", after_seq=2)] == [
            (3, b"3")
        ]
        claimed = await store.claim_deliveries(now=100, limit=10, lease=10)
        assert [(d.seq, d.payload) for d in claimed] == [(3, b"3")]


# -- the runtime: what a failed first write leaves behind -------------------------------------


class FailFirstEvents(HookedStore):
    """The first write that carries events (a create or an append) fails."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    def _fail_once(self, with_events: bool) -> None:
        if with_events and not self.failed:
            self.failed = True
            raise StoreError("disk full")

    async def before_create(self, events: Sequence[bytes]) -> None:
        self._fail_once(bool(events))

    async def before_append(self, number: int) -> None:
        self._fail_once(self.appends[-1] > 0)  # (the size of this very append)


@pytest.mark.parametrize("inline_push", [False, True])
async def test_a_failed_first_write_leaves_no_task_behind(inline_push: bool) -> None:
    store = FailFirstEvents()
    push = PushDelivery(store, allow_hosts=["127.0.0.1"])
    server = A2AServer(Scripted(), card(), store, push=push)
    await server.startup()
    try:
        request = send("echo hi")
        if inline_push:
            webhook = t.TaskPushNotificationConfig(url="http://127.0.0.1:9/hook")
            configuration = t.SendMessageConfiguration(task_push_notification_config=webhook)
            request = t.SendMessageRequest(message=request.message, configuration=configuration)
        # (the store's own words, which may name files and schemas, stay in the log)
        with pytest.raises(Exception, match="did not answer: the task store failed") as info:
            await asyncio.wait_for(server.send_message(request, Call()), WAIT)
        assert "disk full" not in str(info.value)
        assert store.failed
        assert server.live == {}  # nothing runs the task any more ...
        assert await store.active() == []  # ... so none may look running
        assert await store.list("") == []  # the client got an error: no task was made
    finally:
        await server.shutdown()


# -- ListTasks paging --------------------------------------------------------------------------


class Dated(AgentExecutor):
    """Finishes every task at once with the status timestamp it is given."""

    def __init__(self, when: datetime) -> None:
        self.when = when

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        status = t.TaskStatus(state=t.TaskState.TASK_STATE_COMPLETED, timestamp=self.when)
        await events.publish(
            t.Task(id=context.task_id, context_id=context.context_id, status=status)
        )


async def test_list_tasks_pages_through_tasks_with_old_status_timestamps() -> None:
    server = A2AServer(Dated(datetime(1969, 7, 20, 20, 17, tzinfo=UTC)), card(), MemoryTaskStore())
    await server.startup()
    try:
        ids: set[str] = set()
        for text in ("one", "two"):
            answer = await asyncio.wait_for(server.send_message(send(text), Call()), WAIT)
            assert isinstance(answer.task, t.Task)
            assert answer.task.status.state == t.TaskState.TASK_STATE_COMPLETED
            ids.add(answer.task.id)
        first = await server.list_tasks(t.ListTasksRequest(page_size=1), Call())
        assert first.next_page_token
        second = await server.list_tasks(
            t.ListTasksRequest(page_size=1, page_token=first.next_page_token), Call()
        )
        assert {task.id for task in first.tasks + second.tasks} == ids
        assert second.next_page_token == ""
    finally:
        await server.shutdown()


# -- push delivery -----------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def receiver(*, hang: bool = False) -> AsyncIterator[Receiver]:
    """A webhook receiver on 127.0.0.1 (answers 200, or never while `hang`)."""
    hook = Receiver([], hang)
    server = await asyncio.start_server(hook.handle, "127.0.0.1", 0)
    hook.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/hook"
    try:
        yield hook
    finally:
        server.close()
        hook.release.set()
        for writer in list(hook.writers):
            writer.close()
        async with asyncio.timeout(WAIT):
            await asyncio.gather(*hook.handlers)
        await server.wait_closed()


def now_us() -> int:
    return time.time_ns() // 1000


class Watched(MemoryTaskStore):
    """Records each claim's lease end per delivery and what became of each delivery."""

    def __init__(self) -> None:
        super().__init__()
        self.claimed_until: dict[int, int] = {}
        self.claims: list[tuple[int, list[Delivery]]] = []
        """(the claim's `now`, what it returned)"""
        self.outcomes: dict[int, str] = {}
        self.changed = asyncio.Condition()

    async def _note(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    async def wait(self, predicate: Callable[[], bool]) -> None:
        async with asyncio.timeout(WAIT), self.changed:
            await self.changed.wait_for(predicate)

    async def claim_deliveries(self, now: int, limit: int, lease: int) -> list[Delivery]:
        claimed = await super().claim_deliveries(now, limit, lease)
        for d in claimed:
            self.claimed_until[d.id] = now + lease
        self.claims.append((now, claimed))
        await self._note()
        return claimed

    async def finish_delivery(self, delivery_id: int) -> None:
        await super().finish_delivery(delivery_id)
        self.outcomes[delivery_id] = "finish"
        await self._note()

    async def retry_delivery(self, delivery_id: int, next_at: int, error: str) -> None:
        await super().retry_delivery(delivery_id, next_at, error)
        self.outcomes[delivery_id] = "retry"
        await self._note()

    async def drop_delivery(self, delivery_id: int, error: str) -> None:
        await super().drop_delivery(delivery_id, error)
        self.outcomes[delivery_id] = "drop"
        await self._note()


async def task_with_hook(store: TaskStore, task_id: str, url: str) -> None:
    """A task with one push config and one queued delivery (its second event)."""
    await store.create(row(task_id), [b"{}"])
    config = t.TaskPushNotificationConfig(id="cfg", task_id=task_id, url=url)
    await store.put_push_config("", task_id, "cfg", encode(config))
    await store.append(
        "", task_id, expected_version=1, task=b"{}", state=WORKING, status_time=2,
        events=[f'{{"statusUpdate":{{"taskId":"{task_id}"}}}}'.encode()],
    )  # fmt: skip


async def test_an_attempt_starts_only_while_its_claim_outlives_it() -> None:
    store = Watched()
    timeout, lease = 0.3, 0.4
    async with receiver(hang=True) as stuck, receiver() as fine:
        await task_with_hook(store, "stuck", stuck.url)  # claimed first: takes the slot
        await task_with_hook(store, "fine", fine.url)  # waits for the slot meanwhile
        push = PushDelivery(
            store, allow_hosts=["127.0.0.1"], concurrency=1, timeout=timeout, lease=lease,
            poll_interval=60, base_delay=30, max_delay=30, stop_timeout=0.5,
        )  # fmt: skip
        await push.start()
        try:
            (request,) = await fine.wait_for(1)
            arrived = now_us()
            await store.wait(lambda: len(store.outcomes) == 2)
        finally:
            async with asyncio.timeout(WAIT):
                await push.stop()
    assert request.key == "fine:2"
    (fine_id,) = [i for i, outcome in store.outcomes.items() if outcome == "finish"]
    lease_left = store.claimed_until[fine_id] - arrived
    # the attempt may take `timeout`: the claim must last that long after it starts
    assert lease_left >= timeout * 1e6, f"sent with {lease_left / 1e6:.3f}s of its claim left"


class IdlePush(PushDelivery):
    """A worker that has not claimed anything yet (busy, or another replica's)."""

    async def start(self) -> None:
        return None


async def test_a_tenants_webhooks_are_checked_against_its_own_allow_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer = ["93.184.216.34"]  # public when tenant b registers the hook, then rebound

    async def getaddrinfo(host: str, port: int, **kwargs: object) -> list[tuple[object, ...]]:
        assert host == "hooks.example"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answer[0], port))]

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", getaddrinfo)
    store = Watched()
    a_push = PushDelivery(store, allow_hosts=["127.0.0.1"], poll_interval=0.05)
    a = A2AServer(Scripted(), card(), store, push=a_push)  # tenant a: local webhooks allowed
    b = A2AServer(Scripted(), card(), store, push=IdlePush(store))  # tenant b: public only
    a.tenants, b.tenants = frozenset({"a"}), frozenset({"b"})
    await a.startup()
    await b.startup()
    call = Call(tenant="b")
    try:
        async with receiver() as hook:
            asked = await asyncio.wait_for(b.send_message(send("ask"), call), WAIT)
            assert isinstance(asked.task, t.Task)
            task_id = asked.task.id
            port = hook.url.split(":")[2].split("/")[0]
            url = f"http://hooks.example:{port}/hook"
            config = t.TaskPushNotificationConfig(task_id=task_id, url=url)
            await b.create_task_push_notification_config(
                config, call
            )  # public now: accepted for tenant b
            answer[0] = "127.0.0.1"  # the name now points at loopback, refused for b
            done = await asyncio.wait_for(b.send_message(send("more", task_id=task_id), call), WAIT)
            assert isinstance(done.task, t.Task)
            assert done.task.status.state == t.TaskState.TASK_STATE_COMPLETED
            queued_by = now_us()
            # a's worker claims after the events were queued; then what it claimed settles
            await store.wait(lambda: any(now > queued_by for now, _ in store.claims))
            claimed = {d.id for _, ds in store.claims for d in ds}
            await store.wait(lambda: claimed <= set(store.outcomes))
            assert hook.requests == []
    finally:
        await a.shutdown()
        await b.shutdown()


# -- restart -----------------------------------------------------------------------------------


async def test_a_restart_delivers_the_failure_of_a_task_that_was_running(tmp_path: Path) -> None:
    """A task running with a push config when the process died: the next start fails it
    and the webhook hears of it (the outbox row is written with the FAILED event)."""
    path = tmp_path / "a2a.db"
    async with receiver() as hook:
        before = SqliteTaskStore(path)
        await before.open()
        working = t.Task(
            id="t1",
            context_id="c1",
            status=t.TaskStatus(state=t.TaskState.TASK_STATE_WORKING),
            history=[t.Message(message_id="m", role=t.Role.ROLE_USER, parts=[t.Part(text="x")])],
        )
        await before.create(task_row(working, tenant="", owner=""), [b"{}", b"{}"])
        config = t.TaskPushNotificationConfig(id="cfg", task_id="t1", url=hook.url, token="tk")
        await before.put_push_config("", "t1", "cfg", encode(config))
        await before.close()  # (as if the process had died here)

        store = SqliteTaskStore(path)
        push = PushDelivery(store, allow_hosts=["127.0.0.1"])
        server = A2AServer(Scripted(), card(), store, push=push)
        await server.startup()
        try:
            (request,) = await hook.wait_for(1)
        finally:
            await server.shutdown()
    assert request.key == "t1:3"
    assert b"TASK_STATE_FAILED" in request.body
    assert b"server stopped" in request.body
    assert request.headers["x-a2a-notification-token"] == "tk"


async def test_servers_sharing_a_store_may_start_at_once(tmp_path: Path) -> None:
    path = tmp_path / "a2a.db"
    seed = SqliteTaskStore(path)
    await seed.open()
    for tenant in ("a", "b"):
        working = t.Task(
            id=f"task-{tenant}",
            context_id="c",
            status=t.TaskStatus(state=t.TaskState.TASK_STATE_WORKING),
            history=[t.Message(message_id="m", role=t.Role.ROLE_USER, parts=[t.Part(text="x")])],
        )
        await seed.create(task_row(working, tenant=tenant, owner=""), [])
    await seed.close()

    shared = SqliteTaskStore(path)
    a = A2AServer(Scripted(), card(), shared)
    b = A2AServer(Scripted(), card(), shared)
    a.tenants, b.tenants = frozenset({"a"}), frozenset({"b"})
    try:
        started = await asyncio.wait_for(
            asyncio.gather(a.startup(), b.startup(), return_exceptions=True), WAIT
        )
        assert list(started) == [None, None]
        for tenant in ("a", "b"):
            recovered = await shared.get(tenant, f"task-{tenant}")
            assert recovered is not None
            assert recovered.state == "TASK_STATE_FAILED"
    finally:
        await a.shutdown()
        await b.shutdown()
