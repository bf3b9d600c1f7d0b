"""Prompt turns through both bridges, each against the same agent called directly.

- `bridge a2a`: interlink's A2A client streams turns (`SendStreamingMessage`, each event
  read) in one context of `interlink bridge a2a --store memory: -- AGENT`, against
  interlink's ACP client driving AGENT itself in one session (`session/update`s read).
- `bridge acp`: interlink's ACP client spawns `interlink bridge acp URL` and runs turns
  in one session, against interlink's A2A client streaming the same turns to the A2A
  agent at URL directly (`a2a serve examples/a2a_agent.py:app --store memory:`).

Both agents echo a prompt of W words one chunk a word (AGENT is
`bench/bridge_peers/echo_agent.py`, which sends a plan first; the A2A agent a working
status first and the task's end last), so a turn is about W events on every path: the
short rows (W = `--words`) measure the turn, the long rows (W = `--long-words`) the
events. Rounds interleave the paths. Per path: p50 and p99 of a turn, turns/s, the
events/s its client read (an artifact update counts a chunk a part: `bridge a2a` sends
the chunks it has at once as one update), the CPU ms a turn cost the client (this
process: all clients of the bench), the bridge and the agent (the machine is shared:
CPU is the steadier measure, wall time waits for cores); for a bridge and for the A2A
agent's server (whose memory store keeps every task, as the bridge's does) the RSS
after the first tenth of its short turns and after the last (flat memory: the same; `--turns
10000 --rounds 1` is the soak) and the p50 it adds to its direct path's. The floor
rows are one loopback HTTP/1.1 request with an SSE answer of W events (+2 for the httpx
one, as an A2A stream has): raw asyncio on both ends, then httpx (as the A2A client has
it, SSE parsed by ours) against a fixed ASGI app on uvicorn (`bench.a2a_peers.floor_app`):
what a Python client and server already spend on the A2A hop of a turn, with no A2A in
it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench._process import ServerProcess, cpu_seconds, free_port
from bench._table import print_table

_ROOT = Path(__file__).resolve().parent.parent
_AGENT = [sys.executable, str(_ROOT / "bench" / "bridge_peers" / "echo_agent.py")]
_A2A_AGENT = "examples/a2a_agent.py:app"

PATH_NAMES = (
    "ACP client -> ACP agent",
    "A2A client -> bridge a2a -> ACP agent",
    "A2A client -> A2A agent",
    "ACP client -> bridge acp -> A2A agent",
    "floor: raw HTTP/1.1 + SSE, asyncio",
    "floor: httpx -> uvicorn, fixed SSE",
)
"""The rows of each kind of turn, in order."""

Turn = Callable[[str], Awaitable[int]]
"""Runs one turn of a prompt; the events its client read."""


def _rss_kib(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _store(kind: str, workdir: Path, name: str) -> str:
    return "memory:" if kind == "memory" else f"sqlite://{workdir / name}.db"


def _child(pid: int) -> int | None:
    """The first child process of `pid` (the agent `bridge a2a` spawned)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else None


@dataclass
class _Path:
    name: str
    turn: Turn
    pid: int | None = None  # the bridge's process (its RSS is sampled)
    direct: str | None = None  # the path it is compared with
    agent: int | None = None  # the agent's process (its CPU is counted)
    watched: int | None = None  # whose RSS is sampled: the bridge, or the A2A agent's server
    times: dict[str, list[float]] = field(default_factory=dict)
    events: dict[str, int] = field(default_factory=dict)
    #: CPU seconds of the client (this process), the bridge and the agent, per kind
    cpu: dict[str, list[float]] = field(default_factory=dict)
    rss: list[int] = field(default_factory=list)


@contextlib.asynccontextmanager
async def _acp_session(command: list[str], workdir: Path) -> AsyncIterator[tuple[Turn, int]]:
    """An ACP session of the agent `command` spawns: its turn, and the agent's pid."""
    from interlink.acp import LocalClient, spawn_agent

    updates = 0

    async def count(_: object) -> None:
        nonlocal updates
        updates += 1

    async with LocalClient(workdir, on_update=count) as local, spawn_agent(command, local) as agent:
        await agent.agent.initialize(LocalClient.capabilities())
        session = (await agent.agent.new_session(workdir)).session_id

        async def turn(prompt: str) -> int:
            nonlocal updates
            updates = 0
            await agent.agent.prompt(session, prompt)
            return updates

        yield turn, agent.pid


@contextlib.asynccontextmanager
async def _a2a_context(url: str, context: str) -> AsyncIterator[Turn]:
    """Streamed turns in one context of the A2A agent at `url`."""
    from interlink.a2a import A2AClient
    from interlink.a2a import types as t

    async with await A2AClient.connect(url) as client:

        async def turn(prompt: str) -> int:
            events = 0
            async for event in client.stream_message(prompt, context_id=context):
                payload = event.payload
                if isinstance(payload, t.TaskArtifactUpdateEvent):
                    events += len(payload.artifact.parts)
                else:
                    events += 1
            return events

        yield turn


