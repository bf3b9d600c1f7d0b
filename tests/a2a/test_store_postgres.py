"""What only the PostgreSQL store has: versioned migrations safe under concurrent
`open()`, durability across pools, the NOTIFY/LISTEN wake-up, claims by several replicas
at once (SKIP LOCKED), retention. The shared contract runs in `test_store.py` through
`DisposableStore`.

The server is at `$INTERLINK_TEST_POSTGRES_URL` (default: local `postgres` user, database
`test`). Without one these tests skip, saying how to start it; under `CI=true` they fail.
Every store lives in a schema of its own with a random name, dropped afterwards, so runs
in parallel never meet.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
from collections.abc import AsyncIterator

import asyncpg
import pytest

from interlink.a2a.stores._base import StoreError
from interlink.a2a.stores._postgres import _MIGRATIONS as PG_MIGRATIONS
from interlink.a2a.stores._postgres import SCHEMA_VERSION, PostgresTaskStore, upgrade
from interlink.a2a.stores._url import open_store
from tests.a2a.test_store import WORKING, delivers_as_1_0, row, touch
from tests.spec import unavailable

pytestmark = pytest.mark.timeout(60)

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
START = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"


def postgres_url() -> str:
    return os.environ.get("INTERLINK_TEST_POSTGRES_URL", DEFAULT_URL)


async def server_url() -> str:
    """The test server's URL; skips the test (fails it under CI=true) when none answers."""
    url = postgres_url()
    try:
        conn = await asyncpg.connect(url, timeout=10)
    except (OSError, TimeoutError, asyncpg.CannotConnectNowError) as exc:
        unavailable(
            f"no PostgreSQL at {url} ({exc}): start it with `{START}`"
            " or point INTERLINK_TEST_POSTGRES_URL at one"
        )
    await conn.close()
    return url


