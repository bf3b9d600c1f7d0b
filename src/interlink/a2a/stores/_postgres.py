"""`PostgresTaskStore`: the `TaskStore` on PostgreSQL (asyncpg), for several replicas.

Same semantics as `SqliteTaskStore`, method by method. Everything lives in one schema
(`interlink` by default; the pool's `search_path`), so deployments or test runs can share
a database. Table `schema_migrations` has a row per applied migration; `open()` and
`upgrade()` apply the missing ones, each in its own transaction under
`pg_advisory_xact_lock`, so replicas starting at once migrate exactly once.

Each write is one statement, so one transaction and one round trip: `append` is the
compare-and-set `UPDATE tasks ... WHERE version = $n RETURNING`, the event rows, the
outbox rows (`INSERT ... SELECT` from `push_configs`) and a `pg_notify`, as
data-modifying CTEs. Text keys are `COLLATE "C"`, so keyset order is code point order as
in SQLite and Python. Times are BIGINT microseconds, payloads BYTEA.

Wake-up: each commit that adds events sends `NOTIFY <schema>_events`, payload
`tenant 0x1F task_id 0x1F seq` (the newest event's seq), delivered on commit: a hint
that the log grew, never the event (NOTIFY holds < 8000 bytes). See `listen`.

Invariants (as in SQLite): `events.seq` runs 1..`tasks.last_seq` without gaps, except
that `prune` removes the whole log of an old finished task; an outbox row refers to the
push config row (identity, never reused) that existed when it was queued; a row whose
config (or event) is gone is dropped when claimed.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Unpack

import asyncpg
import msgspec
from asyncpg.pool import PoolConnectionProxy

from interlink.a2a.stores import _sql as sql_
from interlink.a2a.stores._base import (
    Delivery,
    NewConfigs,
    StoreError,
    TaskChange,
    TaskExists,
    TaskLeased,
    TaskRow,
    VersionConflict,
)
from interlink.a2a.stores._sql import ACTIVE as _ACTIVE
from interlink.a2a.stores._sql import PUT_CONFIG as _PUT_CONFIG
from interlink.a2a.stores._sql import TASK_COLUMNS as _TASK_COLUMNS

__all__ = ["SCHEMA_VERSION", "PostgresTaskStore", "upgrade"]

logger = logging.getLogger("interlink.a2a")

_T = 'TEXT COLLATE "C" NOT NULL'
_I = "BIGINT NOT NULL"
_KEY = "FOREIGN KEY (tenant, task_id) REFERENCES tasks (tenant, task_id)"
# Migration n (1-based) takes a schema from version n-1 to n. Append, never edit.
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        f"""CREATE TABLE tasks (tenant {_T}, task_id {_T}, context_id {_T}, owner {_T},
            state {_T}, status_time {_I}, version {_I}, last_seq {_I}, task BYTEA NOT NULL,
            PRIMARY KEY (tenant, task_id))""",
        *sql_.TASK_INDEXES,
        f"""CREATE TABLE events (tenant {_T}, task_id {_T}, seq {_I}, payload BYTEA NOT NULL,
            PRIMARY KEY (tenant, task_id, seq), {_KEY})""",
        f"""CREATE TABLE push_configs (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            tenant {_T}, task_id {_T}, config_id {_T}, config BYTEA NOT NULL,
            UNIQUE (tenant, task_id, config_id), {_KEY})""",
        # config_ref: the push_configs row (by id) the delivery was queued for.
        f"""CREATE TABLE outbox (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            tenant {_T}, task_id {_T}, config_id {_T}, config_ref {_I}, seq {_I},
            attempts INTEGER NOT NULL DEFAULT 0, next_at {_I} DEFAULT 0,
            claimed_until {_I} DEFAULT 0, last_error TEXT)""",
        # A claim moves next_at to the lease's end, so "due" is `next_at <= now` alone.
        "CREATE INDEX outbox_due ON outbox (next_at, id)",
    ),
    (sql_.LANE_INDEX,),
    # 3: leases: the replica running a task (lease_owner) renews lease_until (µs)
    (
        f"ALTER TABLE tasks ADD COLUMN lease_owner {_T} DEFAULT '',"
        " ADD COLUMN lease_until BIGINT NOT NULL DEFAULT 0",
        "CREATE INDEX tasks_leases ON tasks (lease_until) WHERE state IN"
        " ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING')",
    ),
    (sql_.PROTOCOL_COLUMN,),
)
SCHEMA_VERSION = len(_MIGRATIONS)

_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,55}")
"""A plain identifier short enough that `<schema>_events` fits PostgreSQL's 63 bytes."""
_SEP = "\x1f"
_NOW = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"
"""The database's clock in µs: leases are compared on one clock whatever the replicas'."""
_DB_ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError)
_Conn = asyncpg.Connection | PoolConnectionProxy

