"""JSON-RPC round trips over an OS pipe between two processes.

The client (this process) and an echo server (a child process) speak newline-delimited
JSON-RPC over the child's stdin/stdout. Two workloads: one request in flight at a time
(latency-bound) and 32 in flight (throughput-bound). interlink's `Connection` on both
sides against the floor (`bench._floor`) on both sides.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable

from bench import _floor
from bench._jsonrpc_peer import ECHO, EchoParams
from bench._table import print_table
from interlink.aio import Connection
from interlink.jsonrpc import Profile

Call = Callable[[EchoParams], Awaitable[object]]


async def _spawn(impl: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench._jsonrpc_peer",
        impl,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=4 * 1024 * 1024,
    )


async def _drive(call: Call, total: int, concurrency: int) -> float:
    params = EchoParams(text="hello, world", n=42)
    remaining = total

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await call(params)

    for _ in range(200):  # warm-up
        await call(params)
    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return total / (time.perf_counter() - start)


async def _measure(impl: str, total: int, concurrency: int) -> float:
    proc = await _spawn(impl)
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        if impl == "floor":
            floor = _floor.Client(proc.stdout, proc.stdin)
            try:
                return await _drive(lambda p: floor.request("echo", p), total, concurrency)
            finally:
                await floor.aclose()
        conn = Connection(
            proc.stdout, proc.stdin, profile=Profile(cancel_method="$/cancel_request")
        )
        async with conn:
            return await _drive(lambda p: conn.request(ECHO, p), total, concurrency)
    finally:
        await asyncio.wait_for(proc.wait(), 10)


async def _run(total: int, rounds: int) -> None:
    rows = []
    for concurrency in (1, 32):
        best: dict[str, float] = {"interlink": 0.0, "floor": 0.0}
        for _ in range(rounds):  # interleaved, best of rounds: the machine is shared
            for impl in best:
                best[impl] = max(best[impl], await _measure(impl, total, concurrency))
        rows.append(
            [
                f"round trips/s, {concurrency} in flight",
                f"{best['interlink']:,.0f}",
                f"{best['floor']:,.0f}",
                f"{best['interlink'] / best['floor']:.0%}",
            ]
        )
    print_table(["workload", "interlink", "floor", "interlink/floor"], rows)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench jsonrpc", description=__doc__)
    parser.add_argument("-n", "--requests", type=int, default=20_000)
    parser.add_argument("-r", "--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    asyncio.run(_run(args.requests, args.rounds))