async def _floor(words: int) -> tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]:
    """A raw asyncio HTTP/1.1 server answering each POST with an SSE stream of `words`
    events (one write each, as an agent's chunks come), and a keep-alive client: one
    request of it and its stream read to the end (the client, and its close)."""
    event = b'id: 1\ndata: {"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{}}}\n\n'

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                await reader.readexactly(length)
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n"
                )
                for _ in range(words):
                    writer.write(b"%x\r\n%s\r\n" % (len(event), event))
                    await writer.drain()
                writer.write(b"0\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = b'{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{}}'
    request = b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)

    async def turn() -> None:
        writer.write(request)
        await reader.readuntil(b"\r\n\r\n")
        while True:  # chunked: size line, chunk, CRLF; the SSE events parsed as lines
            size = int(await reader.readline(), 16)
            data = await reader.readexactly(size + 2)
            if not size:
                return
            for line in data[:-2].split(b"\n"):
                if line.startswith(b"data:"):
                    _ = line[5:]

    async def close() -> None:
        writer.close()
        server.close()

    return turn, close


def _cpu(path: _Path) -> list[float]:
    """CPU seconds so far of this process (the client), the bridge and the agent (0:
    none on the path)."""
    return [
        time.process_time(),
        cpu_seconds(path.pid) if path.pid else 0.0,
        cpu_seconds(path.agent) if path.agent else 0.0,
    ]


@contextlib.asynccontextmanager
async def _http_floor(url: str) -> AsyncIterator[Callable[[], Awaitable[int]]]:
    """httpx, as the A2A client has it, streaming a POST of the floor server at `url`
    (`bench.a2a_peers.floor_app` on uvicorn: fixed events, no A2A), parsed as SSE."""
    import httpx

    from interlink.a2a.client._sse import SSEParser

    body = b'{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{}}'
    async with httpx.AsyncClient() as http:

        async def turn() -> int:
            parser = SSEParser()
            events = 0
            async with http.stream("POST", url, content=body) as response:
                async for chunk in response.aiter_bytes():
                    events += len(parser.feed(chunk))
            return events + len(parser.close())

        yield turn


def _row(path: _Path, kind: str, paths: dict[str, _Path]) -> list[str]:
    times = sorted(path.times[kind])
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    total = sum(times)
    p50 = statistics.median(times)
    added = ""
    if path.direct is not None:
        base = statistics.median(paths[path.direct].times[kind])
        added = f"+{(p50 - base) * 1000:.2f}"
    rss = f"{path.rss[0] // 1024} -> {path.rss[-1] // 1024}" if kind == "short" and path.rss else ""
    cpu = [f"{seconds / len(times) * 1000:.2f}" if seconds else "" for seconds in path.cpu[kind]]
    return [
        path.name,
        kind,
        str(len(times)),
        f"{p50 * 1000:.2f}",
        f"{p99 * 1000:.2f}",
        f"{len(times) / total:.0f}",
        f"{path.events[kind] / total:.0f}",
        *cpu,
        rss,
        added,
    ]


