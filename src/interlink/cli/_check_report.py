"""What `interlink acp check` and `interlink a2a check` share on the command line: the
options that choose cases and shape the report, and how the report is written (text,
`--json`, `--junit FILE`) with the exit status it gives."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from interlink.cli._parser import repeatable
from interlink.cli._terminal import colors

if TYPE_CHECKING:  # imported where used, so that `interlink --version` stays fast
    from _typeshed import DataclassInstance

    from interlink.check import Case, Report

__all__ = ["add_report_options", "check_options", "list_cases", "write_report"]

T = TypeVar("T", bound="DataclassInstance")


def check_options(options: type[T], args: argparse.Namespace, **given: Any) -> T:
    """A checker's `Options` (a dataclass): the fields in `given`, the others from the
    command-line option of the same name where there is one (else their default)."""
    fields = {f.name for f in dataclasses.fields(options)} - given.keys()
    return options(**given, **{name: getattr(args, name) for name in fields if name in args})


def add_report_options(check: argparse.ArgumentParser, *, timeout_help: str) -> None:
    repeatable(check, "--only", "CASE", "a case id, area or prefix*")
    check.add_argument("--jobs", "-j", type=int, default=4, metavar="N", help="cases at once (4)")
    check.add_argument("--timeout", type=float, default=10.0, metavar="S", help=timeout_help)
    check.add_argument("--json", action="store_true", help="print one JSON object, no text")
    check.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    check.add_argument("--strict", action="store_true", help="a failed SHOULD fails the run too")
    check.add_argument("--verbose", "-v", action="store_true", help="cite every case")
    check.add_argument("--list", action="store_true", help="list the cases and exit")


def list_cases(cases: Iterable[Case]) -> int:
    listed = list(cases)
    width = max((len(c.id) for c in listed), default=0)
    for c in listed:
        print(f"{c.id:<{width}} {c.level.value:<6} {c.title}")
    return 0


def write_report(report: Report, args: argparse.Namespace) -> int:
    """The report as asked (`--junit FILE` besides; `--json` or text on stdout): the exit
    status (0: no MUST failed; with `--strict`, no SHOULD either)."""
    from interlink.check import render_json, render_junit, render_text

    if args.junit:
        with open(args.junit, "w", encoding="utf-8") as file:
            file.write(render_junit(report, strict=args.strict))
    if args.json:
        sys.stdout.write(render_json(report, strict=args.strict))
    else:
        sys.stdout.write(render_text(report, color=colors(sys.stdout), verbose=args.verbose))
    return report.exit_status(strict=args.strict)