# $13, $14: the writer's lease (owner, µs to run): whoever writes a task runs it.
# The deliveries of a new task's first $3 events to its configs (`create` with configs).
_QUEUE_FIRST = """INSERT INTO outbox (tenant, task_id, config_id, config_ref, seq)
    SELECT p.tenant, p.task_id, p.config_id, p.id, s.seq
    FROM generate_series(1, $3) AS s (seq)
    JOIN push_configs AS p ON p.tenant = $1 AND p.task_id = $2
    ORDER BY s.seq, p.id"""
_CREATE = f"""WITH created AS (
        INSERT INTO tasks ({_TASK_COLUMNS}, lease_owner, lease_until)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $13, {_NOW} + $14)
        RETURNING last_seq
    ), logged AS (
        INSERT INTO events (tenant, task_id, seq, payload)
        SELECT $1, $2, e.n, e.payload
        FROM created, unnest($10::bytea[]) WITH ORDINALITY AS e (payload, n)
    )
    SELECT pg_notify($11, coalesce($12::text || c.last_seq, ''))
    FROM created AS c WHERE c.last_seq > 0"""
# $4: the new events; $10, $11: the lease as in _CREATE. The CAS, the log, the outbox
# and the wake-up in one statement. A task leased to another replica (it runs it, or
# took a follow-up for it) is refused: a replica that lost its lease cannot write.
_APPEND = f"""WITH updated AS (
        UPDATE tasks SET task = $1, state = $2, status_time = $3, version = version + 1,
            last_seq = last_seq + cardinality($4::bytea[]),
            lease_owner = $10, lease_until = {_NOW} + $11
        WHERE tenant = $5 AND task_id = $6 AND version = $7
            AND (lease_owner = $10 OR lease_until < {_NOW})
        RETURNING context_id, owner, version, last_seq,
            last_seq - cardinality($4::bytea[]) AS first_seq
    ), logged AS (
        INSERT INTO events (tenant, task_id, seq, payload)
        SELECT $5, $6, u.first_seq + e.n, e.payload
        FROM updated AS u, unnest($4::bytea[]) WITH ORDINALITY AS e (payload, n)
    ), queued AS (
        INSERT INTO outbox (tenant, task_id, config_id, config_ref, seq)
        SELECT p.tenant, p.task_id, p.config_id, p.id, s.seq
        FROM updated AS u
        CROSS JOIN generate_series(u.first_seq + 1, u.last_seq) AS s (seq)
        JOIN push_configs AS p ON p.tenant = $5 AND p.task_id = $6
        ORDER BY s.seq, p.id
    )
    SELECT u.context_id, u.owner, u.version, u.last_seq,
        CASE WHEN u.first_seq < u.last_seq
            THEN pg_notify($8, coalesce($9::text || u.last_seq, '')) END
    FROM updated AS u"""
# Rows locked by another claimer are skipped, not waited for: replicas claim in parallel
# and never the same row. `live` rows have their config and event; the others are dropped.
_CLAIM = """WITH due AS (
        SELECT id, next_at, tenant, task_id, seq, config_ref FROM outbox AS o
        WHERE next_at <= $1 AND (next_at, id) > ($2, $3)
            AND NOT EXISTS (SELECT 1 FROM outbox AS q WHERE q.tenant = o.tenant
                AND q.task_id = o.task_id AND q.config_ref = o.config_ref AND q.seq < o.seq)
        ORDER BY next_at, id LIMIT $4
        FOR UPDATE SKIP LOCKED
    ), live AS (
        SELECT d.id, p.config, e.payload, p.protocol FROM due AS d
        JOIN push_configs AS p ON p.id = d.config_ref
        JOIN events AS e ON (e.tenant, e.task_id, e.seq) = (d.tenant, d.task_id, d.seq)
    ), dropped AS (
        DELETE FROM outbox AS o USING due AS d
        WHERE o.id = d.id AND NOT EXISTS (SELECT 1 FROM live AS l WHERE l.id = d.id)
    ), claimed AS (
        UPDATE outbox AS o SET next_at = $5, claimed_until = $5 FROM live AS l
        WHERE o.id = l.id
        RETURNING o.id, o.tenant, o.task_id, o.config_id, o.seq, o.attempts
    )
    SELECT d.id, c.tenant, c.task_id, c.config_id, c.seq, c.attempts, l.config, l.payload,
        l.protocol, d.next_at
    FROM due AS d LEFT JOIN claimed AS c ON c.id = d.id LEFT JOIN live AS l ON l.id = d.id
    ORDER BY d.next_at, d.id"""
