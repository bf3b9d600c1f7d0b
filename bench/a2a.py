"""A2A servers under load: interlink against the official SDK (`a2a-sdk`) and a floor,
on each binding (`--binding jsonrpc,rest,grpc`).

Each server is a process of its own (`bench.a2a_peers.serve`). The HTTP bindings
(JSON-RPC, HTTP+JSON) all run on the same uvicorn (one worker, warning logs, httptools
when installed, the asyncio loop); gRPC on a `grpc.aio` server with its defaults. The
load generator is this process and the same for both implementations: for HTTP a
hand-written HTTP/1.1 keep-alive client (`--client httpx` for httpx), one connection per
request in flight, `A2A-Version: 1.0` on every request; for gRPC one raw `grpc.aio`
channel, the calls in flight multiplexed on it, generic calls on prebuilt bytes
(`a2a-version` metadata). The agent is the same echo agent on both implementations.
Workloads, each on both implementations, with tasks in memory and on SQLite:

- `send`: blocking `SendMessage` (one artifact echoing the text, then completed):
  requests/s and latency p50/p99 at 1, 16 and 64 in flight;
- `stream`: `SendStreamingMessage`, 50 appended artifact chunks per task, 16 streams at
  once: artifact events/s;
- `get`: `GetTask` of one completed task, 16 in flight: requests/s.

The floor of a binding is the same server with an app that does nothing: for the HTTP
bindings a bare ASGI callable answering fixed bytes on the same routes, for gRPC a bare
`grpc.aio` server with a generic handler answering fixed bytes; it runs the same
workloads, and each comparison prints it beside the two implementations. Every answer is
checked (ids, state, the echoed text, every chunk in order); a wrong one counts as an
error. Server CPU per operation comes from the server's /proc/PID/stat around the
measured window; the client's own CPU is shown too, since on a small machine the two
compete. Each measurement runs `--duration` seconds after `--warmup` seconds of the same
load, and requests still in flight at the end are waited for (at most `--timeout`).

The machine may be shared: `--rounds N` runs everything N times, interleaved (each round
starts fresh servers, the implementations back to back), keeps each figure's best, and
shows the spread of each ratio over the rounds, which is what compares.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench._process import ServerProcess, free_port
from bench._table import choices, print_table, version
from bench.a2a_peers import load
from bench.a2a_peers.serve import http_impl

_HOST = "127.0.0.1"
_SDK_INSTALL = "pip install 'a2a-sdk[http-server,sqlite,grpc]==1.3.0'"
_NAMES = {"interlink": "interlink", "sdk": "a2a-sdk", "floor": "floor"}
_BINDING_NAMES = {"jsonrpc": "JSON-RPC", "rest": "HTTP+JSON", "grpc": "gRPC"}
_WORKLOADS = ("send1", "send16", "send64", "stream", "get")
_TARGET = {"jsonrpc": 10.0, "rest": 10.0, "grpc": 5.0}
"""How many times the SDK's rate interlink is to reach on each binding..."""
_TARGETED = ("send1", "send16", "send64", "stream")
"""...on these workloads (blocking sends and stream events; GetTask is shown); where the
floor itself is under that, 80% of the floor."""
_FLOOR_SHARE = 0.8
_REST_SHARE = 0.85
"""interlink on HTTP+JSON against interlink on JSON-RPC."""

Key = tuple[str, str, str, str]
"""(binding, implementation, store, workload); the floor's store is `memory`."""


