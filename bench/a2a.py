"""A2A servers under load: interlink against the official SDK (`a2a-sdk`), and a floor.

Each server is a process of its own (`bench.a2a_peers.serve`), all on the same uvicorn
(one worker, warning logs, httptools when installed, the asyncio loop); the load
generator is this process, by default a hand-written HTTP/1.1 keep-alive client
(`--client httpx` for httpx), one connection per request in flight, `A2A-Version: 1.0`
on every request. The agent is the same echo agent on both implementations. Workloads,
each on both implementations, with tasks in memory and on SQLite:

- `send`: blocking `SendMessage` (one artifact echoing the text, then completed):
  requests/s and latency p50/p99 at 1, 16 and 64 in flight;
- `stream`: `SendStreamingMessage`, 50 appended artifact chunks per task, 16 streams at
  once: artifact events/s;
- `get`: `GetTask` of one completed task, 16 in flight: requests/s;

and the floor: a bare ASGI callable answering the same small JSON POST with a fixed
JSON-RPC result, at 1, 16 and 64 in flight. Every answer is checked (ids, state, the
echoed text, every chunk in order); a wrong one counts as an error. Server CPU per
operation comes from the server's /proc/PID/stat around the measured window; the
client's own CPU is shown too, since on a small machine the two compete. Each
measurement runs `--duration` seconds after `--warmup` seconds of the same load, and
requests still in flight at the end are waited for (at most `--timeout`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from bench._process import ServerProcess, free_port
from bench._table import choices, print_table, version
from bench.a2a_peers import load
from bench.a2a_peers.http11 import Poster, open_posters
from bench.a2a_peers.serve import http_impl

_HOST = "127.0.0.1"
_HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}
_SDK_INSTALL = "pip install 'a2a-sdk[http-server,sqlite]==1.3.0'"
_NAMES = {"interlink": "interlink", "sdk": "a2a-sdk", "floor": "floor"}


def _server(impl: str, store: str, workdir: Path, profile: Path | None) -> ServerProcess:
    """A `bench.a2a_peers.serve` process of `impl` on `store`."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "bench.a2a_peers.serve",
        f"--impl={impl}",
        f"--store={store}",
        f"--port={port}",
        f"--db-dir={workdir}",
    ]
    if profile is not None:
        command.append(f"--profile={profile}")
    name = f"{_NAMES[impl]}, {store}"
    log = workdir / f"{impl}-{store}.log"
    return ServerProcess(name, command, port, log, stop_timeout=15.0)


@dataclass
class Bench:
    """The options of a run, and its results keyed by (impl, store, workload)."""

    args: argparse.Namespace
    results: dict[tuple[str, str, str], load.Run] = field(default_factory=dict)
    logs: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    async def measure(
        self, server: ServerProcess, posters: list[Poster], request: load.Request, concurrency: int
    ) -> load.Run:
        args = self.args
        workers = posters[:concurrency]
        await load.drive(workers, request, args.warmup, args.max_ops, args.timeout)
        cpu, client, wall = server.cpu_seconds(), time.process_time(), time.perf_counter()
        run = await load.drive(workers, request, args.duration, args.max_ops, args.timeout)
        run.server_cpu = server.cpu_seconds() - cpu
        run.client_cpu = time.process_time() - client
        run.elapsed = time.perf_counter() - wall
        return run

    async def serve(self, impl: str, store: str, workdir: Path) -> None:
        args = self.args
        profile = Path(args.profile) / f"{impl}-{store}.prof" if args.profile else None
        with _server(impl, store, workdir, profile) as server:
            posters = open_posters(args.client, _HOST, server.port, _HEADERS, 64)
            try:
                await server.ready()
                for workload, concurrency, request in self._workloads(impl):
                    if callable(request):
                        run = await self.measure(server, posters, request, concurrency)
                    else:  # GetTask needs a task first
                        task_id = await self._create_task(posters[0])
                        run = await self.measure(server, posters, load.get(task_id), concurrency)
                    best = self.results.get((impl, store, workload))
                    if best is not None:  # rounds: keep the best, count every error
                        run.errors += best.errors
                        run.first_error = best.first_error or run.first_error
                        if best.rate > run.rate:
                            best.errors, best.first_error = run.errors, run.first_error
                            run = best
                    self.results[impl, store, workload] = run
                    print(
                        f"  {server.name:<18} {workload:<10} {run.rate:>9,.0f}/s "
                        f"{run.errors} errors",
                        file=sys.stderr,
                    )
            except RuntimeError as exc:
                self.failures.append(str(exc))
            finally:
                for poster in posters:
                    await poster.aclose()
                server.stop()
                lines = server.log.read_text(errors="replace").splitlines()
                if lines:
                    self.logs.append(
                        f"{server.name}: the server wrote {len(lines)} log lines; first: "
                        f"{lines[0][:200]!r}; last: {lines[-1][:200]!r}"
                    )

    def _workloads(self, impl: str) -> list[tuple[str, int, load.Request | None]]:
        wanted = self.args.workloads
        if impl == "floor":
            return [(f"floor{c}", c, load.floor) for c in (1, 16, 64)]
        plan: list[tuple[str, int, load.Request | None]] = []
        if "send" in wanted:
            plan += [(f"send{c}", c, load.send) for c in (1, 16, 64)]
        if "stream" in wanted:
            plan.append(("stream", 16, load.stream(self.args.chunks)))
        if "get" in wanted:
            plan.append(("get", 16, None))
        return plan

    async def _create_task(self, poster: Poster) -> str:
        body, check = load.send(0)
        status, answer = await asyncio.wait_for(poster.post(body), self.args.timeout)
        check(status, answer)
        task_id = msgspec.json.decode(answer)["result"]["task"]["id"]
        assert isinstance(task_id, str)
        return task_id


