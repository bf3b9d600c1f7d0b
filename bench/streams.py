"""Streams whose clients do not read: the server's memory, and the readers' cadence.

One interlink server process (`bench.a2a_peers.streams_agent`, on uvicorn as
`interlink a2a serve` runs it, with the h11 or the httptools parser) runs two tasks: a
ticker (a status update every second) and one whose answer is a `--payload`-byte
artifact (it ticks too, so it stays open). `--readers` clients subscribe to the ticker
and read everything. Then, in each of `--rounds` rounds, `--stuck` clients subscribe to
the big task over sockets with a 4 KiB receive buffer (set before connecting) and never
read; once the server's RSS is steady they close, and the RSS is taken again once it
has settled. With `--own`, each stuck client instead sends a `SendStreamingMessage`
whose task of its own answers `--payload` bytes and completes (tasks in SQLite then,
so that the store's memory does not count).

Printed: the server's RSS before, at the peak of each round and after it; the growth
per stuck stream (peak - before) / stuck, against the payload each of them was sent;
how much the second round grew over the first (memory that closed streams gave back is
reused, or it is not); and the longest gap between two status updates any reader saw
while the stuck streams were open (updates are due every second).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from bench._process import ServerProcess, free_port
from bench._table import print_table, version

_HOST = "127.0.0.1"
_MIB = 1024 * 1024


@dataclass
class Figures:
    """What one run measured (bytes and seconds)."""

    http: str
    stuck: int
    payload: int
    readers: int
    before: int = 0
    peaks: list[int] = field(default_factory=list)
    afters: list[int] = field(default_factory=list)
    #: the longest gap between two status updates of any reader, while streams were stuck
    worst_gap: float = 0.0
    #: status updates the readers got in all
    updates: int = 0

    @property
    def per_stream(self) -> float:
        return (self.peaks[0] - self.before) / self.stuck

    @property
    def second_round_growth(self) -> int:
        """How much higher the last round's peak is than the first's."""
        return self.peaks[-1] - self.peaks[0]


def rss(pid: int) -> int:
    """The resident set size of process `pid`, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


async def steady_rss(pid: int, *, quiet: float = 1.5, limit: float = 20.0) -> int:
    """The RSS of `pid` once it has not grown by more than 1 MiB for `quiet` seconds
    (the highest value seen then), or after `limit` seconds."""
    start = time.monotonic()
    high = rss(pid)
    since = time.monotonic()
    while time.monotonic() - since < quiet and time.monotonic() - start < limit:
        await asyncio.sleep(0.1)
        now = rss(pid)
        if now > high + _MIB:
            since = time.monotonic()
        high = max(high, now)
    return max(high, rss(pid))


async def settled_rss(pid: int, *, quiet: float = 1.5, limit: float = 20.0) -> int:
    """The RSS of `pid` once it has moved by less than 1 MiB either way for `quiet`
    seconds (memory being given back counts as moving), or after `limit` seconds."""
    start = time.monotonic()
    level = rss(pid)
    since = time.monotonic()
    while time.monotonic() - since < quiet and time.monotonic() - start < limit:
        await asyncio.sleep(0.1)
        now = rss(pid)
        if abs(now - level) > _MIB:
            level, since = now, time.monotonic()
    return rss(pid)


def _post(path_body: bytes) -> bytes:
    return (
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"A2A-Version: 1.0\r\nContent-Length: %d\r\n\r\n" % len(path_body) + path_body
    )


def _subscribe(task_id: str) -> bytes:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
    return _post(json.dumps(body).encode())


def _send(text: str, method: str = "SendMessage") -> bytes:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
    params: dict[str, object] = {"message": message}
    if method == "SendMessage":
        params["configuration"] = {"returnImmediately": True}
    return _post(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    )


async def _start_task(port: int, text: str) -> str:
    """A task started with `SendMessage` (returning at once); its id."""
    reader, writer = await asyncio.open_connection(_HOST, port)
    try:
        writer.write(_send(text))
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        answer = json.loads(await reader.readexactly(length))
        return str(answer["result"]["task"]["id"])
    finally:
        writer.close()


