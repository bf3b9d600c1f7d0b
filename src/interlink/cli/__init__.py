"""The `interlink` command. Subcommands import their protocol lazily, so each starts
as fast as the code it runs.

A closed stdout (`interlink a2a send URL TEXT | head -1`) ends every command quietly
with status 141, what a shell reports for a process that SIGPIPE ended (128 + 13), as
`yes | head -1` does: the output was cut short, which a script with `pipefail` should
see, and 0 would say everything was printed. Python ignores SIGPIPE (a socket's EPIPE
must not kill the process), so the closed pipe arrives as `BrokenPipeError`, handled here
once for every command.
"""

from __future__ import annotations

import argparse
import os
import select
import sys

from interlink import __version__
from interlink.cli import (
    _a2a_check,
    _a2a_client,
    _a2a_serve,
    _acp_check,
    _acp_client,
    _acp_serve,
    _bridge,
)
from interlink.cli._parser import Parser

_ACP = "ACP v1: an editor starts an agent as a subprocess and both speak JSON-RPC over stdio."
_A2A = "A2A 1.0: agents call agents over HTTP (JSON-RPC, Server-Sent Events, agent cards)."

__all__ = ["PIPE_CLOSED", "main"]

PIPE_CLOSED = 141  # 128 + SIGPIPE (see the module)


def _parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = Parser(
        prog="interlink",
        description="ACP v1 and A2A 1.0 agents and clients on one strict JSON-RPC 2.0 core.",
    )
    parser.add_argument("--version", action="version", version=f"interlink {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="start a JSON-RPC echo peer as a child process and talk to it over its pipes",
        description="Spawns a child process that serves JSON-RPC on stdin/stdout and shows "
        "typed calls, notifications, errors and bad input being answered.",
    )
    demo.add_argument("--requests", type=int, default=10_000, help="pipelined requests to time")

    acp = commands.add_parser(
        "acp", help="Agent Client Protocol: serve agents, talk to agents", description=_ACP
    )
    acp_commands = acp.add_subparsers(dest="acp_command", metavar="COMMAND", required=True)
    _acp_serve.add_parser(acp_commands)
    _acp_client.add_parser(acp_commands)
    _acp_check.add_parser(acp_commands)

    a2a = commands.add_parser("a2a", help="Agent2Agent: serve agents over HTTP", description=_A2A)
    a2a_commands = a2a.add_subparsers(dest="a2a_command", metavar="COMMAND", required=True)
    _a2a_serve.add_parser(a2a_commands)
    _a2a_serve.add_db_parser(a2a_commands)
    _a2a_client.add_parsers(a2a_commands)
    _a2a_check.add_parser(a2a_commands)

    bridge = commands.add_parser(
        "bridge",
        help="serve an agent of one protocol to clients of the other",
        description="The bridge between ACP and A2A: `bridge a2a -- AGENT_CMD` serves an "
        "ACP agent to A2A clients; `bridge acp URL` puts an A2A agent into an editor.",
    )
    bridge_commands = bridge.add_subparsers(dest="bridge_command", metavar="COMMAND", required=True)
    _bridge.add_parser(bridge_commands)
    _bridge.add_acp_parser(bridge_commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        return _run(argv)
    except BrokenPipeError:
        if not _stdout_closed():
            raise  # some other pipe: not ours to hide
        # Python flushes stdout again at exit; whatever is left must not fail there too
        # (the recipe of Python's documentation on SIGPIPE).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return PIPE_CLOSED


def _stdout_closed() -> bool:
    """Whether stdout is a pipe or socket whose reader is gone."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        events = poller.poll(0)
    except (OSError, ValueError):  # no stdout at all
        return True
    return any(event & (select.POLLERR | select.POLLHUP) for _, event in events)


def _run(argv: list[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        from interlink.cli._demo import run

        return run(args.requests)
    runs = {  # by command, then subcommand
        "acp": {"serve": _acp_serve.run, "client": _acp_client.run, "check": _acp_check.run},
        "a2a": {"serve": _a2a_serve.run, "db": _a2a_serve.run_db, "check": _a2a_check.run}
        | dict.fromkeys(_a2a_client.COMMANDS, _a2a_client.run),
        "bridge": {"a2a": _bridge.run, "acp": _bridge.run_acp},
    }
    if args.command in runs:
        return runs[args.command][getattr(args, f"{args.command}_command")](args)
    parser.print_help(sys.stderr)
    return 2