# ---- reporting -----------------------------------------------------------------------


def _rate(run: load.Run | None) -> str:
    return "-" if run is None else f"{run.rate:,.0f}"


def _ratio(ours: load.Run | None, theirs: load.Run | None) -> str:
    if ours is None or theirs is None or not theirs.rate:
        return "-"
    return f"{ours.rate / theirs.rate:,.1f}x"


def _latency(run: load.Run | None) -> str:
    if run is None:
        return "-"
    return f"{run.percentile(0.5) * 1000:,.1f} / {run.percentile(0.99) * 1000:,.1f}"


def _cpu(run: load.Run | None) -> str:
    return "-" if run is None else f"{run.cpu_per_event_ms:.2f}"


def _busy(run: load.Run | None) -> str:
    return "-" if run is None else f"{run.client_busy:.0%}"


def _errors(run: load.Run | None) -> str:
    return "-" if run is None else str(run.errors)


_LABELS = {
    "send1": "SendMessage, 1 in flight (req/s)",
    "send16": "SendMessage, 16 in flight (req/s)",
    "send64": "SendMessage, 64 in flight (req/s)",
    "stream": "SendStreamingMessage, 16 streams (artifact events/s)",
    "get": "GetTask, 16 in flight (req/s)",
    "floor1": "bare ASGI POST, 1 in flight (req/s)",
    "floor16": "bare ASGI POST, 16 in flight (req/s)",
    "floor64": "bare ASGI POST, 64 in flight (req/s)",
}


def _report(bench: Bench, stores: list[str]) -> None:
    results = bench.results
    ours, theirs = "interlink", "sdk"
    for store in stores:
        rows = []
        for workload in ("send1", "send16", "send64", "stream", "get"):
            a, b = results.get((ours, store, workload)), results.get((theirs, store, workload))
            if a is None and b is None:
                continue
            rows.append(
                [
                    _LABELS[workload],
                    _rate(a),
                    _rate(b),
                    _ratio(a, b),
                    _latency(a),
                    _latency(b),
                    f"{_cpu(a)} / {_cpu(b)}",
                    f"{_busy(a)} / {_busy(b)}",
                    f"{_errors(a)} / {_errors(b)}",
                ]
            )
        if not rows:
            continue
        print(f"\nTasks {'in memory' if store == 'memory' else 'on SQLite'}:\n")
        header = [
            "workload",
            "interlink",
            "a2a-sdk",
            "interlink / a2a-sdk",
            "interlink p50 / p99 ms",
            "a2a-sdk p50 / p99 ms",
            "server CPU ms per op (il / sdk)",
            "client CPU (il / sdk)",
            "errors (il / sdk)",
        ]
        print_table(header, rows)

    floor_rows = []
    for workload in ("floor1", "floor16", "floor64"):
        run = results.get(("floor", "memory", workload))
        if run is not None:
            floor_rows.append(
                [_LABELS[workload], _rate(run), _latency(run), _cpu(run), _busy(run), _errors(run)]
            )
    if floor_rows:
        print("\nFloor:\n")
        header = ["workload", "rate", "p50 / p99 ms", "server CPU ms per op", "client CPU"]
        print_table([*header, "errors"], floor_rows)
    _report_targets(results, stores)


_FLOOR_OF = {"send1": "floor1", "send16": "floor16", "send64": "floor64", "get": "floor16"}


def _ceiling(results: dict[tuple[str, str, str], load.Run], workload: str, sdk: load.Run) -> str:
    """How far above the SDK any app on this server could be at `workload`: the bare
    ASGI floor at the same concurrency, by rate and by server CPU per request."""
    floor = results.get(("floor", "memory", _FLOOR_OF.get(workload, "")))
    if floor is None or not floor.cpu_per_event_ms:
        return ""
    return (
        f" (the bare ASGI floor itself is {floor.rate / sdk.rate:.1f}x the SDK's rate and"
        f" {sdk.cpu_per_event_ms / floor.cpu_per_event_ms:.1f}x less server CPU per request)"
    )


