"""`interlink a2a serve --sign-key` and `interlink a2a card|send --verify-key|--jwks`: real
subprocesses on loopback; a card no trusted key signed is refused, saying why."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from interlink.a2a._card_sign import SigningKey
from tests.a2a.test_card_sign import pem_pair
from tests.cli.a2a_harness import CLI, ROOT, TIMEOUT, a2a, json_server, one_error_line, serving

pytest.importorskip("joserfc")
pytestmark = pytest.mark.e2e

EXAMPLE = "examples/a2a_agent.py:app"


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    where = tmp_path_factory.mktemp("keys")
    private, public = pem_pair(where, "ES256", "signer")
    _, other = pem_pair(where, "ES256", "other")
    jwks = where / "jwks.json"
    jwks.write_text(json.dumps({"keys": [SigningKey.load(private).public_jwk()]}))
    return {"private": private, "public": public, "other": other, "jwks": jwks}


@pytest.fixture(scope="module")
def url(keys: dict[str, Path]) -> Iterator[str]:
    with serving(EXAMPLE, "--store", "memory:", "--sign-key", str(keys["private"])) as (url, _):
        yield url


@pytest.fixture
def jwks_url(keys: dict[str, Path]) -> Iterator[str]:
    """The JWK set served over HTTP on loopback."""
    with json_server(keys["jwks"].read_bytes()) as url:
        yield url + "jwks.json"


def test_card_shows_a_signature_verified_with_a_key_or_a_jwks(
    url: str, keys: dict[str, Path], jwks_url: str
) -> None:
    kid = SigningKey.load(keys["private"]).kid
    for option in (["--verify-key", str(keys["public"])], ["--jwks", str(keys["jwks"])]):
        done = a2a("card", url, *option)
        assert done.returncode == 0, done.stderr
        assert f"signed: kid {kid} (ES256) · verified" in done.stdout
    done = a2a("card", url, "--jwks", jwks_url)
    assert done.returncode == 0, done.stderr
    assert "· verified" in done.stdout
    done = a2a("card", url)
    assert "· not verified (give --verify-key or --jwks)" in done.stdout


def test_a_card_another_key_signed_is_refused_saying_why(url: str, keys: dict[str, Path]) -> None:
    for command in (["card", url], ["send", url, "hello"]):
        done = a2a(*command, "--verify-key", str(keys["other"]))
        assert done.returncode != 0
        line = one_error_line(done)
        assert "signature of kid" in line, line
        assert "does not verify" in line, line
        assert "hello" not in done.stdout


def test_send_goes_ahead_once_the_card_verifies(url: str, keys: dict[str, Path]) -> None:
    done = a2a("send", url, "hello", "--verify-key", str(keys["public"]), "--json")
    assert done.returncode == 0, done.stderr


def test_an_unsigned_card_is_refused_when_verification_is_asked(keys: dict[str, Path]) -> None:
    with serving(EXAMPLE, "--store", "memory:") as (url, _):
        done = a2a("card", url, "--verify-key", str(keys["public"]))
        assert "not signed" in a2a("card", url).stdout
    assert done.returncode != 0
    assert "the agent card is not signed" in one_error_line(done)


def test_serve_refuses_a_sign_key_that_is_no_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    done = subprocess.run(
        [*CLI, "serve", EXAMPLE, "--port", "0", "--sign-key", str(bad)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 2
    assert "PEM private key" in done.stderr
