"""`SqliteTaskStore`: the default durable `TaskStore`, one SQLite file in WAL mode.

One thread owns the connection; every call is a job on that thread (a one-worker
executor), so the connection is never shared and writes are serialised without locks.
The exception is `get`, a read of one row by its key: it runs on the event loop's thread
on a read-only connection of its own (WAL readers never wait for the writer), which
saves two thread hand-offs on every task look-up; if that read is ever refused (busy),
it goes to the thread like the rest.
Each write is one transaction (`BEGIN IMMEDIATE` ... `COMMIT`, or one autocommitted
statement): when a method returns, its change is committed. The schema is versioned
with `PRAGMA user_version`; `open()` applies the migrations the file has not seen, so it
is idempotent.

One process at a time: `open()` (or `lock()`, to refuse early) takes an exclusive
`flock` on `<file>.lock` beside the database and holds it until `close()`, writing the
holder's pid, host and command line into it; another store on the same file (another
server, or a second store in this process) is refused with a `StoreError` naming the
holder. Tasks are recovered at start-up as "the server stopped while this task was
running", which a second server would do to the first one's running tasks. The OS drops
the lock when its holder dies, so a crashed server never blocks the next start. Replicas
share PostgreSQL instead.

Invariants: `events` rows are only inserted, never updated, and deleted only by `prune`
(the whole log of an old finished task); otherwise `events.seq` runs 1..`tasks.last_seq`
without gaps; an outbox row refers to an event that exists and to the push config (by
its row id, which AUTOINCREMENT never reuses) that existed when the row was queued; a row
whose config is gone is dropped when claimed.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import errno
import fcntl
import json
import os
import shlex
import socket
import sqlite3
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, Unpack

import msgspec

from interlink.a2a.stores import _sql as sql_
from interlink.a2a.stores._base import (
    Delivery,
    NewConfigs,
    StoreError,
    TaskChange,
    TaskExists,
    TaskFilter,
    TaskRow,
    VersionConflict,
)
from interlink.a2a.stores._sql import TASK_COLUMNS, sqlite

__all__ = ["SCHEMA_VERSION", "SqliteTaskStore"]

_T = TypeVar("_T")

# Migration n (1-based) takes a file from user_version n-1 to n. Append, never edit.
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE tasks (
            tenant      TEXT    NOT NULL,
            task_id     TEXT    NOT NULL,
            context_id  TEXT    NOT NULL,
            owner       TEXT    NOT NULL,
            state       TEXT    NOT NULL,
            status_time INTEGER NOT NULL,
            version     INTEGER NOT NULL,
            last_seq    INTEGER NOT NULL,
            task        BLOB    NOT NULL,
            PRIMARY KEY (tenant, task_id)
        )""",
        *sql_.TASK_INDEXES,
        """CREATE TABLE events (
            tenant  TEXT    NOT NULL,
            task_id TEXT    NOT NULL,
            seq     INTEGER NOT NULL,
            payload BLOB    NOT NULL,
            PRIMARY KEY (tenant, task_id, seq),
            FOREIGN KEY (tenant, task_id) REFERENCES tasks (tenant, task_id)
        )""",
        """CREATE TABLE push_configs (
            id        INTEGER PRIMARY KEY AUTOINCREMENT,
            tenant    TEXT NOT NULL,
            task_id   TEXT NOT NULL,
            config_id TEXT NOT NULL,
            config    BLOB NOT NULL,
            UNIQUE (tenant, task_id, config_id),
            FOREIGN KEY (tenant, task_id) REFERENCES tasks (tenant, task_id)
        )""",
        """CREATE TABLE outbox (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,
            tenant        TEXT    NOT NULL,
            task_id       TEXT    NOT NULL,
            config_id     TEXT    NOT NULL,
            config_ref    INTEGER NOT NULL,
            seq           INTEGER NOT NULL,
            attempts      INTEGER NOT NULL DEFAULT 0,
            next_at       INTEGER NOT NULL DEFAULT 0,
            claimed_until INTEGER NOT NULL DEFAULT 0,
            last_error    TEXT
        )""",
        # A claim moves next_at to the lease's end, so "due" is `next_at <= now` alone.
        "CREATE INDEX outbox_due ON outbox (next_at)",
    ),
    (sql_.LANE_INDEX,),
    (sql_.PROTOCOL_COLUMN,),
)
SCHEMA_VERSION = len(_MIGRATIONS)

