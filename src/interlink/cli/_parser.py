"""The `interlink` command's argument parser: argparse, plus "did you mean" for a
mistyped subcommand or choice (`interlink a2a sned` suggests `send`)."""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any, TypeAlias

__all__ = ["Commands", "Parser", "agent_command", "repeatable", "subcommand", "usage"]

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""Where a command adds its subcommands."""


class Parser(argparse.ArgumentParser):
    """An `ArgumentParser` whose "invalid choice" error names the closest choices."""

    # argparse has no hook for this before Python 3.14 (`suggest_on_error`); the check of
    # a value against `choices` is the one place every invalid choice passes through.
    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is None or value in choices or not isinstance(value, str):
            super()._check_value(action, value)
            return
        names = [str(choice) for choice in choices]
        close = difflib.get_close_matches(value, names, n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise argparse.ArgumentError(
            action, f"invalid choice: {value!r}{hint} (choose from {', '.join(names)})"
        )


def usage(prog: str, message: str) -> int:
    """A usage error: one line on stderr, exit status 2."""
    print(f"{prog}: {message}", file=sys.stderr)
    return 2


def agent_command(args: argparse.Namespace) -> list[str]:
    """The agent's command: what follows `--` (argparse keeps the `--` of a REMAINDER)."""
    return args.agent[1:] if args.agent[:1] == ["--"] else list(args.agent)


def subcommand(
    commands: Commands, name: str, help: str, description: str, **options: Any
) -> argparse.ArgumentParser:
    """Add the subcommand `name`: `help` is its line in the list of commands, `description`
    the paragraph its own --help starts with."""
    return commands.add_parser(name, help=help, description=description, **options)


def repeatable(parser: argparse.ArgumentParser, flag: str, metavar: str, help: str) -> None:
    """An option that may be given again and again: the list of its values, empty if none."""
    parser.add_argument(flag, action="append", default=[], metavar=metavar, help=help)
