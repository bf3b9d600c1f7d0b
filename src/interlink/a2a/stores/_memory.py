"""`MemoryTaskStore`: the `TaskStore` in dicts, for tests and servers that keep nothing.

It has the SQLite store's semantics exactly (compare-and-set on `version`, events numbered
from 1, keyset order, outbox claims, leases and retries), so a test written against one
holds for the other. No method awaits anything between reading and writing, so every
operation is atomic on its event loop without a lock. Listing and claiming scan (they
are `O(n)`); this store is not meant for millions of tasks.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Unpack

import msgspec

from interlink.a2a.stores._base import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    V10,
    Configs,
    Delivery,
    EventRow,
    NewConfigs,
    PushConfig,
    StoreError,
    TaskChange,
    TaskExists,
    TaskFilter,
    TaskPage,
    TaskRow,
    VersionConflict,
    page_of,
)

__all__ = ["MemoryTaskStore"]

_Key = tuple[str, str]
"""(tenant, task_id)"""


@dataclass(slots=True)
class _Config:
    serial: int
    """Identity of this config's life: a config deleted and put again gets a new one, so
    deliveries queued for the deleted one are dropped, not sent to its successor."""
    config: bytes
    protocol: str


@dataclass(slots=True)
class _Outbox:
    id: int
    tenant: str
    task_id: str
    config_id: str
    config_serial: int
    seq: int
    attempts: int = 0
    next_at: int = 0
    """Due time; a claim moves it to the end of the lease."""
    claimed_until: int = 0
    last_error: str = ""


class MemoryTaskStore:
    """Tasks, event logs, push configs and the outbox in this process's memory."""

    writes_never_suspend = True
    """Its methods never wait: a cancellation cannot land in the middle of a write, and
    nothing comes between a task's writes (the runtime takes no lock for them). Only
    the class that sets it counts: a subclass is written to as any store (with the
    lock) unless it sets it True itself."""

    def __init__(self) -> None:
        self._tasks: dict[_Key, TaskRow] = {}
        self._events: dict[_Key, list[bytes]] = {}
        #: how many events of a task `prune` dropped (its log starts after them)
        self._dropped: dict[_Key, int] = {}
        self._configs: dict[_Key, dict[str, _Config]] = {}
        self._outbox: dict[int, _Outbox] = {}
        self._serial = 0
        self._open = False

    async def open(self) -> None:
        self._open = True

    async def close(self) -> None:
        self._open = False

    def _next_serial(self) -> int:
        self._serial += 1
        return self._serial

    # -- tasks ------------------------------------------------------------------------

    async def create(
        self, row: TaskRow, events: Sequence[bytes], push_configs: NewConfigs = ()
    ) -> TaskRow:
        key = (row.tenant, row.task_id)
        if key in self._tasks:
            raise TaskExists(f"task {row.task_id} exists")
        stored = msgspec.structs.replace(row, version=1, last_seq=len(events))
        self._tasks[key] = stored
        self._events[key] = list(events)
        for config in push_configs:
            await self.put_push_config(row.tenant, row.task_id, *PushConfig(*config))
        self._queue(key, 1, stored.last_seq)
        return stored

    async def append(self, tenant: str, task_id: str, **change: Unpack[TaskChange]) -> TaskRow:
        key = (tenant, task_id)
        old = self._tasks.get(key)
        expected, events = change["expected_version"], change["events"]
        if old is None or old.version != expected:
            raise VersionConflict(task_id, expected, None if old is None else old.version)
        new = msgspec.structs.replace(
            old,
            state=change["state"],
            status_time=change["status_time"],
            version=old.version + 1,
            last_seq=old.last_seq + len(events),
            task=change["task"],
        )
        self._tasks[key] = new
        self._events[key].extend(events)
        self._queue(key, old.last_seq + 1, new.last_seq)
        return new

    def _queue(self, key: _Key, first: int, last: int) -> None:
        """Queue the deliveries of events `first..last` to the task's push configs."""
        configs = self._configs.get(key, {})
        for seq in range(first, last + 1):
            for config_id, config in configs.items():
                serial = self._next_serial()
                self._outbox[serial] = _Outbox(serial, *key, config_id, config.serial, seq)

    async def get(self, tenant: str, task_id: str) -> TaskRow | None:
        return self._tasks.get((tenant, task_id))

    async def prune(self, older_than: int) -> int:
        old = {
            key
            for key, row in self._tasks.items()
            if row.state in TERMINAL_STATES and row.status_time < older_than
        }
        pruned = 0
        for key in old:
            pruned += len(self._events[key])
            self._events[key] = []
            self._dropped[key] = self._tasks[key].last_seq  # (later events number on)
        for serial, queued in list(self._outbox.items()):
            if (queued.tenant, queued.task_id) in old:
                del self._outbox[serial]
        return pruned

    async def events(
        self, tenant: str, task_id: str, after_seq: int = 0, limit: int = 1000
    ) -> builtins.list[EventRow]:
        key = (tenant, task_id)
        log = self._events.get(key, [])
        dropped = self._dropped.get(key, 0)
        start = max(after_seq - dropped, 0)
        return [
            EventRow(seq, payload)
            for seq, payload in enumerate(log[start : start + max(limit, 0)], dropped + start + 1)
        ]

    async def list(self, tenant: str, **query: Unpack[TaskPage]) -> builtins.list[TaskRow]:
        size, before = page_of(query)
        rows = [
            row
            for row in self._matching(tenant, query)
            if before is None or (row.status_time, row.task_id) < before
        ]
        rows.sort(key=lambda row: (row.status_time, row.task_id), reverse=True)
        return rows[:size]

    async def count(self, tenant: str, **query: Unpack[TaskFilter]) -> int:
        return sum(1 for _ in self._matching(tenant, query))

    def _matching(self, tenant: str, query: TaskFilter) -> Iterable[TaskRow]:
        owner, context_id = query.get("owner"), query.get("context_id")
        state, status_after = query.get("state"), query.get("status_after")
        return (
            row
            for row in self._tasks.values()
            if row.tenant == tenant
            and (owner is None or row.owner == owner)
            and (context_id is None or row.context_id == context_id)
            and (state is None or row.state == state)
            and (status_after is None or row.status_time > status_after)
        )

    async def active(self) -> builtins.list[TaskRow]:
        return [row for row in self._tasks.values() if row.state in ACTIVE_STATES]

    # -- push configs -----------------------------------------------------------------

    async def put_push_config(
        self, tenant: str, task_id: str, config_id: str, config: bytes, protocol: str = V10
    ) -> None:
        key = (tenant, task_id)
        if key not in self._tasks:
            raise StoreError(f"push config for unknown task {task_id}")
        configs = self._configs.setdefault(key, {})
        existing = configs.get(config_id)
        if existing is None:
            configs[config_id] = _Config(self._next_serial(), config, protocol)
        else:  # a replacement keeps its place in the creation order and its queue
            existing.config, existing.protocol = config, protocol

    async def get_push_config(self, tenant: str, task_id: str, config_id: str) -> bytes | None:
        config = self._configs.get((tenant, task_id), {}).get(config_id)
        return None if config is None else config.config

    async def list_push_configs(self, tenant: str, task_id: str) -> Configs:
        # dicts keep insertion order, which is creation order
        return [(cid, c.config) for cid, c in self._configs.get((tenant, task_id), {}).items()]

    async def delete_push_config(self, tenant: str, task_id: str, config_id: str) -> None:
        configs = self._configs.get((tenant, task_id))
        if configs is not None:
            configs.pop(config_id, None)
            if not configs:
                del self._configs[(tenant, task_id)]

    # -- push outbox ------------------------------------------------------------------

    async def claim_deliveries(self, now: int, limit: int, lease: int) -> builtins.list[Delivery]:
        due = sorted(
            (row for row in self._outbox.values() if row.next_at <= now),
            key=lambda row: (row.next_at, row.id),
        )
        heads: dict[tuple[str, str, int], int] = {}  # a lane's lowest seq still queued
        for row in self._outbox.values():
            lane = (row.tenant, row.task_id, row.config_serial)
            heads[lane] = min(heads.get(lane, row.seq), row.seq)
        claimed: builtins.list[Delivery] = []
        for row in due:
            if len(claimed) >= limit:
                break
            if heads[(row.tenant, row.task_id, row.config_serial)] < row.seq:
                continue  # an earlier event of this lane goes first
            key = (row.tenant, row.task_id)
            config = self._configs.get(key, {}).get(row.config_id)
            if config is None or config.serial != row.config_serial:
                del self._outbox[row.id]  # its config was deleted after it was queued
                continue
            row.next_at = row.claimed_until = now + lease
            claimed.append(
                Delivery(
                    id=row.id,
                    tenant=row.tenant,
                    task_id=row.task_id,
                    config_id=row.config_id,
                    seq=row.seq,
                    attempts=row.attempts,
                    config=config.config,
                    payload=self._events[key][row.seq - 1 - self._dropped.get(key, 0)],
                    protocol=config.protocol,
                )
            )
        return claimed

    async def finish_delivery(self, delivery_id: int) -> None:
        self._outbox.pop(delivery_id, None)

    async def retry_delivery(self, delivery_id: int, next_at: int, error: str) -> None:
        row = self._outbox.get(delivery_id)
        if row is not None:
            row.attempts += 1
            row.next_at = next_at
            row.claimed_until = 0
            row.last_error = error

    async def drop_delivery(self, delivery_id: int, error: str) -> None:
        self._outbox.pop(delivery_id, None)
