"""`interlink a2a check` against real servers, run as users run it (a subprocess):
interlink's example agent (`interlink a2a serve`: JSON-RPC and HTTP+JSON, with and
without loopback webhooks allowed), and the official SDKs' servers, installed at test
time: `tests/interop/a2a/peers/` (a2a-sdk 1.3.0 on JSON-RPC, on HTTP+JSON alone, on gRPC
alone; @a2a-js/sdk 1.3.0) and `tests/check/a2a_peer_bindings.py` (a2a-sdk 1.3.0 on
several bindings at once).

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

from interlink.check._a2a_runner import load_cases
from tests.interop.a2a.conftest import (
    ROOT,
    a2a_js_sdk,  # noqa: F401 (a fixture)
    a2a_py_sdk,  # noqa: F401 (a fixture)
    serve,
)
from tests.interop.a2a.test_our_client import sdk_peer
from tests.serving import card_served, free_port

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

# What no server here offers: a signed card, a required extension (interlink's server
# offers both in test_a2a_check_offers.py); all of them declare streaming.
NOT_OFFERED = {
    "card.signature": "SKIP",
    "card.signature_valid": "SKIP",
    "extensions.required": "SKIP",
    "stream.unsupported": "SKIP",
}
# What every server here does with media types: a part of a type the card does not list
# is served (§13.4 SHOULD reject it, -32005), and acceptedOutputModes of a type it cannot
# produce still get text/plain parts (a2a.proto SHOULD tailor; -32005 would do too);
# -32006 cannot be provoked. (The several-bindings peer turns the SDK's input check on.)
CONTENT = {
    "content.input_mode": "FAIL",
    "content.output_mode": "FAIL",
    "content.invalid_agent_response": "SKIP",
}
CASES = [e.case.id for e in load_cases()]
# the cases of one binding: the `rest.` and `grpc.` copies, and those over JSON-RPC
# (all but the card's and the cross-binding one)
REST = dict.fromkeys((c for c in CASES if c.startswith("rest.")), "SKIP")
GRPC = dict.fromkeys((c for c in CASES if c.startswith("grpc.")), "SKIP")
JSONRPC = dict.fromkeys(
    (c for c in CASES if c.split(".")[0] not in ("card", "rest", "grpc", "binding")), "SKIP"
)
ONE_INTERFACE = {"binding.equivalence": "SKIP"}
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
# The SDK peers in tests/interop do not declare capabilities.pushNotifications:
# push.unsupported is asked (and passes: all four calls are -32003), the rest is SKIP.
NO_PUSH = {"push.private_refused": "SKIP", "push.unknown_task": "SKIP"} | dict.fromkeys(
    PUSH_CASES, "SKIP"
)
# What a2a-sdk 1.3.0 shows on any binding
PY_SDK = NOT_OFFERED | {
    # §3.1.2 MUST "the stream MUST begin with the Task object": a streamed follow-up
    # to an input-required task starts with the artifact update
    "stream.follow_up_task_first": "FAIL",
    # no SSE `id:` fields, so there is no Last-Event-ID to resume from
    "subscribe.resume": "SKIP",
}
SDK_CARD = {
    # §8.6.1 SHOULD: its card route sends an ETag but no Cache-Control
    "card.cache_control": "FAIL",
    # §8.6.1 MAY: no Last-Modified (never fails the run)
    "card.last_modified": "FAIL",
}
# §11.1 SHOULD: errors are sent as application/json, tasks as application/a2a+json
SDK_REST = {"rest.content_type": "FAIL"}
# §3.6.2 MUST "agents MUST return a VersionNotSupportedError"; "Agents MUST interpret
# empty value as 0.3 version" (the card declares only 1.0): the SDK's gRPC handler reads
# no a2a-version metadata, it serves 99.0 and none as 1.0
SDK_GRPC = {"grpc.version.unsupported": "FAIL", "grpc.version.empty_is_0_3": "FAIL"}


def over(area: str, verdicts: dict[str, str]) -> dict[str, str]:
    """The verdicts of the shared cases again, as their copies under `area` show them."""
    return {f"{area}.{k}": v for k, v in verdicts.items() if f"{area}.{k}" in CASES}


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


# interlink's example agent declares push: push.unsupported is not asked; it refuses
# media types its card does not list, so the content cases pass but the one no request
# can provoke.
OURS = NOT_OFFERED | {"content.invalid_agent_response": "SKIP", "push.unsupported": "SKIP"}


def test_ours_refuses_the_loopback_webhook_and_says_so(tmp_path: Path) -> None:
    """By default interlink refuses non-public webhook URLs (DECISIONS): that is reported
    as push.private_refused PASS, and the push cases SKIP with the refusal, not FAIL; on
    both bindings it serves, alike (§5.1)."""
    with serve() as server:
        status, report = check(
            server.url, "--input-prompt", "ask", "--slow-prompt", "slow 3", junit=tmp_path / "j.xml"
        )
    ours = OURS | dict.fromkeys(PUSH_CASES, "SKIP")
    assert verdicts(report) == ours | over("rest", ours) | GRPC, details(report)
    skipped = next(c for c in report["cases"] if c["id"] == "push.delivery")
    assert "refused the loopback webhook" in skipped["detail"]
    assert "not globally reachable" in skipped["detail"]  # the server's own reason, quoted
    assert status == 0
    assert report["exitStatus"] == 0
    suites = ET.parse(tmp_path / "j.xml").getroot()
    assert suites.get("failures") == "0"
    assert int(suites.get("skipped") or 0) == sum(v == "SKIP" for v in verdicts(report).values())


def test_ours_with_loopback_webhooks_allowed_delivers() -> None:
    """With `--push-allow 127.0.0.1` every push case passes on both bindings, delivery to
    the checker's webhook included; accepting a loopback URL is a finding (§13.2, a
    SHOULD), which fails the run only with --strict."""
    with serve(["--push-allow", "127.0.0.1"]) as server:
        status, report = check(server.url, "--input-prompt", "ask", "--slow-prompt", "slow 3")
        strict, _ = check(
            server.url, "--only", "push.private_refused", "--input-prompt", "ask", "--strict"
        )
    ours = OURS | {"push.private_refused": "FAIL"}
    assert verdicts(report) == ours | over("rest", ours) | GRPC, details(report)
    assert report["summary"]["failed"] == {"MUST": 0, "SHOULD": 2, "MAY": 0}
    assert status == 0
    assert strict == 1


def test_ours_with_grpc_too() -> None:
    """`--grpc-port 0`: the card lists all three bindings, and every shared case is asked
    over each with the same verdict; the three show the same task (§5.1)."""
    with serve(["--grpc-port", "0"]) as server:
        status, report = check(server.url, "--input-prompt", "ask", "--slow-prompt", "slow 3")
    ours = OURS | dict.fromkeys(PUSH_CASES, "SKIP")
    no_ids = {"grpc.subscribe.resume": "SKIP"}  # gRPC streams carry no event ids
    expected = ours | over("rest", ours) | over("grpc", ours) | no_ids
    assert verdicts(report) == expected, details(report)
    assert status == 0


def sdk_check(kind: str, mode: str = "jsonrpc") -> tuple[int, dict[str, Any]]:
    with sdk_peer(kind, mode) as url:
        return check(url, "--input-prompt", "ask", "--slow-prompt", "slow")


def test_python_sdk_server(a2a_py_sdk: str) -> None:  # noqa: F811
    status, report = sdk_check("py")
    py = PY_SDK | CONTENT | NO_PUSH
    assert verdicts(report) == py | SDK_CARD | REST | GRPC | ONE_INTERFACE, details(report)
    assert status == 1
    assert report["summary"]["failed"]["MUST"] == 1


def test_python_sdk_server_on_http_json_alone(a2a_py_sdk: str) -> None:  # noqa: F811
    """A card with one HTTP+JSON interface: the cases over JSON-RPC SKIP, their `rest.`
    copies are asked."""
    status, report = sdk_check("py", "rest")
    py = PY_SDK | CONTENT | NO_PUSH
    expected = JSONRPC | SDK_CARD | over("rest", py) | SDK_REST | GRPC | ONE_INTERFACE
    assert verdicts(report) == NOT_OFFERED | expected, details(report)
    assert status == 1


def test_python_sdk_server_on_grpc_alone(a2a_py_sdk: str) -> None:  # noqa: F811
    """A card with one gRPC interface (`a2a-sdk[grpc]`): the `grpc.` copies are asked."""
    status, report = sdk_check("py-grpc", "grpc")
    py = PY_SDK | CONTENT | NO_PUSH
    expected = JSONRPC | SDK_CARD | REST | over("grpc", py) | SDK_GRPC | ONE_INTERFACE
    assert verdicts(report) == NOT_OFFERED | expected, details(report)
    card = next(c for c in report["cases"] if c["id"] == "card.interfaces")
    assert "answers GRPC" in card["detail"]
    assert status == 1


def test_js_sdk_server(a2a_js_sdk: str) -> None:  # noqa: F811
    status, report = sdk_check("js")
    assert verdicts(report) == NOT_OFFERED | CONTENT | NO_PUSH | REST | GRPC | ONE_INTERFACE | {
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
def sdk_bindings(*, grpc: bool = False) -> Iterator[str]:
    """`tests/check/a2a_peer_bindings.py`: the Python SDK serving JSON-RPC and HTTP+JSON,
    and gRPC on a port of its own when `grpc`."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    cmd = [sys.executable, "-m", "tests.check.a2a_peer_bindings", str(port)]
    cmd += [str(free_port())] if grpc else []
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert card_served(proc, url), f"{cmd} did not serve its card in 30 s ({proc.poll()=})"
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