_PRUNE = """WITH old AS (
        SELECT tenant, task_id FROM tasks WHERE state = ANY($2::text[]) AND status_time < $1
    ), removed AS (
        DELETE FROM events AS e USING old
        WHERE e.tenant = old.tenant AND e.task_id = old.task_id
        RETURNING e.tenant, e.task_id, e.seq
    ), unqueued AS (
        DELETE FROM outbox AS o USING removed AS r
        WHERE (o.tenant, o.task_id, o.seq) = (r.tenant, r.task_id, r.seq)
    )
    SELECT count(*) FROM removed"""


def _checked_schema(schema: str) -> str:
    if not _SCHEMA_NAME.fullmatch(schema):
        raise StoreError(f"bad schema name {schema!r}: letters, digits and _, at most 56")
    return schema


def _notify_prefix(tenant: str, task_id: str) -> str | None:
    """`tenant 0x1F task_id 0x1F`, or None (an empty payload, "catch up on everything")
    when it would not parse back or could not fit NOTIFY's 8000 bytes."""
    prefix = f"{tenant}{_SEP}{task_id}{_SEP}"
    return None if _SEP in tenant or len(prefix.encode()) + 20 >= 8000 else prefix


async def _migrate(conn: _Conn, schema: str) -> int:
    """Bring `schema` to `SCHEMA_VERSION`; `conn` has it as its search_path."""
    current_sql = "SELECT coalesce(max(version), 0) FROM schema_migrations"
    found = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
    current = await conn.fetchval(current_sql) if found else 0
    if current > SCHEMA_VERSION:
        raise StoreError(f"schema {schema}: version {current} is newer than this program")
    for version in range(current + 1, SCHEMA_VERSION + 1):
        async with conn.transaction():
            # Waits for a migrator of this schema in another session; then re-reads.
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", f"{schema}:migrate")
            # Looked up first: CREATE SCHEMA IF NOT EXISTS wants the CREATE privilege on
            # the database even when the schema exists.
            if not await conn.fetchval("SELECT to_regnamespace($1) IS NOT NULL", f'"{schema}"'):
                await conn.execute(f'CREATE SCHEMA "{schema}"')
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"
            )
            if await conn.fetchval(current_sql) >= version:
                continue  # another process applied it while this one waited
            for statement in _MIGRATIONS[version - 1]:
                await conn.execute(statement)
            await conn.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES"
                " ($1, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint)",
                version,
            )
    return SCHEMA_VERSION


def _search_path(schema: str) -> dict[str, str]:
    return {"search_path": f'"{_checked_schema(schema)}"'}


