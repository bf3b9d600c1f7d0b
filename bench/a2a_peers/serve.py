"""`python -m bench.a2a_peers.serve --impl interlink|sdk|floor --binding
jsonrpc|rest|grpc --store memory|sqlite --port P`: one server for `python -m bench a2a`,
until SIGTERM or `--max-seconds`. The HTTP bindings run on uvicorn (one worker, warning
logs, httptools when installed, the asyncio loop); gRPC on a `grpc.aio` server with its
defaults, on the asyncio loop.

`--profile FILE` runs the server under cProfile and writes its stats to FILE at exit.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import importlib.util
import os
import signal
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn


def http_impl() -> str:
    """The uvicorn HTTP implementation every server of a run uses."""
    return "httptools" if importlib.util.find_spec("httptools") else "h11"


def build(args: argparse.Namespace, url: str, store: str) -> Any:
    """The ASGI app of `args.impl` on an HTTP binding."""
    if args.impl == "interlink":
        from bench.a2a_peers import interlink_agent

        return interlink_agent.create_app(store, url, args.binding)
    if args.impl == "sdk":
        from bench.a2a_peers import sdk_agent

        return sdk_agent.create_app(store, url, args.binding)
    from bench.a2a_peers import floor_app

    return floor_app.create_app(args.chunks)


# what interlink's `GrpcServer` gives grpc.aio, for the SDK and the floor too
_GRPC_OPTIONS = [
    ("grpc.max_receive_message_length", 16 * 1024 * 1024),
    ("grpc.max_send_message_length", 16 * 1024 * 1024),
    ("grpc.so_reuseport", 0),
]


async def serve_grpc(args: argparse.Namespace, url: str, store: str) -> None:
    """`args.impl`'s gRPC server until SIGTERM."""
    import grpc.aio

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    address = f"127.0.0.1:{args.port}"
    if args.impl == "interlink":
        from bench.a2a_peers import interlink_agent

        ours = interlink_agent.create_grpc_server(store, url)
        await ours.start(address)
        await stop.wait()
        await ours.stop(1.0)
        return
    server = grpc.aio.server(options=_GRPC_OPTIONS)
    if args.impl == "sdk":
        from bench.a2a_peers import sdk_agent

        sdk_agent.add_to_grpc_server(server, store, url)
    else:
        from bench.a2a_peers import floor_app

        server.add_generic_rpc_handlers([floor_app.grpc_handler(args.chunks)])
    server.add_insecure_port(address)
    await server.start()
    await stop.wait()
    await server.stop(1.0)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.a2a_peers.serve", description=__doc__)
    parser.add_argument("--impl", choices=["interlink", "sdk", "floor"], required=True)
    parser.add_argument("--binding", choices=["jsonrpc", "rest", "grpc"], default="jsonrpc")
    parser.add_argument("--store", choices=["memory", "sqlite"], default="memory")
    parser.add_argument("--chunks", type=int, default=50, help="the floor's stream events")
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
        db = Path(tmp) / "tasks.db"
        store = "memory:" if args.store == "memory" else f"sqlite://{db}"
        run: Callable[[], None]
        if args.binding == "grpc":
            run = functools.partial(asyncio.run, serve_grpc(args, f"127.0.0.1:{args.port}", store))
        else:
            run = uvicorn_server(build(args, f"http://127.0.0.1:{args.port}/", store), args).run
        if not args.profile:
            run()
            return
        # uvicorn re-raises the SIGTERM it caught once it has shut down; ignored, so
        # the stats get written (the gRPC server's own handler stops it)
        signal.signal(signal.SIGTERM, lambda *_: None)
        profiler = cProfile.Profile()
        profiler.enable()
        try:
            run()
        finally:
            profiler.disable()
            profiler.dump_stats(args.profile)


def uvicorn_server(app: Any, args: argparse.Namespace) -> uvicorn.Server:
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
    return uvicorn.Server(config)


if __name__ == "__main__":
    main()
