"""`interlink acp check [options] -- AGENT_CMD [ARGS...]`: does an agent follow ACP v1?

Runs every case of `interlink.check` against fresh processes of the agent and prints the
report (text, `--json`, `--junit FILE`). Exit status: 0 when no MUST case failed
(`--strict`: no SHOULD either), 1 otherwise, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import os
import shutil

from interlink.cli._check_report import add_report_options, check_options, list_cases, write_report
from interlink.cli._parser import Commands, agent_command, repeatable, subcommand, usage

__all__ = ["add_parser", "run"]

_PROG = "interlink acp check"


def add_parser(commands: Commands) -> None:
    check = subcommand(
        commands,
        "check",
        "check that an ACP agent follows the protocol",
        "Start AGENT_CMD (a fresh process per case), speak raw JSON-RPC to it and "
        "check the rules of ACP v1 and JSON-RPC 2.0: framing, initialisation, sessions, "
        "capabilities, prompt turns, cancellation, authentication, extensions, the process. "
        "Each case cites the spec's sentence and its level (MUST, SHOULD, MAY); a case the "
        "agent cannot be asked is SKIP with the reason. Exit status 0 when no MUST failed.",
    )
    check.add_argument("--prompt", metavar="TEXT", help="an ordinary turn (enables turn cases)")
    check.add_argument(
        "--slow-prompt", metavar="TEXT", help="a turn that runs long enough to be cancelled"
    )
    check.add_argument(
        "--permission-prompt", metavar="TEXT", help="a turn that asks for permission"
    )
    check.add_argument("--auth", metavar="METHOD_ID", help="authenticate with this method first")
    repeatable(check, "--env", "KEY=VALUE", "set in the agent's env")
    check.add_argument("--cwd", metavar="DIR", help="the sessions' directory (default: here)")
    add_report_options(check, timeout_help="each wait, seconds (10)")
    check.add_argument(
        "--startup", type=float, default=30.0, metavar="S", help="for initialize's answer (30)"
    )
    check.add_argument("agent", nargs=argparse.REMAINDER, metavar="-- AGENT_CMD [ARGS...]")


def run(args: argparse.Namespace) -> int:
    import asyncio
    import shlex

    from interlink.check import acp_checker as checker

    if args.list:
        return list_cases(entry.case for entry in checker.load_cases())
    command = agent_command(args)
    if not command:
        return usage(_PROG, "give the agent's command after --")
    if args.cwd is not None and not os.path.isdir(args.cwd):
        return usage(_PROG, f"not a directory: {args.cwd}")
    if args.jobs < 1 or args.timeout <= 0 or args.startup <= 0:
        return usage(_PROG, "--jobs, --timeout and --startup must be positive")
    env: dict[str, str] = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            return usage(_PROG, f"--env takes KEY=VALUE, not {item!r}")
        env[key] = value
    cwd = os.path.abspath(args.cwd or os.getcwd())
    if shutil.which(command[0]) is None:
        return usage(_PROG, f"command not found: {command[0]}")
    launch = checker.Launch(command, env)  # started here, as an editor would from its project
    options = check_options(checker.Options, args, launch=launch, session_cwd=cwd)
    report = asyncio.run(checker.run_check(options, shlex.join(command)))
    if not report.results:
        return usage(_PROG, f"--only {' '.join(args.only)} selects no case (see --list)")
    return write_report(report, args)