async def upgrade(dsn: str, schema: str = "interlink") -> int:
    """Create or migrate `schema` in the database at `dsn`; returns its version."""
    try:
        conn = await asyncpg.connect(dsn, server_settings=_search_path(schema))
        try:
            return await _migrate(conn, schema)
        finally:
            await conn.close()
    except _DB_ERRORS as exc:
        raise StoreError(f"postgresql schema {schema}: {exc}") from exc


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Pool reset: nothing to undo (no SET, LISTEN, cursor or session lock is left
    behind), which saves a round trip per query; asyncpg still rolls back a transaction."""


class PostgresTaskStore(sql_.SqlStore):
    """Tasks, event logs, push configs and the outbox in one PostgreSQL schema."""

    _NO_SUCH_TASK = asyncpg.ForeignKeyViolationError

    def __init__(
        self, dsn: str, *, schema: str = "interlink", min_size: int = 1, max_size: int = 10
    ) -> None:
        self.dsn = dsn
        self._opening = asyncio.Lock()
        self.schema = _checked_schema(schema)
        self.channel = f"{schema}_events"
        """The NOTIFY channel of this schema."""
        self.cancel_channel = f"{schema}_cancel"
        """The NOTIFY channel of cancel requests between replicas."""
        self.lease_owner = ""
        """This replica's name: the owner of the leases its writes take (see `Replicas`)."""
        self.lease_ttl = 0
        """How long (µs) a lease taken by a write lasts unless renewed."""
        self._sizes = (min_size, max_size)
        self._pool: asyncpg.Pool | None = None
        self._listeners: set[_Listener] = set()

    async def open(self) -> None:
        async with self._opening:  # (idempotent, also for calls at the same time)
            if self._pool is None:
                await self._open()

    async def _open(self) -> None:
        try:
            pool = await asyncpg.create_pool(
                self.dsn,
                min_size=self._sizes[0],
                max_size=self._sizes[1],
                server_settings=_search_path(self.schema),
                reset=_keep_session,
            )
            try:
                async with pool.acquire() as conn:
                    await _migrate(conn, self.schema)
            except BaseException:
                await pool.close()
                raise
        except _DB_ERRORS as exc:
            raise self._error(exc) from exc
        self._pool = pool

    async def close(self) -> None:
        for listener in list(self._listeners):
            await listener.close()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    def _error(self, exc: BaseException | str) -> StoreError:
        return StoreError(f"postgresql schema {self.schema}: {exc}")

    async def _run(self, method: str, sql: str, *args: object) -> Any:
        """`Pool.<method>(sql, *args)` (execute, fetch, fetchrow or fetchval); database
        and connection errors are `StoreError`s, their subclasses' causes."""
        if self._pool is None:
            raise self._error("store is not open")
        try:
            return await getattr(self._pool, method)(sql, *args)
        except _DB_ERRORS as exc:
            raise self._error(exc) from exc

    # -- tasks ------------------------------------------------------------------------

    async def create(
        self, row: TaskRow, events: Sequence[bytes], push_configs: NewConfigs = ()
    ) -> TaskRow:
        stored = msgspec.structs.replace(row, version=1, last_seq=len(events))
        prefix = _notify_prefix(row.tenant, row.task_id)
        args = (
            *msgspec.structs.astuple(stored),
            list(events),
            self.channel,
            prefix,
            self.lease_owner,
            self.lease_ttl,
        )
        try:
            if not push_configs:
                await self._run("execute", _CREATE, *args)
            else:
                await self._create_with_configs(row, len(events), push_configs, args)
        except StoreError as exc:
            if isinstance(exc.__cause__, asyncpg.UniqueViolationError):
                raise TaskExists(f"task {row.task_id} exists") from exc.__cause__
            raise
        return stored

    async def _create_with_configs(
        self,
        row: TaskRow,
        count: int,
        push_configs: NewConfigs,
        args: tuple[object, ...],
    ) -> None:
        """`create` with push configs: the task, its configs and the deliveries of its
        first events in one transaction."""
        if self._pool is None:
            raise self._error("store is not open")
        configs = sql_.config_rows(row.tenant, row.task_id, push_configs)
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                await conn.execute(_CREATE, *args)
                await conn.executemany(_PUT_CONFIG, configs)
                if count:
                    await conn.execute(_QUEUE_FIRST, row.tenant, row.task_id, count)
        except _DB_ERRORS as exc:
            raise self._error(exc) from exc

    async def append(self, tenant: str, task_id: str, **change: Unpack[TaskChange]) -> TaskRow:
        expected = change["expected_version"]
        args = (change["task"], change["state"], change["status_time"], list(change["events"]))
        prefix = _notify_prefix(tenant, task_id)
        lease = (self.lease_owner, self.lease_ttl)
        updated = await self._run(
            "fetchrow", _APPEND, *args, tenant, task_id, expected, self.channel, prefix, *lease
        )
        if updated is None:
            sql = (
                f"SELECT version, lease_owner, lease_until >= {_NOW} FROM tasks"
                " WHERE tenant = $1 AND task_id = $2"
            )
            found = await self._run("fetchrow", sql, tenant, task_id)
            if found is not None and found[0] == expected and found[2]:
                raise TaskLeased(task_id, found[1])
            raise VersionConflict(task_id, expected, None if found is None else found[0])
        return sql_.appended(tenant, task_id, change, updated)

    async def _fetch(self, sql: str, *args: object) -> builtins.list[Any]:
        rows: builtins.list[Any] = await self._run("fetch", sql, *args)
        return rows

    async def _execute(self, sql: str, *args: object) -> None:
        await self._run("execute", sql, *args)

    # -- leases (several replicas) --------------------------------------------------

    async def renew_leases(
        self, running: Sequence[tuple[str, str]]
    ) -> builtins.list[tuple[str, str]]:
        """Extend by `lease_ttl` this replica's leases on the tasks it is `running`
        ((tenant, task id) pairs); returns those whose lease another replica holds now
        (it took them over: their executors here must stop). A task this replica does
        not run keeps no lease: if it stays active, a sweep takes it over."""
        sql = f"""WITH k AS (
                SELECT * FROM unnest($1::text[], $2::text[]) AS k (tenant, task_id)
            ), renewed AS (
                UPDATE tasks AS t SET lease_until = {_NOW} + $4 FROM k
                WHERE (t.tenant, t.task_id) = (k.tenant, k.task_id) AND t.lease_owner = $3
            )
            SELECT t.tenant, t.task_id FROM tasks AS t JOIN k
                ON (t.tenant, t.task_id) = (k.tenant, k.task_id)
            WHERE t.state IN ({_ACTIVE}) AND t.lease_owner <> $3"""
        tenants = [tenant for tenant, _ in running]
        task_ids = [task_id for _, task_id in running]
        args = (tenants, task_ids, self.lease_owner, self.lease_ttl)
        return [(r[0], r[1]) for r in await self._run("fetch", sql, *args)]

    async def release_lease(self, tenant: str, task_id: str) -> None:
        """This replica stopped running the task (it waits for input): anyone may take
        the next message for it."""
        sql = (
            "UPDATE tasks SET lease_until = 0"
            " WHERE tenant = $1 AND task_id = $2 AND lease_owner = $3"
        )
        await self._run("execute", sql, tenant, task_id, self.lease_owner)

    async def claim_expired(
        self, tenants: Sequence[str], limit: int = 100
    ) -> builtins.list[TaskRow]:
        """Running tasks of `tenants` whose lease expired (their replica died): each is
        leased to this replica and returned, to be failed or re-run. Replicas claiming at
        once never get the same task."""
        sql = f"""WITH expired AS (
                SELECT tenant, task_id FROM tasks WHERE state IN ({_ACTIVE})
                    AND lease_until < {_NOW} AND tenant = ANY($3::text[])
                ORDER BY lease_until LIMIT $4 FOR UPDATE SKIP LOCKED
            )
            UPDATE tasks AS t SET lease_owner = $1, lease_until = {_NOW} + $2
            FROM expired AS e WHERE (t.tenant, t.task_id) = (e.tenant, e.task_id)
            RETURNING {", ".join(f"t.{c.strip()}" for c in _TASK_COLUMNS.split(","))}"""
        args = (self.lease_owner, self.lease_ttl, list(tenants), limit)
        return [sql_.task_row(r) for r in await self._run("fetch", sql, *args)]

    async def request_cancel(self, tenant: str, task_id: str) -> None:
        """Ask the replica running the task to cancel it (see `listen`'s `on_cancel`)."""
        prefix = _notify_prefix(tenant, task_id)
        if prefix is not None:
            await self._run("execute", "SELECT pg_notify($1, $2)", self.cancel_channel, prefix)

    async def prune(self, older_than: int) -> int:
        return int(await self._run("fetchval", _PRUNE, older_than, list(sql_.TERMINAL)))

    # -- push configs -----------------------------------------------------------------

    # -- push outbox ------------------------------------------------------------------

    async def claim_deliveries(self, now: int, limit: int, lease: int) -> builtins.list[Delivery]:
        claimed: builtins.list[Delivery] = []
        after: tuple[int, int] = (-(2**63), 0)
        while len(claimed) < limit:
            want = limit - len(claimed)
            rows = await self._run("fetch", _CLAIM, now, *after, want, now + lease)
            live = [r for r in rows if r[1] is not None]
            claimed.extend(sql_.delivery(r) for r in live)
            if len(live) == len(rows) or len(rows) < want:
                break
            after = (rows[-1][9], rows[-1][0])  # orphans were dropped: look further
        return claimed

    # -- wake-ups ---------------------------------------------------------------------

    async def listen(
        self,
        callback: Callable[[str, str, int], object],
        *,
        on_reconnect: Callable[[], object] | None = None,
        on_cancel: Callable[[str, str], object] | None = None,
        ping_interval: float = 30.0,
    ) -> Callable[[], Awaitable[None]]:
        """Call `callback(tenant, task_id, seq)` for each commit, by any process, that
        adds events to a task of this schema (`seq` is the newest); returns the coroutine
        function that stops listening. `close()` of the store stops every listener.

        When this returns the LISTEN is active: every later commit is announced, at most
        once. One connection of its own (not the pool's) holds it; when that connection
        is lost (or fails a ping every `ping_interval` s) it reconnects, with backoff,
        then calls `on_reconnect()`: what was committed meanwhile went unannounced, so a
        replica re-reads each task it follows from the log after the last seq it has
        (`events(tenant, task_id, after_seq)`). A payload without ids (too long for
        NOTIFY) calls `on_reconnect` too. `on_cancel(tenant, task_id)` hears
        `request_cancel` on the same connection. The callbacks run on the event loop and
        must not block; what they raise is logged.
        """
        listener = _Listener(self, callback, on_reconnect, on_cancel, ping_interval)
        try:
            await listener.connect()
        except _DB_ERRORS as exc:
            raise self._error(exc) from exc
        listener.task = asyncio.create_task(listener.run(), name=f"LISTEN {self.channel}")
        self._listeners.add(listener)
        return listener.close


