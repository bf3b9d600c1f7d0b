"""What the two SQL stores (`SqliteTaskStore`, `PostgresTaskStore`) say alike: the
columns and indexes, the queries that are the same in both dialects, and how a row
becomes a `TaskRow` or a `Delivery`.

Queries are written with PostgreSQL's `$n` placeholders, each used once and in order
(`$1`, `$2`, ...), so that SQLite reads them as its nameless `?` (`sqlite`).
"""

from __future__ import annotations

import builtins
import functools
import re
from typing import Any, Unpack

from interlink.a2a.stores import _base as _store

TASK_COLUMNS = ", ".join(_store.TaskRow.__struct_fields__)
ACTIVE = ", ".join(f"'{state}'" for state in sorted(_store.ACTIVE_STATES))
"""Literals, so that the planner can use the partial indexes on active tasks."""
TERMINAL = tuple(sorted(_store.TERMINAL_STATES))
"""The terminal states, in a stable order (`prune`'s parameters)."""

# Part of migration 1 of both stores: written out (not derived from the state sets), so
# that the migration never changes.
TASK_INDEXES = (
    "CREATE INDEX tasks_by_time ON tasks (tenant, status_time DESC, task_id DESC)",
    "CREATE INDEX tasks_by_owner ON tasks (tenant, owner, status_time DESC, task_id DESC)",
    # No status_time here: context_id never changes, so appends leave this index
    # alone, and a context's few tasks are cheap to sort.
    "CREATE INDEX tasks_by_context ON tasks (tenant, context_id)",
    "CREATE INDEX tasks_by_state ON tasks (tenant, state, status_time DESC, task_id DESC)",
    # Small: only running tasks, for `active()` after a restart.
    "CREATE INDEX tasks_active ON tasks (state) WHERE state IN"
    " ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING')",
)
LANE_INDEX = "CREATE INDEX outbox_lane ON outbox (tenant, task_id, config_ref, seq)"
"""Migration 2 of both: a lane (task, config) is claimed head first, for delivery in order."""

GET_TASK = f"SELECT {TASK_COLUMNS} FROM tasks WHERE tenant = $1 AND task_id = $2"
ACTIVE_TASKS = f"SELECT {TASK_COLUMNS} FROM tasks WHERE state IN ({ACTIVE})"
EVENTS = (
    "SELECT seq, payload FROM events WHERE tenant = $1 AND task_id = $2 AND seq > $3"
    " ORDER BY seq LIMIT $4"
)
PROTOCOL_COLUMN = "ALTER TABLE push_configs ADD COLUMN protocol TEXT NOT NULL DEFAULT '1.0'"
"""Migration 3 of SQLite, 4 of PostgreSQL: the A2A version of the client that set a
config (`PushConfig.protocol`); those stored before are 1.0's."""
# An update keeps the row id: its place in the creation order and its queue.
PUT_CONFIG = """INSERT INTO push_configs (tenant, task_id, config_id, config, protocol)
    VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant, task_id, config_id)
    DO UPDATE SET config = excluded.config, protocol = excluded.protocol"""
GET_CONFIG = "SELECT config FROM push_configs WHERE tenant = $1 AND task_id = $2 AND config_id = $3"
LIST_CONFIGS = (
    "SELECT config_id, config FROM push_configs WHERE tenant = $1 AND task_id = $2 ORDER BY id"
)
# Queued deliveries stay; `claim_deliveries` drops them (no outbox index to keep).
DELETE_CONFIG = "DELETE FROM push_configs WHERE tenant = $1 AND task_id = $2 AND config_id = $3"
RETRY_DELIVERY = (
    "UPDATE outbox SET attempts = attempts + 1, next_at = $1, claimed_until = 0,"
    " last_error = $2 WHERE id = $3"
)
DELETE_DELIVERY = "DELETE FROM outbox WHERE id = $1"

_DOLLAR = re.compile(r"\$(\d+)")


@functools.cache
def sqlite(sql: str) -> str:
    """`sql` with SQLite's nameless `?` for each `$n`, which must come in order.

    (Not `?n`: Python 3.12.0 to 3.12.3's sqlite3 took `?n` for a named parameter and
    warned on every statement given a sequence, gh-117995; `?` means the same everywhere.)
    """
    numbers = [int(n) for n in _DOLLAR.findall(sql)]
    if numbers != list(range(1, len(numbers) + 1)):
        raise ValueError(f"placeholders out of order for SQLite's `?`: {sql!r}")
    return _DOLLAR.sub("?", sql)


def config_rows(
    tenant: str, task_id: str, configs: _store.NewConfigs
) -> builtins.list[tuple[object, ...]]:
    """The `PUT_CONFIG` parameters of each of a new task's push configs."""
    return [(tenant, task_id, *_store.PushConfig(*c)) for c in configs]


def task_row(r: Any) -> _store.TaskRow:
    """A `tasks` row, columns in `TASK_COLUMNS` order."""
    return _store.TaskRow(**dict(zip(_store.TaskRow.__struct_fields__, r, strict=True)))


def appended(
    tenant: str, task_id: str, change: _store.TaskChange, rest: tuple[Any, ...] | Any
) -> _store.TaskRow:
    """The row `append` wrote: `rest` is what its UPDATE returned, `(context_id, owner,
    version, last_seq, ...)`."""
    return _store.TaskRow(
        tenant=tenant,
        task_id=task_id,
        context_id=rest[0],
        owner=rest[1],
        state=change["state"],
        status_time=change["status_time"],
        version=rest[2],
        last_seq=rest[3],
        task=change["task"],
    )


