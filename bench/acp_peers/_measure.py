"""The workload every Python client of the ACP benchmark runs (`ts_client.mjs` mirrors it).

A client module supplies `spawn(updates, agent)`: start its agent process (which streams
`updates` `agent_message_chunk` updates per prompt turn) and return an `Agent` handle.
`run(spawn)` then measures, in this order: start-up (spawn to `initialize` answered, over
several spawns), throughput (prompt turns after a warm-up, each turn checked to have had
all its updates handled by the time the `session/prompt` answer was delivered), and the
peak RSS of the agent (read from /proc before it is told to exit) and of this process.
It prints one JSON line on stdout, which `bench.acp` collects, with the CPU time the
client and the agent spent over the timed turns (this process's `time.process_time`, the
agent's scheduler run time from /proc, all its threads, in ns).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

__all__ = ["Agent", "Spawn", "cpu_seconds", "peak_rss_mib", "run", "spawn_python", "stop"]

# What each phase may take at most, so that a stuck peer ends the run instead of hanging.
_STARTUP_TIMEOUT = 30.0
_TURNS_TIMEOUT = 300.0
_CLOSE_TIMEOUT = 10.0


class Agent(Protocol):
    """A spawned agent process behind one client connection."""

    @property
    def pid(self) -> int: ...

    async def initialize(self) -> None: ...

    async def new_session(self) -> None: ...

    async def prompt(self, text: str) -> int:
        """Run one turn; how many updates had been handled when its answer arrived."""
        ...

    async def aclose(self) -> None:
        """Close the connection, wait for the process to exit (kill it if it will not)."""
        ...


Spawn = Callable[[int, str], Awaitable[Agent]]
"""`spawn(updates, agent_module)`: start the agent and connect the client to it."""


async def spawn_python(module: str, updates: int) -> asyncio.subprocess.Process:
    """Start `python -m module --updates N` on pipes (stderr stays this process's)."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        "--updates",
        str(updates),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=4 * 1024 * 1024,
    )


async def stop(process: asyncio.subprocess.Process) -> None:
    """Wait for an agent whose stdin is closed to exit; kill it if it does not."""
    try:
        await asyncio.wait_for(process.wait(), _CLOSE_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()


def peak_rss_mib(pid: int | None = None) -> float:
    """Peak resident set size (VmHWM) of a live process, or of this one, in MiB."""
    try:
        with open(f"/proc/{pid or 'self'}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    if pid is None:  # not Linux: ru_maxrss is KiB on Linux, bytes on macOS
        scale = 1024 * 1024 if sys.platform == "darwin" else 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """CPU time of process `pid` so far (its threads' scheduler run time, ns-exact);
    NaN where /proc does not say."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat", encoding="ascii") as stat:
                total += int(stat.read().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")
    return total / 1e9


async def _measure(spawn: Spawn, args: argparse.Namespace) -> dict[str, object]:
    startup = []
    for _ in range(args.spawns):
        async with asyncio.timeout(_STARTUP_TIMEOUT):
            start = time.perf_counter()
            agent = await spawn(args.updates, args.agent)
            try:
                await agent.initialize()
                startup.append(time.perf_counter() - start)
            finally:
                await agent.aclose()

    agent = await spawn(args.updates, args.agent)
    try:
        async with asyncio.timeout(_TURNS_TIMEOUT):
            await agent.initialize()
            await agent.new_session()
            for i in range(args.warmup):
                _check(i, await agent.prompt(f"warm-up {i}"), args.updates)
            agent_cpu = cpu_seconds(agent.pid)
            client_cpu = time.process_time()
            start = time.perf_counter()
            for i in range(args.turns):
                _check(i, await agent.prompt(f"turn {i}"), args.updates)
            elapsed = time.perf_counter() - start
            client_cpu = time.process_time() - client_cpu
            agent_cpu = cpu_seconds(agent.pid) - agent_cpu
        agent_rss = peak_rss_mib(agent.pid)
    finally:
        async with asyncio.timeout(_CLOSE_TIMEOUT):
            await agent.aclose()
    return {
        "turns_per_s": args.turns / elapsed,
        "updates_per_s": args.turns * args.updates / elapsed,
        "startup_s": startup,
        "agent_rss_mib": agent_rss,
        "client_rss_mib": peak_rss_mib(),
        "client_cpu_s": client_cpu,
        "agent_cpu_s": agent_cpu,
        "early_answers": 0,  # a Python client that delivered one would fail `_check`
    }


def _check(turn: int, handled: int, expected: int) -> None:
    if handled != expected:
        raise AssertionError(f"turn {turn}: {handled} updates handled, expected {expected}")


def run(spawn: Spawn, agent: str, argv: list[str] | None = None) -> None:
    """Parse the client options, measure, print the JSON line.

    `agent` is the module of the client's own agent; `--agent` runs another (a mixed pair).
    """
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agent", default=agent, help="agent module to spawn")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--spawns", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(_measure(spawn, args))), flush=True)
