"""The report of a conformance check, protocol-neutral: cases, their outcomes, renderers.

A checker (ACP over stdio, A2A over HTTP) produces one `Result` per `Case` it ran; a
`Report` holds them in the order the checker registered its cases. Three renderings:
text for a person (grouped by area, failures with the spec's sentence, one summary line
like pytest's), JSON (one object with every case), JUnit XML (for CI).

Exit status (`Report.exit_status`): 0 when no MUST case failed, 1 otherwise; with
`strict`, a failed SHOULD case is a failure too. A case whose check itself broke
(`ERROR`) counts as failed at its level: a checker that could not judge a MUST must not
let CI pass. MAY cases never fail the run. Usage errors (2) are the command line's.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from xml.etree import ElementTree as ET

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "Case",
    "Citation",
    "Level",
    "Outcome",
    "Report",
    "Result",
    "Summary",
    "render_json",
    "render_junit",
    "render_text",
    "selected",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class Level(enum.Enum):
    """How binding the rule is (RFC 2119 as the spec words it)."""

    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"


class Outcome(enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"  # the case could not be asked of this peer; the detail says why
    ERROR = "ERROR"  # the check itself broke; the detail says how


@dataclass(frozen=True)
class Citation:
    """Where the rule is written: a page (or section) and the spec's own sentence."""

    page: str
    sentence: str

    def __str__(self) -> str:
        return f'{self.page}: "{self.sentence}"'


@dataclass(frozen=True)
class Case:
    """One rule the checker asks of a peer. `id` is stable (`area.name`), for `--only`."""

    id: str
    area: str
    title: str
    level: Level
    citation: Citation


@dataclass(frozen=True)
class Result:
    case: Case
    outcome: Outcome
    detail: str = ""
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.outcome in (Outcome.FAIL, Outcome.ERROR)


@dataclass(frozen=True)
class Summary:
    total: int
    passed: int
    failed: dict[Level, int]  # FAIL and ERROR outcomes, per level
    skipped: int
    errors: int  # ERROR outcomes (also counted in `failed`)

    def line(self) -> str:
        """`41 passed, 3 failed (2 MUST, 1 SHOULD), 5 skipped` (pytest's shape)."""
        parts = [f"{self.passed} passed"]
        failed = sum(self.failed.values())
        if failed:
            levels = ", ".join(f"{n} {lvl.value}" for lvl, n in self.failed.items() if n)
            parts.append(f"{failed} failed ({levels})")
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        if self.errors:
            parts.append(f"{self.errors} error{'s' if self.errors != 1 else ''}")
        return ", ".join(parts)


@dataclass
class Report:
    """What one run found. `target` names the peer (the agent's command, a URL)."""

    checker: str  # "interlink acp check"
    protocol: str  # "ACP v1"
    target: str
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> Summary:
        failed = dict.fromkeys(Level, 0)
        for result in self.results:
            if result.failed:
                failed[result.case.level] += 1
        return Summary(
            total=len(self.results),
            passed=sum(r.outcome is Outcome.PASS for r in self.results),
            failed=failed,
            skipped=sum(r.outcome is Outcome.SKIP for r in self.results),
            errors=sum(r.outcome is Outcome.ERROR for r in self.results),
        )

    def exit_status(self, *, strict: bool = False) -> int:
        failing = {Level.MUST, Level.SHOULD} if strict else {Level.MUST}
        bad = any(r.failed and r.case.level in failing for r in self.results)
        return EXIT_FAILED if bad else EXIT_OK

    def by_area(self) -> Iterator[tuple[str, list[Result]]]:
        """The results grouped by area, areas in the order their first case ran."""
        areas: dict[str, list[Result]] = {}
        for result in self.results:
            areas.setdefault(result.case.area, []).append(result)
        yield from areas.items()


# -- text ------------------------------------------------------------------------------

_OUTCOME_CODES = {Outcome.PASS: "32", Outcome.FAIL: "31", Outcome.SKIP: "33", Outcome.ERROR: "35"}