class Readers:
    """`count` subscribers of one task that read all; each notes when updates come."""

    _MARK = b'"statusUpdate"'

    def __init__(self) -> None:
        self.last: list[float | None] = []
        self.worst = 0.0
        self.updates = 0
        self.measuring = False
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self, port: int, task_id: str, count: int) -> None:
        self.last = [None] * count
        self._tasks = [asyncio.create_task(self._read(port, task_id, i)) for i in range(count)]
        async with asyncio.timeout(30):  # every reader has had its first update
            while any(t is None for t in self.last):
                for task in self._tasks:
                    if task.done():
                        task.result()  # a reader that failed says why
                await asyncio.sleep(0.1)

    def measure(self, on: bool) -> None:
        """Gaps count from now (`on`), or no more."""
        self.measuring = on
        now = time.monotonic()
        self.last = [now] * len(self.last)

    async def _read(self, port: int, task_id: str, index: int) -> None:
        reader, writer = await asyncio.open_connection(_HOST, port)
        try:
            writer.write(_subscribe(task_id))
            tail = b""
            while chunk := await reader.read(65536):
                seen = (tail + chunk).count(self._MARK)
                tail = chunk[-len(self._MARK) + 1 :]
                if seen:
                    now = time.monotonic()
                    last = self.last[index]
                    if self.measuring and last is not None:
                        self.worst = max(self.worst, now - last)
                        self.updates += seen
                    self.last[index] = now
        finally:
            writer.close()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _stuck_socket(port: int, request: bytes) -> socket.socket:
    """A connection with a 4 KiB receive buffer that sends `request` and never reads."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: it sticks
    sock.connect((_HOST, port))
    sock.sendall(request)
    return sock


async def measure(
    http: str,
    *,
    stuck: int,
    payload: int,
    readers: int,
    rounds: int = 2,
    tick: float = 1.0,
    loop: str = "asyncio",
    own: bool = False,
    workdir: Path,
) -> Figures:
    """One server, `readers` reading subscribers, `rounds` rounds of `stuck` streams:
    subscriptions to one task's answer, or (`own`) each the `SendStreamingMessage` of
    a task of its own that answers and completes (tasks then in SQLite, so that the
    store does not count)."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "bench.a2a_peers.streams_agent",
        f"--port={port}",
        f"--http={http}",
        f"--tick={tick}",
        f"--loop={loop}",
        f"--store={f'sqlite:///{workdir / http}.db' if own else 'memory:'}",
    ]
    figures = Figures(http, stuck, payload, readers)
    with ServerProcess(f"interlink ({http})", command, port, workdir / f"{http}.log") as server:
        await server.ready()
        pid = server.process.pid
        ticker = await _start_task(port, "tick")
        big = await _start_task(port, f"big {payload}")
        reading = Readers()
        await reading.start(port, ticker, readers)
        try:
            figures.before = await steady_rss(pid)
            reading.measure(True)
            for _ in range(rounds):
                requests = [
                    _send(f"once {payload}", "SendStreamingMessage") if own else _subscribe(big)
                    for _ in range(stuck)
                ]
                sockets = [_stuck_socket(port, request) for request in requests]
                try:
                    figures.peaks.append(await steady_rss(pid, quiet=2.0))
                finally:
                    for sock in sockets:
                        with contextlib.suppress(OSError):
                            sock.close()
                figures.afters.append(await settled_rss(pid))
            reading.measure(False)
            figures.worst_gap = reading.worst
            figures.updates = reading.updates
        finally:
            await reading.stop()
        if server.process.poll() is not None:
            raise RuntimeError(f"the server died: {server.log_tail()}")
    return figures


def _report(all_figures: list[Figures]) -> None:
    def mib(value: float) -> str:
        return f"{value / _MIB:.1f}"

    rows = []
    for f in all_figures:
        rounds = " / ".join(f"{mib(p)} -> {mib(a)}" for p, a in zip(f.peaks, f.afters, strict=True))
        rows.append(
            [
                f.http,
                mib(f.before),
                rounds,
                f"{f.per_stream / 1024:.0f} KiB ({f.per_stream / f.payload:.2f} x payload)",
                f"{mib(f.second_round_growth)}",
                f"{f.worst_gap:.2f} s ({f.updates} updates)",
            ]
        )
    print_table(
        [
            "parser",
            "RSS before (MiB)",
            "each round: peak -> after close (MiB)",
            "growth per stuck stream",
            "2nd peak - 1st (MiB)",
            "worst reader gap",
        ],
        rows,
    )


async def _run(args: argparse.Namespace) -> None:
    parsers = [p for p in args.http.split(",") if p]
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-streams-") as tmp:
        for http in parsers:
            results.append(
                await measure(
                    http,
                    stuck=args.stuck,
                    payload=args.payload,
                    readers=args.readers,
                    rounds=args.rounds,
                    loop=args.loop,
                    own=args.own,
                    workdir=Path(tmp),
                )
            )
    print(
        f"interlink {version('interlink')} on uvicorn {version('uvicorn')} ({args.loop} loop, "
        f"{'own tasks in SQLite' if args.own else 'tasks in memory'}): {args.stuck} streams of "
        f"{'their own' if args.own else 'one task'}'s {args.payload / 1000:g} KB answer over "
        f"sockets with a 4 KiB receive buffer that never read, {args.rounds} rounds; "
        f"{args.readers} readers of a task that reports every second.\n"
    )
    _report(results)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench streams",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--stuck", type=int, default=120, help="streams that never read")
    parser.add_argument("--payload", type=int, default=600_000, help="bytes of the answer")
    parser.add_argument("--readers", type=int, default=400, help="subscribers that read")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of stuck streams")
    parser.add_argument("--http", default="h11,httptools", help="uvicorn's HTTP parser(s)")
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    parser.add_argument(
        "--own",
        action="store_true",
        help="each stuck stream a SendStreamingMessage of its own task (in SQLite)",
    )
    asyncio.run(_run(parser.parse_args(argv)))
