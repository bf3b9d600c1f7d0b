"""Conformance checkers: `interlink acp check` (an agent over stdio) and, sharing the same
report, the A2A checker. They speak raw wire on purpose: our own clients refuse to send
the bad input a checker must send.

The report model and its renderers (`Case`, `Result`, `Report`, text, JSON, JUnit XML,
the exit status rule) are protocol-neutral and live here.
"""

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
]