def _server(
    binding: str, impl: str, store: str, workdir: Path, args: argparse.Namespace
) -> ServerProcess:
    """A `bench.a2a_peers.serve` process of `impl` on `binding` and `store`."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "bench.a2a_peers.serve",
        f"--impl={impl}",
        f"--binding={binding}",
        f"--store={store}",
        f"--port={port}",
        f"--db-dir={workdir}",
        f"--chunks={args.chunks}",
    ]
    if args.profile:
        command.append(f"--profile={Path(args.profile) / f'{binding}-{impl}-{store}.prof'}")
    name = f"{_NAMES[impl]}, {_BINDING_NAMES[binding]}, {store}"
    log = workdir / f"{binding}-{impl}-{store}.log"
    return ServerProcess(name, command, port, log, stop_timeout=15.0)


def _callers(binding: str, kind: str, port: int) -> list[load.Caller]:
    headers = load.BINDINGS[binding].headers
    if binding == "grpc":
        from bench.a2a_peers import grpc_load

        return grpc_load.open_callers(_HOST, port, headers, 64)
    from bench.a2a_peers.http11 import open_posters

    return open_posters(kind, _HOST, port, headers, 64)


@dataclass
class Bench:
    """The options of a run, and its results: each key's run in each round."""

    args: argparse.Namespace
    results: dict[Key, dict[int, load.Run]] = field(default_factory=dict)
    logs: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    """Servers that did not start or serve."""
    missing: list[str] = field(default_factory=list)
    """What was left out, and why."""
    bindings: list[str] = field(default_factory=list)
    stores: list[str] = field(default_factory=list)

    def best(self, key: Key) -> load.Run | None:
        """The key's fastest round, with the errors of every round."""
        runs = list(self.results.get(key, {}).values())
        if not runs:
            return None
        best = max(runs, key=lambda run: run.rate)
        errors = [run for run in runs if run.errors]
        if errors:
            total = sum(run.errors for run in runs)
            best = dataclasses.replace(best, errors=total, first_error=errors[0].first_error)
        return best

    def ratios(self, a: Key, b: Key) -> list[float]:
        """a's rate over b's in each round where both ran."""
        ra, rb = self.results.get(a, {}), self.results.get(b, {})
        return [ra[r].rate / rb[r].rate for r in sorted(ra) if r in rb and rb[r].rate]

    async def measure(
        self, server: ServerProcess, callers: list[load.Caller], request: load.Request, n: int
    ) -> load.Run:
        args = self.args
        workers = callers[:n]
        await load.drive(workers, request, args.warmup, args.max_ops, args.timeout)
        cpu, client, wall = server.cpu_seconds(), time.process_time(), time.perf_counter()
        run = await load.drive(workers, request, args.duration, args.max_ops, args.timeout)
        run.server_cpu = server.cpu_seconds() - cpu
        run.client_cpu = time.process_time() - client
        run.elapsed = time.perf_counter() - wall
        return run

    async def serve(self, round_: int, binding: str, impl: str, store: str, tmp: Path) -> None:
        args = self.args
        with _server(binding, impl, store, tmp, args) as server:
            callers = _callers(binding, args.client, server.port)
            try:
                await server.ready()
                for workload, concurrency in self._plan():
                    request = await self._request(binding, impl, workload, callers[0])
                    run = await self.measure(server, callers, request, concurrency)
                    self.results.setdefault((binding, impl, store, workload), {})[round_] = run
                    print(
                        f"  {server.name:<30} {workload:<7} {run.rate:>9,.0f}/s "
                        f"{run.errors} errors",
                        file=sys.stderr,
                    )
            except RuntimeError as exc:
                self.failures.append(str(exc))
            finally:
                for caller in callers:
                    await caller.aclose()
                server.stop()
                lines = server.log.read_text(errors="replace").splitlines()
                if lines:
                    self.logs.append(
                        f"{server.name}: the server wrote {len(lines)} log lines; first: "
                        f"{lines[0][:200]!r}; last: {lines[-1][:200]!r}"
                    )

    def _plan(self) -> list[tuple[str, int]]:
        wanted = self.args.workloads
        plan: list[tuple[str, int]] = []
        if "send" in wanted:
            plan += [(f"send{c}", c) for c in (1, 16, 64)]
        if "stream" in wanted:
            plan.append(("stream", 16))
        if "get" in wanted:
            plan.append(("get", 16))
        return plan

    async def _request(
        self, binding_name: str, impl: str, workload: str, caller: load.Caller
    ) -> load.Request:
        binding = load.BINDINGS[binding_name]
        kind = workload.rstrip("0123456789")
        if impl == "floor":
            return load.floor(binding, kind, self.args.chunks)
        if kind == "send":
            return load.send(binding)
        if kind == "stream":
            return load.stream(binding, self.args.chunks)
        # GetTask needs a task first
        call, check = load.send(binding)(0)
        try:
            answer = await asyncio.wait_for(caller.call(call), self.args.timeout)
            check(answer)
        except Exception as exc:  # (the server is left, the run goes on)
            raise RuntimeError(f"the task for GetTask: {type(exc).__name__}: {exc}") from exc
        task_id = binding.result(answer, 0, "SendMessageResponse")["task"]["id"]
        assert isinstance(task_id, str)
        return load.get(binding, task_id)


# ---- reporting -----------------------------------------------------------------------


def _rate(run: load.Run | None) -> str:
    return "-" if run is None else f"{run.rate:,.0f}"