CLAIMED_COLUMNS = (
    "id, tenant, task_id, config_id, seq, attempts, config, payload, protocol, next_at"
)
"""What a claim query returns per due row, in order: a `Delivery`, then the row's due time
(`config` is NULL for an orphan: its config was deleted after it was queued)."""


def delivery(r: Any) -> _store.Delivery:
    """A claimed row, columns in `CLAIMED_COLUMNS` order."""
    return _store.Delivery(**dict(zip(_store.Delivery.__struct_fields__, r, strict=False)))


def where(
    tenant: str, query: _store.TaskFilter, before: tuple[int, str] | None = None
) -> tuple[str, list[object]]:
    """The WHERE clause (with `$n` placeholders) of the tasks `query` keeps, after the
    keyset cursor `before`, and its parameters."""
    clauses = ["tenant = $1"]
    params: list[object] = [tenant]
    filters = (
        ("owner", query.get("owner")),
        ("context_id", query.get("context_id")),
        ("state", query.get("state")),
    )
    for column, value in filters:
        if value is not None:
            params.append(value)
            clauses.append(f"{column} = ${len(params)}")
    status_after = query.get("status_after")
    if status_after is not None:
        params.append(status_after)
        clauses.append(f"status_time > ${len(params)}")
    if before is not None:
        params.extend(before)
        clauses.append(f"(status_time, task_id) < (${len(params) - 1}, ${len(params)})")
    return " AND ".join(clauses), params


def page_sql(
    source: str, tenant: str, query: _store.TaskFilter, size: int, before: tuple[int, str] | None
) -> tuple[str, list[object]]:
    """The SELECT of one page of `list` from `source` (the table, maybe with an index
    hint), and its parameters."""
    clause, params = where(tenant, query, before)
    params.append(size)
    sql = (
        f"SELECT {TASK_COLUMNS} FROM {source} WHERE {clause}"
        f" ORDER BY status_time DESC, task_id DESC LIMIT ${len(params)}"
    )
    return sql, params


def count_sql(tenant: str, query: _store.TaskFilter) -> tuple[str, list[object]]:
    clause, params = where(tenant, query)
    return f"SELECT count(*) FROM tasks WHERE {clause}", params


class SqlStore:
    """The `TaskStore` methods that are one statement in either dialect. A backend
    supplies `_fetch` (all rows of a read) and `_execute` (one autocommitted write), each
    taking the query in `$n` form and its parameters."""

    async def _fetch(self, sql: str, *args: object) -> builtins.list[Any]:
        raise NotImplementedError

    async def _execute(self, sql: str, *args: object) -> None:
        raise NotImplementedError

    _NO_SUCH_TASK: type[BaseException] = Exception
    """The driver's foreign-key violation: a push config for a task that does not exist."""

    def _source(self, query: _store.TaskFilter) -> str:
        """What `list` selects from: the table, or the table with an index hint."""
        return "tasks"

    async def get(self, tenant: str, task_id: str) -> _store.TaskRow | None:
        found = await self._fetch(GET_TASK, tenant, task_id)
        return task_row(found[0]) if found else None

    async def events(
        self, tenant: str, task_id: str, after_seq: int = 0, limit: int = 1000
    ) -> builtins.list[_store.EventRow]:
        rows = await self._fetch(EVENTS, tenant, task_id, after_seq, max(limit, 0))
        return [_store.EventRow(seq, payload) for seq, payload in rows]

    async def list(
        self, tenant: str, **query: Unpack[_store.TaskPage]
    ) -> builtins.list[_store.TaskRow]:
        sql, params = page_sql(self._source(query), tenant, query, *_store.page_of(query))
        return [task_row(r) for r in await self._fetch(sql, *params)]

    async def count(self, tenant: str, **query: Unpack[_store.TaskFilter]) -> int:
        sql, params = count_sql(tenant, query)
        ((n,),) = await self._fetch(sql, *params)
        return int(n)

    async def active(self) -> builtins.list[_store.TaskRow]:
        return [task_row(r) for r in await self._fetch(ACTIVE_TASKS)]

    async def put_push_config(
        self, tenant: str, task_id: str, config_id: str, config: bytes, protocol: str = _store.V10
    ) -> None:
        try:
            await self._execute(PUT_CONFIG, tenant, task_id, config_id, config, protocol)
        except _store.StoreError as exc:
            if isinstance(exc.__cause__, self._NO_SUCH_TASK):
                raise _store.StoreError(
                    f"push config for unknown task {task_id}"
                ) from exc.__cause__
            raise

    async def get_push_config(self, tenant: str, task_id: str, config_id: str) -> bytes | None:
        found = await self._fetch(GET_CONFIG, tenant, task_id, config_id)
        config: bytes | None = found[0][0] if found else None
        return config

    async def list_push_configs(self, tenant: str, task_id: str) -> _store.Configs:
        return [(cid, config) for cid, config in await self._fetch(LIST_CONFIGS, tenant, task_id)]

    async def delete_push_config(self, tenant: str, task_id: str, config_id: str) -> None:
        await self._execute(DELETE_CONFIG, tenant, task_id, config_id)

    async def finish_delivery(self, delivery_id: int) -> None:
        await self._execute(DELETE_DELIVERY, delivery_id)

    async def retry_delivery(self, delivery_id: int, next_at: int, error: str) -> None:
        await self._execute(RETRY_DELIVERY, next_at, error, delivery_id)

    async def drop_delivery(self, delivery_id: int, error: str) -> None:
        await self.finish_delivery(delivery_id)
