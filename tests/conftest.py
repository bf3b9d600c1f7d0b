"""Shared test set-up: Hypothesis settings; every async test must leave no task behind."""

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
    # Give tasks that were already finishing one turn to do so.
    await asyncio.sleep(0)
    left = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    for task in left:
        task.cancel()
    assert not left, f"tasks left behind: {left}"
