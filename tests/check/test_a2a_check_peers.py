"""`interlink a2a check` against real servers, run as users run it (a subprocess):
interlink's example agent (`interlink a2a serve`, with and without loopback webhooks
allowed), and the official SDKs' servers (`tests/interop/a2a/peers/py_server.py` on
a2a-sdk 1.3.0, `js_server.mjs` on @a2a-js/sdk 1.3.0), installed at test time.

Each test asserts the whole verdict: the cases that do not PASS, with their outcome, and
the exit status. Every FAIL below was checked against the spec's sentence the case cites
(see the comments); every SKIP names what the server does not offer.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from tests.interop.a2a.conftest import (
    ROOT,
    a2a_js_sdk,  # noqa: F401 (a fixture)
    a2a_py_sdk,  # noqa: F401 (a fixture)
    serve,
)
from tests.interop.a2a.test_our_client import peer  # noqa: F401 (a fixture)
from tests.serving import card_served, free_port

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

# What no server here offers: a signed card, a second interface, a required extension;
# all of them declare streaming.
NOT_OFFERED = {
    "card.signature": "SKIP",
    "card.signature_valid": "SKIP",
    "binding.equivalence": "SKIP",
    "extensions.required": "SKIP",
    "stream.unsupported": "SKIP",
}
# Only the two-bindings peer declares HTTP+JSON; on the others these SKIP.
REST_CASES = (
    "rest.send",
    "rest.get",
    "rest.not_found",
    "rest.error_details",
    "rest.not_cancelable",
    "rest.version",
    "rest.list",
    "rest.history_zero",
    "rest.content_type",
    "rest.stream",
)
NOT_OFFERED |= dict.fromkeys(REST_CASES, "SKIP")
# interlink's example agent declares push (push.unsupported is not asked) and serves
# JSON-RPC and HTTP+JSON (the rest cases and binding.equivalence are asked, and pass).
OURS = {
    k: v for k, v in NOT_OFFERED.items() if k not in REST_CASES and k != "binding.equivalence"
} | {"push.unsupported": "SKIP"}
PUSH_CASES = (
    "push.create",
    "push.get",
    "push.list",
    "push.delete",
    "push.delete_idempotent",
    "push.delivery",
    "push.delivery_payload",
    "push.delivery_auth",
)
# The SDK peers do not declare capabilities.pushNotifications: push.unsupported is asked
# (and passes: all four calls are -32003), the rest is SKIP.
NO_PUSH = {"push.private_refused": "SKIP", "push.unknown_task": "SKIP"} | dict.fromkeys(
    PUSH_CASES, "SKIP"
)


def check(url: str, *args: str, junit: Path | None = None) -> tuple[int, dict[str, Any]]:
    cmd = [sys.executable, "-m", "interlink", "a2a", "check", url, "--json", *args]
    if junit is not None:
        cmd += ["--junit", str(junit)]
    proc = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=150, stdin=subprocess.DEVNULL
    )
    assert proc.stderr == "", proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return proc.returncode, report


def verdicts(report: dict[str, Any]) -> dict[str, str]:
    """The cases that did not pass: id -> outcome."""
    return {c["id"]: c["outcome"] for c in report["cases"] if c["outcome"] != "PASS"}


def details(report: dict[str, Any]) -> str:
    return "\n".join(
        f"{c['outcome']} {c['id']}: {c['detail']}"
        for c in report["cases"]
        if c["outcome"] != "PASS"
    )


def test_ours_refuses_the_loopback_webhook_and_says_so(tmp_path: Path) -> None:
    """By default interlink refuses non-public webhook URLs (DECISIONS): that is reported
    as push.private_refused PASS, and the push cases SKIP with the refusal, not FAIL."""
    with serve() as server:
        status, report = check(
            server.url, "--input-prompt", "ask", "--slow-prompt", "slow 3", junit=tmp_path / "j.xml"
        )
    assert verdicts(report) == OURS | dict.fromkeys(PUSH_CASES, "SKIP"), details(report)
    skipped = next(c for c in report["cases"] if c["id"] == "push.delivery")
    assert "refused the loopback webhook" in skipped["detail"]
    assert "not globally reachable" in skipped["detail"]  # the server's own reason, quoted
    assert status == 0
    assert report["exitStatus"] == 0
    suites = ET.parse(tmp_path / "j.xml").getroot()
    assert suites.get("failures") == "0"
    assert int(suites.get("skipped") or 0) == 13


def test_ours_with_loopback_webhooks_allowed_delivers() -> None:
    """With `--push-allow 127.0.0.1` every push case passes, delivery to the checker's
    webhook included; accepting a loopback URL is the one finding (§13.2, a SHOULD),
    which fails the run only with --strict."""
    with serve(["--push-allow", "127.0.0.1"]) as server:
        status, report = check(server.url, "--input-prompt", "ask", "--slow-prompt", "slow 3")
        strict, _ = check(
            server.url, "--only", "push.private_refused", "--input-prompt", "ask", "--strict"
        )
    assert verdicts(report) == OURS | {"push.private_refused": "FAIL"}, details(report)
    assert report["summary"]["failed"] == {"MUST": 0, "SHOULD": 1, "MAY": 0}
    assert status == 0
    assert strict == 1


def test_sdk_servers(peer: str, request: pytest.FixtureRequest) -> None:  # noqa: F811
    """`peer` (from tests/interop/a2a/test_our_client.py) is each SDK's server in turn."""
    kind = request.node.callspec.params["peer"]
    status, report = check(peer, "--input-prompt", "ask", "--slow-prompt", "slow")
    if kind == "py":
        _python_sdk_server(status, report)
    else:
        _js_sdk_server(status, report)


