"""Task stores for tests: a memory store whose creates and appends can be counted,
delayed, failed or followed by a hook."""

from __future__ import annotations

from collections.abc import Sequence

from interlink.a2a.stores._base import NewConfigs, TaskRow
from interlink.a2a.stores._memory import MemoryTaskStore


class HookedStore(MemoryTaskStore):
    """`append` records its size, awaits `before_append(n)` (the n-th append, from 1:
    it may wait or raise), then appends, then calls `after_append(row)`; `create`
    awaits `before_create(events)` first."""

    writes_never_suspend = False  # (its hooks may wait)

    def __init__(self) -> None:
        super().__init__()
        self.appends: list[int] = []
        """Events per append, in order."""

    async def before_append(self, number: int) -> None:
        return None

    async def before_create(self, events: Sequence[bytes]) -> None:
        return None

    async def create(
        self,
        row: TaskRow,
        events: Sequence[bytes],
        push_configs: NewConfigs = (),
    ) -> TaskRow:
        await self.before_create(events)
        return await super().create(row, events, push_configs)

    def after_append(self, row: TaskRow) -> None:
        return None

    async def append(
        self,
        tenant: str,
        task_id: str,
        *,
        expected_version: int,
        task: bytes,
        state: str,
        status_time: int,
        events: Sequence[bytes],
    ) -> TaskRow:
        self.appends.append(len(events))
        await self.before_append(len(self.appends))
        row = await super().append(
            tenant,
            task_id,
            expected_version=expected_version,
            task=task,
            state=state,
            status_time=status_time,
            events=events,
        )
        self.after_append(row)
        return row
