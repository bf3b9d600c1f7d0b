"""Agent card signatures for `interlink a2a check` (§8.4): the JWS payload and its check.

The payload is the card without `signatures`, canonicalized with RFC 8785 (JCS). §8.4.1
also removes default values that are neither REQUIRED nor `optional`; a checker only
sees the JSON that was served, so both the card as served and the card with its empty
values removed are tried. The key comes from the protected header's `jwk`, or from its
`jku` when that URL may be contacted (the given origin or loopback). ES256/384/512,
RS256/384/512, PS256/384/512 and EdDSA (Ed25519) are verified with `cryptography`, which
is imported only when a card is signed.
"""

from __future__ import annotations

import base64
import json
import re

__all__ = ["Unverifiable", "b64url", "payloads", "verify"]

Json = dict[str, object]
_KEEP = {
    "name",
    "description",
    "version",
    "skills",
    "url",
    "protocolBinding",
    "protocolVersion",
    "id",
    "tags",
    "capabilities",
    "supportedInterfaces",
    "defaultInputModes",
    "defaultOutputModes",
    "streaming",
    "pushNotifications",
    "extendedAgentCard",
    "documentationUrl",
    "iconUrl",
    "organization",
    "protected",
    "signature",
}  # REQUIRED or `optional` fields: kept even when empty


class Unverifiable(Exception):
    """The signature cannot be checked here (no key reachable, an unknown algorithm)."""


def b64url(text: str) -> bytes:
    if not re.fullmatch(r"[A-Za-z0-9_-]*", text):
        raise ValueError("not base64url (RFC 7515: no padding, URL-safe alphabet)")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def canonical(value: object) -> bytes:
    """RFC 8785 for the values a card holds (strings, integers, booleans, null)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _strip(value: object, key: str = "") -> object:
    if isinstance(value, dict):
        out = {k: _strip(v, k) for k, v in value.items()}
        return {k: v for k, v in out.items() if k in _KEEP or v not in ("", [], {}, False, 0)}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def payloads(card: Json) -> list[bytes]:
    """The candidate JWS payloads: the card as served, and with defaults removed."""
    unsigned = {k: v for k, v in card.items() if k != "signatures"}
    first, second = canonical(unsigned), canonical(_strip(unsigned))
    return [first] if first == second else [first, second]


def _public_key(jwk: Json) -> object:
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    def num(name: str) -> int:
        return int.from_bytes(b64url(str(jwk.get(name, ""))), "big")

    kty = jwk.get("kty")
    if kty == "EC":
        curves = {"P-256": ec.SECP256R1(), "P-384": ec.SECP384R1(), "P-521": ec.SECP521R1()}
        curve = curves.get(str(jwk.get("crv")))
        if curve is None:
            raise Unverifiable(f"unsupported EC curve {jwk.get('crv')!r}")
        return ec.EllipticCurvePublicNumbers(num("x"), num("y"), curve).public_key()
    if kty == "RSA":
        return rsa.RSAPublicNumbers(num("e"), num("n")).public_key()
    if kty == "OKP" and jwk.get("crv") == "Ed25519":
        return ed25519.Ed25519PublicKey.from_public_bytes(b64url(str(jwk.get("x", ""))))
    raise Unverifiable(f"unsupported key type {kty!r}")


def verify(alg: str, jwk: Json, protected: str, signature: bytes, payload: bytes) -> bool:
    """Whether `signature` signs `protected.payload` (the JWS signing input) with `jwk`."""
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils
    except ImportError:
        raise Unverifiable("verifying needs the cryptography package") from None
    data = f"{protected}.{_b64(payload)}".encode()
    key = _public_key(jwk)
    digests = {"256": hashes.SHA256(), "384": hashes.SHA384(), "512": hashes.SHA512()}
    try:
        if alg == "EdDSA" and isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(signature, data)
        elif alg[:2] == "ES" and isinstance(key, ec.EllipticCurvePublicKey):
            half = len(signature) // 2
            r, s = (int.from_bytes(p, "big") for p in (signature[:half], signature[half:]))
            der = utils.encode_dss_signature(r, s)
            key.verify(der, data, ec.ECDSA(digests[alg[2:]]))
        elif alg[:2] in ("RS", "PS") and isinstance(key, rsa.RSAPublicKey):
            digest = digests[alg[2:]]
            pad: padding.AsymmetricPadding = (
                padding.PKCS1v15()
                if alg[:2] == "RS"
                else padding.PSS(padding.MGF1(digest), padding.PSS.DIGEST_LENGTH)
            )
            key.verify(signature, data, pad, digest)
        else:
            raise Unverifiable(f"algorithm {alg!r} with a {jwk.get('kty')} key")
    except KeyError:
        raise Unverifiable(f"unsupported algorithm {alg!r}") from None
    except InvalidSignature:
        return False
    return True
