"""What both checkers' cases are: the registry of case tables, `Fail` and `Skip`, and how
one case's run becomes a `Result`.

A case is an async function of its checker's context. Each module declares its cases as
one table, `CASES`, from the function to its `Spec` (id, title, level, the page and
sentence it checks): the catalogue reads as data next to the code and survives `-OO`. A case
returns what it saw (PASS) or raises `Fail` (the target broke the rule) or `Skip` (the
case cannot be asked of this target); the checker maps its own transport errors (no
answer in time, a dropped connection) to an outcome, and any other exception is an
ERROR: the checker broke, not the target.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from interlink.check._report import Case, Citation, Level, Outcome, Result, selected

__all__ = [
    "MAY",
    "MUST",
    "SHOULD",
    "Entry",
    "Fail",
    "Registry",
    "Skip",
    "Cases",
    "Spec",
    "each",
    "run_case",
]

MUST, SHOULD, MAY = Level.MUST, Level.SHOULD, Level.MAY

C = TypeVar("C")
R = TypeVar("R")

Spec = tuple[str, str, Level, str, str]
"""A case's id, title, level, the page (or section) it checks and the page's sentence."""

Cases = dict[Callable[[C], Awaitable[str]], Spec]
"""A module's cases, in the report's order: each function with its `Spec`."""


class Fail(Exception):
    """The target broke the rule; the message says what was seen."""


class Skip(Exception):
    """The case cannot be asked of this target; the message says why."""


@dataclass(frozen=True)
class Entry(Generic[C]):
    case: Case
    run: Callable[[C], Awaitable[str]]
    slow: bool = False
    """It waits for a long task: a larger bound."""


class Registry(Generic[C]):
    """The cases of one checker, in registration order: the modules `<prefix><name>` of
    `modules`, in the report's order of areas, register theirs when imported."""

    def __init__(
        self, prefix: str, modules: Sequence[str], cite: Callable[[str], str] = str
    ) -> None:
        self.entries: list[Entry[C]] = []
        self._modules = [prefix + name for name in modules]
        self._cite = cite

    def register(
        self, table: Mapping[Callable[[C], Awaitable[str]], Spec], *, slow: Collection[object] = ()
    ) -> None:
        """Register a module's cases, in the table's order; those in `slow` wait for a long
        task (a larger bound)."""
        for run, (id, title, level, page, sentence) in table.items():
            case = Case(id, id.split(".", 1)[0], title, level, Citation(self._cite(page), sentence))
            self.entries.append(Entry(case, run, run in slow))

    def load(self) -> list[Entry[C]]:
        """Every case: each module's `CASES`, in order (those in its `SLOW` wait longer)."""
        if not self.entries:
            for name in self._modules:
                module = importlib.import_module(name)
                self.register(module.CASES, slow=getattr(module, "SLOW", ()))
        return self.entries

    def selected(self, only: Sequence[str]) -> list[Entry[C]]:
        return [e for e in self.load() if selected(e.case, only)]


def each(make: Callable[[R], Cases[C]], rows: Iterable[R]) -> Cases[C]:
    """The cases `make` makes of each row, in the rows' order (cases made from a table)."""
    return {run: spec for row in rows for run, spec in make(row).items()}


def _no_mapping(exc: Exception) -> tuple[Outcome, str] | None:
    return None


async def run_case(
    case: Case,
    body: Awaitable[str],
    outcome_of: Callable[[Exception], tuple[Outcome, str] | None] = _no_mapping,
) -> Result:
    """The `Result` of awaiting `body`: PASS with what it returned, FAIL or SKIP with the
    message of a `Fail` or `Skip`, what `outcome_of` makes of another exception (the
    checker's transport errors), else ERROR."""
    started = time.monotonic()
    try:
        outcome, detail = Outcome.PASS, await body
    except Fail as exc:
        outcome, detail = Outcome.FAIL, str(exc)
    except Skip as exc:
        outcome, detail = Outcome.SKIP, str(exc)
    except Exception as exc:
        outcome, detail = outcome_of(exc) or (Outcome.ERROR, f"{type(exc).__name__}: {exc}")
    return Result(case, outcome, detail, time.monotonic() - started)
