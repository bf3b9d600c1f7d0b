"""`interlink a2a serve MODULE:ATTR`: serve an A2A agent over HTTP with uvicorn.

ATTR is an app made by `interlink.a2a.create_app` (or a factory returning one). The
store defaults to the agent's own SQLite file in the data directory, named after its
card (`--store memory:` keeps nothing); an SQLite file serves one process at a time.
The app serves the bindings it was made with (`create_app`: JSON-RPC and HTTP+JSON
unless told otherwise). A card that lists no interface lists each of them at the
address each request came to, or at `--public-url` (behind a proxy).

With `--grpc-port N`, the same process serves the gRPC binding too (`interlink[grpc]`),
from the same `A2AServer` (one store, one runtime), and the card lists that interface
(`GRPC`, `HOST:N`) after the HTTP one.

Once the socket listens and the app has started, `serving on http://HOST:PORT/` is the
one line on stdout (a script waits for it: a failed start closes stdout without it and
says why on stderr); `--port 0` takes a free port, which that line names. HOST is
loopback for `--host 0.0.0.0` or `::`: an address on every interface is never named.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys
from typing import TYPE_CHECKING

from interlink.cli._acp_serve import AgentLoadError, load_object
from interlink.cli._parser import Commands, subcommand

if TYPE_CHECKING:
    from interlink.a2a import A2AApp, TaskStore

__all__ = ["add_parser", "add_serving_options", "listen", "run", "served_url", "use_store"]


def add_parser(commands: Commands) -> None:
    serve = subcommand(
        commands,
        "serve",
        "serve an A2A agent over HTTP",
        "Serve an A2A agent: JSON-RPC, Server-Sent Events and its agent card. "
        "TARGET is MODULE:ATTR or path/to/file.py:ATTR naming an app made by "
        "interlink.a2a.create_app.",
    )
    serve.add_argument("target", metavar="MODULE:ATTR")
    add_serving_options(serve)
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
        "--sign-key",
        metavar="FILE",
        help="sign the agent card with this PEM private key: EC P-256 (ES256), RSA "
        "(RS256) or Ed25519 (EdDSA) (§8.4; needs interlink[sign])",
    )
    serve.add_argument(
        "--grpc-port",
        type=int,
        default=None,
        metavar="PORT",
        help="also serve the gRPC binding on this port, on the same host (0: a free port; "
        "the card lists it; needs interlink[grpc])",
    )


def add_serving_options(parser: argparse.ArgumentParser) -> None:
    """The options of a command that serves an agent over HTTP (`a2a serve`, `bridge
    a2a`): where it listens, its store, push webhooks, its public URL, the log level."""
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--port", type=int, default=9999, help="9999; 0: a free port (stdout says which)"
    )
    parser.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help="task store: sqlite:///path.db, memory:, postgresql://user@host/db?schema=name "
        "(replicas share one; an SQLite file serves one process; default: the agent's "
        "own file, a2a/NAME.db in $INTERLINK_DATA_DIR, $XDG_DATA_HOME/interlink or "
        "~/.local/share/interlink, NAME from its card's name)",
    )
    parser.add_argument(
        "--push-allow",
        default="",
        metavar="HOSTS",
        help="comma-separated hosts that push webhooks may use although not public "
        "(e.g. 127.0.0.1,localhost:8080), for local development and tests",
    )
    parser.add_argument(
        "--public-url",
        type=_public_url,
        default=None,
        metavar="URL",
        help="the URL clients reach the agent at (behind a proxy), where the card lists "
        "its interfaces (JSON-RPC, HTTP+JSON) when it lists none (default: the address "
        "each request came to: its scheme, Host and mount path)",
    )
    parser.add_argument("--log-level", default="info")


def _public_url(text: str) -> str:
    from interlink.a2a import InvalidAgentURL, checked_url

    try:
        checked_url(text, "public URL")
    except InvalidAgentURL as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


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


def add_db_parser(commands: Commands) -> None:
    db = subcommand(
        commands, "db", "manage a task store's schema", "Manage the schema of a task store."
    )
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="COMMAND")
    upgrade = subcommand(
        db_commands,
        "upgrade",
        "create or migrate the store's schema",
        "Create or migrate the schema of the store (replicas also do this at "
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


def use_store(app: A2AApp, url: str | None, push_allow: str) -> tuple[TaskStore, str]:
    """Serve `app` from the store at `url` (None: the agent's own SQLite file, named after
    its card), with push webhooks allowed to the comma-separated `push_allow` hosts; the
    store and its URL. An SQLite file is locked now, so a second process is refused,
    naming the holder, before anything else starts."""
    from interlink.a2a import SqliteTaskStore, default_store_path, open_store

    store_url = url or f"sqlite://{default_store_path(app.server.card.name).absolute()}"
    allow = [host.strip() for host in push_allow.split(",") if host.strip()]
    store = open_store(store_url)
    if isinstance(store, SqliteTaskStore):
        store.lock()
    app.use_store(store, push_allow=allow)
    return store, store_url


def run(args: argparse.Namespace) -> int:
    from interlink.a2a import (
        A2AApp,
        CardSignatureError,
        SharedStore,
        SigningKey,
        StoreError,
        with_interface,
    )
    from interlink.cli._a2a_uvicorn import StreamingServer, config

    try:
        app = load_object(args.target, A2AApp, "an interlink.a2a app (create_app)")
        assert isinstance(app, A2AApp)
        key = None if args.sign_key is None else SigningKey.load(args.sign_key)
        store, store_url = use_store(app, args.store, args.push_allow)
        if args.lease_ttl is not None and not isinstance(store, SharedStore):
            raise ValueError("--lease-ttl: for a PostgreSQL store (replicas) only")
        if args.lease_ttl is not None:
            app.server.lease_ttl = args.lease_ttl
        if args.retention is not None:
            app.server.retention = args.retention
        if key is not None:
            app.sign_cards(key)
    except (AgentLoadError, StoreError, ValueError, CardSignatureError) as exc:
        print(f"interlink a2a serve: {exc}", file=sys.stderr)
        return 2
    listeners = listen("interlink a2a serve", args.host, args.port)
    if listeners is None:
        return 1
    port = listeners[0].getsockname()[1]
    url = served_url(args.host, port)
    if args.public_url is not None:
        app.use_card(with_interface(app.server.card, args.public_url, app.interfaces))
    what = f"serving {app.server.card.name!r} · tasks: {_store_text(store_url)}"
    grpc_side = None
    if args.grpc_port is not None:
        try:
            from interlink.cli._a2a_grpc import GrpcSide
        except ImportError as exc:
            print(
                f"interlink a2a serve: --grpc-port needs interlink[grpc] ({exc})", file=sys.stderr
            )
            return 2
        grpc_side = GrpcSide(app, args.host, args.grpc_port, listed=args.public_url)

    class Server(StreamingServer):  # open streams end when it stops: see _a2a_uvicorn
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)  # the app started, the socket listens
            if self.started and grpc_side is not None:
                try:
                    where = await grpc_side.start()
                except (OSError, RuntimeError) as exc:
                    print(f"interlink a2a serve: gRPC: {exc}", file=sys.stderr, flush=True)
                    self.started = False
                    self.should_exit = True
                    return
                print(f"serving gRPC on {where}", file=sys.stderr, flush=True)
            if self.started:
                # (stdout: a script reads this line to learn that and where it serves)
                print(f"serving on {url}", flush=True)
                print(what, file=sys.stderr, flush=True)  # (for people: the name, the store)

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            if grpc_side is not None:  # (first: its streams end, then the app stops)
                await grpc_side.stop()
            await super().shutdown(sockets)

    server = Server(config(app, host=args.host, port=port, log_level=args.log_level))
    try:
        with contextlib.suppress(KeyboardInterrupt):  # (uvicorn raises the SIGINT it handled)
            server.run(sockets=listeners)
    finally:
        for listener in listeners:
            listener.close()
    return 0 if server.started else 1


def listen(prog: str, host: str, port: int) -> list[socket.socket] | None:
    """`_listen`, or None once stderr says why it cannot (`prog: cannot listen on ...`)."""
    try:
        return _listen(host, port)
    except OSError as exc:
        print(f"{prog}: cannot listen on {_authority(host, port)}: {_reason(exc)}", file=sys.stderr)
        return None


def served_url(host: str, port: int) -> str:
    """The URL the `serving on` line names (loopback for an address on every interface)."""
    return f"http://{_authority(_UNSPECIFIED.get(host, host), port)}/"


def _listen(host: str, port: int) -> list[socket.socket]:
    """Listening TCP sockets on every address `host` resolves to (`localhost`: `::1`
    and `127.0.0.1`, as uvicorn would), all on `port` (0: the one the OS picks for the
    first), bound here so that the card and the `serving on` line give the port really
    bound, and a port in use is refused before the agent starts."""
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    addresses = dict.fromkeys((family, address[0]) for family, _, _, _, address in found)
    listeners: list[socket.socket] = []
    try:
        for family, ip in addresses:
            bound = listeners[0].getsockname()[1] if listeners else port
            listener = socket.create_server((ip, bound), family=family, backlog=2048)
            # Connections accepted here get no TCP_NODELAY from asyncio (it sets it only
            # on sockets whose proto is TCP, and these have proto 0): set on the listener,
            # every accepted socket inherits it. Without it a stream's first event waits
            # behind its response headers for the client's delayed ACK (some 40 ms).
            listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            listeners.append(listener)
    except OSError:
        for listener in listeners:
            listener.close()
        raise
    return listeners


#: `--host` on every address: the `serving on` line names loopback, which the card does too
_UNSPECIFIED = {"0.0.0.0": "127.0.0.1", "::": "::1"}


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _reason(exc: OSError) -> str:
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror})"
    # (not `strerror`: the socket module's names the address again)
    return os.strerror(exc.errno).lower() if exc.errno else str(exc)


def _store_text(url: str) -> str:
    """The store's URL as said to a person: the file of an SQLite store, no password."""
    from urllib.parse import urlsplit

    if url.startswith("sqlite:///"):
        return url[len("sqlite://") :]
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return parts._replace(netloc=netloc).geturl()
    return url