@dataclass(eq=False)
class _Listener:
    """One LISTEN connection that comes back when lost."""

    _store: PostgresTaskStore
    _callback: Callable[[str, str, int], object]
    _on_reconnect: Callable[[], object] | None
    _on_cancel: Callable[[str, str], object] | None
    _ping_interval: float
    _conn: asyncpg.Connection | None = field(default=None, init=False)
    _lost: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    task: asyncio.Task[None] | None = field(default=None, init=False)

    async def close(self) -> None:
        self._store._listeners.discard(self)
        task, self.task = self.task, None
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.terminate()

    async def connect(self) -> None:
        lost = asyncio.Event()
        settings = {"application_name": f"interlink listen {self._store.schema}"}
        conn = await asyncpg.connect(self._store.dsn, server_settings=settings)
        try:
            conn.add_termination_listener(lambda _: lost.set())
            await conn.add_listener(self._store.channel, self._notified)
            if self._on_cancel is not None:
                await conn.add_listener(self._store.cancel_channel, self._cancel_notified)
        except BaseException:
            conn.terminate()
            raise
        old, self._conn, self._lost = self._conn, conn, lost
        if old is not None:
            old.terminate()

    async def run(self) -> None:
        while True:
            while not await self._lost_or_dead():
                pass
            delay = 0.05
            while True:
                try:
                    await self.connect()
                    break
                except _DB_ERRORS as exc:
                    channel = self._store.channel
                    logger.warning("LISTEN %s: reconnecting in %.2fs: %s", channel, delay, exc)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 5.0)
            self._call(self._on_reconnect)

    async def _lost_or_dead(self) -> bool:
        """Waits up to a ping interval; True when the connection is gone."""
        try:
            async with asyncio.timeout(self._ping_interval):
                await self._lost.wait()
            return True
        except TimeoutError:
            pass
        try:
            assert self._conn is not None
            await self._conn.execute("SELECT 1", timeout=self._ping_interval)
        except _DB_ERRORS:
            return True
        return False

    def _notified(self, _conn: object, _pid: int, _channel: str, payload: object) -> None:
        tenant, sep, rest = str(payload).partition(_SEP)
        task_id, sep2, seq = rest.rpartition(_SEP)
        if sep and sep2 and seq.isdigit():
            self._call(self._callback, tenant, task_id, int(seq))
        else:
            self._call(self._on_reconnect)

    def _cancel_notified(self, _conn: object, _pid: int, _channel: str, payload: object) -> None:
        tenant, sep, rest = str(payload).partition(_SEP)
        task_id, sep2, _ = rest.rpartition(_SEP)
        if sep and sep2:
            self._call(self._on_cancel, tenant, task_id)

    def _call(self, fn: Callable[..., object] | None, *args: object) -> None:
        if fn is not None:
            try:
                fn(*args)
            except Exception:
                logger.exception("LISTEN %s: a callback failed", self._store.channel)
