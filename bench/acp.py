"""ACP prompt turns between a client process and the agent process it spawns.

Per implementation pair (both sides on the same implementation): the client spawns its
agent, `initialize`s, opens a session and runs N `session/prompt` turns, each answered
after K `agent_message_chunk` `session/update` notifications; a turn counts once the
client has handled all K. Each pair's client is a process of its own
(`bench.acp_peers.*_client`, `ts_client.mjs`) that prints its numbers as JSON: turns/s
and updates/s, start-up (agent spawn to the `initialize` answer), and the peak RSS of
the agent and of the client. Rounds are interleaved across pairs; throughput is the best
round, start-up the median of every spawn, memory the peak. A CPU table gives the CPU
time the client and the agent spent per turn and per update over the timed turns (the
least of the rounds: on a shared machine, others' load only adds to it), the decision
metric for the hot path, as wall time is noisy here; `--cpu` measures only that and
throughput (no start-up spawns, no import times). A second table times
`import interlink.acp` (the agent side; the client side loads on first use) and
`from interlink.acp import *` (both sides) against `import acp` (the Python SDK) in fresh
interpreters.

Besides the pairs of one implementation: `our-client` (our client, the floor agent) and
`our-agent` (the floor client, our agent) judge each side alone against the floor pair;
`typed-floor` is the floor client plus whole-schema decoding of every update and an
awaited handler for it, the least a client that validates and calls user code pays, and
our client is judged against it too; `typed-agent` (the floor client, `typed_floor_agent`)
is the same yardstick for an agent, and `typed-pair` puts the two typed floors together,
the least a pair that validates both ways pays: the interlink pair is judged against it.

Python runs with bytecode: this machine sets PYTHONDONTWRITEBYTECODE=1, which would make
every child recompile what it imports; the children get a primed PYTHONPYCACHEPREFIX
instead, as an installed package has its bytecode.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench._table import print_table

_ROOT = Path(__file__).resolve().parent.parent
_PEERS = _ROOT / "bench" / "acp_peers"
_TS_SDK = _PEERS / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
_CLIENT_TIMEOUT = 240.0  # one client run: its start-up spawns and its turns
_IMPORT_TIMEOUT = 60.0


def _dist_version(distribution: str, module: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return None
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _python_sdk_version() -> str | None:
    return _dist_version("agent-client-protocol", "acp")


def _ts_sdk_version() -> str | None:
    if shutil.which("node") is None or not _TS_SDK.is_file():
        return None
    version = json.loads(_TS_SDK.read_text(encoding="utf-8"))["version"]
    return str(version)


@dataclass(frozen=True)
class Pair:
    """A client and agent on one implementation."""

    name: str
    command: list[str]
    """The client program; the options of `bench.acp_peers._measure` follow it."""
    version: Callable[[], str | None]
    """The implementation's version, or None when it is not installed."""
    install: str = ""
    modules: tuple[str, ...] = ()
    """Python modules of the pair, imported once up front to write their bytecode."""


def _python_pair(name: str, version: Callable[[], str | None], install: str = "") -> Pair:
    module = name.replace("-", "_")
    return Pair(
        name,
        [sys.executable, "-m", f"bench.acp_peers.{module}_client"],
        version,
        install,
        (f"bench.acp_peers.{module}_client", f"bench.acp_peers.{module}_agent"),
    )


_FLOOR_AGENT = "bench.acp_peers.floor_agent"
_OUR_AGENT = "bench.acp_peers.interlink_agent"
_TYPED_AGENT = "bench.acp_peers.typed_floor_agent"
_MIXED = ("our-client", "our-agent", "typed-floor", "typed-agent", "typed-pair")
#: (ours, the yardstick) ratios printed beside those against the floor pair
_AGAINST_TYPED = (
    ("interlink", "typed-pair"),
    ("our-client", "typed-floor"),
    ("our-agent", "typed-agent"),
)