def _report_targets(results: dict[tuple[str, str, str], load.Run], stores: list[str]) -> None:
    lines = []
    missed = []
    compared = 0
    for store in stores:
        for workload in ("send1", "send16", "send64", "stream", "get"):
            a = results.get(("interlink", store, workload))
            b = results.get(("sdk", store, workload))
            if a is None or b is None or not b.rate:
                continue
            compared += 1
            if a.rate < 10 * b.rate:
                missed.append(
                    f"{_LABELS[workload]} on {store}: {a.rate / b.rate:.1f}x"
                    + _ceiling(results, workload, b)
                )
    if compared:
        verdict = "met" if not missed else f"missed on {len(missed)}: " + "; ".join(missed)
        lines.append(f"interlink >= 10x a2a-sdk on all {compared} comparisons: {verdict}")
    for c in (1, 16, 64):
        a, floor = (
            results.get(("interlink", "memory", f"send{c}")),
            results.get(("floor", "memory", f"floor{c}")),
        )
        if a is not None and floor is not None and floor.rate:
            share = a.rate / floor.rate
            verdict = "met" if share >= 1 / 3 else "missed"
            by_cpu = floor.cpu_per_event_ms / a.cpu_per_event_ms
            lines.append(
                f"interlink blocking sends in memory, {c} in flight, vs the floor: "
                f"{share:.0%} of its rate (target >= 33%: {verdict}); by server CPU per "
                f"request, which the load on the rest of the machine moves less: {by_cpu:.0%}"
            )
    if lines:
        print("\nTargets:\n")
        for line in lines:
            print(f"- {line}")


# ---- the run -------------------------------------------------------------------------


async def _run(args: argparse.Namespace) -> None:
    impls = choices(args.only, ("interlink", "sdk", "floor"), "implementation(s)")
    stores = choices(args.stores, ("memory", "sqlite"), "store(s)")
    args.workloads = choices(args.workloads, ("send", "stream", "get"), "workload(s)")
    missing = []
    if "sdk" in impls and version("a2a-sdk") == "not installed":
        impls.remove("sdk")
        missing.append(f"a2a-sdk not installed: {_SDK_INSTALL}")
    bench = Bench(args)
    with tempfile.TemporaryDirectory(prefix="bench-a2a-") as tmp:
        for _ in range(args.rounds):  # interleaved: the machine is shared
            for store in stores:
                for impl in impls:  # one store at a time, the implementations back to back
                    if impl != "floor":
                        await bench.serve(impl, store, Path(tmp))
            if "floor" in impls:
                await bench.serve("floor", "memory", Path(tmp))

    print(
        f"A2A servers on uvicorn {version('uvicorn')} (http={http_impl()}, asyncio loop, "
        f"one worker, each server in its own process); load from this process with the "
        f"{'hand-written HTTP/1.1' if args.client == 'raw' else 'httpx'} client, one "
        f"keep-alive connection per request in flight. {args.duration:g} s per measurement "
        f"after {args.warmup:g} s of warm-up, best of {args.rounds} round(s) (a fresh server "
        f"each); {args.chunks} artifact chunks per stream.\n"
    )
    print(
        f"interlink {version('interlink')}, a2a-sdk {version('a2a-sdk')} (SQLite via "
        f"SQLAlchemy {version('sqlalchemy')} + aiosqlite {version('aiosqlite')}), "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs"
    )
    print(
        "server CPU per op: the server process's CPU time over the measured window divided "
        "by the answers (by the artifact events for streams); client CPU: this process's "
        "CPU time over the same window, as a share of one core (near 100% means the client "
        "limits the rate)."
    )
    _report(bench, stores)
    errors = [
        f"{_NAMES[impl]}, {store}, {_LABELS[workload]}: {run.errors} errors, the first: "
        f"{run.first_error}"
        for (impl, store, workload), run in bench.results.items()
        if run.errors
    ]
    for line in [*errors, *bench.failures, *bench.logs, *missing]:
        print(f"\n{line}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench a2a",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per measurement")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds of warm-up first")
    parser.add_argument("--only", default="interlink,sdk,floor", help="implementations")
    parser.add_argument("--stores", default="memory,sqlite", help="task stores")
    parser.add_argument("--workloads", default="send,stream,get", help="A2A workloads")
    parser.add_argument("--rounds", type=int, default=1, help="best of this many rounds")
    parser.add_argument("--chunks", type=int, default=50, help="artifact chunks per stream")
    parser.add_argument("--client", choices=["raw", "httpx"], default="raw")
    parser.add_argument("--max-ops", type=int, default=200_000, help="requests per measurement")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    parser.add_argument("--profile", default="", help="directory for each server's cProfile")
    args = parser.parse_args(argv)
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    asyncio.run(_run(args))