def _python_sdk_server(status: int, report: dict[str, Any]) -> None:
    assert verdicts(report) == NOT_OFFERED | NO_PUSH | {
        # §8.6.1 SHOULD: its card route sends an ETag but no Cache-Control
        "card.cache_control": "FAIL",
        # §8.6.1 MAY: no Last-Modified (never fails the run)
        "card.last_modified": "FAIL",
        # §3.1.2 MUST "the stream MUST begin with the Task object": a streamed follow-up
        # to an input-required task starts with the artifact update
        "stream.follow_up_task_first": "FAIL",
        # no SSE `id:` fields, so there is no Last-Event-ID to resume from
        "subscribe.resume": "SKIP",
    }, details(report)
    assert status == 1
    assert report["summary"]["failed"]["MUST"] == 1


def _js_sdk_server(status: int, report: dict[str, Any]) -> None:
    assert verdicts(report) == NOT_OFFERED | NO_PUSH | {
        # §8.6.1 SHOULD/MAY: the card has no Cache-Control, no ETag, no Last-Modified
        "card.cache_control": "FAIL",
        "card.etag": "FAIL",
        "card.conditional": "SKIP",  # no ETag to revalidate
        "card.last_modified": "FAIL",
        # §3.6 "Patch version numbers [...] MUST not be considered when clients and
        # servers negotiate protocol versions": A2A-Version 1.0.3 gets -32009
        "version.patch_ignored": "FAIL",
        # MAY: the peer's HTTP glue routes only the bare path, `/?A2A-Version=` is a 404
        "version.query_parameter": "FAIL",
        # JSON-RPC 2.0 §5.1: a request without a method gets -32602, not -32600
        "jsonrpc.invalid_request": "FAIL",
        "subscribe.resume": "SKIP",  # no SSE `id:` fields
    }, details(report)
    assert status == 1
    assert report["summary"]["failed"]["MUST"] == 2


@contextlib.contextmanager
def two_bindings() -> Iterator[str]:
    """`tests/check/a2a_peer_two_bindings.py`: the Python SDK serving JSON-RPC and HTTP+JSON."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    cmd = [sys.executable, "-m", "tests.check.a2a_peer_two_bindings", str(port)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert card_served(proc, url), f"{cmd} did not serve its card in 30 s ({proc.poll()=})"
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def test_python_sdk_server_with_two_bindings(a2a_py_sdk: str) -> None:  # noqa: F811
    """JSON-RPC and HTTP+JSON on one handler: every HTTP+JSON case is asked, and the two
    bindings show the same task and the same not-found error (§5.1)."""
    with two_bindings() as url:
        status, report = check(url, "--input-prompt", "ask", "--slow-prompt", "slow")
    offered = {"binding.equivalence", *REST_CASES}
    assert verdicts(report) == {k: v for k, v in NOT_OFFERED.items() if k not in offered} | (
        NO_PUSH
    ) | {
        "card.cache_control": "FAIL",
        "card.last_modified": "FAIL",
        "stream.follow_up_task_first": "FAIL",
        "subscribe.resume": "SKIP",
        # §11.1 SHOULD: errors are sent as application/json, tasks as application/a2a+json
        "rest.content_type": "FAIL",
    }, details(report)
    assert status == 1
