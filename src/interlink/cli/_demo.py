"""`interlink demo`: the JSON-RPC core between this process and a child over OS pipes.

The child (`python -m interlink.cli._demo serve`) serves a small calculator on stdin and
stdout; the parent makes typed calls, receives notifications, gets errors back as
exceptions, sends a malformed line and times pipelined requests.
"""

from __future__ import annotations

import asyncio
import sys
import time
from asyncio.subprocess import PIPE

import msgspec

from interlink.aio import Connection, open_stdio
from interlink.jsonrpc import NotificationType, Profile, RequestType, RpcError


class Pair(msgspec.Struct, frozen=True):
    a: float
    b: float


class Countdown(msgspec.Struct, frozen=True):
    n: int


ADD = RequestType("add", Pair, float)
DIVIDE = RequestType("divide", Pair, float)
COUNTDOWN = RequestType("countdown", Countdown, str)
TICK = NotificationType("tick", Countdown)
PROFILE = Profile(cancel_method="$/cancel_request")


async def _serve() -> None:
    reader, writer = await open_stdio()
    conn = Connection(reader, writer, profile=PROFILE, name="demo-child")

    async def add(p: Pair) -> float:
        return p.a + p.b

    async def divide(p: Pair) -> float:
        if p.b == 0:
            raise RpcError.invalid_params({"detail": "b must not be 0"})
        return p.a / p.b

    async def countdown(p: Countdown) -> str:
        for i in range(p.n, 0, -1):
            await conn.notify(TICK, Countdown(i))
        return "liftoff"

    conn.on_request(ADD, add)
    conn.on_request(DIVIDE, divide)
    conn.on_request(COUNTDOWN, countdown)
    async with conn:
        await conn.wait_closed()


async def _child() -> tuple[asyncio.subprocess.Process, asyncio.StreamWriter, asyncio.StreamReader]:
    """A calculator child process: it, its stdin and its stdout."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "interlink.cli._demo", "serve", stdin=PIPE, stdout=PIPE
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    return proc, proc.stdin, proc.stdout


async def _client(requests: int) -> int:
    proc, stdin, stdout = await _child()
    print(f"JSON-RPC 2.0 over the stdin/stdout pipes of a child process (pid {proc.pid})")
    conn = Connection(stdout, stdin, profile=PROFILE, name="demo")
    ticks: list[int] = []

    async def tick(p: Countdown) -> None:
        ticks.append(p.n)

    conn.on_notification(TICK, tick)
    async with conn:
        total = await conn.request(ADD, Pair(2, 40))
        print(f"  add(2, 40)          -> {total:g}")
        result = await conn.request(COUNTDOWN, Countdown(3))
        print(f"  countdown(3)        -> notifications {ticks}, then {result!r}")
        try:
            await conn.request(DIVIDE, Pair(1, 0))
        except RpcError as exc:
            print(f"  divide(1, 0)        -> {type(exc).__name__} {exc.code}: {exc.data}")
        try:
            await conn.request_raw("multiply", {"a": 1})
        except RpcError as exc:
            print(f"  multiply            -> {type(exc).__name__} {exc.code}: {exc.data}")
        start = time.perf_counter()
        await asyncio.gather(*(conn.request(ADD, Pair(i, 1)) for i in range(requests)))
        elapsed = time.perf_counter() - start
        print(
            f"  {requests:,} pipelined adds in {elapsed:.2f} s "
            f"({requests / elapsed:,.0f} round trips/s)"
        )
    # A malformed line straight onto the pipe: answered with -32700, the child lives on.
    proc2, stdin2, stdout2 = await _child()
    stdin2.write(b'{oops\n{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":1,"b":1}}\n')
    stdin2.close()
    for line in (await stdout2.read()).splitlines():
        print(f"  raw reply           <- {line.decode()}")
    codes = [await proc.wait(), await proc2.wait()]
    print(f"children exited with {codes} after stdin EOF")
    return max(codes)


def run(requests: int) -> int:
    return asyncio.run(_client(requests))


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        asyncio.run(_serve())
