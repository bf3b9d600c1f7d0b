"""Servers for `python -m bench replicas`: the same tick agent on interlink and on the
official SDK (`a2a-sdk`, in its cluster mode), two replicas of each on one PostgreSQL.

The agent, on both implementations, answers `tick count=N every_us=U start_ns=T` (U and
T optional): it waits until the wall clock reaches T (so that the benchmark can open its
subscription on the other replica first), then publishes N artifact-update events, one
appended chunk of one artifact each, whose text is `SEQ PUBLISH_NS` (the sequence number
from 0, and `time.time_ns()` just before the event is published): one every U
microseconds on an absolute schedule, or as fast as it can when U is 0. Then it
completes the task with the status message `done N`.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["ARTIFACT", "Tick", "arm_watchdog", "parse_tick", "run_ticks", "tick_text"]

ARTIFACT = "ticks"
"""The name of the one artifact whose chunks the ticks are."""

_WATCHDOG_ENV = "BENCH_REPLICAS_MAX_SECONDS"


@dataclass(frozen=True)
class Tick:
    count: int
    every_ns: int = 0
    start_ns: int = 0

    def text(self) -> str:
        return f"tick count={self.count} every_us={self.every_ns // 1000} start_ns={self.start_ns}"


def parse_tick(text: str) -> Tick:
    """The plan in a `tick ...` message; ValueError for anything else."""
    words = text.split()
    if not words or words[0] != "tick":
        raise ValueError(f"not a tick message: {text[:80]!r}")
    fields = dict(word.split("=", 1) for word in words[1:])
    return Tick(
        count=int(fields["count"]),
        every_ns=int(fields.get("every_us", "0")) * 1000,
        start_ns=int(fields.get("start_ns", "0")),
    )


def tick_text(seq: int) -> str:
    """The text of tick `seq`, stamped now."""
    return f"{seq} {time.time_ns()}"


async def wait_until(wall_ns: int) -> None:
    """Sleep until the wall clock reaches `wall_ns` (at once if it has)."""
    delay = (wall_ns - time.time_ns()) / 1e9
    if delay > 0:
        await asyncio.sleep(delay)


async def run_ticks(plan: Tick, publish: Callable[[int], Awaitable[None]]) -> int:
    """Publish the ticks of `plan` through `publish(seq)`; returns how many."""
    await wait_until(plan.start_ns)
    begin = time.time_ns()
    for seq in range(plan.count):
        if plan.every_ns:
            await wait_until(begin + seq * plan.every_ns)
        await publish(seq)
    return plan.count


def arm_watchdog() -> None:
    """Exit the process after $BENCH_REPLICAS_MAX_SECONDS (default 900): a server whose
    benchmark was killed must not outlive it."""
    seconds = float(os.environ.get(_WATCHDOG_ENV, "900"))
    timer = threading.Timer(seconds, os._exit, (3,))
    timer.daemon = True
    timer.start()
