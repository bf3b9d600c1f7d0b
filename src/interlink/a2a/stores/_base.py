"""Durable A2A task state: the `TaskStore` interface.

A task is a *snapshot* (the latest `Task`, as ProtoJSON bytes, plus the columns that
queries need) and a per-task *event log*: every `StreamResponse` the task produced,
numbered 1, 2, 3, ... Each change is one `append`: the new snapshot and its events are
written in one transaction, guarded by a compare-and-set on `version`. Streams,
re-subscription (`Last-Event-ID`), push delivery and (later) other replicas all read the
log; nothing rewrites it.

Push delivery uses an outbox in the same store: when a task has push configs, `append`
also inserts one delivery row per (config, event) in the same transaction, so an
acknowledged event is never lost to a crash; a worker claims due rows, delivers, and
finishes, retries or drops them. Each config keeps the A2A version of the client that
set it (`PushConfig.protocol`), which says what its webhook is sent.

Everything is scoped by `tenant` ("" when the server has no tenants): a task id of one
tenant is invisible to every other. Times are integer microseconds since the epoch (UTC),
so ordering and keyset pagination are exact.

Implementations: `MemoryTaskStore` (nothing kept), `SqliteTaskStore` (the default, WAL);
a PostgreSQL one follows without changing this interface.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Final, NamedTuple, Protocol, TypedDict, Unpack

import msgspec

from interlink.a2a._lifecycle import ACTIVE as ACTIVE_STATES
from interlink.a2a._lifecycle import TERMINAL as TERMINAL_STATES

__all__ = [
    "ACTIVE_STATES",
    "Configs",
    "V10",
    "NewConfigs",
    "PushConfig",
    "TERMINAL_STATES",
    "Delivery",
    "EventRow",
    "StoreError",
    "TaskChange",
    "TaskExists",
    "TaskFilter",
    "TaskLeased",
    "TaskPage",
    "TaskRow",
    "TaskStore",
    "VersionConflict",
    "page_of",
]


V10: Final = "1.0"
"""The A2A version of a push config stored without one (before 0.3 configs were)."""


class StoreError(Exception):
    """A store operation could not be done."""


class VersionConflict(StoreError):
    """`append` found another version than expected: someone else wrote the task."""

    def __init__(self, task_id: str, expected: int, actual: int | None) -> None:
        self.task_id = task_id
        self.expected = expected
        self.actual = actual
        super().__init__(f"task {task_id}: expected version {expected}, found {actual}")


class TaskLeased(StoreError):
    """`append` to a task that another replica holds the lease of (it runs the task, or
    took a follow-up for it): this one may not write it now."""

    def __init__(self, task_id: str, owner: str) -> None:
        self.task_id = task_id
        self.owner = owner
        super().__init__(f"task {task_id} is leased to replica {owner}")


class TaskExists(StoreError):
    """`create` of a task id that the tenant already has."""


class TaskRow(msgspec.Struct, frozen=True, kw_only=True):
    """A task's snapshot and the columns queries use."""

    tenant: str
    task_id: str
    context_id: str
    owner: str
    """The principal that created the task ("" when anonymous)."""
    state: str
    """`TaskState` proto name of the current status, e.g. `TASK_STATE_WORKING`."""
    status_time: int
    """Timestamp of the current status, microseconds since the epoch."""
    version: int
    """1 after `create`, +1 on every `append`."""
    last_seq: int
    """Sequence number of the newest event in the log."""
    task: bytes
    """The current `Task` as ProtoJSON (full history and artifacts)."""


class EventRow(msgspec.Struct, frozen=True):
    seq: int
    payload: bytes
    """The `StreamResponse` ProtoJSON of the event."""


class Delivery(msgspec.Struct, frozen=True, kw_only=True):
    """One push notification to deliver: event `seq` of a task to one push config."""

    id: int
    tenant: str
    task_id: str
    config_id: str
    seq: int
    attempts: int
    """Delivery attempts made before this claim."""
    config: bytes
    """The `TaskPushNotificationConfig` ProtoJSON (url, token, authentication)."""
    payload: bytes
    """The event's `StreamResponse` ProtoJSON: the webhook body (for a 1.0 config)."""
    protocol: str = V10
    """The A2A version of the client that set the config (`PushConfig.protocol`)."""


Configs = Sequence[tuple[str, bytes]]
"""Push configs of a task: `(config_id, TaskPushNotificationConfig ProtoJSON)` pairs."""


class PushConfig(NamedTuple):
    """A push config to store: its id, its `TaskPushNotificationConfig` ProtoJSON, and
    the A2A version ("1.0", "0.3") of the client that set it, which says what its
    webhook is sent (1.0: each event; 0.3: the task)."""

    config_id: str
    config: bytes
    protocol: str = V10


NewConfigs = Sequence[tuple[str, bytes] | tuple[str, bytes, str]]
"""Push configs of a new task: `PushConfig`s, or `(config_id, config)` pairs (1.0)."""


class TaskFilter(TypedDict, total=False):
    """Which tasks `TaskStore.list` and `count` walk (each key left out, or None, keeps
    every task)."""

    owner: str | None
    context_id: str | None
    state: str | None
    status_after: int | None
    """Keeps the tasks whose status_time is strictly greater."""