PAIRS = [
    _python_pair("interlink", lambda: _dist_version("interlink", "interlink")),
    _python_pair("floor", lambda: "asyncio + msgspec"),
    _python_pair(
        "python-sdk",
        _python_sdk_version,
        f"{sys.executable} -m pip install agent-client-protocol==0.12.1",
    ),
    # Mixed pairs: one side ours, the other the floor's, so each side is judged alone
    # (each against the floor pair: the same agent, or the same client).
    Pair(
        "our-client",
        [sys.executable, "-m", "bench.acp_peers.interlink_client", "--agent", _FLOOR_AGENT],
        lambda: "interlink client, floor agent",
        modules=("bench.acp_peers.interlink_client", _FLOOR_AGENT),
    ),
    Pair(
        "our-agent",
        [sys.executable, "-m", "bench.acp_peers.floor_client", "--agent", _OUR_AGENT],
        lambda: "floor client, interlink agent",
        modules=("bench.acp_peers.floor_client", _OUR_AGENT),
    ),
    # The floor client plus whole-schema decoding of each update and an awaited handler:
    # the least a validating client pays (our client is judged against it too).
    Pair(
        "typed-floor",
        [sys.executable, "-m", "bench.acp_peers.typed_floor_client", "--agent", _FLOOR_AGENT],
        lambda: "typed floor client, floor agent",
        modules=("bench.acp_peers.typed_floor_client", _FLOOR_AGENT),
    ),
    # The floor agent plus typed requests, a task per prompt and schema-built updates:
    # the least a validating agent pays; with the typed client, the least pair.
    Pair(
        "typed-agent",
        [sys.executable, "-m", "bench.acp_peers.floor_client", "--agent", _TYPED_AGENT],
        lambda: "floor client, typed floor agent",
        modules=("bench.acp_peers.floor_client", _TYPED_AGENT),
    ),
    Pair(
        "typed-pair",
        [sys.executable, "-m", "bench.acp_peers.typed_floor_client", "--agent", _TYPED_AGENT],
        lambda: "typed floor client, typed floor agent",
        modules=("bench.acp_peers.typed_floor_client", _TYPED_AGENT),
    ),
    Pair(
        "ts-sdk",
        ["node", str(_PEERS / "ts_client.mjs")],
        _ts_sdk_version,
        f"cd {_PEERS} && npm ci",
    ),
]


@dataclass
class Result:
    """One pair's numbers over the rounds."""

    turns_per_s: float = 0.0
    updates_per_s: float = 0.0
    startup_s: list[float] = field(default_factory=list)
    agent_rss_mib: float = 0.0
    client_rss_mib: float = 0.0
    early_answers: int = 0
    client_cpu_s: float = float("inf")
    agent_cpu_s: float = float("inf")
    error: str = ""

    def add(self, run: dict[str, object]) -> None:
        def number(key: str) -> float:
            value = run[key]
            assert isinstance(value, int | float)
            return float(value)

        self.turns_per_s = max(self.turns_per_s, number("turns_per_s"))
        self.updates_per_s = max(self.updates_per_s, number("updates_per_s"))
        samples = run["startup_s"]
        assert isinstance(samples, list)
        self.startup_s.extend(float(s) for s in samples)
        self.agent_rss_mib = max(self.agent_rss_mib, number("agent_rss_mib"))
        self.client_rss_mib = max(self.client_rss_mib, number("client_rss_mib"))
        self.early_answers += int(number("early_answers"))
        for side in ("client_cpu_s", "agent_cpu_s"):  # (not every client says)
            value = run.get(side)
            if isinstance(value, int | float) and value == value:  # (NaN: not known)
                setattr(self, side, min(getattr(self, side), float(value)))


