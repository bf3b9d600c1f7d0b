"""Several replicas of one agent sharing a PostgreSQL store: wake-ups, cancels, leases.

Theory of operation. Every replica is a whole server; the store is the truth and the
only channel between them. Per store, a process has one `Replicas` hub (whatever number
of tenant servers share the store), with one LISTEN connection:

- *Wake-ups.* Each commit that adds events to a task NOTIFYs `(tenant, task id, newest
  seq)`. A replica holding that task in memory (streams attached, a request waiting)
  catches up from the log after the last seq it has (`LiveTask.follow`) and fans the
  events out to its own subscribers, in order, with no gap and no duplicate. A lost
  LISTEN connection reconnects, then every task in memory catches up: nothing is lost,
  only later.
- *Cancels.* `CancelTask` on a replica that is not running the task NOTIFYs a cancel
  request; the replica running it cancels it as a local `CancelTask` would (the
  executor's `cancel` is called); the asking replica waits for the terminal state to
  reach it. If it does not in time (it refused, or it died), the asking replica writes
  the cancel itself only if no replica holds the task's lease any more; else the answer
  is "not cancelable".
- *Leases.* Every write leases the task to the writer for `lease_ttl`, and a write to a
  task leased to another replica is refused (`TaskLeased`): so one replica runs a task,
  and only one takes a follow-up for it. The hub renews the leases of the tasks running
  here every `lease_ttl / 4`, and stops an executor whose task another replica took
  over; an executor that returns waiting for input releases the lease. Every replica
  also claims, with `FOR UPDATE SKIP LOCKED`, the running tasks whose lease expired
  (their replica died) and fails them with a reason, or re-runs them when the executor
  is resumable. A dead replica's tasks are so taken over within about 1.25 x
  `lease_ttl`.
- *Retention.* With `retention` set, the event logs of tasks that ended longer ago than
  that are pruned (the snapshots stay).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from interlink.a2a._lifecycle import ACTIVE
from interlink.a2a.server._runtime import LiveTask, spawn
from interlink.a2a.stores._base import TaskRow, TaskStore

if TYPE_CHECKING:
    from interlink.a2a.server._handler import A2AServer

__all__ = ["Member", "Replicas", "ServerMember", "SharedStore"]

logger = logging.getLogger("interlink.a2a")


@runtime_checkable
class SharedStore(TaskStore, Protocol):
    """A `TaskStore` several processes share, with wake-ups and leases
    (`PostgresTaskStore`)."""

    lease_owner: str
    lease_ttl: int

    async def listen(
        self,
        callback: Callable[[str, str, int], object],
        *,
        on_reconnect: Callable[[], object] | None = None,
        on_cancel: Callable[[str, str], object] | None = None,
        ping_interval: float = 30.0,
    ) -> Callable[[], Awaitable[None]]: ...

    async def renew_leases(self, running: Sequence[tuple[str, str]]) -> list[tuple[str, str]]: ...

    async def release_lease(self, tenant: str, task_id: str) -> None: ...

    async def claim_expired(self, tenants: Sequence[str], limit: int = 100) -> list[TaskRow]: ...

    async def request_cancel(self, tenant: str, task_id: str) -> None: ...


class Member(Protocol):
    """What a server (one per tenant set) offers its hub."""

    tenants: frozenset[str]

    def remote_event(self, tenant: str, task_id: str, seq: int) -> None: ...

    def remote_cancel(self, tenant: str, task_id: str) -> None: ...

    def catch_up_all(self) -> None: ...

    def running_tasks(self) -> list[tuple[str, str]]: ...

    def lease_lost(self, tenant: str, task_id: str) -> None: ...

    async def take_over(self, row: TaskRow) -> None: ...


class Replicas:
    """This process's side of a shared store (see the module's docstring)."""

    _hubs: ClassVar[dict[int, Replicas]] = {}

    def __init__(
        self, store: SharedStore, *, lease_ttl: float = 10.0, retention: float | None = None
    ) -> None:
        if lease_ttl <= 0:
            raise ValueError("lease_ttl must be positive")
        self.store = store
        self.lease_ttl = lease_ttl
        self.retention = retention
        self.name = f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"
        """This replica's name: the owner of its leases."""
        self.members: list[Member] = []
        self._stop_listening: Callable[[], Awaitable[None]] | None = None
        self._loop: asyncio.Task[None] | None = None

    @classmethod
    async def join(
        cls,
        store: SharedStore,
        member: Member,
        *,
        lease_ttl: float = 10.0,
        retention: float | None = None,
    ) -> Replicas:
        """The hub of `store` in this process (started by its first member)."""
        hub = cls._hubs.get(id(store))
        if hub is None:
            hub = cls(store, lease_ttl=lease_ttl, retention=retention)
            await hub._start()
            cls._hubs[id(store)] = hub
        hub.members.append(member)
        return hub

    async def leave(self, member: Member) -> None:
        """`member` stops; the last one stops the hub."""
        with contextlib.suppress(ValueError):
            self.members.remove(member)
        if not self.members and Replicas._hubs.get(id(self.store)) is self:
            del Replicas._hubs[id(self.store)]
            await self._stop()

    async def _start(self) -> None:
        self.store.lease_owner = self.name
        self.store.lease_ttl = int(self.lease_ttl * 1_000_000)
        self._stop_listening = await self.store.listen(
            self._event, on_reconnect=self._reconnected, on_cancel=self._cancel
        )
        self._loop = asyncio.create_task(self._maintain(), name=f"a2a-replica {self.name}")

    async def _stop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.cancel()
            await asyncio.wait([loop])
        stop, self._stop_listening = self._stop_listening, None
        if stop is not None:
            await stop()

    def _member(self, tenant: str) -> Member | None:
        return next((m for m in self.members if tenant in m.tenants), None)

    def _event(self, tenant: str, task_id: str, seq: int) -> None:
        if member := self._member(tenant):
            member.remote_event(tenant, task_id, seq)

    def _cancel(self, tenant: str, task_id: str) -> None:
        if member := self._member(tenant):
            member.remote_cancel(tenant, task_id)

    def _reconnected(self) -> None:
        for member in self.members:
            member.catch_up_all()

    async def sweep(self) -> int:
        """Renew this replica's leases, take over the tasks of dead replicas; returns how
        many were taken over."""
        running = [key for member in self.members for key in member.running_tasks()]
        for tenant, task_id in await self.store.renew_leases(running):
            if member := self._member(tenant):
                member.lease_lost(tenant, task_id)
        tenants = sorted({t for m in self.members for t in m.tenants})
        taken = 0
        for row in await self.store.claim_expired(tenants):
            member = self._member(row.tenant)
            if member is None:
                continue
            taken += 1
            try:
                await member.take_over(row)
            except Exception:
                logger.exception("could not take over task %s", row.task_id)
        return taken

    async def _maintain(self) -> None:
        period = self.lease_ttl / 4
        next_prune = 0.0
        while True:
            try:
                await self.sweep()
                if self.retention is not None and time.monotonic() >= next_prune:
                    cutoff = int((time.time() - self.retention) * 1_000_000)
                    pruned = await self.store.prune(cutoff)
                    if pruned:
                        logger.info("pruned %d events of finished tasks", pruned)
                    next_prune = time.monotonic() + max(period, min(self.retention / 10, 3600))
            except Exception:
                logger.exception("replica maintenance failed; retrying")
            await asyncio.sleep(period * random.uniform(0.8, 1.0))


