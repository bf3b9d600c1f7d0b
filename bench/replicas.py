"""Cross-replica event delivery: two replicas of one A2A agent on one PostgreSQL, the task
running on replica A, a subscriber on replica B; interlink against the official SDK
(`a2a-sdk`) in its cluster mode.

interlink: two `interlink a2a serve bench.replicas_peers.interlink_agent:app` processes
with `--store postgresql://...?schema=S` (and `--lease-ttl 10` where `serve` has it).
a2a-sdk: two `bench.replicas_peers.sdk_serve` processes (uvicorn; `DefaultRequestHandler`
over `VersionedDatabaseTaskStore` and `DatabaseTaskEventStream` on SQLAlchemy + asyncpg,
which polls the shared `task_events` table, every 0.5 s by default). Each implementation
gets a fresh schema, dropped at the end; the replicas start one after the other.

The agent (`bench.replicas_peers`) publishes artifact chunks stamped with
`time.time_ns()` just before each is published, starting at a wall-clock time given in
its message. A measured task: `SendMessage` (`returnImmediately`) to A, then
`SubscribeToTask` on B, whose first event, the task's snapshot, must arrive before the
first tick (and hold none); then every tick must arrive on B exactly once, as an event
of its own, and the task must complete. Latency: the tick's arrival at this process
(the read that completed its SSE event) minus its publish stamp, one clock.

- latency: one task, `--events` ticks `--interval-ms` apart: p50 / p99 / max;
- rate: `--rate-tasks` tasks at once (1, then 4 by default), each publishing ticks as
  fast as it can (`--rate-events` on interlink, `--sdk-rate-events` on a2a-sdk: at the
  defaults each takes a second or more, long enough for CPU times from /proc, which
  count in 10 ms steps; the SDK's smaller task favours it, as it stores the whole task
  again with every event): ticks delivered on B per second, from the first publish to
  the last arrival; server CPU (A + B, from /proc) and PostgreSQL CPU (the backends
  that A and B connected, found by `application_name`) per delivered tick, and this
  process's CPU as a share of one core (near 100%: the client limits the rate). (The
  SDK's executor does not wait for its events to be stored: it queues them all at once,
  and its replica A stores them at its own pace, which is the rate here.)

A short warm-up task runs first on each pair of replicas. `--same-replica` subscribes
on A instead of B (to check the harness, or to compare).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import msgspec

from bench._process import ServerProcess, cpu_seconds, free_port
from bench._table import choices, print_table, version
from bench.a2a_peers.http11 import RawPoster
from bench.a2a_peers.load import Call
from bench.replicas_peers import Tick
from bench.replicas_peers.sse import SseError, SseStream, open_stream

_ROOT = Path(__file__).resolve().parent.parent
_HOST = "127.0.0.1"
_HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}
_NAMES = {"interlink": "interlink", "sdk": "a2a-sdk"}
_SDK_INSTALL = "pip install 'a2a-sdk[http-server,postgresql]==1.3.0'"
_TERMINAL = {
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
}
_decode = msgspec.json.Decoder().decode


# ---- the servers ---------------------------------------------------------------------


async def _backends_cpu(dsn: str, application: str) -> dict[int, float]:
    """CPU time so far of each PostgreSQL backend whose `application_name` is
    `application` (the server is on this machine: its processes are in /proc)."""
    conn = await asyncpg.connect(dsn, timeout=10)
    try:
        rows = await conn.fetch(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1", application
        )
    finally:
        await conn.close()
    return {row["pid"]: cpu_seconds(row["pid"]) for row in rows}


def _cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU used between two samples (a backend that ended in between is not counted)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def _interlink_has_lease_ttl() -> bool:
    help_text = subprocess.run(
        [sys.executable, "-m", "interlink", "a2a", "serve", "--help"],
        cwd=_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout
    return "--lease-ttl" in help_text


def _command(impl: str, port: int, dsn: str, schema: str, args: argparse.Namespace) -> list[str]:
    if impl == "interlink":
        command = [
            sys.executable,
            "-m",
            "interlink",
            "a2a",
            "serve",
            "bench.replicas_peers.interlink_agent:app",
            f"--port={port}",
            # every query parameter but `schema` is asyncpg's: a server setting here
            f"--store={dsn}{'&' if '?' in dsn else '?'}schema={schema}&application_name={schema}",
            "--log-level=warning",
        ]
        if args.lease_ttl:
            command.append(f"--lease-ttl={args.lease_ttl:g}")
        return command
    return [
        sys.executable,
        "-m",
        "bench.replicas_peers.sdk_serve",
        f"--port={port}",
        f"--dsn={dsn}",
        f"--schema={schema}",
        f"--poll={args.sdk_poll:g}",
    ]


async def _sql(dsn: str, statement: str) -> None:
    conn = await asyncpg.connect(dsn, timeout=10)
    try:
        await conn.execute(statement, timeout=30)
    finally:
        await conn.close()


# ---- one measured task ----------------------------------------------------------------


@dataclass
class TaskRun:
    """What B delivered for one task, and what was wrong with it."""

    latencies_ns: list[int] = field(default_factory=list)
    first_publish_ns: int = 0
    last_arrival_ns: int = 0
    published: int = -1  # from the agent's `done K`; -1: never said
    delivered: int = 0
    errors: list[str] = field(default_factory=list)


def _envelope(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    return msgspec.json.encode(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    )


async def _start_task(poster: RawPoster, plan: Tick, patience: float) -> str:
    body = _envelope(
        1,
        "SendMessage",
        {
            "message": {
                "messageId": uuid.uuid4().hex,
                "role": "ROLE_USER",
                "parts": [{"text": plan.text()}],
            },
            "configuration": {"returnImmediately": True},
        },
    )
    status, (answer,) = await asyncio.wait_for(poster.call(Call("POST", "/", body)), patience)
    if status != 200:
        raise RuntimeError(f"SendMessage: HTTP {status}: {answer[:300]!r}")
    result = _decode(answer).get("result")
    if not isinstance(result, dict) or "task" not in result:
        raise RuntimeError(f"SendMessage: no task in {answer[:300]!r}")
    task_id = result["task"]["id"]
    assert isinstance(task_id, str)
    return task_id


def _tick_texts(artifact: dict[str, Any]) -> list[str]:
    return [part["text"] for part in artifact.get("parts", ()) if "text" in part]


async def _follow(
    stream: SseStream, run: TaskRun, plan: Tick, idle: float, deadline: float
) -> None:
    """Read the subscription to its end (or `idle` s without an event, or the loop time
    `deadline`); fill `run`."""
    loop = asyncio.get_running_loop()
    seen: set[int] = set()
    duplicates = 0
    first = True
    state = ""
    while True:
        left = deadline - loop.time()
        try:
            item = await asyncio.wait_for(stream.events.get(), max(min(left, idle), 0.001))
        except TimeoutError:
            why = f"no event for {idle:g} s" if left > idle else "out of time"
            run.errors.append(f"{why}: {run.delivered} ticks delivered, last state {state}")
            break
        if item is None:
            if state not in _TERMINAL:
                run.errors.append(
                    f"the stream ended at state {state or '(none)'} after {run.delivered} ticks"
                    + (f" ({stream.failure})" if stream.failure else "")
                )
            break
        arrival, data = item
        message = _decode(data)
        if "error" in message:
            run.errors.append(f"JSON-RPC error {message['error']}"[:300])
            break
        result = message["result"]
        if first:
            first = False
            task = result.get("task")
            if task is None:
                run.errors.append(f"the first event is not the task: {data[:200]!r}")
            else:
                state = task["status"]["state"]
                early = sum(len(_tick_texts(a)) for a in task.get("artifacts", ()))
                if early:
                    run.errors.append(f"{early} ticks already in the snapshot")
                if arrival >= plan.start_ns:
                    run.errors.append("the subscription opened after the first tick was due")
                continue
        if "artifactUpdate" in result:
            for text in _tick_texts(result["artifactUpdate"]["artifact"]):
                seq_text, _, stamp = text.partition(" ")
                seq, published = int(seq_text), int(stamp)
                if seq in seen:
                    duplicates += 1
                    continue
                seen.add(seq)
                run.delivered += 1
                run.latencies_ns.append(arrival - published)
                if not run.first_publish_ns or published < run.first_publish_ns:
                    run.first_publish_ns = published
                run.last_arrival_ns = arrival
        elif "statusUpdate" in result:
            status = result["statusUpdate"]["status"]
            state = status["state"]
            if state in _TERMINAL:
                parts = status.get("message", {}).get("parts", [])
                text = "".join(p.get("text", "") for p in parts)
                if state == "TASK_STATE_COMPLETED" and text.startswith("done "):
                    run.published = int(text.removeprefix("done "))
                else:
                    run.errors.append(f"the task ended {state}: {text[:200]!r}")
                break
        elif "task" in result:
            state = result["task"]["status"]["state"]
            if state in _TERMINAL:
                run.errors.append(f"the task ended {state} (a Task event)")
                break
    if duplicates:
        run.errors.append(f"{duplicates} ticks delivered twice")
    if run.published >= 0:
        if run.published != plan.count:
            run.errors.append(f"the agent published {run.published} ticks of {plan.count}")
        missing = run.published - len(seen & set(range(run.published)))
        extra = len(seen - set(range(run.published)))
        if missing:
            run.errors.append(f"{missing} of {run.published} ticks never delivered")
        if extra:
            run.errors.append(f"{extra} ticks delivered that were not published")


async def measure_task(
    a: ServerProcess, b: ServerProcess, plan: Tick, patience: float, max_seconds: float
) -> TaskRun:
    """Start `plan` on A, follow it on B; give up after `patience` s without an answer or
    an event, or `max_seconds` in all."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_seconds
    run = TaskRun()
    poster = RawPoster(_HOST, a.port, tuple(_HEADERS.items()))
    stream: SseStream | None = None
    try:
        task_id = await _start_task(poster, plan, patience)
        body = _envelope(2, "SubscribeToTask", {"id": task_id})
        stream = await open_stream(_HOST, b.port, body, _HEADERS, patience)
        await _follow(stream, run, plan, patience, deadline)
    except (OSError, TimeoutError, RuntimeError, SseError, KeyError, ValueError) as exc:
        # ValueError covers msgspec.DecodeError: a malformed answer
        run.errors.append(f"{type(exc).__name__}: {exc}"[:300])
    finally:
        await poster.aclose()
        if stream is not None:
            stream.close()
    return run


