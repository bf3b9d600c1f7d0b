"""The protocol-neutral report: summary, exit statuses, text, JSON and JUnit XML."""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

import pytest

from interlink.check import (
    Case,
    Citation,
    Level,
    Outcome,
    Report,
    Result,
    render_json,
    render_junit,
    render_text,
    selected,
)

_CITE = Citation("initialization.mdx", "Clients MUST initialize the connection.")


def _case(id: str, level: Level) -> Case:
    return Case(id=id, area=id.split(".")[0], title=f"title of {id}", level=level, citation=_CITE)


def _report(*outcomes: tuple[str, Level, Outcome]) -> Report:
    report = Report(checker="interlink acp check", protocol="ACP v1", target="my-agent")
    for id, level, outcome in outcomes:
        report.results.append(Result(_case(id, level), outcome, detail=f"detail of {id}"))
    return report


def test_exit_status_zero_when_only_should_and_may_fail() -> None:
    report = _report(
        ("a.one", Level.MUST, Outcome.PASS),
        ("a.two", Level.SHOULD, Outcome.FAIL),
        ("b.three", Level.MAY, Outcome.FAIL),
        ("b.four", Level.MUST, Outcome.SKIP),
    )
    assert report.exit_status() == 0
    assert report.exit_status(strict=True) == 1


@pytest.mark.parametrize("outcome", [Outcome.FAIL, Outcome.ERROR])
def test_a_failed_or_broken_must_fails_the_run(outcome: Outcome) -> None:
    report = _report(("a.one", Level.MUST, outcome), ("a.two", Level.SHOULD, Outcome.PASS))
    assert report.exit_status() == 1


def test_may_never_fails_the_run_even_strict() -> None:
    assert _report(("a.one", Level.MAY, Outcome.FAIL)).exit_status(strict=True) == 0


def test_summary_counts_and_line() -> None:
    report = _report(
        ("a.one", Level.MUST, Outcome.PASS),
        ("a.two", Level.MUST, Outcome.FAIL),
        ("a.three", Level.SHOULD, Outcome.ERROR),
        ("b.four", Level.MAY, Outcome.SKIP),
    )
    summary = report.summary()
    assert (summary.total, summary.passed, summary.skipped, summary.errors) == (4, 1, 1, 1)
    assert summary.failed == {Level.MUST: 1, Level.SHOULD: 1, Level.MAY: 0}
    assert summary.line() == "1 passed, 2 failed (1 MUST, 1 SHOULD), 1 skipped, 1 error"


def test_text_groups_by_area_and_cites_failures_only() -> None:
    report = _report(
        ("a.one", Level.MUST, Outcome.PASS),
        ("b.two", Level.MUST, Outcome.FAIL),
        ("a.three", Level.SHOULD, Outcome.SKIP),
    )
    text = render_text(report)
    lines = text.splitlines()
    assert lines[0] == "interlink acp check: ACP v1, my-agent"
    a, b = lines.index("a"), lines.index("b")
    assert a < b
    # a.three is listed under its area, after a.one, though it ran after b.two
    assert [line.split()[2] for line in lines[a + 1 : a + 3]] == ["a.one", "a.three"]
    assert text.count(str(_CITE)) == 1  # only the failure is cited
    assert "-> detail of b.two" in text
    assert "-> detail of a.three" in text  # a skip says why
    assert "detail of a.one" not in text
    assert "1 passed, 1 failed (1 MUST), 1 skipped" in lines[-1]
    assert "FAILED" in lines[-1]
    assert "\x1b[" not in text
    assert "\x1b[31m" in render_text(report, color=True)


def test_json_has_every_case_and_the_exit_status() -> None:
    report = _report(("a.one", Level.MUST, Outcome.PASS), ("a.two", Level.SHOULD, Outcome.FAIL))
    document = json.loads(render_json(report, strict=True))
    assert document["exitStatus"] == 1
    assert document["summary"]["failed"] == {"MUST": 0, "SHOULD": 1, "MAY": 0}
    assert [c["id"] for c in document["cases"]] == ["a.one", "a.two"]
    assert document["cases"][1] == {
        "id": "a.two",
        "area": "a",
        "title": "title of a.two",
        "level": "SHOULD",
        "citation": {"page": _CITE.page, "sentence": _CITE.sentence},
        "outcome": "FAIL",
        "detail": "detail of a.two",
        "seconds": 0.0,
    }
    assert json.loads(render_json(report))["exitStatus"] == 0


def test_junit_counts_agree_with_the_exit_status() -> None:
    report = _report(
        ("a.one", Level.MUST, Outcome.FAIL),
        ("a.two", Level.SHOULD, Outcome.FAIL),
        ("a.three", Level.MUST, Outcome.ERROR),
        ("b.four", Level.MAY, Outcome.SKIP),
        ("b.five", Level.MUST, Outcome.PASS),
    )
    root = ET.fromstring(render_junit(report))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "1", "1")
    assert root.get("skipped") == "1"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["ACP v1 a", "ACP v1 b"]
    cases = {c.get("name", "").split()[0]: c for c in root.iter("testcase")}
    assert cases["a.one"].find("failure") is not None
    assert _CITE.sentence in (cases["a.one"].findtext("failure") or "")
    assert cases["a.three"].find("error") is not None
    assert cases["a.two"].find("failure") is None  # a SHOULD does not fail the run
    assert "FAIL (SHOULD)" in (cases["a.two"].findtext("system-out") or "")
    assert cases["b.four"].find("skipped") is not None
    strict = ET.fromstring(render_junit(report, strict=True))
    assert strict.get("failures") == "2"


def test_only_patterns() -> None:
    case = _case("framing.parse-error", Level.MUST)
    assert selected(case, [])
    assert selected(case, ["framing"])
    assert selected(case, ["framing.parse-error"])
    assert selected(case, ["framing."])
    assert selected(case, ["framing.parse*"])
    assert not selected(case, ["framing.parse"])
    assert not selected(case, ["session"])


def test_junit_holds_what_an_agent_wrote_even_control_characters() -> None:
    report = _report(("a.one", Level.MUST, Outcome.FAIL))
    bad = Result(report.results[0].case, Outcome.FAIL, detail="stderr: \x1b[31mred\x00 é")
    report.results[0] = bad
    root = ET.fromstring(render_junit(report))
    failure = next(root.iter("failure"))
    assert failure.get("message") == "stderr: \\x1b[31mred\\x00 é"