def _paint(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


def _indented(text: str, prefix: str) -> Iterable[str]:
    for line in text.splitlines() or [""]:
        yield prefix + line


def render_text(report: Report, *, color: bool = False, verbose: bool = False) -> str:
    """The report for a person. Passing cases take one line each; a FAIL or ERROR adds
    the citation and what was seen; a SKIP adds its reason. `verbose` cites every case."""
    lines = [f"{report.checker}: {report.protocol}, {report.target}", ""]
    width = max((len(r.case.id) for r in report.results), default=0)
    for area, results in report.by_area():
        lines.append(_paint(area, "1", color))
        for result in results:
            case = result.case
            outcome = _paint(f"{result.outcome.value:<5}", _OUTCOME_CODES[result.outcome], color)
            lines.append(f"  {outcome} {case.level.value:<6} {case.id:<{width}}  {case.title}")
            pad = " " * 15
            if result.failed or verbose:
                lines.extend(_indented(str(case.citation), pad))
            if result.detail and result.outcome is not Outcome.PASS:
                first, *rest = _indented(result.detail, pad + "   ")
                lines.extend([pad + "-> " + first.removeprefix(pad + "   "), *rest])
            elif result.detail and verbose:
                lines.extend(_indented(result.detail, pad))
        lines.append("")
    summary = report.summary()
    status = "FAILED" if report.exit_status() else "OK"
    closing = f" {summary.line()} in {report.seconds:.1f}s ({status}) "
    code = "31" if report.exit_status() else "32"
    lines.append(_paint(closing.center(max(72, len(closing) + 4), "="), code, color))
    return "\n".join(lines) + "\n"


# -- JSON ------------------------------------------------------------------------------


def _result_object(result: Result) -> dict[str, object]:
    case = result.case
    return {
        "id": case.id,
        "area": case.area,
        "title": case.title,
        "level": case.level.value,
        "citation": {"page": case.citation.page, "sentence": case.citation.sentence},
        "outcome": result.outcome.value,
        "detail": result.detail,
        "seconds": round(result.seconds, 3),
    }


def render_json(report: Report, *, strict: bool = False) -> str:
    """One JSON object: the run, its summary, its exit status and every case."""
    summary = report.summary()
    document = {
        "checker": report.checker,
        "protocol": report.protocol,
        "target": report.target,
        "seconds": round(report.seconds, 3),
        "strict": strict,
        "exitStatus": report.exit_status(strict=strict),
        "summary": {
            "total": summary.total,
            "passed": summary.passed,
            "failed": {level.value: n for level, n in summary.failed.items()},
            "skipped": summary.skipped,
            "errors": summary.errors,
            "line": summary.line(),
        },
        "cases": [_result_object(r) for r in report.results],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


# -- JUnit XML -------------------------------------------------------------------------


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    """`text` without the characters XML 1.0 cannot hold (an agent's stderr may have
    ANSI escapes or NULs), each shown as its escape."""
    return _NOT_XML.sub(lambda m: repr(m.group())[1:-1], text)


def render_junit(report: Report, *, strict: bool = False) -> str:
    """JUnit XML, one testsuite per area. A failed case that does not fail the run (a
    SHOULD without `strict`, any MAY) is reported as passed with its finding in
    `system-out`, so that CI dashboards agree with the exit status."""
    failing = {Level.MUST, Level.SHOULD} if strict else {Level.MUST}
    root = ET.Element("testsuites", name=report.checker, time=f"{report.seconds:.3f}")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for area, results in report.by_area():
        suite = ET.SubElement(root, "testsuite", name=f"{report.protocol} {area}")
        local = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for result in results:
            case = result.case
            element = ET.SubElement(
                suite,
                "testcase",
                classname=f"{report.checker}.{area}",
                name=f"{case.id} [{case.level.value}] {case.title}",
                time=f"{result.seconds:.3f}",
            )
            local["tests"] += 1
            text = _xml(f"{case.citation}\n{result.detail}".strip())
            message = _xml(result.detail)
            counted = result.failed and case.level in failing
            if result.outcome is Outcome.SKIP:
                local["skipped"] += 1
                ET.SubElement(element, "skipped", message=message)
            elif counted and result.outcome is Outcome.ERROR:
                local["errors"] += 1
                ET.SubElement(element, "error", message=message).text = text
            elif counted:
                local["failures"] += 1
                ET.SubElement(element, "failure", message=message).text = text
            elif result.failed:
                out = ET.SubElement(element, "system-out")
                out.text = f"{result.outcome.value} ({case.level.value}): {text}"
        for key, value in local.items():
            suite.set(key, str(value))
            counts[key] += value
    for key, value in counts.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def selected(case: Case, only: Sequence[str]) -> bool:
    """Whether `--only` picks the case: each pattern is a case id, an area, or an id
    prefix ending in `.` or `*` (`framing.`, `session*`). No patterns pick every case."""
    if not only:
        return True
    for pattern in only:
        stem = pattern.rstrip("*.")
        if case.id == pattern or case.area == pattern or case.id.startswith(stem + "."):
            return True
        if pattern.endswith("*") and case.id.startswith(stem):
            return True
    return False