def _ratio(ours: load.Run | None, theirs: load.Run | None) -> str:
    if ours is None or theirs is None or not theirs.rate:
        return "-"
    return f"{ours.rate / theirs.rate:,.1f}x"


def _share(ours: load.Run | None, floor: load.Run | None) -> str:
    if ours is None or floor is None or not floor.rate:
        return "-"
    return f"{ours.rate / floor.rate:.0%}"


def _spread(ratios: list[float], percent: bool = False) -> str:
    if not ratios:
        return "-"
    low, high = min(ratios), max(ratios)
    form = "{:.0%}" if percent else "{:,.1f}x"
    if len(ratios) == 1:
        return form.format(low)
    return f"{form.format(low)} - {form.format(high)}"


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
}


def _target(binding: str, sdk: load.Run, floor: load.Run | None) -> tuple[float, str]:
    """The rate interlink is to reach against `sdk`, and why."""
    factor = _TARGET[binding]
    if floor is not None and floor.rate < factor * sdk.rate:
        return _FLOOR_SHARE * floor.rate, f"{_FLOOR_SHARE:.0%} of the floor"
    return factor * sdk.rate, f"{factor:g}x the SDK"


@dataclass
class _Verdicts:
    held: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)


def _report_binding(bench: Bench, binding: str, stores: list[str], verdicts: _Verdicts) -> None:
    name = _BINDING_NAMES[binding]
    for store in stores:
        rows = []
        for workload in _WORKLOADS:
            keys = [(binding, impl, store, workload) for impl in ("interlink", "sdk")]
            floor_key = (binding, "floor", "memory", workload)
            a, b, f = bench.best(keys[0]), bench.best(keys[1]), bench.best(floor_key)
            if a is None and b is None:
                continue
            target = met = "-"
            if a is not None and b is not None and b.rate and workload in _TARGETED:
                rate, why = _target(binding, b, f)
                target = f"{rate:,.0f} ({why})"
                met = "yes" if a.rate >= rate else "no"
                line = (
                    f"{name}, {_LABELS[workload]}, {store}: interlink {a.rate:,.0f}, "
                    f"target {target}; interlink / a2a-sdk {a.rate / b.rate:.1f}x "
                    f"(rounds: {_spread(bench.ratios(*keys))})"
                )
                (verdicts.held if met == "yes" else verdicts.missed).append(line)
            rows.append(
                [
                    _LABELS[workload],
                    _rate(a),
                    _rate(b),
                    _ratio(a, b),
                    _spread(bench.ratios(*keys)),
                    _rate(f),
                    _ratio(f, b),
                    _share(a, f),
                    target,
                    met,
                    _latency(a),
                    _latency(b),
                    f"{_cpu(a)} / {_cpu(b)} / {_cpu(f)}",
                    f"{_busy(a)} / {_busy(b)} / {_busy(f)}",
                    f"{_errors(a)} / {_errors(b)} / {_errors(f)}",
                ]
            )
        if not rows:
            continue
        where = "in memory" if store == "memory" else "on SQLite"
        print(f"\n{name}, tasks {where}:\n")
        header = [
            "workload",
            "interlink",
            "a2a-sdk",
            "il / sdk",
            "il / sdk, rounds",
            "floor",
            "floor / sdk",
            "il / floor",
            "target",
            "met",
            "il p50 / p99 ms",
            "sdk p50 / p99 ms",
            "server CPU ms per op (il / sdk / floor)",
            "client CPU (il / sdk / floor)",
            "errors (il / sdk / floor)",
        ]
        print_table(header, rows)


def _report_rest_vs_jsonrpc(bench: Bench, stores: list[str], verdicts: _Verdicts) -> None:
    rows = []
    for store in stores:
        for workload in _WORKLOADS:
            rest = ("rest", "interlink", store, workload)
            rpc = ("jsonrpc", "interlink", store, workload)
            a, b = bench.best(rest), bench.best(rpc)
            if a is None or b is None or not b.rate:
                continue
            share = a.rate / b.rate
            met = "yes" if share >= _REST_SHARE else "no"
            rounds = _spread(bench.ratios(rest, rpc), percent=True)
            line = f"HTTP+JSON / JSON-RPC, {_LABELS[workload]}, {store}: {share:.0%}"
            (verdicts.held if met == "yes" else verdicts.missed).append(f"{line} ({rounds})")
            rows.append([_LABELS[workload], store, _rate(a), _rate(b), f"{share:.0%}", rounds, met])
    if rows:
        print(f"\ninterlink on HTTP+JSON against JSON-RPC (target >= {_REST_SHARE:.0%}):\n")
        header = ["workload", "store", "HTTP+JSON", "JSON-RPC", "share", "rounds", "met"]
        print_table(header, rows)


