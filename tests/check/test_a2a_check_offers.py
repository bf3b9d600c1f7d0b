"""`interlink a2a check` against interlink's own server where it offers what the peers
of `test_a2a_check_peers.py` do not: a signed card (`--sign-key`, §8.4) and a card
that declares a required extension (§3.3.4). Run as users run it (subprocesses)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from interlink.a2a._card_sign import SigningKey
from tests.check.a2a_extension_app import EXTENSION
from tests.check.test_a2a_check_peers import check, details, verdicts
from tests.cli.a2a_harness import CLI, ROOT, serving
from tests.cli.test_a2a_sign import keys  # noqa: F401 (a fixture: PEM keys, a JWK set)

pytest.importorskip("joserfc")
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

EXAMPLE = "examples/a2a_agent.py:app"
SIGNATURE = ("--only", "card.signature", "--only", "card.signature_valid")


@pytest.fixture(scope="module")
def signed(keys: dict[str, Path]) -> Iterator[str]:  # noqa: F811
    with serving(EXAMPLE, "--store", "memory:", "--sign-key", str(keys["private"])) as (url, _):
        yield url


def case(report: dict[str, Any], id: str) -> dict[str, str]:
    """The one case `id` of the JSON report."""
    found: list[dict[str, str]] = [c for c in report["cases"] if c["id"] == id]
    assert len(found) == 1, report
    return found[0]


def test_a_correctly_signed_card_passes_with_the_key_given(
    signed: str,
    keys: dict[str, Path],  # noqa: F811
) -> None:
    """§8.4.1/§8.4.2: the JWS has alg and kid and verifies over the JCS-canonical card,
    with the public key given as a PEM file or as a JWK set."""
    kid = SigningKey.load(keys["private"]).kid
    for option, key in (("--verify-key", "public"), ("--jwks", "jwks")):
        status, report = check(signed, *SIGNATURE, option, str(keys[key]))
        assert verdicts(report) == {}, details(report)
        assert case(report, "card.signature")["detail"] == f"alg ES256, kid {kid}"
        assert case(report, "card.signature_valid")["detail"] == f"verified: kid {kid!r} (ES256)"
        assert status == 0


def test_without_a_key_the_signature_cannot_be_verified(signed: str) -> None:
    """Our header names no `jwk` nor `jku`: without --verify-key or --jwks the checker has
    no key, which is a SKIP saying so, not a FAIL."""
    status, report = check(signed, *SIGNATURE)
    assert verdicts(report) == {"card.signature_valid": "SKIP"}, details(report)
    assert "no jwk or jku" in case(report, "card.signature_valid")["detail"]
    assert status == 0


def test_a_signature_another_key_made_fails(
    signed: str,
    keys: dict[str, Path],  # noqa: F811
) -> None:
    """§8.4.1 MUST: a signature that does not verify with the trusted key is a FAIL."""
    status, report = check(signed, *SIGNATURE, "--verify-key", str(keys["other"]))
    assert verdicts(report) == {"card.signature_valid": "FAIL"}, details(report)
    assert "does not verify" in case(report, "card.signature_valid")["detail"]
    assert status == 1


def test_a_bad_key_file_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    cmd = [*CLI, "check", "http://127.0.0.1:9/", "--verify-key", str(bad)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == "interlink a2a check: a key is PEM, a JWK or a JWK set (JSON)\n"


def test_a_required_extension_not_activated_is_refused_on_each_binding() -> None:
    """§3.3.4 MUST: a request that does not activate the card's required extension gets
    ExtensionSupportRequiredError (-32008), over JSON-RPC and HTTP+JSON alike; the
    unknown-extension case does not apply then."""
    target = "tests/check/a2a_extension_app.py:app"
    with serving(target, "--store", "memory:") as (url, _):
        status, report = check(url, "--only", "extensions", "--only", "rest.extensions")
    assert verdicts(report) == {
        "extensions.unknown_ignored": "SKIP",
        "rest.extensions.unknown_ignored": "SKIP",
    }, details(report)
    for id in ("extensions.required", "rest.extensions.required"):
        assert EXTENSION in case(report, id)["detail"]
        assert "(-32008)" in case(report, id)["detail"]
    assert status == 0


def test_an_agent_requiring_an_extension_is_judged_with_it_activated() -> None:
    """The checker activates the card's required extensions on every request but the
    one that checks the refusal, so the rest of the run judges the agent itself, not
    -32008 everywhere: the same verdicts as the example agent without the extension."""
    target = "tests/check/a2a_extension_app.py:app"
    with serving(target, "--store", "memory:") as (url, _):
        status, report = check(url, "--input-prompt", "ask", "--slow-prompt", "slow 3")
    must = [c for c in report["cases"] if c["outcome"] == "FAIL" and c["level"] == "MUST"]
    assert must == [], details(report)
    assert case(report, "extensions.required")["outcome"] == "PASS"
    assert case(report, "rest.extensions.required")["outcome"] == "PASS"
    assert case(report, "send.result")["outcome"] == "PASS", details(report)
    assert status == 0