def _bytecode_env(cache: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def _run(command: list[str], env: dict[str, str], timeout: float) -> str:
    """Run a child; its stdout."""
    return _run_both(command, env, timeout)[0]


def _run_both(command: list[str], env: dict[str, str], timeout: float) -> tuple[str, str]:
    """Run a child in its own process group (on timeout the group, so its agent too, is
    killed); its stdout and stderr. A failure raises `RuntimeError` with its last words."""
    with subprocess.Popen(
        command,
        cwd=_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise RuntimeError(f"no answer in {timeout:.0f} s") from None
    if process.returncode != 0:
        tail = err.strip().splitlines()[-1:] or [f"exit status {process.returncode}"]
        raise RuntimeError(tail[0])
    return out, err


def _measure(
    pairs: list[Pair], env: dict[str, str], options: list[str], rounds: int
) -> dict[str, Result]:
    results = {pair.name: Result() for pair in pairs}
    for index in range(rounds):  # interleaved: the machine is shared
        for pair in pairs:
            result = results[pair.name]
            if result.error:
                continue
            try:
                if index == 0 and pair.modules:  # write the bytecode
                    _run([sys.executable, "-c", f"import {', '.join(pair.modules)}"], env, 120)
                out = _run(pair.command + options, env, _CLIENT_TIMEOUT)
                result.add(json.loads(out.strip().splitlines()[-1]))
            except (RuntimeError, ValueError, KeyError, IndexError) as exc:
                result.error = str(exc) or type(exc).__name__
    return results


def _ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}x" if theirs and ours == ours else "-"


def _print_cpu(selected: list[Pair], results: dict[str, Result], turns: int, updates: int) -> None:
    """CPU µs per turn of each pair's client, agent and both, and per update; then each
    side against the floor's: the interlink pair's, our client's (with the floor agent)
    and our agent's (with the floor client)."""
    known = {
        pair.name: result
        for pair in selected
        if (result := results.get(pair.name)) is not None and not result.error
    }

    def us(seconds: float) -> float:
        return seconds / turns * 1e6

    rows = []
    for name, r in known.items():
        client, agent = us(r.client_cpu_s), us(r.agent_cpu_s)
        cells = [f"{client:,.1f}", f"{agent:,.1f}", f"{client + agent:,.1f}"]
        cells.append(f"{(client + agent) / max(updates, 1):,.2f}")
        rows.append([name, *(c.replace("inf", "-") for c in cells)])
    sides = [("interlink", "", "floor"), ("our-client", "client", "floor")]
    sides += [("our-agent", "agent", "floor"), ("typed-floor", "client", "floor")]
    sides += [("typed-agent", "agent", "floor"), ("typed-pair", "", "floor")]
    side_of = {"our-client": "client", "our-agent": "agent"}
    sides += [(ours, side_of.get(ours, ""), base) for ours, base in _AGAINST_TYPED]
    for name, side, base in sides:
        ours, theirs = known.get(name), known.get(base)
        if ours is None or theirs is None:
            continue
        cells = []
        for attr in ("client_cpu_s", "agent_cpu_s"):
            cells.append(_ratio(getattr(ours, attr), getattr(theirs, attr)))
        both = _ratio(
            ours.client_cpu_s + ours.agent_cpu_s, theirs.client_cpu_s + theirs.agent_cpu_s
        )
        rows.append([f"{name} / {base}" + (f" ({side} side)" if side else ""), *cells, both, ""])
    print_table(
        [
            "CPU µs per turn, least of the rounds (lower is better)",
            "client",
            "agent",
            "pair",
            "pair per update",
        ],
        rows,
    )


def _print_runs(selected: list[Pair], results: dict[str, Result]) -> None:
    """Metrics down, pairs across (missing ones too), then interlink's ratios."""
    rows: list[tuple[str, Callable[[Result], float], str]] = [
        ("turns/s (higher is better)", lambda r: r.turns_per_s, "{:,.0f}"),
        ("updates/s (higher is better)", lambda r: r.updates_per_s, "{:,.0f}"),
        (
            "start-up to initialize answer, ms (lower is better)",
            lambda r: statistics.median(r.startup_s) * 1000,
            "{:,.0f}",
        ),
        ("agent peak RSS, MiB (lower is better)", lambda r: r.agent_rss_mib, "{:.1f}"),
        ("client peak RSS, MiB (lower is better)", lambda r: r.client_rss_mib, "{:.1f}"),
    ]
    if not any(result.startup_s for result in results.values()):  # (`--cpu`: no spawns)
        rows = [row for row in rows if not row[0].startswith("start-up")]
    names = [pair.name for pair in selected]
    others = [n for n in names if n not in ("interlink", *_MIXED)] if "interlink" in names else []
    mixed = [name for name in _MIXED if name in names and "floor" in names]
    extra = [pair for pair in _AGAINST_TYPED if set(pair) <= set(names)]
    header = [
        "metric",
        *names,
        *(f"interlink / {name}" for name in others),
        *(f"{name} / floor" for name in mixed),
        *(f"{ours} / {theirs}" for ours, theirs in extra),
    ]
    table = []
    for label, metric, fmt in rows:
        values = {name: metric(result) for name, result in results.items() if not result.error}
        cells = [label]
        for name in names:
            if name in values:
                cells.append(fmt.format(values[name]))
            else:
                cells.append("failed" if name in results else "not installed")
        for ours, theirs in (
            [("interlink", name) for name in others] + [(name, "floor") for name in mixed] + extra
        ):
            both = ours in values and theirs in values
            cells.append(_ratio(values[ours], values[theirs]) if both else "-")
        table.append(cells)
    print_table(header, table)


@dataclass(frozen=True)
class _Import:
    code: str
    """The statement timed, e.g. ``import acp``."""
    part: str | None
    """The module holding the generated protocol types, timed inside the import."""


def _importtime_us(stderr: str, module: str) -> float:
    """The cumulative time of `module` in `python -X importtime` output, in µs."""
    for line in stderr.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if len(fields) == 3 and fields[2].strip() == module:
            return float(fields[1])
    raise RuntimeError(f"{module} not in -X importtime output")


def _import_times(imports: list[_Import], env: dict[str, str], runs: int) -> list[list[str]]:
    """Medians of `python -c "import X"` minus `python -c pass` (wall time), and of the
    generated types' cumulative time under `-X importtime`, in ms, as table rows."""
    wall: dict[str, list[float]] = {code: [] for code in ["pass", *(i.code for i in imports)]}
    part: dict[str, list[float]] = {i.part: [] for i in imports if i.part}
    for _ in range(runs):
        for code, samples in wall.items():
            start = time.perf_counter()
            _run([sys.executable, "-c", code], env, _IMPORT_TIMEOUT)
            samples.append(time.perf_counter() - start)
        for spec in imports:
            if spec.part:
                command = [sys.executable, "-X", "importtime", "-c", spec.code]
                _, err = _run_both(command, env, _IMPORT_TIMEOUT)
                part[spec.part].append(_importtime_us(err, spec.part) / 1000)
    baseline = statistics.median(wall.pop("pass"))
    total = {code: (statistics.median(s) - baseline) * 1000 for code, s in wall.items()}
    types = {name: statistics.median(s) for name, s in part.items()}
    reference = imports[-1]  # the Python SDK, when installed
    rows = []
    for spec in imports:
        ratio = _ratio(total[spec.code], total[reference.code]) if spec != reference else "-"
        rows.append([spec.code, f"{total[spec.code]:,.1f}", ratio])
        if spec.part:
            mine, theirs = types[spec.part], types[reference.part or spec.part]
            ratio = _ratio(mine, theirs) if spec != reference else "-"
            rows.append([f"  of which {spec.part} (-X importtime)", f"{mine:,.1f}", ratio])
    return rows


def _run_all(args: argparse.Namespace) -> None:
    wanted = set(args.only.split(",")) if args.only else {pair.name for pair in PAIRS}
    unknown = wanted - {pair.name for pair in PAIRS}
    if unknown:
        raise SystemExit(f"unknown pair(s): {', '.join(sorted(unknown))}")
    selected = [pair for pair in PAIRS if pair.name in wanted]
    versions = {pair.name: pair.version() for pair in selected}
    pairs = [pair for pair in selected if versions[pair.name] is not None]
    missing = [pair for pair in selected if versions[pair.name] is None]
    options = [
        f"--turns={args.turns}",
        f"--updates={args.updates}",
        f"--spawns={0 if args.cpu else args.spawns}",
        f"--warmup={args.warmup}",
    ]
    with tempfile.TemporaryDirectory(prefix="interlink-bench-pycache-") as cache:
        env = _bytecode_env(cache)
        results = _measure(pairs, env, options, args.rounds)
        times: list[list[str]] = []
        if "interlink" in wanted and not args.cpu:
            imports = [
                _Import("import interlink.acp", "interlink.acp._schema"),
                # the client side too (it loads on first use), as `import acp` loads both
                _Import("from interlink.acp import *", None),
            ]
            if _python_sdk_version() is not None:
                imports.append(_Import("import acp", "acp.schema"))
            try:
                times = _import_times(imports, env, args.import_runs)
            except RuntimeError as exc:
                times = [["failed", str(exc), "-"]]
            if imports[-1].code != "import acp":
                times.append(["import acp", "not installed", "-"])

    print(
        f"ACP: {args.turns} prompt turns x {args.updates} agent_message_chunk updates after "
        f"{args.warmup} warm-up turns; best of {args.rounds} rounds. Start-up: median of "
        f"{args.spawns} spawns x {args.rounds} rounds. Python runs with bytecode cached "
        "(a primed PYTHONPYCACHEPREFIX; PYTHONDONTWRITEBYTECODE is unset for the children).\n"
    )
    print(", ".join(f"{name}: {version}" for name, version in versions.items() if version))
    print()
    _print_runs(selected, results)
    print()
    _print_cpu(selected, results, args.turns, args.updates)
    for pair in pairs:
        result = results[pair.name]
        if result.error:
            print(f"\n{pair.name} failed: {result.error}")
        elif result.early_answers:
            print(
                f"\n{pair.name}: in {result.early_answers} turns the `session/prompt` answer "
                "was delivered before all of the turn's updates were handled (the turn then "
                "waited for them)."
            )
    for pair in missing:
        print(f"\n{pair.name} not installed: {pair.install}")
    if times:
        print()
        header = f"import, median of {args.import_runs}, bytecode cached"
        print_table([header, "ms", "interlink / acp"], times)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench acp", description=__doc__)
    parser.add_argument("--turns", type=int, default=200, help="timed prompt turns")
    parser.add_argument("--updates", type=int, default=20, help="updates per turn")
    parser.add_argument("--spawns", type=int, default=5, help="start-up spawns per round")
    parser.add_argument("--warmup", type=int, default=2, help="untimed turns first")
    parser.add_argument("--rounds", type=int, default=3, help="client runs per pair")
    parser.add_argument("--import-runs", type=int, default=7, help="imports timed per module")
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="throughput and CPU per turn only (no start-up spawns, no import times)",
    )
    parser.add_argument(
        "--only",
        default="",
        help=f"pairs to run, comma-separated: {','.join(p.name for p in PAIRS)}",
    )
    _run_all(parser.parse_args(argv))