def _report(bench: Bench, bindings: list[str], stores: list[str]) -> None:
    verdicts = _Verdicts()
    for binding in bindings:
        _report_binding(bench, binding, stores, verdicts)
    _report_rest_vs_jsonrpc(bench, stores, verdicts)
    if verdicts.held or verdicts.missed:
        total = len(verdicts.held) + len(verdicts.missed)
        print(f"\nTargets: {len(verdicts.held)} of {total} met.")
        for line in verdicts.missed:
            print(f"- missed: {line}")


# ---- the run -------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> Bench:
    """Every measurement of the run `args` describes (see `parse_args`)."""
    bench = Bench(args)
    bindings = choices(args.binding, ("jsonrpc", "rest", "grpc"), "binding(s)")
    impls = choices(args.only, ("interlink", "sdk", "floor"), "implementation(s)")
    stores = choices(args.stores, ("memory", "sqlite"), "store(s)")
    args.workloads = choices(args.workloads, ("send", "stream", "get"), "workload(s)")
    if "sdk" in impls and version("a2a-sdk") == "not installed":
        impls.remove("sdk")
        bench.missing.append(f"a2a-sdk not installed: {_SDK_INSTALL}")
    if "grpc" in bindings and version("grpcio") == "not installed":
        bindings.remove("grpc")
        bench.missing.append(f"grpcio not installed (gRPC skipped): {_SDK_INSTALL}")
    bench.bindings, bench.stores = bindings, stores
    servers = [i for i in impls if i != "floor"]
    with tempfile.TemporaryDirectory(prefix="bench-a2a-") as tmp:
        for round_ in range(args.rounds):  # interleaved: the machine is shared
            for store in stores:
                for binding in bindings:
                    # the implementations back to back, then the floor they are held to
                    for impl in servers:
                        await bench.serve(round_, binding, impl, store, Path(tmp))
                    if "floor" in impls and store == stores[0]:
                        await bench.serve(round_, binding, "floor", "memory", Path(tmp))
    return bench


def report(bench: Bench) -> None:
    args = bench.args
    client = "the hand-written HTTP/1.1" if args.client == "raw" else "the httpx"
    print(
        f"A2A servers, each in its own process: HTTP bindings on uvicorn "
        f"{version('uvicorn')} (http={http_impl()}, asyncio loop, one worker), gRPC on "
        f"grpc.aio {version('grpcio')} (asyncio loop). Load from this process: {client} "
        f"client for HTTP, one keep-alive connection per request in flight; for gRPC one raw "
        f"grpc.aio channel, the calls in flight multiplexed on it. {args.duration:g} s per "
        f"measurement after {args.warmup:g} s of warm-up, best of {args.rounds} round(s) "
        f"(fresh servers each, interleaved); {args.chunks} artifact chunks per stream.\n"
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
        "limits the rate). The floor: the same server answering fixed bytes; il / floor is "
        "the share of the floor's rate interlink reaches."
    )
    _report(bench, bench.bindings, bench.stores)
    errors = [
        f"{_NAMES[impl]}, {_BINDING_NAMES[binding]}, {store}, {_LABELS[workload]}: "
        f"{run.errors} errors, the first: {run.first_error}"
        for (binding, impl, store, workload) in bench.results
        if (run := bench.best((binding, impl, store, workload))) is not None and run.errors
    ]
    for line in [*errors, *bench.failures, *bench.logs, *bench.missing]:
        print(f"\n{line}")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench a2a",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--binding", default="jsonrpc,rest,grpc", help="jsonrpc, rest, grpc")
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per measurement")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds of warm-up first")
    parser.add_argument("--only", default="interlink,sdk,floor", help="implementations")
    parser.add_argument("--stores", default="memory,sqlite", help="task stores")
    parser.add_argument("--workloads", default="send,stream,get", help="A2A workloads")
    parser.add_argument("--rounds", type=int, default=1, help="best of this many rounds")
    parser.add_argument("--chunks", type=int, default=50, help="artifact chunks per stream")
    parser.add_argument("--client", choices=["raw", "httpx"], default="raw", help="for HTTP")
    parser.add_argument("--max-ops", type=int, default=200_000, help="requests per measurement")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    parser.add_argument("--profile", default="", help="directory for each server's cProfile")
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    report(asyncio.run(run(args)))