# ---- the workloads ---------------------------------------------------------------------


@dataclass
class Result:
    """One workload on one implementation."""

    runs: list[TaskRun]
    server_cpu: float = 0.0
    postgres_cpu: float = 0.0
    client_busy: float | None = None

    @property
    def delivered(self) -> int:
        return sum(run.delivered for run in self.runs)

    @property
    def errors(self) -> list[str]:
        return [error for run in self.runs for error in run.errors]

    @property
    def rate(self) -> float:
        firsts = [run.first_publish_ns for run in self.runs if run.delivered]
        lasts = [run.last_arrival_ns for run in self.runs if run.delivered]
        if not firsts:
            return 0.0
        span = (max(lasts) - min(firsts)) / 1e9
        return self.delivered / span if span > 0 else 0.0

    def percentile(self, q: float) -> float | None:
        """The latency at quantile `q`, in ms (nearest rank)."""
        values = sorted(v for run in self.runs for v in run.latencies_ns)
        if not values:
            return None
        return values[max(0, math.ceil(q * len(values)) - 1)] / 1e6

    def per_event_ms(self, cpu: float) -> float | None:
        return cpu * 1000 / self.delivered if self.delivered else None


async def _run_impl(
    impl: str, args: argparse.Namespace, workdir: Path
) -> tuple[dict[str, Result], list[str]]:
    """Both replicas of `impl` on a fresh schema; the workloads; everything stopped and
    the schema dropped at the end. Returns the results by workload and notes."""
    name = _NAMES[impl]
    schema = f"bench_replicas_{os.getpid()}_{secrets.token_hex(3)}_{impl}"
    env = {**os.environ, "BENCH_REPLICAS_MAX_SECONDS": str(args.max_server_seconds)}
    results: dict[str, Result] = {}
    notes: list[str] = []
    replicas: list[ServerProcess] = []
    try:
        if impl == "sdk":  # its tables go in an existing schema; ours makes its own
            await _sql(args.dsn, f'CREATE SCHEMA "{schema}"')
        for label in ("A", "B"):
            port = free_port()
            replica = ServerProcess(
                f"{name} replica {label}",
                _command(impl, port, args.dsn, schema, args),
                port,
                workdir / f"{impl}-{label}.log",
                env=env,
            )
            replicas.append(replica)
            await replica.ready()  # one after the other: each creates or migrates tables
        a, b = replicas
        if args.same_replica:
            b = a
        lead_ns = int(args.lead_ms * 1e6)

        def plan(count: int, every_ms: float = 0.0) -> Tick:
            return Tick(count, int(every_ms * 1e6), time.time_ns() + lead_ns)

        def measure(plan: Tick) -> Awaitable[TaskRun]:
            return measure_task(a, b, plan, args.timeout, args.max_task_seconds)

        if args.warmup_events:
            warm = await measure(plan(args.warmup_events, 5.0))
            if warm.errors:
                notes.append(f"{name}, warm-up task: " + "; ".join(warm.errors[:3]))

        if "latency" in args.workloads:
            run = await measure(plan(args.events, args.interval_ms))
            results["latency"] = Result([run])
            _progress(name, "latency", results["latency"])

        for tasks in args.rate_tasks:
            count = args.sdk_rate_events if impl == "sdk" else args.rate_events
            plans = [plan(count) for _ in range(tasks)]
            running = asyncio.gather(*(measure(p) for p in plans))
            try:  # the CPU window opens just before the first tick, past the idle lead
                await asyncio.sleep(max(0.0, (plans[0].start_ns - time.time_ns()) / 1e9 - 0.03))
                cpu = a.cpu_seconds() + (b.cpu_seconds() if b is not a else 0.0)
                db_cpu = await _backends_cpu(args.dsn, schema)
            except BaseException:
                running.cancel()
                raise
            client, wall = time.process_time(), time.perf_counter()
            result = Result(list(await running))
            result.client_busy = (time.process_time() - client) / (time.perf_counter() - wall)
            result.server_cpu = a.cpu_seconds() + (b.cpu_seconds() if b is not a else 0.0) - cpu
            result.postgres_cpu = _cpu_delta(db_cpu, await _backends_cpu(args.dsn, schema))
            results[f"rate{tasks}"] = result
            _progress(name, f"rate, {tasks} task(s)", result)
    except (RuntimeError, OSError, asyncpg.PostgresError) as exc:
        notes.append(f"{name}: {type(exc).__name__}: {exc}")
    finally:
        for replica in replicas:
            replica.stop()
        for replica in replicas:
            lines = replica.log.read_text(errors="replace").splitlines()
            lines = [line for line in lines if not line.startswith("serving ")]
            if lines:
                notes.append(
                    f"{replica.name} wrote {len(lines)} log lines; first: {lines[0][:200]!r}; "
                    f"last: {lines[-1][:200]!r}"
                )
        try:
            await _sql(args.dsn, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        except Exception as exc:  # reported, not fatal: the results stand
            notes.append(f"{name}: could not drop schema {schema}: {exc}")
    return results, notes


def _progress(name: str, workload: str, result: Result) -> None:
    p50 = result.percentile(0.5)
    print(
        f"  {name:<10} {workload:<18} {result.delivered:>7} ticks, {result.rate:>9,.0f}/s, "
        f"p50 {'-' if p50 is None else f'{p50:.1f}'} ms, {len(result.errors)} errors",
        file=sys.stderr,
    )


# ---- reporting --------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _advantage(ours: float | None, theirs: float | None, higher_is_better: bool) -> str:
    if ours is None or theirs is None or not ours or not theirs:
        return "-"
    return f"{(ours / theirs if higher_is_better else theirs / ours):,.1f}x"


def _checks(result: Result | None) -> str:
    if result is None:
        return "-"
    published = sum(max(run.published, 0) for run in result.runs)
    verdict = "ok" if not result.errors else f"{len(result.errors)} errors"
    return f"{result.delivered}/{published} {verdict}"


def _rate_rows(
    tasks: int, ours: Result | None, theirs: Result | None, replica: str
) -> list[list[str]]:
    plural = "s" if tasks > 1 else ""
    rate_a, rate_b = (ours.rate if ours else None), (theirs.rate if theirs else None)
    target = ""
    if tasks == 1:
        target = ">= 10x: -"
        if ours is not None and rate_a and rate_b:
            met = rate_a >= 10 * rate_b and not ours.errors
            target = f">= 10x: {'met' if met else 'missed'}"
    rows = [
        [
            f"events/s delivered on {replica}, {tasks} task{plural} publishing",
            "-" if rate_a is None else f"{rate_a:,.0f}",
            "-" if rate_b is None else f"{rate_b:,.0f}",
            _advantage(rate_a, rate_b, higher_is_better=True),
            target,
            f"{_checks(ours)} / {_checks(theirs)}",
        ]
    ]
    for label, attribute in (
        ("server CPU per event, A + B", "server_cpu"),
        ("PostgreSQL CPU per event", "postgres_cpu"),
    ):
        cpu_a = ours.per_event_ms(getattr(ours, attribute)) if ours else None
        cpu_b = theirs.per_event_ms(getattr(theirs, attribute)) if theirs else None
        rows.append(
            [
                f"  {label}, {tasks} task{plural} (ms)",
                "-" if cpu_a is None else f"{cpu_a:.3f}",
                "-" if cpu_b is None else f"{cpu_b:.3f}",
                _advantage(cpu_a, cpu_b, higher_is_better=False),
                "",
                "",
            ]
        )
    busy_a = ours.client_busy if ours else None
    busy_b = theirs.client_busy if theirs else None
    rows.append(
        [
            f"  client CPU, share of one core, {tasks} task{plural}",
            "-" if busy_a is None else f"{busy_a:.0%}",
            "-" if busy_b is None else f"{busy_b:.0%}",
            "",
            "",
            "",
        ]
    )
    return rows


def _report(results: dict[str, dict[str, Result]], args: argparse.Namespace) -> list[str]:
    ours, theirs = results.get("interlink", {}), results.get("sdk", {})
    replica = "A" if args.same_replica else "B"
    rows: list[list[str]] = []
    targets: list[str] = []
    lat_a, lat_b = ours.get("latency"), theirs.get("latency")
    for q, label, limit in ((0.5, "p50", 10.0), (0.99, "p99", 50.0)):
        a = lat_a.percentile(q) if lat_a else None
        b = lat_b.percentile(q) if lat_b else None
        verdict = "-"
        if a is not None and lat_a is not None:
            verdict = "met" if a < limit and not lat_a.errors else "missed"
        rows.append(
            [
                f"latency {label}, publish on A to SSE on {replica} (ms)",
                _ms(a),
                _ms(b),
                _advantage(a, b, higher_is_better=False),
                f"< {limit:g} ms: {verdict}",
                f"{_checks(lat_a)} / {_checks(lat_b)}",
            ]
        )
    a_max = max((v for r in (lat_a.runs if lat_a else []) for v in r.latencies_ns), default=None)
    b_max = max((v for r in (lat_b.runs if lat_b else []) for v in r.latencies_ns), default=None)
    rows.append(
        [
            "latency max (ms)",
            _ms(None if a_max is None else a_max / 1e6),
            _ms(None if b_max is None else b_max / 1e6),
            _advantage(a_max, b_max, higher_is_better=False),
            "",
            "",
        ]
    )
    for tasks in args.rate_tasks:
        rows += _rate_rows(tasks, ours.get(f"rate{tasks}"), theirs.get(f"rate{tasks}"), replica)
    header = [
        "metric",
        "interlink",
        "a2a-sdk",
        "interlink advantage",
        "target",
        "delivered/published (il / sdk)",
    ]
    print_table(header, rows)
    for name, by_workload in results.items():
        for workload, result in by_workload.items():
            for error in dict.fromkeys(result.errors):
                targets.append(f"{_NAMES[name]}, {workload}: {error}")
    return targets


# ---- the run ------------------------------------------------------------------------------


async def _run(args: argparse.Namespace) -> None:
    # SIGTERM as Ctrl-C: cancelled, the servers are stopped and the schemas dropped
    main_task = asyncio.current_task()
    assert main_task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main_task.cancel)
    impls = choices(args.only, ("interlink", "sdk"), "implementation(s)")
    notes: list[str] = []
    if "sdk" in impls and version("a2a-sdk") == "not installed":
        impls.remove("sdk")
        notes.append(f"a2a-sdk not installed: {_SDK_INSTALL}")
    if "interlink" in impls and args.lease_ttl and not _interlink_has_lease_ttl():
        notes.append(
            f"`interlink a2a serve` has no --lease-ttl yet: served without it "
            f"(asked for {args.lease_ttl:g})"
        )
        args.lease_ttl = 0.0
    started = time.monotonic()
    results: dict[str, dict[str, Result]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-replicas-") as tmp:
        for impl in impls:
            results[impl], impl_notes = await _run_impl(impl, args, Path(tmp))
            notes += impl_notes
    elapsed = time.monotonic() - started

    where = "replica A (--same-replica)" if args.same_replica else "replica B"
    print(
        f"\nTwo replicas per implementation on one PostgreSQL ({_redact(args.dsn)}), a fresh "
        f"schema each; tasks run on replica A, subscribed to on {where}. Latency: one task, "
        f"{args.events} ticks {args.interval_ms:g} ms apart; rates: each task publishing "
        f"{args.rate_events} ticks (interlink) or {args.sdk_rate_events} (a2a-sdk) as fast as "
        f"it can. Run took {elapsed:.0f} s.\n"
    )
    lease = f", --lease-ttl {args.lease_ttl:g}" if args.lease_ttl else ", no --lease-ttl"
    print(
        f"interlink {version('interlink')} (asyncpg {version('asyncpg')}{lease}); "
        f"a2a-sdk {version('a2a-sdk')} cluster mode (VersionedDatabaseTaskStore + "
        f"DatabaseTaskEventStream, poll {args.sdk_poll:g} s; SQLAlchemy "
        f"{version('sqlalchemy')} + asyncpg), uvicorn {version('uvicorn')}, Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs\n"
    )
    errors = _report(results, args)
    print(
        "\nlatency: arrival of the tick's SSE event at this process minus the agent's "
        "time.time_ns() just before publishing it; events/s: ticks delivered on B / (last "
        "arrival - first publish); CPU per event: CPU time over the workload / ticks "
        "delivered (PostgreSQL: the backends serving the replicas). interlink advantage: "
        "theirs / ours for latency and CPU, ours / theirs for rates."
    )
    for line in [*errors, *notes]:
        print(f"\n{line}")


def _redact(dsn: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(dsn)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}:{parts.port or 5432}{parts.path}"


def _positive_ints(value: str) -> list[int]:
    numbers = [int(v) for v in value.split(",") if v]
    if any(n < 1 for n in numbers):
        raise argparse.ArgumentTypeError("task counts are at least 1")
    return numbers


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench replicas",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--only", default="interlink,sdk", help="implementations")
    parser.add_argument(
        "--dsn",
        default="postgresql://postgres@127.0.0.1:5432/test",
        help="the PostgreSQL database both implementations use (a fresh schema each)",
    )
    parser.add_argument("--workloads", default="latency,rate", help="latency, rate")
    parser.add_argument("--events", type=int, default=200, help="ticks of the latency task")
    parser.add_argument("--interval-ms", type=float, default=40.0, help="between those ticks")
    parser.add_argument(
        "--rate-events", type=int, default=5000, help="ticks per rate task, interlink"
    )
    parser.add_argument(
        "--sdk-rate-events", type=int, default=400, help="ticks per rate task, a2a-sdk"
    )
    parser.add_argument(
        "--rate-tasks", type=_positive_ints, default=[1, 4], help="tasks at once, e.g. 1,4"
    )
    parser.add_argument("--warmup-events", type=int, default=20, help="ticks of the warm-up")
    parser.add_argument(
        "--lead-ms", type=float, default=500.0, help="from starting a task to its first tick"
    )
    parser.add_argument("--sdk-poll", type=float, default=0.5, help="a2a-sdk poll interval, s")
    parser.add_argument(
        "--lease-ttl", type=float, default=10.0, help="interlink --lease-ttl (0: not passed)"
    )
    parser.add_argument(
        "--same-replica", action="store_true", help="subscribe on A too (checks the harness)"
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, help="s without an answer or event: a failure"
    )
    parser.add_argument(
        "--max-task-seconds", type=float, default=120.0, help="a measured task's time limit"
    )
    parser.add_argument(
        "--max-server-seconds", type=float, default=600.0, help="servers exit after this"
    )
    args = parser.parse_args(argv)
    args.workloads = choices(args.workloads, ("latency", "rate"), "workload(s)")
    if "rate" not in args.workloads:
        args.rate_tasks = []
    try:
        asyncio.run(_run(args))
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise SystemExit("python -m bench replicas: interrupted") from None
