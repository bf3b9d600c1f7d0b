"""`interlink a2a serve MODULE:ATTR`: serve an A2A agent over HTTP with uvicorn.

ATTR is an app made by `interlink.a2a.create_app` (or a factory returning one). The
store defaults to an SQLite file in the data directory (`--store memory:` keeps
nothing); the card lists the served URL as its JSON-RPC interface when it lists none.
"""

from __future__ import annotations

import argparse
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
        help="task store: sqlite:///path.db, memory: (default: an SQLite file in the data "
        "directory, $INTERLINK_DATA_DIR or ~/.local/share/interlink)",
    )
    serve.add_argument(
        "--push-allow",
        default="",
        metavar="HOSTS",
        help="comma-separated hosts that push webhooks may use although not public "
        "(e.g. 127.0.0.1,localhost:8080), for local development and tests",
    )
    serve.add_argument("--log-level", default="info")


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from interlink.a2a import A2AApp, StoreError, default_store_path, open_store, with_interface

    try:
        app = load_object(args.target, A2AApp, "an interlink.a2a app (create_app)")
        assert isinstance(app, A2AApp)
        store_url = args.store or f"sqlite:///{default_store_path()}"
        allow = [host.strip() for host in args.push_allow.split(",") if host.strip()]
        app.use_store(open_store(store_url), push_allow=allow)
    except (AgentLoadError, StoreError, ValueError) as exc:
        print(f"interlink a2a serve: {exc}", file=sys.stderr)
        return 2
    url = f"http://{args.host}:{args.port}/"
    app.use_card(with_interface(app.server.card, url))
    print(f"serving {app.server.card.name!r} at {url} (tasks: {store_url})", file=sys.stderr)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        lifespan="on",
        timeout_graceful_shutdown=5,  # open streams end then; the clients resume later
    )
    return 0
