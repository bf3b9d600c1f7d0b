"""The `interlink` command. Subcommands import their protocol lazily, so each starts
as fast as the code it runs."""

from __future__ import annotations

import argparse
import sys

from interlink import __version__
from interlink.cli import _acp_serve

_ACP = "ACP v1: an editor starts an agent as a subprocess and both speak JSON-RPC over stdio."

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
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        from interlink.cli._demo import run

        return run(args.requests)
    if args.command == "acp" and args.acp_command == "serve":
        return _acp_serve.run(args)
    parser.print_help(sys.stderr)
    return 2
