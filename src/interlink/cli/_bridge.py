"""`interlink bridge a2a [options] -- AGENT_CMD…`: an ACP agent served as an A2A agent;
`interlink bridge acp [options] URL`: an A2A agent served as an ACP agent on stdio.

The agent is started and initialized first (a failure to start is said on stderr, exit
status 1), its card made from its `initialize` answer, then the A2A app serves it as
`interlink a2a serve` serves an app: the same `serving on http://HOST:PORT/` line on
stdout, the same store (by default the agent's own SQLite file, named after its card).
Each A2A context works in its own folder of `--workspace` (by default `bridge/NAME` in
the data directory beside the store's `a2a/`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import sys
from typing import TYPE_CHECKING

from interlink.cli._a2a_serve import (
    _seconds,
    _store_text,
    add_serving_options,
    listen,
    served_url,
    use_store,
)
from interlink.cli._acp_client import _stderr_forwarder
from interlink.cli._parser import Commands, agent_command, repeatable, subcommand, usage

if TYPE_CHECKING:
    from interlink.a2a import types as t
    from interlink.bridge import PermissionPolicy

__all__ = ["add_acp_parser", "add_parser", "run", "run_acp"]

_PROG = "interlink bridge a2a"


def add_parser(commands: Commands) -> None:
    bridge = subcommand(
        commands,
        "a2a",
        "serve an ACP agent as an A2A agent over HTTP",
        "Start an ACP agent (the command after --) and serve it as an A2A agent: each A2A "
        "context is an ACP session in its own folder of the workspace, each task a prompt "
        "turn; permission requests the policy does not answer ask the A2A client "
        "(input-required).",
    )
    add_serving_options(bridge)
    bridge.add_argument(
        "--workspace",
        default=None,
        metavar="DIR",
        help="where each context gets its folder, the agent's files and terminals confined "
        "to it (default: bridge/NAME in the data directory)",
    )
    repeatable(
        bridge,
        "--allow",
        "KIND",
        "answer the agent's permission requests for tool calls of this kind without asking "
        "(read, edit, delete, move, search, execute, think, fetch, switch_mode, other; "
        "terminal = execute)",
    )
    repeatable(
        bridge,
        "--deny",
        "KIND",
        "refuse permission for this kind without asking (wins over --allow); `--deny fs` "
        "and `--deny terminal` also stop offering the agent files or terminals",
    )
    bridge.add_argument(
        "--allow-all", action="store_true", help="allow every permission request (not denied)"
    )
    bridge.add_argument(
        "--idle",
        type=_seconds,
        default=3600.0,
        metavar="DURATION",
        help="close the session of a context idle this long, e.g. 30m (default 1h; its next "
        "message loads it again where the agent can)",
    )
    bridge.add_argument(
        "--max-agents",
        type=int,
        default=1,
        metavar="N",
        help="run up to N processes of the agent, each new context on the one that holds "
        "the fewest (default 1: one process serves every context)",
    )
    bridge.add_argument(
        "--auth", metavar="METHOD_ID", help="call authenticate with this method at start-up"
    )
    bridge.add_argument(
        "--login",
        nargs="?",
        const="",
        metavar="METHOD_ID",
        help="log in to the agent instead of serving it, with this method (or its only one): "
        "a terminal method runs the agent's login on this terminal, another calls "
        "authenticate; the exit status tells the outcome",
    )
    bridge.add_argument(
        "--list",
        action="store_true",
        help="(with or without --login) list the agent's login methods instead, one a line: "
        "ID, type (agent, terminal, ...), name",
    )
    bridge.add_argument("agent", nargs=argparse.REMAINDER, metavar="-- AGENT_CMD [ARGS...]")


def run(args: argparse.Namespace) -> int:
    from interlink.bridge import PermissionPolicy

    command = agent_command(args)
    if not command:
        return usage(_PROG, "give the agent's command after --")
    if args.login is not None or args.list:
        return _log_in(command, args.login or None, args.list)
    if args.max_agents < 1:
        return usage(_PROG, f"--max-agents {args.max_agents}: give 1 or more")
    denied = {"fs", "terminal"} & set(args.deny)  # (not offered to the agent at all)
    try:
        policy = PermissionPolicy.of(args.allow, set(args.deny) - {"fs"}, args.allow_all)
    except ValueError as exc:
        return usage(_PROG, str(exc))
    listeners = listen(_PROG, args.host, args.port)
    if listeners is None:
        return 1
    try:
        with contextlib.suppress(KeyboardInterrupt):  # (uvicorn raises the SIGINT it handled)
            return asyncio.run(_serve(args, command, policy, denied, listeners))
        return 0
    finally:
        for listener in listeners:
            listener.close()


async def _serve(
    args: argparse.Namespace,
    command: list[str],
    policy: PermissionPolicy,
    denied: set[str],
    sockets: list[socket.socket],
) -> int:
    from interlink.a2a import StoreError, create_app, default_store_path, with_interface
    from interlink.bridge import AcpBridge
    from interlink.cli._a2a_uvicorn import AnnouncingServer, config

    bridge = AcpBridge(
        command,
        workspace=args.workspace or ".",
        policy=policy,
        auth_method=args.auth,
        fs="fs" not in denied,
        terminal="terminal" not in denied,
        forward_stderr=_stderr_forwarder(),
        idle=args.idle,
        max_agents=args.max_agents,
    )
    try:
        await bridge.start()
    except Exception as exc:
        print(f"{_PROG}: the agent did not start: {bridge.explain(exc)}", file=sys.stderr)
        await bridge.aclose()
        return 1
    try:
        card = bridge.card()
        if args.workspace is None:
            own = default_store_path(card.name)
            bridge.workspace = own.parent.parent / "bridge" / own.stem
        app = create_app(bridge, card)
        try:
            _, store_url = use_store(app, args.store, args.push_allow)
        except (StoreError, ValueError) as exc:
            print(f"{_PROG}: {exc}", file=sys.stderr)
            return 2
        public = args.public_url

        def publish(card: t.AgentCard) -> None:
            app.use_card(card if public is None else with_interface(card, public, app.interfaces))

        publish(card)
        bridge.on_card = publish
        port = sockets[0].getsockname()[1]
        url = served_url(args.host, port)
        what = (
            f"bridging {card.name!r} ({' '.join(command)}) · tasks: {_store_text(store_url)}"
            f" · workspace: {bridge.workspace}"
        )
        server = AnnouncingServer(
            config(app, host=args.host, port=port, log_level=args.log_level), url, what
        )
        await server.serve(sockets=sockets)
        return 0 if server.started else 1
    finally:
        await asyncio.shield(bridge.aclose())


def _log_in(command: list[str], method_id: str | None, listing: bool) -> int:
    """`--login [METHOD_ID]` and `--login --list`: the agent initialized as a client that
    runs terminal logins (serving does not say it does)."""
    from interlink.bridge import LoginError, login, offered_login_methods

    forward = _stderr_forwarder()
    try:
        if listing:
            methods = asyncio.run(offered_login_methods(command, forward_stderr=forward))
            if not methods:
                print(f"{_PROG}: the agent offers no login method", file=sys.stderr)
            for method in methods:
                print(method.line())
            return 0
        method = asyncio.run(login(command, method_id, forward_stderr=forward))
    except LoginError as exc:
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        print(f"{_PROG}: the login was interrupted", file=sys.stderr)
        return 130
    print(f"logged in with {method.id} ({method.name})")
    return 0


def add_acp_parser(commands: Commands) -> None:
    bridge = subcommand(
        commands,
        "acp",
        "serve an A2A agent as an ACP agent on stdio (what an editor launches)",
        "Serve the A2A agent at URL as an ACP agent on stdin/stdout: each ACP session is an "
        "A2A context, each prompt a message to it (streamed), artifacts the agent's message "
        "chunks, its questions the end of a turn (the next prompt answers) or, when it asks "
        "permission as `bridge a2a` does, a permission request to the editor; where the "
        "agent lists its tasks, session/list and session/load show its contexts again.",
    )
    bridge.add_argument("url", metavar="URL", help="the A2A agent's base URL (where its card is)")
    bridge.add_argument("--bearer", metavar="TOKEN", help="send Authorization: Bearer TOKEN")
    bridge.add_argument("--api-key", metavar="KEY", help="send the API key the card's scheme names")
    repeatable(bridge, "--header", "'NAME: VALUE'", "send this HTTP header with every request")
    bridge.add_argument(
        "--timeout", type=float, default=60.0, metavar="SECONDS", help="HTTP timeout (60)"
    )


def run_acp(args: argparse.Namespace) -> int:
    from interlink.bridge import A2AAgentBridge

    headers = {}
    for header in args.header:
        name, colon, value = header.partition(":")
        if not colon or not name.strip():
            return usage("interlink bridge acp", f"--header {header!r}: give it as 'NAME: VALUE'")
        headers[name.strip()] = value.strip()
    agent = A2AAgentBridge(
        args.url, bearer=args.bearer, api_key=args.api_key, headers=headers, timeout=args.timeout
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(agent.serve_stdio())
    return 0