async def drop_schema(url: str, schema: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


def new_schema() -> str:
    return f"interlink_test_{secrets.token_hex(6)}"


class DisposableStore(PostgresTaskStore):
    """A store in a new schema: `open()` skips (fails under CI=true) without a server;
    `close()` drops the schema."""

    def __init__(self) -> None:
        super().__init__(postgres_url(), schema=new_schema(), max_size=4)
        self._made = False

    async def open(self) -> None:
        await server_url()
        self._made = True
        await super().open()

    async def close(self) -> None:
        await super().close()
        if self._made:
            self._made = False
            await drop_schema(self.dsn, self.schema)


@pytest.fixture
async def schema() -> AsyncIterator[tuple[str, str]]:
    """(url, schema name): a schema nobody uses yet, dropped after the test."""
    url = await server_url()
    name = new_schema()
    try:
        yield url, name
    finally:
        await drop_schema(url, name)


@pytest.fixture
async def two(schema: tuple[str, str]) -> AsyncIterator[tuple[PostgresTaskStore, ...]]:
    """Two stores (two pools, as two replicas) on the same schema."""
    url, name = schema
    stores = (PostgresTaskStore(url, schema=name), PostgresTaskStore(url, schema=name))
    try:
        await asyncio.gather(*(s.open() for s in stores))
        yield stores
    finally:
        for store in stores:
            await store.close()


# -- schema and migrations ----------------------------------------------------------------


async def test_concurrent_open_migrates_once_and_upgrade_is_idempotent(
    schema: tuple[str, str],
) -> None:
    url, name = schema
    stores = [PostgresTaskStore(url, schema=name, max_size=2) for _ in range(4)]
    try:
        await asyncio.gather(*(s.open() for s in stores))
        await stores[0].open()  # open twice: nothing happens
        await stores[0].create(row("t1"), [b"e1"])
        assert await stores[3].get("", "t1") is not None
        assert await upgrade(url, name) == SCHEMA_VERSION
        assert await upgrade(url, name) == SCHEMA_VERSION
    finally:
        for store in stores:
            await store.close()
            await store.close()
    conn = await asyncpg.connect(url)
    try:
        applied = await conn.fetch(f'SELECT version FROM "{name}".schema_migrations')
        assert [r[0] for r in applied] == list(range(1, SCHEMA_VERSION + 1))
        indexes = await conn.fetch(
            "SELECT indexname FROM pg_indexes WHERE schemaname = $1 ORDER BY 1", name
        )
        assert {r[0] for r in indexes} >= {
            "tasks_by_time",
            "tasks_by_owner",
            "tasks_by_context",
            "tasks_by_state",
            "tasks_active",
            "outbox_due",
        }
    finally:
        await conn.close()


async def test_a_newer_schema_is_refused(schema: tuple[str, str]) -> None:
    url, name = schema
    await upgrade(url, name)
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(
            f'INSERT INTO "{name}".schema_migrations VALUES ($1, 0)', SCHEMA_VERSION + 1
        )
    finally:
        await conn.close()
    store = PostgresTaskStore(url, schema=name)
    with pytest.raises(StoreError, match="newer"):
        await store.open()
    with pytest.raises(StoreError, match="newer"):
        await upgrade(url, name)
    with pytest.raises(StoreError, match="not open"):
        await store.count("")


async def test_errors_are_store_errors() -> None:
    with socket.socket() as sock:  # a port that nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(StoreError):
        await PostgresTaskStore(f"postgresql://postgres@127.0.0.1:{port}/x").open()
    with pytest.raises(StoreError, match="bad schema name"):
        PostgresTaskStore(postgres_url(), schema='x"; DROP TABLE y; --')


async def test_everything_survives_a_new_pool(schema: tuple[str, str]) -> None:
    url, name = schema
    first = PostgresTaskStore(url, schema=name)
    await first.open()
    await first.create(row("t1", tenant="acme"), [b"e1"])
    await first.put_push_config("acme", "t1", "hook", b"H")
    await touch(first, "acme", "t1", 2_000)
    before = await first.get("acme", "t1")
    await first.close()

    second = PostgresTaskStore(url, schema=name)
    await second.open()
    try:
        assert await second.get("acme", "t1") == before
        assert [e.payload for e in await second.events("acme", "t1")] == [b"e1", b"at 2000"]
        assert await second.list_push_configs("acme", "t1") == [("hook", b"H")]
        (pending,) = await second.claim_deliveries(now=1, limit=10, lease=1)
        assert (pending.seq, pending.payload) == (2, b"at 2000")
        assert [r.task_id for r in await second.active()] == ["t1"]
    finally:
        await second.close()


def test_open_store_postgresql_url() -> None:
    store = open_store("postgresql://app:pw@db:5433/tasks?schema=tenant_a&sslmode=disable")
    assert isinstance(store, PostgresTaskStore)
    assert (store.dsn, store.schema) == (
        "postgresql://app:pw@db:5433/tasks?sslmode=disable",
        "tenant_a",
    )
    assert store.channel == "tenant_a_events"
    default = open_store("postgres://db/tasks")
    assert isinstance(default, PostgresTaskStore)
    assert (default.dsn, default.schema) == ("postgres://db/tasks", "interlink")
    with pytest.raises(StoreError, match="bad schema name"):
        open_store("postgresql://db/tasks?schema=a-b")


# -- the wake-up ----------------------------------------------------------------------------


async def test_another_replica_hears_of_every_commit_that_adds_events(
    two: tuple[PostgresTaskStore, PostgresTaskStore],
) -> None:
    writer, reader = two
    heard: asyncio.Queue[tuple[str, str, int] | str] = asyncio.Queue()
    stop = await reader.listen(
        lambda *note: heard.put_nowait(note), on_reconnect=lambda: heard.put_nowait("resync")
    )
    try:
        await writer.create(row("t1", tenant="acme"), [b"e1"])
        await writer.create(row("quiet", tenant="acme"), [])  # no events: no notification
        await writer.append(
            "acme", "t1", expected_version=1, task=b"", state=WORKING, status_time=2,
            events=[b"e2", b"e3"],
        )  # fmt: skip
        await writer.append(
            "acme", "t1", expected_version=2, task=b"", state=WORKING, status_time=3, events=[]
        )
        odd = "x\x1fy"  # the separator inside a task id still parses
        await writer.create(row(odd, tenant="acme"), [b"e1"])
        huge = "h" * 9_000  # too long for NOTIFY: the append works, listeners resync
        await writer.create(row(huge), [b"e1"])
        async with asyncio.timeout(10):
            got = [await heard.get() for _ in range(4)]
        assert got == [("acme", "t1", 1), ("acme", "t1", 3), ("acme", odd, 1), "resync"]
        assert heard.empty()
    finally:
        await stop()
    await stop()  # stopping twice is harmless
    await touch(writer, "acme", "t1", 4)
    await asyncio.sleep(0.1)
    assert heard.empty()


async def test_a_lost_listen_connection_comes_back_and_says_so(
    two: tuple[PostgresTaskStore, PostgresTaskStore],
) -> None:
    writer, reader = two
    heard: asyncio.Queue[tuple[str, str, int] | str] = asyncio.Queue()
    await reader.listen(
        lambda *note: heard.put_nowait(note), on_reconnect=lambda: heard.put_nowait("resync")
    )  # stopped by reader.close()
    await writer.create(row("t1"), [])
    admin = await asyncpg.connect(writer.dsn)
    try:
        killed = await admin.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = $1",
            f"interlink listen {reader.schema}",
        )
    finally:
        await admin.close()
    assert killed == 1
    async with asyncio.timeout(10):
        assert await heard.get() == "resync"
    await touch(writer, "", "t1", 2)
    async with asyncio.timeout(10):
        assert await heard.get() == ("", "t1", 1)


