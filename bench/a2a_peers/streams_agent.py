"""`python -m bench.a2a_peers.streams_agent --port P --http h11|httptools --loop
asyncio|uvloop`: the agent of `python -m bench streams` on uvicorn as `interlink a2a
serve` runs it (one worker, warning logs), until SIGTERM or `--max-seconds`.

`big N` answers with one artifact of N bytes, then (like every other task but `once N`,
which completes after its answer) reports a status update every `--tick` seconds until
it is cancelled: a task that subscribers of its answer can stay attached to, and one
whose updates show a reader's cadence. `--store` is `memory:` or an SQLite URL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import threading
import tracemalloc
from pathlib import Path

from interlink.a2a import A2AApp, AgentExecutor, EventSink, RequestContext, TaskUpdater
from interlink.a2a import create_app as _create_app
from interlink.a2a import types as t
from interlink.cli import _a2a_uvicorn as serving


class TickingExecutor(AgentExecutor):
    def __init__(self, tick: float) -> None:
        self.tick = tick

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        await task.working()
        kind, _, size = context.text.partition(" ")
        if kind in ("big", "once"):
            await task.add_artifact(text="x" * int(size), name="answer")
        if kind == "once":
            await task.complete()
            return
        ticks = 0
        while True:
            await asyncio.sleep(self.tick)
            ticks += 1
            await task.working(f"tick {ticks}")


def create_app(tick: float, store: str) -> A2AApp:
    card = t.AgentCard(
        name="bench streams",
        description="`big N`: an N-byte answer; every task ticks until cancelled.",
        version="1.0.0",
        capabilities=t.AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[t.AgentSkill(id="big", name="big", description="big N", tags=["bench"])],
    )
    return _create_app(TickingExecutor(tick), card, store=store)


def _trace_on_signal(path: Path) -> None:
    """Trace allocations; on SIGUSR1 write the 30 largest sites to `path`."""
    tracemalloc.start(8)

    def dump(*_: object) -> None:
        snapshot = tracemalloc.take_snapshot()
        lines: list[str] = []
        for stat in snapshot.statistics("traceback")[:30]:
            lines += [str(stat), *stat.traceback.format()]
        path.write_text("\n".join(lines))

    signal.signal(signal.SIGUSR1, dump)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.a2a_peers.streams_agent", description=__doc__
    )
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--http", choices=["h11", "httptools"], default="h11")
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    parser.add_argument("--tick", type=float, default=1.0, help="seconds between updates")
    parser.add_argument("--store", default="memory:", help="memory: or sqlite:///FILE")
    parser.add_argument(
        "--tracemalloc", default="", help="on SIGUSR1, write the top allocations here"
    )
    parser.add_argument("--max-seconds", type=float, default=900.0, help="exit after this")
    args = parser.parse_args()
    # an orphaned server (its parent killed) must not outlive the benchmark
    watchdog = threading.Timer(args.max_seconds, os._exit, (3,))
    watchdog.daemon = True
    watchdog.start()
    if args.tracemalloc:
        _trace_on_signal(Path(args.tracemalloc))
    # served as `interlink a2a serve` serves
    config = serving.config(
        create_app(args.tick, args.store),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        http=args.http,
    )
    config.loop = args.loop
    serving.StreamingServer(config).run()


if __name__ == "__main__":
    main()