# What the SDK peer of several bindings shows over JSON-RPC (each other binding's copies
# of these cases show the same): it declares push, and checks input modes.
SEVERAL = PY_SDK | {
    "content.output_mode": "FAIL",
    "content.invalid_agent_response": "SKIP",
    # §13.2 SHOULD: the SDK's push sender takes a webhook on 127.0.0.1
    "push.private_refused": "FAIL",
    "push.unsupported": "SKIP",  # push is declared
}


def test_python_sdk_server_with_two_bindings(a2a_py_sdk: str) -> None:  # noqa: F811
    """JSON-RPC and HTTP+JSON on one handler: every HTTP+JSON case is asked, each shared
    case has the same verdict on both bindings, and the two show the same task and the
    same not-found error (§5.1)."""
    with sdk_bindings() as url:
        status, report = check(url, "--input-prompt", "ask", "--slow-prompt", "slow")
    assert verdicts(report) == SEVERAL | over("rest", SEVERAL) | SDK_CARD | SDK_REST | GRPC, (
        details(report)
    )
    assert status == 1


def test_python_sdk_server_with_grpc_too(a2a_py_sdk: str) -> None:  # noqa: F811
    """The same handler on gRPC as well (`a2a-sdk[grpc]`'s GrpcHandler): every shared case
    is asked over gRPC with the verdict it has over JSON-RPC, but the version's; the
    three bindings show the same task and the same not-found error (§5.1)."""
    with sdk_bindings(grpc=True) as url:
        status, report = check(url, "--input-prompt", "ask", "--slow-prompt", "slow")
    several = over("rest", SEVERAL) | SDK_REST | over("grpc", SEVERAL) | SDK_GRPC
    assert verdicts(report) == SEVERAL | SDK_CARD | several, details(report)
    card = next(c for c in report["cases"] if c["id"] == "card.interfaces")
    assert "GRPC 127.0.0.1:" in card["detail"]
    assert "answers GRPC" in card["detail"]
    assert status == 1
