"""Prompt turns through `interlink bridge a2a`, against the same ACP agent driven directly.

The agent is the example agent (`examples/acp_agent.py`): a turn answers a prompt of W
words with a plan and about W message chunks. Direct: interlink's ACP client spawns it
and runs N turns in one session. Bridged: `interlink bridge a2a --store memory:` spawns
it, and interlink's A2A client streams N turns in one context (`SendStreamingMessage`,
each event read). Per path: the p50 and p99 of a turn, turns/s, the events/s the client
read, and for the bridge its RSS after the first and after the last round (flat memory:
the same). The bridge's overhead is its p50 minus the direct p50; a third row, the A2A
example agent (`a2a serve examples/a2a_agent.py:app`, an executor that streams about W
artifact chunks and no process behind it) under the same client, tells how much of it
is the A2A server's own (HTTP, the task's events, the stream).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from bench._process import ServerProcess, free_port
from bench._table import print_table

_ROOT = Path(__file__).resolve().parent.parent
_AGENT = [sys.executable, str(_ROOT / "examples" / "acp_agent.py")]


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _direct(turns: int, prompt: str, workdir: Path) -> tuple[list[float], int]:
    from interlink.acp import LocalClient, spawn_agent

    updates = 0

    async def count(_: object) -> None:
        nonlocal updates
        updates += 1

    times = []
    async with LocalClient(workdir, on_update=count) as local, spawn_agent(_AGENT, local) as agent:
        await agent.agent.initialize(LocalClient.capabilities())
        session = (await agent.agent.new_session(workdir)).session_id
        for _ in range(turns):
            began = time.perf_counter()
            await agent.agent.prompt(session, prompt)
            times.append(time.perf_counter() - began)
    return times, updates


async def _bridged(url: str, turns: int, prompt: str, context: str) -> tuple[list[float], int]:
    from interlink.a2a import A2AClient

    times, events = [], 0
    async with await A2AClient.connect(url) as client:
        for _ in range(turns):
            began = time.perf_counter()
            async for _event in client.stream_message(prompt, context_id=context):
                events += 1
            times.append(time.perf_counter() - began)
    return times, events


def _row(name: str, times: list[float], events: int, extra: str) -> list[str]:
    times = sorted(times)
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    total = sum(times)
    return [
        name,
        str(len(times)),
        f"{statistics.median(times) * 1000:.2f}",
        f"{p99 * 1000:.2f}",
        f"{len(times) / total:.0f}",
        f"{events / total:.0f}",
        extra,
    ]


async def _run(turns: int, rounds: int, words: int, workdir: Path) -> None:
    prompt = " ".join(f"word{i}" for i in range(words))
    direct_times: list[float] = []
    direct_events = 0
    bridged_times: list[float] = []
    bridged_events = 0
    port = free_port()
    command = [
        *(sys.executable, "-m", "interlink", "bridge", "a2a", "--port", str(port)),
        *("--store", "memory:", "--workspace", str(workdir / "ws"), "--log-level", "warning"),
        "--",
        *_AGENT,
    ]
    plain_port = free_port()
    plain_command = [
        *(sys.executable, "-m", "interlink", "a2a", "serve", "examples/a2a_agent.py:app"),
        *("--port", str(plain_port), "--store", "memory:", "--log-level", "warning"),
    ]
    plain_times: list[float] = []
    plain_events = 0
    rss = []
    with (
        ServerProcess("bridge", command, port, workdir / "bridge.log") as bridge,
        ServerProcess("a2a", plain_command, plain_port, workdir / "a2a.log") as plain,
    ):
        await bridge.ready()
        await plain.ready()
        url = f"http://127.0.0.1:{port}/"
        for index in range(rounds):
            times, events = await _direct(turns, prompt, workdir)
            direct_times += times
            direct_events += events
            times, events = await _bridged(url, turns, prompt, f"bench-{index}")
            bridged_times += times
            bridged_events += events
            rss.append(_rss_kib(bridge.process.pid))
            times, events = await _bridged(
                f"http://127.0.0.1:{plain_port}/", turns, f"echo {prompt}", f"bench-{index}"
            )
            plain_times += times
            plain_events += events
    overhead = statistics.median(bridged_times) - statistics.median(direct_times)
    print(f"{rounds} rounds of {turns} turns, prompt of {words} words\n")
    print_table(
        ["path", "turns", "p50 ms", "p99 ms", "turns/s", "events/s", "notes"],
        [
            _row("ACP client -> agent", direct_times, direct_events, "session/update read"),
            _row(
                "A2A client -> bridge a2a -> agent",
                bridged_times,
                bridged_events,
                f"p50 +{overhead * 1000:.2f} ms; bridge RSS {rss[0] // 1024} -> "
                f"{rss[-1] // 1024} MiB",
            ),
            _row("A2A client -> a2a serve (example)", plain_times, plain_events, "no ACP"),
        ],
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench bridge", description=__doc__)
    parser.add_argument("--turns", type=int, default=200, help="turns per round (200)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, interleaved (3)")
    parser.add_argument("--words", type=int, default=16, help="words per prompt (16)")
    args = parser.parse_args(argv)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-bridge-") as workdir:
        asyncio.run(_run(args.turns, args.rounds, args.words, Path(workdir)))
