"""Waiting for streams to attach to a task, on an event rather than a clock."""

from __future__ import annotations

import asyncio

import pytest

from interlink.a2a.server._runtime import LiveTask, Subscription
from tests.a2a.conftest import Served

__all__ = ["attached"]


async def attached(server: Served, task_id: object, count: int) -> None:
    """Until `count` streams are attached to the task (10 s at most). The server has no event
    for "subscribed", so `LiveTask.subscribe` is wrapped meanwhile to wake this each time
    a stream attaches (streams started just before this call have not run yet: asyncio
    runs them only when this awaits)."""
    key = ("", str(task_id))
    changed = asyncio.Event()
    subscribe = LiveTask.subscribe

    def watched(
        live: LiveTask, limit: int, *, close_on_interrupt: bool, **more: int
    ) -> Subscription:
        changed.set()
        return subscribe(live, limit, close_on_interrupt=close_on_interrupt, **more)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LiveTask, "subscribe", watched)
        async with asyncio.timeout(10):
            while True:
                live = server.app.server.live.get(key)
                if live is not None and len(live.subscriptions) >= count:
                    return
                changed.clear()
                await changed.wait()
