"""`interlink a2a check [options] URL`: does an A2A server follow A2A 1.0?

Fetches the agent card at URL's origin, checks it, then checks each interface it declares
(JSON-RPC, HTTP+JSON, gRPC) in its own wire form and prints the report (text,
`--json`, `--junit FILE`). Only URL's origin and loopback are contacted (and a `--jwks`
URL, given by hand). Exit status: 0
when no MUST case failed (`--strict`: no SHOULD either), 1 otherwise, 2 for bad usage.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from interlink.cli._check_report import add_report_options, check_options, list_cases, write_report
from interlink.cli._parser import Commands, repeatable, subcommand, usage

if TYPE_CHECKING:
    from interlink.a2a import TrustedKeys

__all__ = ["add_parser", "run"]

_PROG = "interlink a2a check"


def add_parser(commands: Commands) -> None:
    check = subcommand(
        commands,
        "check",
        "check that an A2A server follows the protocol",
        "Fetch the agent card at URL's origin (/.well-known/agent-card.json) and "
        "check it, then speak raw to each interface it declares (JSON-RPC, HTTP+JSON, "
        "gRPC with interlink[grpc]), asking each the same cases: each "
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
    repeatable(
        check,
        "--verify-key",
        "FILE",
        "verify the card's signatures with this key (PEM public key, JWK or JWK set) "
        "instead of the key their header names",
    )
    repeatable(
        check,
        "--jwks",
        "FILE_OR_URL",
        "verify the card's signatures with this JWK set (a file, or an http(s) URL)",
    )
    add_report_options(check, timeout_help="each request, seconds (10)")


def run(args: argparse.Namespace) -> int:
    import asyncio

    import httpx

    from interlink.a2a import CardError
    from interlink.check import a2a_checker as checker
    from interlink.check import selected

    cases = checker.load_cases()
    if args.list:
        return list_cases(entry.case for entry in cases)
    if not args.url:
        return usage(_PROG, "give the agent's URL (e.g. http://127.0.0.1:8000/)")
    try:
        url = httpx.URL(args.url)
    except httpx.InvalidURL as exc:
        return usage(_PROG, f"not a URL: {args.url!r} ({exc})")
    if url.scheme not in ("http", "https") or not url.host:
        return usage(_PROG, f"not an http(s) URL: {args.url!r}")
    if args.jobs < 1 or args.timeout <= 0:
        return usage(_PROG, "--jobs and --timeout must be positive")
    try:
        keys = asyncio.run(_trusted_keys(args))
    except (ValueError, CardError, httpx.HTTPError) as exc:
        return usage(_PROG, str(exc))
    options = check_options(checker.Options, args, url=str(url), trusted_keys=keys)
    if not any(selected(e.case, args.only) for e in cases):
        return usage(_PROG, f"--only {' '.join(args.only)} selects no case (see --list)")
    report = asyncio.run(checker.run_check(options))
    return write_report(report, args)


async def _trusted_keys(args: argparse.Namespace) -> TrustedKeys | None:
    """The keys of `--verify-key` and `--jwks`, read as `interlink a2a card` reads them."""
    from interlink.a2a import http_client
    from interlink.cli._a2a_client import _trusted_keys as read

    async with http_client(args.timeout, args.timeout) as http:
        return await read(args, http)
