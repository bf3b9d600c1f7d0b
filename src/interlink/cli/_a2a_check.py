"""`interlink a2a check [options] URL`: does an A2A server follow A2A 1.0?

Fetches the agent card at URL's origin, checks it, then checks the JSON-RPC interface it
declares with raw HTTP and prints the report (text, `--json`, `--junit FILE`). Only
URL's origin and loopback are contacted. Exit status: 0 when no MUST case failed
(`--strict`: no SHOULD either), 1 otherwise, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["add_parser", "run"]

_PROG = "interlink a2a check"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = commands.add_parser(
        "check",
        help="check that an A2A server follows the protocol",
        description="Fetch the agent card at URL's origin (/.well-known/agent-card.json) and "
        "check it, then speak raw JSON-RPC and SSE to the interface it declares: each "
        "method's answers and errors, version and extension negotiation, streams, "
        "ListTasks pagination, historyLength, cancel, push configs and a delivery to a "
        "loopback webhook the checker runs. Each case cites the spec's sentence and its "
        "level (MUST, SHOULD, MAY); a case the server cannot be asked is SKIP with the "
        "reason. Only URL's origin and loopback are contacted. Exit status 0 when no MUST "
        "failed.",
    )
    check.add_argument(
        "url", nargs="?", metavar="URL", help="the agent's base URL or its card's URL"
    )
    check.add_argument(
        "--prompt", default="hello", metavar="TEXT", help="a message that runs a task (hello)"
    )
    check.add_argument(
        "--input-prompt",
        metavar="TEXT",
        help="a message whose task waits for input (enables the multi-turn cases)",
    )
    check.add_argument(
        "--slow-prompt",
        metavar="TEXT",
        help="a message whose task works a few seconds (enables cancel and subscribe cases)",
    )
    check.add_argument(
        "--only", metavar="CASE", action="append", default=[], help="a case id, area or prefix*"
    )
    check.add_argument("--jobs", "-j", type=int, default=4, metavar="N", help="cases at once (4)")
    check.add_argument(
        "--timeout", type=float, default=10.0, metavar="S", help="each request, seconds (10)"
    )
    check.add_argument("--json", action="store_true", help="print one JSON object, no text")
    check.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    check.add_argument("--strict", action="store_true", help="a failed SHOULD fails the run too")
    check.add_argument("--verbose", "-v", action="store_true", help="cite every case")
    check.add_argument("--list", action="store_true", help="list the cases and exit")


def _usage(message: str) -> int:
    print(f"{_PROG}: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    import asyncio

    import httpx

    from interlink.check import render_json, render_junit, render_text, selected
    from interlink.check._a2a_runner import Options, load_cases, run_check

    cases = load_cases()
    if args.list:
        for entry in cases:
            c = entry.case
            print(f"{c.id:<32} {c.level.value:<6} {c.title}")
        return 0
    if not args.url:
        return _usage("give the agent's URL (e.g. http://127.0.0.1:8000/)")
    try:
        url = httpx.URL(args.url)
    except httpx.InvalidURL as exc:
        return _usage(f"not a URL: {args.url!r} ({exc})")
    if url.scheme not in ("http", "https") or not url.host:
        return _usage(f"not an http(s) URL: {args.url!r}")
    if args.jobs < 1 or args.timeout <= 0:
        return _usage("--jobs and --timeout must be positive")
    options = Options(
        url=str(url),
        timeout=args.timeout,
        prompt=args.prompt,
        input_prompt=args.input_prompt,
        slow_prompt=args.slow_prompt,
        jobs=args.jobs,
        only=args.only,
    )
    if not any(selected(e.case, args.only) for e in cases):
        return _usage(f"--only {' '.join(args.only)} selects no case (see --list)")
    report = asyncio.run(run_check(options))
    if args.junit:
        with open(args.junit, "w", encoding="utf-8") as file:
            file.write(render_junit(report, strict=args.strict))
    if args.json:
        sys.stdout.write(render_json(report, strict=args.strict))
    else:
        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        sys.stdout.write(render_text(report, color=color, verbose=args.verbose))
    return report.exit_status(strict=args.strict)
