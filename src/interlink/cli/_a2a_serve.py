"""`interlink a2a serve MODULE:ATTR`: serve an A2A agent over HTTP with uvicorn.

ATTR is an app made by `interlink.a2a.create_app` (or a factory returning one). The
store defaults to an SQLite file in the data directory (`--store memory:` keeps
nothing); the card lists the served URL as its JSON-RPC interface when it lists none.
"""

from __future__ import annotations

import argparse
import contextlib
import sys

from interlink.cli._acp_serve import AgentLoadError, load_object

__all__ = ["add_parser", "run"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve an A2A agent over HTTP",
        description="Serve an A2A agent: JSON-RPC, Server-Sent Events and its agent card. "
        "TARGET is MODULE:ATTR or path/to/file.py:ATTR naming an app made by "
        "interlink.a2a.create_app.",
    )
    serve.add_argument("target", metavar="MODULE:ATTR")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=9999)
    serve.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help="task store: sqlite:///path.db, memory:, postgresql://user@host/db?schema=name "
        "(replicas share one; default: an SQLite file in the data directory, "
        "$INTERLINK_DATA_DIR or ~/.local/share/interlink)",
    )
    serve.add_argument(
        "--lease-ttl",
        type=_seconds,
        default=None,
        metavar="DURATION",
        help="replicas on PostgreSQL: the running tasks of a replica that died are failed "
        "by another within about 1.25 x this (default 10s)",
    )
    serve.add_argument(
        "--retention",
        type=_seconds,
        default=None,
        metavar="DURATION",
        help="prune the event logs of tasks finished longer ago than this, e.g. 7d, 12h "
        "(the tasks stay; default: keep everything)",
    )
    serve.add_argument(
        "--push-allow",
        default="",
        metavar="HOSTS",
        help="comma-separated hosts that push webhooks may use although not public "
        "(e.g. 127.0.0.1,localhost:8080), for local development and tests",
    )
    serve.add_argument("--log-level", default="info")


def _seconds(text: str) -> float:
    """`90`, `90s`, `15m`, `12h`, `7d`, `250ms` -> seconds (positive)."""
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    number, unit = text.strip(), "s"
    for suffix in ("ms", "s", "m", "h", "d"):
        if number.endswith(suffix):
            number, unit = number[: -len(suffix)], suffix
            break
    try:
        value = float(number) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 30s, 15m, 7d)") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def add_db_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    db = commands.add_parser(
        "db",
        help="manage a task store's schema",
        description="Manage the schema of a task store.",
    )
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="COMMAND")
    upgrade = db_commands.add_parser(
        "upgrade",
        help="create or migrate the store's schema",
        description="Create or migrate the schema of the store (replicas also do this at "
        "start-up; run it first to migrate before rolling out).",
    )
    upgrade.add_argument("--store", required=True, metavar="URL")


def run_db(args: argparse.Namespace) -> int:
    import asyncio

    from interlink.a2a import StoreError, open_store

    async def upgrade() -> None:
        store = open_store(args.store)
        await store.open()  # migrates
        await store.close()

    try:
        asyncio.run(upgrade())
    except StoreError as exc:
        print(f"interlink a2a db upgrade: {exc}", file=sys.stderr)
        return 1
    print(f"{args.store}: schema up to date", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    from interlink.a2a import A2AApp, StoreError, default_store_path, open_store, with_interface
    from interlink.a2a._replicas import SharedStore
    from interlink.cli._a2a_uvicorn import StreamingServer, config

    try:
        app = load_object(args.target, A2AApp, "an interlink.a2a app (create_app)")
        assert isinstance(app, A2AApp)
        store_url = args.store or f"sqlite:///{default_store_path()}"
        allow = [host.strip() for host in args.push_allow.split(",") if host.strip()]
        store = open_store(store_url)
        if args.lease_ttl is not None and not isinstance(store, SharedStore):
            raise ValueError("--lease-ttl: for a PostgreSQL store (replicas) only")
        app.use_store(store, push_allow=allow)
        if args.lease_ttl is not None:
            app.server.lease_ttl = args.lease_ttl
        if args.retention is not None:
            app.server.retention = args.retention
    except (AgentLoadError, StoreError, ValueError) as exc:
        print(f"interlink a2a serve: {exc}", file=sys.stderr)
        return 2
    url = f"http://{args.host}:{args.port}/"
    app.use_card(with_interface(app.server.card, url))
    print(f"serving {app.server.card.name!r} at {url} (tasks: {store_url})", file=sys.stderr)
    # open streams end when it stops (the clients resume later), see _a2a_uvicorn
    server = StreamingServer(config(app, host=args.host, port=args.port, log_level=args.log_level))
    with contextlib.suppress(KeyboardInterrupt):  # (uvicorn raises the SIGINT it handled)
        server.run()
    return 0 if server.started else 3  # (3: uvicorn's "could not start")
