"""Push delivery against real webhook receivers on 127.0.0.1: body and headers, retries
with backoff, the retry budget, permanent failures, a hanging webhook, per-lane order,
delivery after a restart (SQLite outbox), and the bodies of a 0.3 client's configs (the
task as 0.3 JSON). The SSRF guard: `test_push_ssrf.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import httpx
import pytest

from interlink.a2a import A2AApp, _codec, create_app
from interlink.a2a._types import AuthenticationInfo, TaskPushNotificationConfig
from interlink.a2a.server._push import IDEMPOTENCY_HEADER, TOKEN_HEADER, PushDelivery
from interlink.a2a.stores._base import TaskStore
from interlink.a2a.stores._memory import MemoryTaskStore
from interlink.a2a.stores._sqlite import SqliteTaskStore
from tests.a2a.agents import Scripted, card
from tests.a2a.conftest import Served
from tests.a2a.test_compat_v03_serving import call_v03, sdk_v03, v03_message
from tests.a2a.test_store import row

pytestmark = pytest.mark.timeout(20)

WAIT = 10.0
"""Seconds any wait on an event may take before the test fails."""


# -- a webhook receiver --------------------------------------------------------------------


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def key(self) -> str:
        return self.headers[IDEMPOTENCY_HEADER.lower()]


@dataclass(kw_only=True)
class Tracked:
    """A test server's connections: each handler runs inside `track(writer)`, so the
    teardown can end them (asyncio's stream server must not see its handlers cancelled)."""

    handlers: set[asyncio.Task[None]] = field(default_factory=set)
    writers: set[asyncio.StreamWriter] = field(default_factory=set)
    url: str = ""
    """`/hook` on the server's port, once `listen` returned."""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def listen(self) -> asyncio.Server:
        """Serve `handle` on a port of 127.0.0.1 of its own."""
        server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/hook"
        return server

    async def shut(self, server: asyncio.Server) -> None:
        server.close()
        for writer in list(self.writers):
            writer.close()  # a handler waiting for the next request sees the end
        async with asyncio.timeout(WAIT):
            await asyncio.gather(*self.handlers)
        await server.wait_closed()

    @contextlib.contextmanager
    def track(self, writer: asyncio.StreamWriter) -> Iterator[None]:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        self.writers.add(writer)
        try:
            yield
        finally:
            writer.close()
            self.writers.discard(writer)
            self.handlers.discard(task)


@dataclass
class Receiver(Tracked):
    """A tiny HTTP/1.1 server: answers each request with the next of `statuses` (then
    200), or never answers while `hang` is set."""

    statuses: list[int] = field(default_factory=list)
    hang: bool = False
    requests: list[Request] = field(default_factory=list)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    """Set at teardown: hanging requests end."""

    async def shut(self, server: asyncio.Server) -> None:
        self.release.set()
        await super().shut(server)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with self.track(writer), contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while head := await reader.readuntil(b"\r\n\r\n"):
                line, *lines = head.decode().split("\r\n")
                headers = dict(h.split(": ", 1) for h in lines if h)
                headers = {k.lower(): v for k, v in headers.items()}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                async with self.changed:
                    self.requests.append(Request(line.split()[1], headers, body))
                    self.changed.notify_all()
                if self.hang:
                    await self.release.wait()
                    break
                status = self.statuses.pop(0) if self.statuses else 200
                writer.write(f"HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n".encode())
                await writer.drain()

    async def wait_for(self, count: int) -> list[Request]:
        async with asyncio.timeout(WAIT), self.changed:
            await self.changed.wait_for(lambda: len(self.requests) >= count)
        return self.requests

    def keys(self) -> list[str]:
        return [r.key for r in self.requests]


class Start(Protocol):
    def __call__(
        self, statuses: Iterable[int] = (), *, hang: bool = False
    ) -> Awaitable[Receiver]: ...


@pytest.fixture
async def receivers() -> AsyncIterator[Start]:
    """`await receivers(statuses=..., hang=...)`, each on its own port of 127.0.0.1."""
    started: list[tuple[Receiver, asyncio.Server]] = []

    async def start(statuses: Iterable[int] = (), *, hang: bool = False) -> Receiver:
        receiver = Receiver(list(statuses), hang)
        started.append((receiver, await receiver.listen()))
        return receiver

    yield start
    for receiver, server in started:
        await receiver.shut(server)


# -- a store that says what the worker did ---------------------------------------------------


class SpyStore(MemoryTaskStore):
    """Records finish/retry/drop calls; `wait_for` waits for one of them."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, int]] = []
        self.retry_delays: list[int] = []
        self.changed = asyncio.Condition()
        self.after_retry: Callable[[], Awaitable[None]] | None = None

    async def _note(self, what: str, delivery_id: int) -> None:
        async with self.changed:
            self.calls.append((what, delivery_id))
            self.changed.notify_all()

    async def finish_delivery(self, delivery_id: int) -> None:
        await super().finish_delivery(delivery_id)
        await self._note("finish", delivery_id)

    async def retry_delivery(self, delivery_id: int, next_at: int, error: str) -> None:
        self.retry_delays.append(next_at - now_us())
        await super().retry_delivery(delivery_id, next_at, error)
        if self.after_retry is not None:
            await self.after_retry()
        await self._note("retry", delivery_id)

    async def drop_delivery(self, delivery_id: int, error: str) -> None:
        await super().drop_delivery(delivery_id, error)
        await self._note("drop", delivery_id)

    async def wait_for(self, what: str, count: int = 1) -> None:
        def seen() -> bool:
            return sum(1 for w, _ in self.calls if w == what) >= count

        async with asyncio.timeout(WAIT), self.changed:
            await self.changed.wait_for(seen)


def now_us() -> int:
    return time.time_ns() // 1000


def event(task_id: str, n: int) -> bytes:
    return json.dumps({"statusUpdate": {"taskId": task_id, "n": n}}).encode()


def hook(
    url: str, config_id: str = "cfg", *, token: str = "", auth: AuthenticationInfo | None = None
) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(
        id=config_id, task_id="t1", url=url, token=token, authentication=auth
    )


async def task_with_hooks(store: TaskStore, *configs: TaskPushNotificationConfig) -> None:
    await store.create(row("t1"), [event("t1", 1)])
    for config in configs:
        await store.put_push_config("", "t1", config.id, _codec.encode(config))


async def emit(store: TaskStore, *ns: int) -> None:
    """One append per event, as a running task makes them."""
    for n in ns:
        current = await store.get("", "t1")
        assert current is not None
        await store.append(
            "",
            "t1",
            expected_version=current.version,
            task=current.task,
            state=current.state,
            status_time=current.status_time + 1,
            events=[event("t1", n)],
        )


def worker(
    store: TaskStore,
    *,
    allow: Iterable[str] = ("127.0.0.1",),
    client: httpx.AsyncClient | None = None,
    max_attempts: int = 8,
    timeout: float = 5.0,
    poll_interval: float = 5.0,
    base_delay: float = 0.01,
    lease: float = 30.0,
    concurrency: int = 8,
) -> PushDelivery:
    return PushDelivery(
        store,
        allow_hosts=allow,
        client=client,
        max_attempts=max_attempts,
        base_delay=base_delay,
        max_delay=0.05,
        timeout=timeout,
        poll_interval=poll_interval,
        lease=lease,
        concurrency=concurrency,
        stop_timeout=1.0,
    )


@contextlib.asynccontextmanager
async def running(push: PushDelivery) -> AsyncIterator[PushDelivery]:
    await push.start()
    try:
        yield push
    finally:
        async with asyncio.timeout(WAIT):
            await push.stop()


async def outbox_empty(store: TaskStore) -> bool:
    return await store.claim_deliveries(now_us() + 10**12, 100, 1) == []


# -- delivery ----------------------------------------------------------------------------------


async def test_delivers_body_and_headers(receivers: Start) -> None:
    a, b = await receivers(), await receivers()
    store = SpyStore()
    auth = AuthenticationInfo(scheme="Bearer", credentials="abc")
    await task_with_hooks(store, hook(a.url, "a", token="tok-1", auth=auth), hook(b.url, "b"))
    async with running(worker(store)) as push:
        await emit(store, 2, 3)
        push.wake()
        got = await a.wait_for(2)
        await b.wait_for(2)
        await store.wait_for("finish", 4)

    assert [r.body for r in got] == [event("t1", 2), event("t1", 3)]
    assert [r.key for r in got] == ["t1:2", "t1:3"]
    first = got[0]
    assert first.path == "/hook"
    assert first.headers["content-type"] == "application/json"
    assert first.headers["authorization"] == "Bearer abc"
    assert first.headers[TOKEN_HEADER.lower()] == "tok-1"
    plain = b.requests[0].headers
    assert "authorization" not in plain
    assert TOKEN_HEADER.lower() not in plain
    assert b.keys() == ["t1:2", "t1:3"]
    assert await outbox_empty(store)


async def test_retries_with_backoff_then_delivers_once(receivers: Start) -> None:
    hook_ = await receivers([500, 500])
    store = SpyStore()
    await task_with_hooks(store, hook(hook_.url))
    async with running(worker(store)) as push:
        await emit(store, 2)
        push.wake()
        await store.wait_for("finish")

    assert hook_.keys() == ["t1:2"] * 3  # two failures, one success, nothing after it
    assert [what for what, _ in store.calls] == ["retry", "retry", "finish"]
    # full jitter: uniform in [0, min(max_delay, base_delay * 2**attempts)]
    slack = 20_000
    caps = [10_000, 20_000]
    assert all(-slack <= d <= cap + slack for d, cap in zip(store.retry_delays, caps, strict=True))
    assert await outbox_empty(store)


async def test_spent_budget_drops_and_unblocks_the_lane(
    receivers: Start, caplog: pytest.LogCaptureFixture
) -> None:
    hook_ = await receivers([500, 503, 502])
    store = SpyStore()
    await task_with_hooks(store, hook(hook_.url))
    async with running(worker(store, max_attempts=3)) as push:
        await emit(store, 2, 3)
        push.wake()
        await store.wait_for("finish")

    assert [what for what, _ in store.calls] == ["retry", "retry", "drop", "finish"]
    assert hook_.keys() == ["t1:2", "t1:2", "t1:2", "t1:3"]
    assert "after 3 attempt(s) (retry budget spent): HTTP 502" in caplog.text
    assert await outbox_empty(store)


@pytest.mark.parametrize(
    ("statuses", "calls"),
    [
        ([404], ["drop", "finish"]),  # permanent: not retried
        ([401], ["drop", "finish"]),
        ([429, 408, 302], ["retry", "retry", "retry", "finish", "finish"]),
    ],
)
async def test_4xx_is_permanent_except_408_and_429(
    receivers: Start, statuses: list[int], calls: list[str]
) -> None:
    hook_ = await receivers(statuses)
    store = SpyStore()
    await task_with_hooks(store, hook(hook_.url))
    async with running(worker(store)) as push:
        await emit(store, 2, 3)
        push.wake()
        await store.wait_for("finish", calls.count("finish"))

    assert [what for what, _ in store.calls] == calls
    assert hook_.keys()[-1] == "t1:3"


async def test_a_hanging_webhook_delays_nobody_else(receivers: Start) -> None:
    stuck, fine = await receivers(hang=True), await receivers()
    store = SpyStore()
    await task_with_hooks(store, hook(stuck.url, "stuck"), hook(fine.url, "fine"))
    push = worker(store, timeout=5.0)
    async with running(push):
        await emit(store, 2, 3, 4)
        push.wake()
        await stuck.wait_for(1)
        await fine.wait_for(3)
        await store.wait_for("finish", 3)
        assert fine.keys() == ["t1:2", "t1:3", "t1:4"]
        assert stuck.keys() == ["t1:2"]  # its lane waits; the attempt has not timed out
        assert [what for what, _ in store.calls] == ["finish"] * 3
    # stop() gave the hanging attempt 0.2 s, then cancelled it (the autouse fixture
    # checks that no task is left); the row stays claimed until its lease ends
    assert [what for what, _ in store.calls] == ["finish"] * 3


async def test_an_attempt_that_hangs_times_out_and_is_retried(receivers: Start) -> None:
    stuck = await receivers(hang=True)
    store = SpyStore()
    await task_with_hooks(store, hook(stuck.url))
    async with running(worker(store, timeout=0.2, max_attempts=2)) as push:
        await emit(store, 2)
        push.wake()
        await store.wait_for("drop")
    assert stuck.keys() == ["t1:2", "t1:2"]
    assert [what for what, _ in store.calls] == ["retry", "drop"]


async def test_order_is_kept_per_task_and_config_under_retries(receivers: Start) -> None:
    hook_ = await receivers([200, 500, 500, 200, 503])
    store = SpyStore()
    await task_with_hooks(store, hook(hook_.url))
    await emit(store, 2, 3, 4, 5)  # all queued before the worker claims any
    async with running(worker(store)):
        await store.wait_for("finish", 4)

    assert hook_.keys() == ["t1:2", "t1:3", "t1:3", "t1:3", "t1:4", "t1:4", "t1:5"]
    delivered = [json.loads(r.body)["statusUpdate"]["n"] for r in hook_.requests]
    assert delivered == [2, 3, 3, 3, 4, 4, 5]


async def test_a_lane_stops_waiting_for_a_row_the_store_dropped(receivers: Start) -> None:
    """The config is replaced while event 2 waits for its retry: the store drops that row
    when it is due, and the lane, a lease later, goes on with event 3 (new config)."""
    hook_ = await receivers([500])
    store = SpyStore()
    await task_with_hooks(store, hook(hook_.url))

    async def replace_config() -> None:
        store.after_retry = None
        await store.delete_push_config("", "t1", "cfg")
        await store.put_push_config("", "t1", "cfg", _codec.encode(hook(hook_.url)))
        await emit(store, 3)

    store.after_retry = replace_config
    async with running(worker(store, timeout=0.1, lease=0.3, poll_interval=0.05)) as push:
        await emit(store, 2)
        push.wake()
        await store.wait_for("finish")
    assert hook_.keys() == ["t1:2", "t1:3"]
    assert await outbox_empty(store)


async def test_a_backlog_goes_out_in_order_through_one_slot(receivers: Start) -> None:
    a, b = await receivers(), await receivers()
    store = SpyStore()
    await task_with_hooks(store, hook(a.url, "a"), hook(b.url, "b"))
    await emit(store, *range(2, 22))  # 40 rows: claims of 4 (concurrency * 4) fill up
    async with running(worker(store, concurrency=1)):
        await store.wait_for("finish", 40)
    expected = [f"t1:{n}" for n in range(2, 22)]
    assert a.keys() == expected
    assert b.keys() == expected


@pytest.mark.parametrize("token", ["tok\r\nX-Injected: 1", "t\u00f6k"])
async def test_a_header_that_cannot_be_sent_is_dropped(receivers: Start, token: str) -> None:
    hook_ = await receivers()
    store = SpyStore()
    await task_with_hooks(store, hook(hook_.url, token=token))
    async with running(worker(store)) as push:
        await emit(store, 2)
        push.wake()
        await store.wait_for("drop")
    assert hook_.requests == []


async def test_queued_deliveries_survive_a_restart(receivers: Start, tmp_path: Path) -> None:
    hook_ = await receivers()
    path = tmp_path / "a2a.db"
    first = SqliteTaskStore(path)
    await first.open()
    await task_with_hooks(first, hook(hook_.url))
    await emit(first, 2, 3)
    push = worker(first)
    await push.start()
    await push.stop()  # stopped before it sent anything (it claimed nothing)
    await first.close()

    second = SqliteTaskStore(path)
    await second.open()
    try:
        async with running(worker(second)):  # no wake(): start() drains what is due
            await hook_.wait_for(2)
        assert hook_.keys() == ["t1:2", "t1:3"]
        assert await outbox_empty(second)
    finally:
        await second.close()


async def test_the_retry_budget_survives_a_restart(receivers: Start, tmp_path: Path) -> None:
    hook_ = await receivers([500, 500])
    path = tmp_path / "a2a.db"
    first = SqliteTaskStore(path)
    await first.open()
    await task_with_hooks(first, hook(hook_.url))
    await emit(first, 2)
    push = worker(first, base_delay=0.05)
    await push.start()
    await hook_.wait_for(1)  # the first attempt fails ...
    await push.stop()  # ... and stop() lets it be recorded
    await first.close()

    second = SqliteTaskStore(path)
    await second.open()
    try:
        async with running(worker(second, max_attempts=2, poll_interval=0.02)) as push:
            await emit(second, 3)
            push.wake()
            await hook_.wait_for(3)
        # attempt 2 of event 2 spent the budget of 2: dropped; then event 3, in order
        # (the store offers a lane's head only: a retry is never overtaken)
        assert hook_.keys() == ["t1:2", "t1:2", "t1:3"]
        assert await outbox_empty(second)
    finally:
        await second.close()


async def test_a_stopped_worker_does_not_start_again() -> None:
    push = worker(MemoryTaskStore())
    push.wake()  # harmless before start
    await push.start()
    await push.stop()
    with pytest.raises(RuntimeError):
        await push.start()


async def test_a_hanging_webhook_delays_no_stream(tmp_path: Path) -> None:
    """Through the whole server: a webhook that never answers, and the task's stream
    still runs at full speed (delivery is never on the event path)."""
    import uvicorn

    from interlink.a2a import create_app
    from tests.a2a.agents import Scripted, card, message

    accepted = asyncio.Event()
    done = asyncio.Event()

    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set()
        await done.wait()  # never answers while the test runs
        writer.close()

    hook = await asyncio.start_server(hang, "127.0.0.1", 0)
    hook_port = hook.sockets[0].getsockname()[1]
    app = create_app(
        Scripted(), card(), store=f"sqlite:///{tmp_path}/t.db", push_allow=["127.0.0.1"]
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    client = httpx.AsyncClient(timeout=30)
    try:
        async with asyncio.timeout(20):
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
                await asyncio.sleep(0.01)
            served = Served(f"http://127.0.0.1:{sock.getsockname()[1]}/", client, app)
            webhook = {"url": f"http://127.0.0.1:{hook_port}/hook", "token": "t"}
            params = {
                **message("chunks 200"),
                "configuration": {"taskPushNotificationConfig": webhook},
            }
            events = await served.stream("SendStreamingMessage", params)
            assert len(events) == 1 + 1 + 200 + 1
            final = events[-1][1]["result"]["statusUpdate"]["status"]["state"]  # type: ignore[index]
            assert final == "TASK_STATE_COMPLETED"
            await accepted.wait()  # delivery was attempted, and hangs meanwhile
    finally:
        await client.aclose()
        server.should_exit = True
        async with asyncio.timeout(30):
            await serving
        done.set()
        hook.close()
        await hook.wait_closed()
        await asyncio.sleep(0)  # the handler finishes on its next turn


# -- for A2A 0.3 clients ----------------------------------------------------------------------

Serve = Callable[[A2AApp], Awaitable[Served]]


def webhook(receiver: Receiver, token: str) -> dict[str, str]:
    return {"url": receiver.url, "token": token}


async def test_a_0_3_config_gets_the_task_as_0_3_json(serve: Serve, receivers: Start) -> None:
    old, new, rest, inline = [await receivers() for _ in range(4)]
    app = create_app(Scripted(), card(), push_allow=["127.0.0.1"])
    served = await serve(app)
    asked = await call_v03(served, "message/send", {"message": v03_message("ask")})
    task_id = asked["result"]["id"]
    set_old = {"taskId": task_id, "pushNotificationConfig": {"id": "old", **webhook(old, "t-old")}}
    assert "result" in await call_v03(served, "tasks/pushNotificationConfig/set", set_old)
    set_new = {"taskId": task_id, "id": "new", **webhook(new, "t-new")}
    assert "result" in await served.call("CreateTaskPushNotificationConfig", set_new)
    by_rest = {"config": {"pushNotificationConfig": {"id": "rest", **webhook(rest, "t-rest")}}}
    answer = await served.client.post(
        f"{served.url}v1/tasks/{task_id}/pushNotificationConfigs", json=by_rest
    )
    assert answer.status_code == 200, answer.text
    # the follow-up completes the task: working, an artifact, completed
    more = {"message": v03_message("more", taskId=task_id)}
    assert (await call_v03(served, "message/send", more))["result"]["status"]["state"] == (
        "completed"
    )

    for receiver, token in ((old, "t-old"), (rest, "t-rest")):
        got = await receiver.wait_for(3)
        for request in got:
            body = json.loads(request.body)
            sdk_v03().Task.model_validate(body)
            assert body["kind"] == "task"
            assert body["id"] == task_id
            assert request.headers[TOKEN_HEADER.lower()] == token
        assert json.loads(got[-1].body)["status"]["state"] == "completed"
        assert [p["text"] for p in json.loads(got[-1].body)["artifacts"][0]["parts"]] == [
            "got more"
        ]
    events = [json.loads(r.body) for r in await new.wait_for(3)]
    assert [next(iter(e)) for e in events] == ["statusUpdate", "artifactUpdate", "statusUpdate"]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"

    # a config given with a 0.3 message (inline) is 0.3's too, from the first event on
    params = {
        "message": v03_message("echo pushed"),
        "configuration": {"pushNotificationConfig": webhook(inline, "t-inline")},
    }
    sent = await call_v03(served, "message/send", params)
    assert sent["result"]["status"]["state"] == "completed"
    bodies = [json.loads(r.body) for r in await inline.wait_for(1)]
    assert all(b["kind"] == "task" and b["id"] == sent["result"]["id"] for b in bodies)