# -- the outbox with several replicas -------------------------------------------------------


async def test_replicas_claiming_at_once_never_claim_the_same_delivery(
    two: tuple[PostgresTaskStore, PostgresTaskStore],
) -> None:
    first, _ = two
    for task in range(150):  # 300 lanes of one delivery each: all claimable at once
        await first.create(row(f"t{task}"), [])
        for hook in ("a", "b"):
            await first.put_push_config("", f"t{task}", hook, hook.encode())
        await touch(first, "", f"t{task}", 1)

    async def drain(store: PostgresTaskStore) -> list[int]:
        ids: list[int] = []
        while batch := await store.claim_deliveries(now=10_000, limit=7, lease=1_000_000):
            ids.extend(d.id for d in batch)
        return ids

    claims = await asyncio.gather(*(drain(s) for s in two for _ in range(3)))
    every = [i for ids in claims for i in ids]
    assert len(every) == len(set(every)) == 300


# -- the skip/fail rule ------------------------------------------------------------------------


@pytest.mark.parametrize("ci", ["true", ""])
async def test_no_server_skips_or_fails_under_ci(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("INTERLINK_TEST_POSTGRES_URL", f"postgresql://postgres@127.0.0.1:{port}/x")
    monkeypatch.setenv("CI", ci)
    expected = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(expected, match="pg_ctlcluster --skip-systemctl-redirect"):
        await server_url()


async def test_postgres_configs_stored_before_the_column_are_1_0s(
    schema: tuple[str, str],
) -> None:
    url, name = schema
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f'CREATE SCHEMA "{name}"')
        await conn.execute(f'SET search_path = "{name}"')
        await conn.execute(
            "CREATE TABLE schema_migrations"
            " (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"
        )
        for version, statements in enumerate(PG_MIGRATIONS[:3], 1):
            for statement in statements:
                await conn.execute(statement)
            await conn.execute("INSERT INTO schema_migrations VALUES ($1, 0)", version)
        await conn.execute(
            "INSERT INTO tasks VALUES ('', 't1', 'c', 'a', 'TASK_STATE_WORKING', 1, 1, 1, 'T')"
        )
        await conn.execute("INSERT INTO events VALUES ('', 't1', 1, 'E')")
        ref = await conn.fetchval(
            "INSERT INTO push_configs (tenant, task_id, config_id, config)"
            " VALUES ('', 't1', 'h', 'H') RETURNING id"
        )
        await conn.execute(
            "INSERT INTO outbox (tenant, task_id, config_id, config_ref, seq)"
            " VALUES ('', 't1', 'h', $1, 1)",
            ref,
        )
    finally:
        await conn.close()
    await delivers_as_1_0(PostgresTaskStore(url, schema=name))
