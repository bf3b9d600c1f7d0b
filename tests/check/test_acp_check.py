"""`interlink acp check` as users run it (a subprocess), against agents whose behaviour is
known: our example agent, a deliberately broken one, and the agents written here on the
official Python and TypeScript SDKs. Verdicts asserted are the ones the spec gives for
what each agent actually does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from tests.interop.conftest import SdkPeers

ROOT = Path(__file__).resolve().parents[2]
BROKEN = [sys.executable, str(Path(__file__).with_name("broken_agent.py"))]
EXAMPLE = [sys.executable, str(ROOT / "examples" / "acp_agent.py")]
TURNS = ["--prompt", "hello there", "--slow-prompt", "slow", "--permission-prompt", "tool x"]

pytestmark = pytest.mark.e2e


def check(*args: str, agent: list[str], wait: float = 150) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "interlink", "acp", "check", "--json", *args, "--", *agent],
        capture_output=True,
        text=True,
        timeout=wait,
        cwd=ROOT,
    )
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def outcomes(report: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["outcome"] for c in report["cases"]}


def failed(report: dict[str, Any], level: str) -> list[str]:
    cases = report["cases"]
    return [c["id"] for c in cases if c["outcome"] in ("FAIL", "ERROR") and c["level"] == level]


@pytest.mark.timeout(180)
def test_our_example_agent_fails_no_must() -> None:
    status, report = check(*TURNS, agent=EXAMPLE)
    assert failed(report, "MUST") == []
    assert status == 0
    assert report["exitStatus"] == 0
    seen = outcomes(report)
    for case in (
        "rpc.parse-error",
        "rpc.number-line",
        "rpc.empty-array",
        "process.survives-batch",
        "init.gate",
        "session.prompt-unknown",
        "session.load-unknown",
        "session.load-replay",
        "prompt.updates-before-answer",
        "cancel.session-cancel",
        "cancel.cancel-request",
        "cancel.permission-pending",
        "ext.unknown-request",
        "process.exit-on-eof",
    ):
        assert seen[case] == "PASS", case
    # what it does not advertise is SKIP, with the reason, never a silent pass
    assert seen["session.resume-no-replay"] == "SKIP"
    assert seen["auth.authenticate"] == "SKIP"


BROKEN_FAILS = {
    "process.stdout-only-protocol": "MUST",
    "rpc.parse-error": "MUST",
    "init.gate": "SHOULD",
    "init.newer-version": "MUST",
    "rpc.id-zero": "MUST",
    "rpc.id-negative": "MUST",
    "rpc.id-large": "MUST",
    "rpc.unknown-method": "SHOULD",
    "ext.unknown-request": "SHOULD",
    "prompt.updates-before-answer": "MUST",
    "cancel.session-cancel": "MUST",
}


@pytest.mark.timeout(120)
def test_a_broken_agent_fails_the_rules_it_breaks(tmp_path: Path) -> None:
    junit = tmp_path / "check.xml"
    args = ["--timeout", "3", "--prompt", "hi", "--slow-prompt", "slow", "--junit", str(junit)]
    status, report = check(*args, agent=BROKEN)
    assert status == 1
    seen = outcomes(report)
    cases = {c["id"]: c for c in report["cases"]}
    for case, level in BROKEN_FAILS.items():
        assert seen[case] == "FAIL", case
        assert cases[case]["level"] == level, case
    # what it does right is not blamed on it
    for case in ("rpc.id-string", "session.new", "prompt.stop-reason", "process.exit-on-eof"):
        assert seen[case] == "PASS", case
    assert "broken agent ready" in cases["process.stdout-only-protocol"]["detail"]
    assert "65535" in cases["init.newer-version"]["detail"]
    assert cases["rpc.parse-error"]["citation"]["page"].startswith("JSON-RPC 2.0")
    # JUnit counts the MUST failures as failures, the rest as passed with a finding
    root = ET.parse(junit).getroot()
    assert int(root.get("failures", "")) == len(failed(report, "MUST"))
    # SHOULD failures alone fail the run only with --strict
    should = ["--timeout", "3", "--only", "init.gate", "--only", "rpc.unknown-method"]
    lenient_status, lenient = check(*should, agent=BROKEN)
    assert set(outcomes(lenient).values()) == {"FAIL"}
    assert (lenient_status, lenient["exitStatus"]) == (0, 0)
    strict_status, strict = check("--strict", *should, agent=BROKEN)
    assert (strict_status, strict["exitStatus"]) == (1, 1)


@pytest.mark.interop
@pytest.mark.timeout(120)
def test_the_python_sdk_agent(py_sdk: SdkPeers) -> None:
    only = ["--only", "rpc", "--only", "process.survives*", "--only", "init.gate"]
    status, report = check("--timeout", "10", *only, agent=py_sdk.agent_cmd)
    assert status == 1
    seen = outcomes(report)
    # DECISIONS.md: bad JSON gets no -32700; one JSON array line kills its receive loop
    assert seen["rpc.parse-error"] == "FAIL"
    assert seen["process.survives-parse-error"] == "PASS"
    for input_ in ("number-line", "string-line", "empty-array", "batch"):
        assert seen[f"process.survives-{input_}"] == "FAIL", input_
    assert seen["rpc.method-not-string"] == "FAIL"  # -32601 instead of -32600
    assert seen["rpc.id-object"] == "FAIL"
    assert seen["init.gate"] == "FAIL"  # session/new before initialize is served
    assert seen["rpc.id-string"] == seen["rpc.crlf"] == "PASS"


@pytest.mark.interop
@pytest.mark.timeout(150)
def test_the_typescript_sdk_agent(ts_sdk: SdkPeers) -> None:
    status, report = check(*TURNS, agent=ts_sdk.agent_cmd)
    assert failed(report, "MUST") == []
    assert status == 0
    seen = outcomes(report)
    for case in ("rpc.parse-error", "process.survives-batch", "init.gate", "cancel.session-cancel"):
        assert seen[case] == "PASS", case
    # it reads invalid UTF-8 with replacement characters and serves the request
    assert seen["rpc.invalid-utf8"] == "FAIL"


@pytest.mark.timeout(60)
def test_a_silent_agent_fails_within_the_timeout_and_never_hangs() -> None:
    silent = [sys.executable, "-c", "import time; time.sleep(120)"]
    only = ["--only", "init", "--only", "rpc.parse-error"]
    status, report = check("--timeout", "1", "--startup", "1", *only, agent=silent, wait=40)
    assert status == 1
    same = next(c for c in report["cases"] if c["id"] == "init.same-version")
    assert same["outcome"] == "FAIL"
    assert "within 1s" in same["detail"]


@pytest.mark.timeout(60)
def test_an_agent_that_exits_at_once_is_reported_with_its_status() -> None:
    gone = [sys.executable, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)"]
    status, report = check("--timeout", "5", "--only", "session.new", agent=gone, wait=40)
    assert status == 1
    (case,) = report["cases"]
    assert case["outcome"] == "FAIL"
    assert "exited with status 3" in case["detail"]
    assert "boom" in case["detail"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give the agent's command after --"),
        (["--env", "NOEQUALS", "--", "true"], "--env takes KEY=VALUE"),
        (["--only", "no.such.case", "--", "true"], "selects no case"),
        (["--timeout", "0", "--", "true"], "must be positive"),
        (["--", "./no-such-agent"], "command not found: ./no-such-agent"),
    ],
)
def test_bad_usage_exits_2(args: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "interlink", "acp", "check", *args],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
    )
    assert done.returncode == 2
    assert message in done.stderr


def test_the_agent_starts_here_and_cwd_is_the_sessions_directory(tmp_path: Path) -> None:
    agent = [sys.executable, "examples/acp_agent.py"]  # relative to here, not to tmp_path
    status, report = check("--cwd", str(tmp_path), "--only", "session.new", agent=agent)
    assert status == 0
    assert outcomes(report) == {"session.new": "PASS"}


def test_text_report_and_list() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "interlink", "acp", "check", "--only", "init", "--", *EXAMPLE],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
    )
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0].startswith("interlink acp check: ACP v1, ")
    assert "init" in lines
    assert lines[-1].strip("= ").endswith("(OK)")
    listed = subprocess.run(
        [sys.executable, "-m", "interlink", "acp", "check", "--list"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert "cancel.permission-pending" in listed.stdout
