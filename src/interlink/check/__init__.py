"""Conformance checkers: `interlink acp check` (an agent over stdio) and, sharing the same
report, the A2A checker. They speak raw wire on purpose: our own clients refuse to send
the bad input a checker must send.

The report model and its renderers (`Case`, `Result`, `Report`, text, JSON, JUnit XML,
the exit status rule) are protocol-neutral and live here. The two checkers (their
options, case lists and runs) are imported on first use: a run needs one of them.
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
    from interlink.check._a2a_runner import Options as A2AOptions
    from interlink.check._a2a_runner import load_cases as a2a_cases
    from interlink.check._a2a_runner import run_check as run_a2a_check
    from interlink.check._acp_runner import Options as AcpOptions
    from interlink.check._acp_runner import load_cases as acp_cases
    from interlink.check._acp_runner import run_check as run_acp_check
    from interlink.check._wire import Launch

_CHECKERS = {
    "AcpOptions": ("_acp_runner", "Options"),
    "Launch": ("_wire", "Launch"),
    "acp_cases": ("_acp_runner", "load_cases"),
    "run_acp_check": ("_acp_runner", "run_check"),
    "A2AOptions": ("_a2a_runner", "Options"),
    "a2a_cases": ("_a2a_runner", "load_cases"),
    "run_a2a_check": ("_a2a_runner", "run_check"),
}

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
    # the ACP checker
    "AcpOptions",
    "Launch",
    "acp_cases",
    "run_acp_check",
    # the A2A checker
    "A2AOptions",
    "a2a_cases",
    "run_a2a_check",
]


def __getattr__(name: str) -> object:
    if name not in _CHECKERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _CHECKERS[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), attr)