_INSERT_EVENT = "INSERT INTO events (tenant, task_id, seq, payload) VALUES (?, ?, ?, ?)"
_UPDATE_TASK = """UPDATE tasks
    SET task = ?, state = ?, status_time = ?, version = version + 1, last_seq = last_seq + ?
    WHERE tenant = ? AND task_id = ? AND version = ?
    RETURNING context_id, owner, version, last_seq"""
_PUT_CONFIG = sqlite(sql_.PUT_CONFIG)
_GET_TASK = sqlite(sql_.GET_TASK)
_QUEUE_DELIVERIES = """INSERT INTO outbox (tenant, task_id, config_id, config_ref, seq)
    SELECT p.tenant, p.task_id, p.config_id, p.id, e.seq
    FROM push_configs AS p
    JOIN events AS e ON e.tenant = p.tenant AND e.task_id = p.task_id AND e.seq >= ?
    WHERE p.tenant = ? AND p.task_id = ?
    ORDER BY e.seq, p.id"""
_DUE_DELIVERIES = """SELECT o.id, o.tenant, o.task_id, o.config_id, o.seq, o.attempts,
        p.config, e.payload, p.protocol, o.next_at
    FROM outbox AS o
    LEFT JOIN push_configs AS p ON p.id = o.config_ref
    JOIN events AS e ON e.tenant = o.tenant AND e.task_id = o.task_id AND e.seq = o.seq
    WHERE o.next_at <= ? AND (o.next_at, o.id) > (?, ?)
        AND NOT EXISTS (SELECT 1 FROM outbox AS q WHERE q.tenant = o.tenant
            AND q.task_id = o.task_id AND q.config_ref = o.config_ref AND q.seq < o.seq)
    ORDER BY o.next_at, o.id
    LIMIT ?"""


def _connect(path: str) -> sqlite3.Connection:
    # isolation_level=None: no implicit transactions; every write opens its own.
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode syncs at checkpoints, not at each commit: a committed
        # transaction is in the WAL file (the OS has it) before COMMIT returns, so a
        # *process* crash loses nothing; only a power loss or OS crash can lose the last
        # transactions. The promise is "a server restarted on the same file serves every
        # task and event it had acknowledged", i.e. process crashes and restarts, which
        # NORMAL keeps; FULL would fsync every commit for the power-loss case.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("BEGIN IMMEDIATE")  # serialises migrations against other processes
        (current,) = conn.execute("PRAGMA user_version").fetchone()
        if current > SCHEMA_VERSION:
            raise StoreError(f"{path}: schema version {current} is newer than this program")
        for version in range(current + 1, SCHEMA_VERSION + 1):
            for statement in _MIGRATIONS[version - 1]:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version}")
        conn.execute("COMMIT")
    except BaseException:
        conn.close()
        raise
    return conn


def _transaction(fn: Callable[[sqlite3.Connection], _T]) -> Callable[[sqlite3.Connection], _T]:
    def run(conn: sqlite3.Connection) -> _T:
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # a failed COMMIT leaves it open too
                conn.execute("ROLLBACK")
            raise
        return result

    return run