class TaskPage(TaskFilter, total=False):
    """A `TaskFilter` and one page of its walk."""

    page_size: int
    """At most this many rows (50 when left out)."""
    before: tuple[int, str] | None
    """The keyset cursor `(status_time, task_id)` of the last row of the previous page."""


def page_of(query: TaskPage) -> tuple[int, tuple[int, str] | None]:
    """`(page_size, before)` of `query`, the default filled in."""
    return max(query.get("page_size", 50), 0), query.get("before")


class TaskChange(TypedDict):
    """What `TaskStore.append` writes."""

    expected_version: int
    task: bytes
    state: str
    status_time: int
    events: Sequence[bytes]


class TaskStore(Protocol):
    """Where tasks, their event logs, push configs and the push outbox live."""

    async def open(self) -> None:
        """Create or migrate the schema; idempotent."""
        ...

    async def close(self) -> None: ...

    # -- tasks ------------------------------------------------------------------------

    async def create(
        self, row: TaskRow, events: Sequence[bytes], push_configs: NewConfigs = ()
    ) -> TaskRow:
        """Store a new task (`row.version` and `row.last_seq` are ignored) with its first
        events (numbered from 1) and its first push configs (`PushConfig`s), whose
        deliveries of those events are queued, all in one transaction; returns the stored
        row (version 1). Raises `TaskExists`."""
        ...

    async def append(self, tenant: str, task_id: str, **change: Unpack[TaskChange]) -> TaskRow:
        """Replace the snapshot and append `events` (numbered after `last_seq`) in one
        transaction, if the stored version is `expected_version`; else `VersionConflict`.
        Also queues one outbox delivery per (push config of the task, new event)."""
        ...

    async def get(self, tenant: str, task_id: str) -> TaskRow | None: ...

    async def events(
        self, tenant: str, task_id: str, after_seq: int = 0, limit: int = 1000
    ) -> list[EventRow]:
        """Events with `seq > after_seq`, in order, at most `limit`."""
        ...

    async def list(self, tenant: str, **query: Unpack[TaskPage]) -> builtins.list[TaskRow]:
        """Tasks by `status_time` descending, then `task_id` descending, at most
        `page_size`; `before` is the keyset cursor of the last row of the previous page
        (rows strictly after it in that order are returned).

        Guarantee while tasks change between pages: the cursor is a position in the order,
        not a snapshot. A task already returned whose status_time then moves up (to "now",
        as every update does) sorts before the cursor and is not returned again; a task
        not yet returned that moves up past the cursor is skipped by the rest of this walk
        (it is newer than the walk: a new walk, or `status_after`, finds it). A task whose
        key does not change is returned exactly once. Only a status_time moving *down*
        could make a task appear twice.
        """
        ...

    async def count(self, tenant: str, **query: Unpack[TaskFilter]) -> int:
        """How many tasks `list` would walk through in all pages."""
        ...

    async def active(self) -> builtins.list[TaskRow]:
        """Every task (of every tenant) in SUBMITTED or WORKING: after a restart, the
        tasks that were running when the process died."""
        ...

    async def prune(self, older_than: int) -> int:
        """Retention: delete the event logs (and queued deliveries) of the tasks in a
        terminal state whose status_time is before `older_than` (µs); returns how many
        events went. The snapshots stay: `get` and `list` still find the tasks, `events`
        is empty."""
        ...

    # -- push configs -----------------------------------------------------------------

    async def put_push_config(
        self, tenant: str, task_id: str, config_id: str, config: bytes, protocol: str = V10
    ) -> None:
        """Insert or replace a push config (`TaskPushNotificationConfig` ProtoJSON), set
        by a client of A2A version `protocol` (`PushConfig`)."""
        ...

    async def get_push_config(self, tenant: str, task_id: str, config_id: str) -> bytes | None: ...

    async def list_push_configs(self, tenant: str, task_id: str) -> Configs:
        """(config_id, config) pairs in creation order."""
        ...

    async def delete_push_config(self, tenant: str, task_id: str, config_id: str) -> None:
        """Idempotent: deleting what does not exist is not an error."""
        ...

    # -- push outbox ------------------------------------------------------------------

    async def claim_deliveries(self, now: int, limit: int, lease: int) -> builtins.list[Delivery]:
        """Up to `limit` deliveries due at `now` (µs) and not claimed by someone else;
        each is claimed for `lease` µs (a crashed worker's claims expire). Only the head
        of a lane (one task's events to one config) is offered: event n+1 waits until
        event n is delivered or dropped, so deliveries keep their order across retries,
        restarts and replicas."""
        ...

    async def finish_delivery(self, delivery_id: int) -> None:
        """Delivered: remove the row."""
        ...

    async def retry_delivery(self, delivery_id: int, next_at: int, error: str) -> None:
        """Failed: count the attempt, release the claim, due again at `next_at` (µs)."""
        ...

    async def drop_delivery(self, delivery_id: int, error: str) -> None:
        """Give up (retry budget spent): remove the row; `error` is for the log."""
        ...