async def _run(args: argparse.Namespace, workdir: Path) -> None:
    short = " ".join(f"word{i}" for i in range(args.words))
    long = " ".join(f"word{i}" for i in range(args.long_words))
    kinds = {"short": (short, args.turns)}
    if args.long_turns and args.long_words:
        kinds["long"] = (long, args.long_turns)
    port, plain_port = free_port(), free_port()
    bridge_command = [
        *(sys.executable, "-m", "interlink", "bridge", "a2a", "--port", str(port)),
        *("--store", _store(args.store, workdir, "bridge"), "--workspace", str(workdir / "ws")),
        *("--log-level", "warning"),
        "--",
        *_AGENT,
    ]
    plain_command = [
        *(sys.executable, "-m", "interlink", "a2a", "serve", _A2A_AGENT),
        *("--port", str(plain_port), "--store", _store(args.store, workdir, "a2a")),
        *("--log-level", "warning"),
    ]
    plain_url = f"http://127.0.0.1:{plain_port}/"
    async with contextlib.AsyncExitStack() as stack:
        bridge = stack.enter_context(
            ServerProcess("bridge a2a", bridge_command, port, workdir / "bridge.log")
        )
        plain = stack.enter_context(
            ServerProcess("a2a serve", plain_command, plain_port, workdir / "a2a.log")
        )
        await bridge.ready()
        await plain.ready()
        direct_acp, agent_pid = await stack.enter_async_context(_acp_session(_AGENT, workdir))
        via_a2a = await stack.enter_async_context(
            _a2a_context(f"http://127.0.0.1:{port}/", "bench")
        )
        direct_a2a = await stack.enter_async_context(_a2a_context(plain_url, "bench"))
        bridge_acp = [sys.executable, "-m", "interlink", "bridge", "acp", plain_url]
        via_acp, via_acp_pid = await stack.enter_async_context(_acp_session(bridge_acp, workdir))
        floor_turns: dict[str, tuple[Callable[[], Awaitable[None]], int]] = {}
        http_floors: dict[str, Callable[[], Awaitable[int]]] = {}
        for kind, (prompt, _) in kinds.items():
            words = len(prompt.split())
            floor_turn, floor_close = await _floor(words)
            stack.push_async_callback(floor_close)
            floor_turns[kind] = (floor_turn, words)
            floor_port = free_port()
            floor_command = [
                *(sys.executable, "-m", "bench.a2a_peers.serve", "--impl", "floor"),
                *("--chunks", str(words), "--port", str(floor_port)),
            ]
            server = stack.enter_context(
                ServerProcess(
                    f"floor {kind}", floor_command, floor_port, workdir / f"floor-{kind}.log"
                )
            )
            await server.ready()
            http_floors[kind] = await stack.enter_async_context(
                _http_floor(f"http://127.0.0.1:{floor_port}/")
            )

        def kind_of(prompt: str) -> str:
            return "short" if prompt is short else "long"

        async def floor(prompt: str) -> int:
            turn, events = floor_turns[kind_of(prompt)]
            await turn()
            return events

        async def http_floor(prompt: str) -> int:
            return await http_floors[kind_of(prompt)]()

        paths = {
            "acp": _Path(PATH_NAMES[0], direct_acp, agent=agent_pid),
            "bridge a2a": _Path(PATH_NAMES[1], via_a2a, bridge.process.pid, "acp"),
            "a2a": _Path(PATH_NAMES[2], direct_a2a, agent=plain.process.pid),  # (its store too)
            "bridge acp": _Path(PATH_NAMES[3], via_acp, via_acp_pid, "a2a", plain.process.pid),
            "floor": _Path(PATH_NAMES[4], floor),
            "http floor": _Path(PATH_NAMES[5], http_floor),
        }
        for path in paths.values():  # warm-up (imports, connections)
            for prompt, _ in kinds.values():
                await path.turn(prompt)
        paths["bridge a2a"].agent = _child(bridge.process.pid)
        for path in paths.values():
            path.watched = (
                path.pid or path.agent if path.direct or path.name == PATH_NAMES[2] else None
            )
        first_tenth = max(1, args.turns * args.rounds // 10)
        for index in range(args.rounds):
            for kind, (prompt, turns) in kinds.items():
                for path in paths.values():
                    times = path.times.setdefault(kind, [])
                    events = 0
                    began_cpu = _cpu(path)
                    for _ in range(turns):
                        began = time.perf_counter()
                        events += await path.turn(prompt)
                        times.append(time.perf_counter() - began)
                        if path.watched and kind == "short" and len(times) == first_tenth:
                            path.rss.append(_rss_kib(path.watched))
                    path.events[kind] = path.events.get(kind, 0) + events
                    spent = [b - a for a, b in zip(began_cpu, _cpu(path), strict=True)]
                    path.cpu[kind] = [
                        a + b for a, b in zip(path.cpu.get(kind, [0.0] * 3), spent, strict=True)
                    ]
                    if path.watched and kind == "short" and index == args.rounds - 1:
                        path.rss.append(_rss_kib(path.watched))
    print(
        f"{args.rounds} rounds of {args.turns} turns of {args.words} words"
        + (f" and {args.long_turns} of {args.long_words}" if "long" in kinds else "")
        + "; events: what the client read\n"
    )
    print_table(
        [
            *("path", "turn", "turns", "p50 ms", "p99 ms", "turns/s", "events/s"),
            *("client CPU", "bridge CPU", "agent CPU", "server RSS MiB", "+p50 ms"),
        ],
        [_row(path, kind, paths) for kind in kinds for path in paths.values()],
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench bridge",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--turns", type=int, default=200, help="short turns per round (200)")
    parser.add_argument(
        "--store",
        choices=["memory", "sqlite"],
        default="memory",
        help="the A2A servers' task store (memory: it keeps every task in RAM; sqlite: a "
        "file of the run's own, for the memory soak)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds, interleaved (3)")
    parser.add_argument("--words", type=int, default=16, help="words of a short turn (16)")
    parser.add_argument("--long-turns", type=int, default=20, help="long turns per round (20)")
    parser.add_argument("--long-words", type=int, default=1000, help="words of a long turn")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-bridge-") as workdir:
        asyncio.run(_run(args, Path(workdir)))