class ServerMember:
    """An `A2AServer` as a member of its store's hub: what the other replicas' news
    does to its tasks in memory."""

    def __init__(self, server: A2AServer) -> None:
        self.server = server
        self.tenants = server.tenants

    def remote_event(self, tenant: str, task_id: str, seq: int) -> None:
        """A commit (maybe another replica's) added events up to `seq` to a task."""
        live = self.server.live.get((tenant, task_id))
        if live is not None and seq > live.last_seq:
            live.follow(seq)

    def catch_up_all(self) -> None:
        """Wake-ups may have been missed: every task in memory reads the log."""
        for live in self.server.live.values():
            live.follow()

    async def release(self, live: LiveTask) -> None:
        """The executor returned with the task waiting for input: its lease goes, so
        that any replica may take the next message."""
        if self.server.replicas is not None:
            await self.server.replicas.store.release_lease(live.tenant, live.task_id)

    def running_tasks(self) -> list[tuple[str, str]]:
        """The tasks whose executors run here (their leases are renewed)."""
        return [key for key, live in self.server.live.items() if live.running]

    def lease_lost(self, tenant: str, task_id: str) -> None:
        """Another replica took the task over (this one was too slow to renew): stop the
        executor here; what it publishes now would be refused anyway."""
        live = self.server.live.get((tenant, task_id))
        if live is not None and live.running and live.runner is not None:
            logger.warning("task %s: another replica took it over; stopping it here", task_id)
            live.cancel_requested = True
            live.runner.cancel()

    def remote_cancel(self, tenant: str, task_id: str) -> None:
        """Another replica was asked to cancel a task: cancel it if it runs here."""
        live = self.server.live.get((tenant, task_id))
        if live is not None and live.running:
            spawn(self._cancel(live), f"a2a-cancel-{task_id}", self.server._background)

    async def _cancel(self, live: LiveTask) -> None:
        with self.server._holding(live):
            try:
                await self.server._cancel_running(live)
            except Exception:
                logger.exception("could not cancel task %s for another replica", live.task_id)

    async def take_over(self, row: TaskRow) -> None:
        """`row` was running on a replica whose lease expired (it died): fail it with
        the reason, or re-run it when the executor is resumable."""
        live = self.server._live(row.tenant, row.task_id, row=row)
        if live.running:
            return  # running here after all (this replica's renewal was late)
        with self.server._holding(live):
            await live.catch_up()
            if live.state in ACTIVE:
                await self.server._recover(
                    live, "the replica running this task stopped (lease expired)"
                )
