"""`python -m bench.a2a_peers.serve --impl interlink|sdk|floor --store memory|sqlite
--port P`: one server for `python -m bench a2a`, on uvicorn (one worker, warning logs,
httptools when installed, the asyncio loop), until SIGTERM or `--max-seconds`.

`--profile FILE` runs the server under cProfile and writes its stats to FILE at exit.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import os
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any

import uvicorn


def http_impl() -> str:
    """The uvicorn HTTP implementation every server of a run uses."""
    return "httptools" if importlib.util.find_spec("httptools") else "h11"


def build(impl: str, store: str, url: str, db: Path) -> Any:
    store_url = "memory:" if store == "memory" else f"sqlite://{db}"
    if impl == "interlink":
        from bench.a2a_peers import interlink_agent

        return interlink_agent.create_app(store_url, url)
    if impl == "sdk":
        from bench.a2a_peers import sdk_agent

        return sdk_agent.create_app(store_url, url)
    from bench.a2a_peers import floor_app

    return floor_app.app


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.a2a_peers.serve", description=__doc__)
    parser.add_argument("--impl", choices=["interlink", "sdk", "floor"], required=True)
    parser.add_argument("--store", choices=["memory", "sqlite"], default="memory")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db-dir", default="", help="where the SQLite file goes")
    parser.add_argument("--max-seconds", type=float, default=900.0, help="exit after this")
    parser.add_argument("--profile", default="", help="write cProfile stats here at exit")
    args = parser.parse_args()

    # an orphaned server (its parent killed) must not outlive the benchmark
    watchdog = threading.Timer(args.max_seconds, os._exit, (3,))
    watchdog.daemon = True
    watchdog.start()

    with tempfile.TemporaryDirectory(prefix="bench-a2a-", dir=args.db_dir or None) as tmp:
        url = f"http://127.0.0.1:{args.port}/"
        app = build(args.impl, args.store, url, Path(tmp) / "tasks.db")
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=args.port,
            log_level="warning",
            http=http_impl(),
            loop="asyncio",
            lifespan="on",
            workers=1,
        )
        server = uvicorn.Server(config)
        if not args.profile:
            server.run()
            return
        # uvicorn re-raises the SIGTERM it caught once it has shut down; ignored, so
        # the stats get written
        signal.signal(signal.SIGTERM, lambda *_: None)
        profiler = cProfile.Profile()
        profiler.enable()
        try:
            server.run()
        finally:
            profiler.disable()
            profiler.dump_stats(args.profile)


if __name__ == "__main__":
    main()
