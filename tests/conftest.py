"""Shared test set-up: Hypothesis settings; every async test must leave no task behind;
modules marked `any_loop` run on asyncio's own loop and on uvloop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from hypothesis import HealthCheck, settings

# The machine is shared and noisy: no per-example deadlines, and no health check that
# fails a run for being slow.
settings.register_profile(
    "interlink", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("interlink")


@pytest.fixture(autouse=True)
async def no_leftover_tasks() -> AsyncIterator[None]:
    """Fails a test that leaves a task running on its event loop."""
    yield
    current = asyncio.current_task()
    # Give tasks that were already finishing a few turns to do so (closing an async
    # generator the garbage collector found takes the loop two: a callback, a task).
    for _ in range(5):
        await asyncio.sleep(0)
        left = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
        if not left:
            break
    for task in left:
        task.cancel()
    assert not left, f"tasks left behind: {left}"


def pytest_asyncio_loop_factories(config: object, item: pytest.Item) -> dict[str, object]:
    """Tests marked `any_loop` (those on real pipes, processes and sockets) run twice:
    on asyncio's loop and on uvloop, which servers and editors often run us on (its
    transports are not asyncio's classes). The rest run on asyncio's loop."""
    if item.get_closest_marker("any_loop") is None:
        return {"asyncio": asyncio.new_event_loop}
    import uvloop

    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
