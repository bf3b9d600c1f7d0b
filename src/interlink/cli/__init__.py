"""The `interlink` command. Subcommands import their protocol lazily, so each starts
as fast as the code it runs."""

from __future__ import annotations

import argparse
import sys

from interlink import __version__
from interlink.cli import _a2a_check, _a2a_client, _a2a_serve, _acp_client, _acp_serve

_ACP = "ACP v1: an editor starts an agent as a subprocess and both speak JSON-RPC over stdio."
_A2A = "A2A 1.0: agents call agents over HTTP (JSON-RPC, Server-Sent Events, agent cards)."

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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

    a2a = commands.add_parser("a2a", help="Agent2Agent: serve agents over HTTP", description=_A2A)
    a2a_commands = a2a.add_subparsers(dest="a2a_command", metavar="COMMAND", required=True)
    _a2a_serve.add_parser(a2a_commands)
    _a2a_serve.add_db_parser(a2a_commands)
    _a2a_client.add_parsers(a2a_commands)
    _a2a_check.add_parser(a2a_commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        from interlink.cli._demo import run

        return run(args.requests)
    if args.command == "acp" and args.acp_command == "serve":
        return _acp_serve.run(args)
    if args.command == "acp" and args.acp_command == "client":
        return _acp_client.run(args)
    if args.command == "a2a" and args.a2a_command == "serve":
        return _a2a_serve.run(args)
    if args.command == "a2a" and args.a2a_command == "db":
        return _a2a_serve.run_db(args)
    if args.command == "a2a" and args.a2a_command == "check":
        return _a2a_check.run(args)
    if args.command == "a2a" and args.a2a_command in _a2a_client.COMMANDS:
        return _a2a_client.run(args)
    parser.print_help(sys.stderr)
    return 2
