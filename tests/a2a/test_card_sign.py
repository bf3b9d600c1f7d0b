"""Signed agent cards (§8.4): RFC 8785, signing and verifying, a server that signs its card
over a real socket, and the official SDK verifying what we signed (and we what it signed)."""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from interlink.a2a import A2AApp, A2AClient, create_app
from interlink.a2a import types as t
from interlink.a2a._card_sign import (
    CardSignatureError,
    SigningKey,
    TrustedKeys,
    canonical_card,
    jcs,
    protected_header,
    sign_card,
    verify_card,
)
from interlink.a2a._codec import decode, encode
from tests.a2a.agents import Scripted, card
from tests.a2a.conftest import Served

pytest.importorskip("joserfc")

Serve = Callable[[A2AApp], Awaitable[Served]]

KEYS: dict[str, Callable[[], object]] = {
    "ES256": lambda: ec.generate_private_key(ec.SECP256R1()),
    "ES384": lambda: ec.generate_private_key(ec.SECP384R1()),
    "RS256": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
    "EdDSA": ed25519.Ed25519PrivateKey.generate,
}


def pem_pair(tmp_path: Path, alg: str, name: str = "key") -> tuple[Path, Path]:
    """A fresh private key for `alg` as a PEM file, and its public key as another."""
    key = KEYS[alg]()
    private = tmp_path / f"{name}.pem"
    public = tmp_path / f"{name}.pub.pem"
    private.write_bytes(
        key.private_bytes(  # type: ignore[attr-defined]
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    public.write_bytes(
        key.public_key().public_bytes(  # type: ignore[attr-defined]
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public


def agent_card() -> t.AgentCard:
    interface = t.AgentInterface(
        url="http://127.0.0.1:1/", protocol_binding="JSONRPC", protocol_version="1.0"
    )
    return msgspec.structs.replace(card(), supported_interfaces=[interface])


# -- RFC 8785 -----------------------------------------------------------------------------


def test_jcs_is_the_rfc_8785_example() -> None:
    """RFC 8785 3.2.2: literals, numbers in ECMAScript form, strings with minimal escapes."""
    data = json.loads(
        '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",'
        ' "literals": [null, true, false]}'
    )
    expected = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert jcs(data) == expected.encode()


def test_jcs_orders_keys_by_utf16_code_units() -> None:
    """RFC 8785 3.2.3: the emoji (surrogates D83D DE00) sorts before U+FB33."""
    names = ["\u20ac", "\r", "\ufb33", "1", "\U0001f600", "\u0080", "\u00f6"]
    got = json.loads(jcs(dict.fromkeys(names, 0)))
    assert list(got) == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


@pytest.mark.parametrize(
    ("bits", "text"),
    [  # RFC 8785 appendix B (each checked against node's JSON.stringify)
        ("0000000000000000", "0"),
        ("8000000000000000", "0"),
        ("0000000000000001", "5e-324"),
        ("8000000000000001", "-5e-324"),
        ("7fefffffffffffff", "1.7976931348623157e+308"),
        ("ffefffffffffffff", "-1.7976931348623157e+308"),
        ("4340000000000000", "9007199254740992"),
        ("c340000000000000", "-9007199254740992"),
        ("4430000000000000", "295147905179352830000"),
        ("44b52d02c7e14af5", "9.999999999999997e+22"),
        ("44b52d02c7e14af6", "1e+23"),
        ("44b52d02c7e14af7", "1.0000000000000001e+23"),
        ("444b1ae4d6e2ef4e", "999999999999999700000"),
        ("444b1ae4d6e2ef50", "1e+21"),
        ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
        ("3eb0c6f7a0b5ed8d", "0.000001"),
        ("41b3de4355555553", "333333333.3333332"),
        ("41b3de4355555554", "333333333.33333325"),
        ("41b3de4355555557", "333333333.33333343"),
        ("becbf647612f3696", "-0.0000033333333333333333"),
        ("43143ff3c1cb0959", "1424953923781206.2"),
    ],
)
def test_jcs_numbers_are_ecmascript_numbers(bits: str, text: str) -> None:
    (value,) = struct.unpack(">d", bytes.fromhex(bits))
    assert jcs(value) == text.encode()


def test_jcs_refuses_what_json_cannot_hold() -> None:
    with pytest.raises(ValueError, match="NaN"):
        jcs(float("nan"))
    with pytest.raises(TypeError):
        jcs({1: "x"})


def test_the_payload_follows_the_spec_example() -> None:
    """§8.4.1: empty `extensions` omitted, `optional` booleans kept though false, REQUIRED
    fields present though empty; `signatures` never signed."""
    example = (
        b'{"name": "Example Agent", "description": "", "capabilities": {"streaming": false,'
        b' "pushNotifications": false, "extensions": []}, "skills": []}'
    )
    payload = json.loads(canonical_card(decode(t.AgentCard, example)))
    spec = (
        '{"capabilities":{"pushNotifications":false,"streaming":false},"description":"",'
        '"name":"Example Agent","skills":[]}'
    )
    assert {k: payload[k] for k in json.loads(spec)} == json.loads(spec)
    # (the other REQUIRED fields, absent from the example's fragment, are there empty)
    assert set(payload) - set(json.loads(spec)) == {
        "defaultInputModes",
        "defaultOutputModes",
        "supportedInterfaces",
        "version",
    }
    signed = t.AgentCard(
        name="x",
        capabilities=t.AgentCapabilities(),
        signatures=[t.AgentCardSignature(protected="e30", signature="AA")],
    )
    assert b"signatures" not in canonical_card(signed)


# -- sign and verify -----------------------------------------------------------------------


@pytest.mark.parametrize("alg", list(KEYS))
def test_a_signed_card_verifies_with_its_public_key_in_every_form(tmp_path: Path, alg: str) -> None:
    private, public = pem_pair(tmp_path, alg)
    key = SigningKey.load(private)
    signed = sign_card(agent_card(), key, jku="https://example.com/jwks.json")
    (signature,) = signed.signatures
    header = protected_header(signature)
    assert header == {
        "alg": alg,
        "typ": "JOSE",
        "kid": key.kid,
        "jku": "https://example.com/jwks.json",
    }
    assert "=" not in signature.protected + signature.signature  # base64url, no padding
    jwks = {"keys": [key.public_jwk()]}
    (tmp_path / "jwks.json").write_text(json.dumps(jwks))
    for keys in (public, str(public), public.read_bytes(), key.public_jwk(), jwks):
        assert verify_card(signed, keys) == signature
    assert verify_card(signed, [tmp_path / "jwks.json", public]) == signature
    # as the client receives it: ProtoJSON bytes, decoded; and as plain JSON
    assert verify_card(decode(t.AgentCard, encode(signed)), public) == signature
    assert verify_card(json.loads(encode(signed)), public) == signature


def _refused(card_: t.AgentCard, keys: object, reason: str, **options: object) -> str:
    with pytest.raises(CardSignatureError) as caught:
        verify_card(card_, keys, **options)  # type: ignore[arg-type]
    assert caught.value.reason == reason, caught.value
    return str(caught.value)


def test_a_card_changed_after_signing_is_refused(tmp_path: Path) -> None:
    private, public = pem_pair(tmp_path, "ES256")
    signed = sign_card(agent_card(), private)
    changed = msgspec.structs.replace(signed, name="someone else")
    assert "does not verify" in _refused(changed, public, "invalid")
    skills = [msgspec.structs.replace(signed.skills[0], tags=["evil"])]
    _refused(msgspec.structs.replace(signed, skills=skills), public, "invalid")


def test_another_key_an_unknown_kid_and_no_signature_are_refused(tmp_path: Path) -> None:
    private, _ = pem_pair(tmp_path, "ES256", "signer")
    other_private, other_public = pem_pair(tmp_path, "ES256", "other")
    signed = sign_card(agent_card(), private, kid="key-1")
    assert "kid 'key-1' does not verify" in _refused(signed, other_public, "invalid")
    other = SigningKey.load(other_private, kid="key-2").public_jwk()
    message = _refused(signed, {"keys": [other]}, "unknown-kid")
    assert "no trusted key has kid 'key-1' (trusted: 'key-2')" in message
    assert _refused(agent_card(), other_public, "unsigned") == "the agent card is not signed"


def test_an_algorithm_not_allowed_and_a_malformed_header_are_refused(tmp_path: Path) -> None:
    private, public = pem_pair(tmp_path, "ES256")
    signed = sign_card(agent_card(), private)
    message = _refused(signed, public, "algorithm", algorithms=("RS256",))
    assert message == "algorithm ES256 is not allowed (allowed: RS256)"
    key = SigningKey.load(private).public_jwk() | {"alg": "ES384"}
    assert "trusted key is for ES384" in _refused(signed, key, "algorithm")
    sig = signed.signatures[0]
    for protected, why in [
        ("not base64!", "not base64url"),
        (base64.urlsafe_b64encode(b"[1]").decode().rstrip("="), "not an object"),
        (base64.urlsafe_b64encode(b'{"alg":"ES256"}').decode().rstrip("="), "no kid"),
    ]:
        bad = msgspec.structs.replace(
            signed, signatures=[msgspec.structs.replace(sig, protected=protected)]
        )
        assert why in _refused(bad, public, "malformed")
    none = base64.urlsafe_b64encode(b'{"alg":"none","kid":"k"}').decode().rstrip("=")
    bad = msgspec.structs.replace(signed, signatures=[t.AgentCardSignature(protected=none)])
    _refused(bad, public, "algorithm")


def test_one_good_signature_among_several_is_enough(tmp_path: Path) -> None:
    old, _ = pem_pair(tmp_path, "RS256", "old")
    new, new_public = pem_pair(tmp_path, "EdDSA", "new")
    signed = sign_card(sign_card(agent_card(), old, kid="old"), new, kid="new")
    assert verify_card(signed, new_public) == signed.signatures[1]
    keys = TrustedKeys.load(SigningKey.load(old, kid="old"))
    assert verify_card(signed, keys) == signed.signatures[0]


def test_keys_that_are_no_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read the key file"):
        TrustedKeys.load(tmp_path / "missing.pem")
    with pytest.raises(ValueError, match="not a public JWK"):
        TrustedKeys.load({"kty": "oct", "k": "c2VjcmV0"})
    with pytest.raises(ValueError, match="PEM private key"):
        SigningKey.load(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")


def test_without_joserfc_signing_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    private, public = pem_pair(tmp_path, "ES256")
    monkeypatch.setitem(sys.modules, "joserfc", None)
    for attempt in (lambda: SigningKey.load(private), lambda: TrustedKeys.load(public)):
        with pytest.raises(CardSignatureError, match=r"pip install 'interlink\[sign\]'") as caught:
            attempt()
        assert caught.value.reason == "unavailable"


def test_importing_the_package_does_not_import_joserfc() -> None:
    code = "import sys, interlink.a2a; assert 'joserfc' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- served and fetched ---------------------------------------------------------------------


async def test_a_server_signs_its_card_and_our_client_verifies_it(
    serve: Serve, tmp_path: Path
) -> None:
    private, public = pem_pair(tmp_path, "ES256")
    extended = msgspec.structs.replace(card(), name="test agent (extended)")
    caps = {"extended_agent_card": True}
    app = create_app(Scripted(), card(**caps), extended_card=extended, signing_key=private)
    served = await serve(app)
    trusted = TrustedKeys.load(public)
    async with await A2AClient.connect(served.url, trusted_keys=trusted) as client:
        assert client.card_signature is not None
        # the interface made from the request is part of what was signed
        assert client.card.supported_interfaces[0].url == served.url
        verify_card(client.card, trusted)
        extended_card = await client.get_extended_card()
        assert extended_card.name == "test agent (extended)"
        verify_card(extended_card, trusted)
    # the signed card keeps its ETag: a conditional GET is answered 304
    url = served.url + ".well-known/agent-card.json"
    first = await served.client.get(url)
    again = await served.client.get(url, headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    assert (await served.client.get(url)).content == first.content  # signed once per variant


async def test_our_client_refuses_a_card_another_key_signed(serve: Serve, tmp_path: Path) -> None:
    private, _ = pem_pair(tmp_path, "ES256", "signer")
    _, other_public = pem_pair(tmp_path, "ES256", "other")
    served = await serve(create_app(Scripted(), card(), signing_key=private))
    unsigned = await serve(create_app(Scripted(), card()))
    with pytest.raises(CardSignatureError, match="does not verify") as caught:
        await A2AClient.connect(served.url, trusted_keys=TrustedKeys.load(other_public))
    assert caught.value.url.endswith("/.well-known/agent-card.json")
    with pytest.raises(CardSignatureError, match="not signed"):
        await A2AClient.connect(unsigned.url, trusted_keys=TrustedKeys.load(other_public))


# -- the official SDK -------------------------------------------------------------------------


def _sdk() -> tuple[object, object]:
    signing = pytest.importorskip("a2a.utils.signing", reason="a2a-sdk[signing] (PyJWT)")
    from a2a.types import AgentCard as SdkCard

    return signing, SdkCard


@pytest.mark.parametrize("alg", ["ES256", "RS256", "EdDSA"])
async def test_the_official_sdk_verifies_the_card_our_server_signed(
    serve: Serve, tmp_path: Path, alg: str
) -> None:
    from google.protobuf import json_format

    signing, SdkCard = _sdk()
    private, public = pem_pair(tmp_path, alg)
    served = await serve(create_app(Scripted(), card(), signing_key=private))
    body = (await served.client.get(served.url + ".well-known/agent-card.json")).content
    sdk_card = json_format.Parse(body, SdkCard(), ignore_unknown_fields=True)  # type: ignore[operator]
    kids: list[str | None] = []

    def key_provider(kid: str | None, jku: str | None) -> bytes:
        kids.append(kid)
        return public.read_bytes()

    verifier = signing.create_signature_verifier(key_provider, [alg])  # type: ignore[attr-defined]
    verifier(sdk_card)
    assert kids == [SigningKey.load(private).kid]
    sdk_card.name = "someone else"
    with pytest.raises(signing.InvalidSignaturesError):  # type: ignore[attr-defined]
        verifier(sdk_card)


def test_we_verify_a_card_the_official_sdk_signed(tmp_path: Path) -> None:
    from google.protobuf import json_format

    signing, SdkCard = _sdk()
    private, public = pem_pair(tmp_path, "ES256")
    sdk_card = json_format.Parse(encode(agent_card()), SdkCard())  # type: ignore[operator]
    signer = signing.create_agent_card_signer(  # type: ignore[attr-defined]
        private.read_bytes(), {"alg": "ES256", "typ": "JOSE", "kid": "sdk-key"}
    )
    body = json_format.MessageToJson(signer(sdk_card)).encode()
    ours = decode(t.AgentCard, body)
    assert protected_header(verify_card(ours, public))["kid"] == "sdk-key"
    tampered = msgspec.structs.replace(ours, description="changed")
    _refused(tampered, public, "invalid")