def _take_lock(database: Path) -> int:
    """The descriptor of the database's lock file, locked (exclusive, for as long as it
    stays open), this process described in it; `StoreError` naming the holder if another
    process (or store) has it."""
    path = database.with_name(database.name + ".lock")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise StoreError(f"{database}: unable to open {path}: {exc.strerror or exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = _holder(fd)
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise StoreError(f"{database}: cannot lock {path}: {exc.strerror}") from exc
        raise StoreError(
            f"{database} is in use by {holder}; an SQLite store serves one process at a "
            "time: stop that one, or give this one another --store (replicas share "
            "PostgreSQL)"
        ) from None
    command = shlex.join(sys.orig_argv)[:500]
    me = {"pid": os.getpid(), "host": socket.gethostname(), "cmdline": command}
    with contextlib.suppress(OSError):  # the lock is what counts; the note is for people
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
    return fd


def _holder(fd: int) -> str:
    try:
        note = json.loads(os.pread(fd, 4096, 0))
        return f"pid {int(note['pid'])} on {note['host']} ({note['cmdline']})"
    except (OSError, ValueError, TypeError, KeyError):
        return "another process (which has not written its pid yet)"


class SqliteTaskStore(sql_.SqlStore):
    """Tasks, event logs, push configs and the outbox in one SQLite file (WAL), for one
    process at a time (see the module)."""

    _NO_SUCH_TASK = sqlite3.IntegrityError

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock_fd: int | None = None
        self._opening = asyncio.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None
        """Used only on the executor's thread."""
        self._reader: sqlite3.Connection | None = None
        """Read-only, used only on the event loop's thread (by `get`)."""

    def lock(self) -> None:
        """Take the file's lock now (`open` does it too): `StoreError` naming the process
        that holds it. Held until `close`."""
        if self._lock_fd is None:
            self._lock_fd = _take_lock(self.path)

    def _unlock(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)  # (the file stays: removing it would race with the next taker)

    async def open(self) -> None:
        async with self._opening:  # (idempotent, also for calls at the same time)
            if self._executor is None:
                await self._open()

    async def _open(self) -> None:
        locked_here = self._lock_fd is None
        self.lock()
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="interlink-sqlite")
        try:
            self._conn = await self._call(self._executor, partial(_connect, str(self.path)))
            self._reader = sqlite3.connect(self.path, isolation_level=None)
            self._reader.execute("PRAGMA query_only = ON")
        except BaseException:
            if self._conn is not None:
                await self._call(self._executor, self._conn.close)
                self._conn = None
            self._executor.shutdown(wait=True)
            self._executor = None
            if locked_here:
                self._unlock()
            raise

    async def close(self) -> None:
        executor, self._executor = self._executor, None
        if executor is None:
            self._unlock()  # (taken by `lock` alone)
            return
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()
        conn, self._conn = self._conn, None
        if conn is not None:
            await asyncio.get_running_loop().run_in_executor(executor, conn.close)
        executor.shutdown(wait=True)
        self._unlock()

    async def _call(self, executor: ThreadPoolExecutor, fn: Callable[[], _T]) -> _T:
        try:
            return await asyncio.get_running_loop().run_in_executor(executor, fn)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc}") from exc

    async def _run(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        executor, conn = self._executor, self._conn
        if executor is None or conn is None:
            raise StoreError(f"{self.path}: store is not open")
        return await self._call(executor, partial(fn, conn))

    # -- tasks ------------------------------------------------------------------------

    async def create(
        self, row: TaskRow, events: Sequence[bytes], push_configs: NewConfigs = ()
    ) -> TaskRow:
        stored = msgspec.structs.replace(row, version=1, last_seq=len(events))

        @_transaction
        def create(conn: sqlite3.Connection) -> TaskRow:
            try:
                conn.execute(
                    f"INSERT INTO tasks ({TASK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    msgspec.structs.astuple(stored),
                )
            except sqlite3.IntegrityError as exc:
                raise TaskExists(f"task {row.task_id} exists") from exc
            conn.executemany(
                _INSERT_EVENT,
                [(row.tenant, row.task_id, seq, p) for seq, p in enumerate(events, 1)],
            )
            if push_configs:
                conn.executemany(
                    _PUT_CONFIG, sql_.config_rows(row.tenant, row.task_id, push_configs)
                )
                if events:
                    conn.execute(_QUEUE_DELIVERIES, (1, row.tenant, row.task_id))
            return stored

        return await self._run(create)

    async def append(self, tenant: str, task_id: str, **change: Unpack[TaskChange]) -> TaskRow:
        events, expected = change["events"], change["expected_version"]
        args = (change["task"], change["state"], change["status_time"], len(events))

        @_transaction
        def append(conn: sqlite3.Connection) -> TaskRow:
            updated = conn.execute(_UPDATE_TASK, (*args, tenant, task_id, expected)).fetchall()
            if not updated:
                found = conn.execute(
                    "SELECT version FROM tasks WHERE tenant = ? AND task_id = ?",
                    (tenant, task_id),
                ).fetchone()
                raise VersionConflict(task_id, expected, found and found[0])
            row = sql_.appended(tenant, task_id, change, updated[0])
            first = row.last_seq - len(events) + 1
            if len(events) == 1:
                conn.execute(_INSERT_EVENT, (tenant, task_id, first, events[0]))
            elif events:
                conn.executemany(
                    _INSERT_EVENT,
                    [(tenant, task_id, seq, p) for seq, p in enumerate(events, first)],
                )
            if events:
                conn.execute(_QUEUE_DELIVERIES, (first, tenant, task_id))
            return row

        return await self._run(append)

    async def get(self, tenant: str, task_id: str) -> TaskRow | None:
        if self._reader is not None:
            try:
                found = self._reader.execute(_GET_TASK, (tenant, task_id)).fetchone()
                return None if found is None else sql_.task_row(found)
            except sqlite3.OperationalError:
                pass  # busy (a checkpoint, a recovery): the writer's thread waits for it
        return await super().get(tenant, task_id)

    async def prune(self, older_than: int) -> int:
        terminal = sql_.TERMINAL
        old = (
            "SELECT tenant, task_id FROM tasks WHERE status_time < ?"
            f" AND state IN ({', '.join('?' * len(terminal))})"
        )

        @_transaction
        def prune(conn: sqlite3.Connection) -> int:
            args = (older_than, *terminal)
            conn.execute(f"DELETE FROM outbox WHERE (tenant, task_id) IN ({old})", args)
            removed = conn.execute(f"DELETE FROM events WHERE (tenant, task_id) IN ({old})", args)
            return removed.rowcount

        return await self._run(prune)

    def _source(self, query: TaskFilter) -> str:
        # Without statistics SQLite would walk the tenant's time index to skip a sort;
        # a context has few tasks, so its index and a small sort win.
        return "tasks" if query.get("context_id") is None else "tasks INDEXED BY tasks_by_context"

    async def _fetch(self, sql: str, *args: object) -> builtins.list[Any]:
        query = sqlite(sql)
        return await self._run(lambda conn: conn.execute(query, args).fetchall())

    async def _execute(self, sql: str, *args: object) -> None:
        query = sqlite(sql)
        await self._run(lambda conn: conn.execute(query, args))

    # -- push configs -----------------------------------------------------------------

    # -- push outbox ------------------------------------------------------------------

    async def claim_deliveries(self, now: int, limit: int, lease: int) -> builtins.list[Delivery]:
        @_transaction
        def claim(conn: sqlite3.Connection) -> builtins.list[Delivery]:
            claimed: builtins.list[Delivery] = []
            after: tuple[int, int] = (-(2**63), 0)
            while len(claimed) < limit:
                want = limit - len(claimed)
                rows = conn.execute(_DUE_DELIVERIES, (now, *after, want)).fetchall()
                orphans = [(r[0],) for r in rows if r[6] is None]
                live = [r for r in rows if r[6] is not None]
                conn.executemany("DELETE FROM outbox WHERE id = ?", orphans)
                conn.executemany(
                    "UPDATE outbox SET next_at = ?, claimed_until = ? WHERE id = ?",
                    [(now + lease, now + lease, r[0]) for r in live],
                )
                claimed.extend(sql_.delivery(r) for r in live)
                if not orphans or len(rows) < want:
                    break
                after = (rows[-1][9], rows[-1][0])
            return claimed

        return await self._run(claim)
