"""Conformance checkers: `interlink acp check` (an agent over stdio) and, sharing the same
report, the A2A checker. They speak raw wire on purpose: our own clients refuse to send
the bad input a checker must send.

The report model and its renderers (`Case`, `Result`, `Report`, text, JSON, JUnit XML,
the exit status rule) are protocol-neutral and live here. The two checkers,
`acp_checker` and `a2a_checker` (options, `load_cases`, `run_check`), are imported on
first use: each costs tens of milliseconds, and a run needs one.
"""

import importlib
from typing import TYPE_CHECKING

from interlink.check._report import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Case,
    Citation,
    Level,
    Outcome,
    Report,
    Result,
    Summary,
    render_json,
    render_junit,
    render_text,
    selected,
)

if TYPE_CHECKING:
    from interlink.check import _a2a_runner as a2a_checker
    from interlink.check import _acp_runner as acp_checker

__all__ = [
    # the model
    "Case",
    "Citation",
    "Level",
    "Outcome",
    "Result",
    "Report",
    "Summary",
    "selected",
    # renderings and exit statuses
    "render_text",
    "render_json",
    "render_junit",
    "EXIT_OK",
    "EXIT_FAILED",
    "EXIT_USAGE",
    # the checkers
    "acp_checker",
    "a2a_checker",
]


def __getattr__(name: str) -> object:
    if name not in ("acp_checker", "a2a_checker"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"{__name__}._{name[:3]}_runner")
