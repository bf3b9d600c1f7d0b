"""Signed agent cards (A2A §8.4): the canonical payload, JWS signing and verification.

The payload (§8.4.1) is the card without `signatures` as ProtoJSON under the field
presence rule of §5.7 (REQUIRED fields always, `optional` ones when set, the others when
not at their default), canonicalized by RFC 8785 (`jcs`). A signature is a JWS with a
detached payload: `protected` (base64url header with `alg`, `typ: JOSE`, `kid`, and
`jku` when given) and `signature`. The official Python SDK drops every empty string,
list and object from the payload, REQUIRED ones too; a verifier also tries that form,
so that a card signed by either side verifies on the other.

JOSE is `joserfc` (the `interlink[sign]` extra), imported on first use. Signing keys are
PEM private keys: EC P-256/384/521 (ES256/384/512), RSA (RS256), Ed25519 (EdDSA).
Verifying keys (`TrustedKeys`) are PEM public keys, JWKs or JWK sets, as files or values.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import warnings
from collections.abc import Collection, Iterable, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeAlias

import msgspec

from interlink.a2a import _codec
from interlink.a2a._card import CardError
from interlink.a2a._types import REQUIRED_FIELDS, AgentCard, AgentCardSignature

if TYPE_CHECKING:
    from joserfc.jwk import Key

__all__ = [
    "ALGORITHMS",
    "CardSignatureError",
    "KeySource",
    "SigningKey",
    "TrustedKeys",
    "canonical_card",
    "jcs",
    "payloads",
    "sign_card",
    "verify_card",
    "verify_signature",
]

ALGORITHMS: Final = (
    *("ES256", "ES384", "ES512", "RS256", "RS384", "RS512"),
    *("PS256", "PS384", "PS512", "EdDSA", "Ed25519"),
)
"""The algorithms `verify_card` accepts by default (never `none`, never HMAC)."""
KeySource: TypeAlias = "str | os.PathLike[str] | bytes | Mapping[str, object]"
"""A key: a file (PEM, JWK or JWK set), PEM or JSON text, or a JWK / JWK set as a dict."""
_EC_ALGS: Final = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}


class CardSignatureError(CardError):
    """An agent card whose signature is missing or does not verify. `reason` is one of
    `unsigned`, `malformed`, `algorithm`, `unknown-kid`, `invalid`, `unavailable`
    (`invalid` for the last signature tried when several fail)."""

    def __init__(self, message: str, reason: str, url: str = "") -> None:
        super().__init__(message, url)
        self.reason = reason


def _joserfc() -> None:
    try:
        import joserfc  # noqa: F401
    except ImportError:
        raise CardSignatureError(
            "signed cards need joserfc: pip install 'interlink[sign]'", "unavailable"
        ) from None


# ------------------------------------------------------------------ RFC 8785 (JCS)


def jcs(value: object) -> bytes:
    """`value` (dicts, lists, strings, numbers, booleans, None) canonicalized by RFC 8785:
    keys sorted by UTF-16 code units, no whitespace, ECMAScript number forms."""
    return _jcs(value).encode()


def _jcs(value: object) -> str:
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value) if abs(value) <= 2**53 else _number(float(value))
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("JSON object keys are strings")
        items = sorted(value.items(), key=lambda item: item[0].encode("utf-16-be"))
        return "{" + ",".join(f"{_jcs(k)}:{_jcs(v)}" for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_jcs(v) for v in value) + "]"
    raise TypeError(f"{type(value).__name__} is not JSON")


def _number(x: float) -> str:
    """ECMAScript Number::toString (ECMA-262 7.1.12.1), as RFC 8785 3.2.2.3 asks."""
    if not math.isfinite(x):
        raise ValueError("JSON has no NaN or Infinity (RFC 8785)")
    if x == 0:
        return "0"
    _, digit_tuple, exponent = Decimal(repr(abs(x))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    k, n = len(digits), len(digits) + int(exponent)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        fraction = f".{digits[1:]}" if k > 1 else ""
        text = f"{digits[0]}{fraction}e{'+' if n > 0 else '-'}{abs(n - 1)}"
    return ("-" if x < 0 else "") + text


# ------------------------------------------------------------------ the payload (§8.4.1)


def _proto(value: object) -> object:
    """The ProtoJSON form of §8.4.1: REQUIRED fields always, the others when set."""
    if isinstance(value, msgspec.Struct):
        required = REQUIRED_FIELDS.get(type(value), ())
        out: dict[str, object] = {}
        for f in msgspec.structs.fields(value):
            v = getattr(value, f.name)
            if v is msgspec.UNSET:
                continue
            if f.name not in required:
                factory = f.default_factory
                if v == (f.default if factory is msgspec.NODEFAULT else factory()):
                    continue
            out[f.encode_name] = _proto(v)
        return out
    if isinstance(value, (list, tuple)):
        return [_proto(v) for v in value]
    if isinstance(value, dict):
        return {k: _proto(v) for k, v in value.items()}
    return msgspec.to_builtins(value)


def _drop_empty(value: object) -> object:
    """Without empty strings, lists and objects, at any depth (the official SDK's form)."""
    if isinstance(value, dict):
        kept = {k: _drop_empty(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None} or None
    if isinstance(value, list):
        return [v for v in map(_drop_empty, value) if v is not None] or None
    return None if value == "" else value


def canonical_card(card: AgentCard) -> bytes:
    """The JWS payload of `card` (§8.4.1): without `signatures`, canonical JSON."""
    form = _proto(card)
    assert isinstance(form, dict)
    form.pop("signatures", None)
    return jcs(form)


def payloads(card: AgentCard | Mapping[str, object]) -> list[bytes]:
    """The payloads a signature of `card` may cover: §8.4.1's, the official SDK's (empty
    values dropped) and, for a card as received JSON, that JSON as it is."""
    forms: list[object] = []
    if isinstance(card, AgentCard):
        typed = card
    else:
        forms.append({k: v for k, v in card.items() if k != "signatures"})
        try:
            typed = _codec.decode(AgentCard, msgspec.json.encode(dict(card)))
        except (_codec.ValidationError, TypeError):
            typed = None
    if typed is not None:
        form = _proto(typed)
        assert isinstance(form, dict)
        form.pop("signatures", None)
        forms.insert(0, form)
    forms.append(_drop_empty(forms[0]) or {})
    out: list[bytes] = []
    for form in forms:
        data = jcs(form)
        if data not in out:
            out.append(data)
    return out


# ------------------------------------------------------------------ keys


def _read(source: str | os.PathLike[str] | bytes) -> bytes:
    if isinstance(source, bytes):
        return source
    text = os.fspath(source)
    if text.lstrip().startswith(("-----BEGIN", "{")):
        return text.encode()
    try:
        return Path(text).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read the key file {text}: {exc.strerror or exc}") from None


def _pem_kind(data: bytes, private: bool) -> tuple[str, str]:
    """The JWK key type and default algorithm of a PEM key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    try:
        key: object = (
            serialization.load_pem_private_key(data, password=None)
            if private
            else serialization.load_pem_public_key(data)
        )
    except (ValueError, TypeError) as exc:
        what = "unencrypted PEM private key" if private else "PEM public key"
        raise ValueError(f"not an {what}: {exc}") from None
    if isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)):
        crv = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}
        alg = _EC_ALGS.get(crv.get(key.curve.name, ""))
        if alg is None:
            raise ValueError(f"EC curve {key.curve.name} has no JWS algorithm")
        return "EC", alg
    if isinstance(key, (rsa.RSAPrivateKey, rsa.RSAPublicKey)):
        return "RSA", "RS256"
    if isinstance(key, (ed25519.Ed25519PrivateKey, ed25519.Ed25519PublicKey)):
        return "OKP", "EdDSA"
    raise ValueError(f"unsupported key type {type(key).__name__} (EC, RSA or Ed25519)")


def _import(data: bytes | Mapping[str, object], kty: str) -> Key:
    from joserfc.jwk import import_key

    try:
        source = data if isinstance(data, bytes) else dict(data)
        return import_key(source, kty)  # type: ignore[call-overload,no-any-return]
    except Exception as exc:  # joserfc: ValueError or its own errors
        raise ValueError(f"not a usable {kty} key: {exc}") from None


class SigningKey:
    """A private key that signs cards: its algorithm and `kid` (default: the RFC 7638
    thumbprint of its public key)."""

    def __init__(self, key: Key, alg: str, kid: str | None = None) -> None:
        self.key = key
        self.alg = alg
        self.kid = kid or key.thumbprint()

    @classmethod
    def load(cls, source: str | os.PathLike[str] | bytes, *, kid: str | None = None) -> SigningKey:
        """A PEM private key (a file, or its text); raises `ValueError`."""
        _joserfc()
        data = _read(source)
        kty, alg = _pem_kind(data, private=True)
        return cls(_import(data, kty), alg, kid)

    def public_jwk(self) -> dict[str, object]:
        """The public key as a JWK (with `kid`, `alg`, `use`), for a JWK set."""
        jwk = dict(self.key.as_dict(private=False))
        return {**jwk, "kid": self.kid, "alg": self.alg, "use": "sig"}


class TrustedKeys:
    """The public keys a card may be signed with. A key with a `kid` verifies only the
    signatures naming that `kid`; one without (a PEM file) is tried for any."""

    def __init__(self, keys: Iterable[tuple[str | None, Key, str | None]] = ()) -> None:
        #: (kid, key, alg the JWK is restricted to)
        self.keys = list(keys)

    @classmethod
    def load(cls, *sources: KeySource | SigningKey) -> TrustedKeys:
        """Keys from PEM public keys, JWKs and JWK sets (files, text or dicts); raises
        `ValueError` for one that is none of these."""
        _joserfc()
        out = cls()
        for source in sources:
            if isinstance(source, SigningKey):
                out.keys.append((source.kid, source.key, source.alg))
                continue
            if isinstance(source, Mapping):
                found: object = source
            else:
                data = _read(source)
                if data.lstrip().startswith(b"-----BEGIN"):
                    private = b"PRIVATE KEY-----" in data
                    kty, _ = _pem_kind(data, private)
                    out.keys.append((None, _import(data, kty), None))
                    continue
                try:
                    found = json.loads(data)
                except ValueError:
                    raise ValueError("a key is PEM, a JWK or a JWK set (JSON)") from None
            items = found.get("keys") if isinstance(found, Mapping) else None
            for jwk in items if isinstance(items, list) else [found]:
                if not isinstance(jwk, Mapping) or jwk.get("kty") not in ("EC", "RSA", "OKP"):
                    raise ValueError(f"not a public JWK (kty EC, RSA or OKP): {jwk!r:.100}")
                key = _import(jwk, str(jwk["kty"]))
                kid, alg = jwk.get("kid"), jwk.get("alg")
                out.keys.append((kid if isinstance(kid, str) else None, key, alg and str(alg)))
        return out

    def for_kid(self, kid: str) -> list[tuple[Key, str | None]]:
        return [(key, alg) for k, key, alg in self.keys if k is None or k == kid]


# ------------------------------------------------------------------ sign and verify


def sign_card(
    card: AgentCard,
    key: SigningKey | str | os.PathLike[str] | bytes,
    *,
    kid: str | None = None,
    jku: str | None = None,
    payload: bytes | None = None,
) -> AgentCard:
    """`card` with one more signature (§8.4.2): a JWS over `canonical_card(card)` (or
    `payload`, for a reader that canonicalizes otherwise) with the payload detached,
    `alg` from the key, `typ: JOSE`, `kid` and `jku` if given."""
    signer = key if isinstance(key, SigningKey) else SigningKey.load(key)
    from joserfc import jws

    header: dict[str, object] = {"alg": signer.alg, "typ": "JOSE", "kid": kid or signer.kid}
    if jku is not None:
        header["jku"] = jku
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # joserfc: "EdDSA is deprecated via RFC 9864"
        compact = jws.serialize_compact(
            header,
            canonical_card(card) if payload is None else payload,
            signer.key,
            algorithms=[signer.alg],
        )
    protected, _, signature = compact.split(".")
    signed = AgentCardSignature(protected=protected, signature=signature)
    return msgspec.structs.replace(card, signatures=[*card.signatures, signed])


def _b64url(text: str) -> bytes:
    if not isinstance(text, str) or not text.replace("-", "").replace("_", "").isalnum():
        raise ValueError("not base64url (RFC 7515: no padding, URL-safe alphabet)")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as exc:
        raise ValueError(f"not base64url: {exc}") from None


def protected_header(signature: AgentCardSignature | Mapping[str, object]) -> dict[str, object]:
    """The decoded protected header, with `alg` and `kid` (else `malformed`)."""
    protected = (
        signature.protected
        if isinstance(signature, AgentCardSignature)
        else signature.get("protected", "")
    )
    try:
        header = json.loads(_b64url(protected))  # type: ignore[arg-type]
    except ValueError as exc:
        raise CardSignatureError(
            f"the protected header is not base64url JSON: {exc}", "malformed"
        ) from None
    if not isinstance(header, dict):
        raise CardSignatureError(f"the protected header is not an object: {header!r}", "malformed")
    for name in ("alg", "kid"):
        if not isinstance(header.get(name), str) or not header[name]:
            raise CardSignatureError(f"the protected header has no {name}: {header}", "malformed")
    if "crit" in header:
        crit = header["crit"]
        raise CardSignatureError(f"unknown critical header parameters {crit}", "malformed")
    return header


def verify_signature(
    signature: AgentCardSignature | Mapping[str, object],
    card: AgentCard | Mapping[str, object],
    keys: TrustedKeys,
    *,
    algorithms: Collection[str] = ALGORITHMS,
) -> dict[str, object]:
    """Check one signature of `card`; its protected header when it verifies, else
    `CardSignatureError` saying why."""
    header = protected_header(signature)
    alg, kid = str(header["alg"]), str(header["kid"])
    if alg not in algorithms:
        raise CardSignatureError(
            f"algorithm {alg} is not allowed (allowed: {', '.join(algorithms)})", "algorithm"
        )
    candidates = keys.for_kid(kid)
    if not candidates:
        known = sorted({k for k, _, _ in keys.keys if k is not None})
        raise CardSignatureError(
            f"no trusted key has kid {kid!r} (trusted: {', '.join(map(repr, known))})",
            "unknown-kid",
        )
    _joserfc()
    from joserfc import jws
    from joserfc.errors import JoseError

    sig = signature if isinstance(signature, AgentCardSignature) else None
    protected = sig.protected if sig else str(signature.get("protected", ""))  # type: ignore[union-attr]
    value = sig.signature if sig else str(signature.get("signature", ""))  # type: ignore[union-attr]
    compact = f"{protected}..{value}"
    mismatched = []
    for key, key_alg in candidates:
        if key_alg is not None and key_alg != alg:
            mismatched.append(key_alg)
            continue
        for payload in payloads(card):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    jws.deserialize_compact(compact, key, algorithms=[alg], payload=payload)
            except (JoseError, ValueError):
                continue
            return header
    if mismatched and len(mismatched) == len(candidates):
        raise CardSignatureError(
            f"kid {kid!r} signs with {alg}, but its trusted key is for {mismatched[0]}",
            "algorithm",
        )
    raise CardSignatureError(
        f"the {alg} signature of kid {kid!r} does not verify with the trusted key "
        "(the card was changed after it was signed, or another key signed it)",
        "invalid",
    )


def verify_card(
    card: AgentCard | Mapping[str, object],
    keys: TrustedKeys | KeySource | Sequence[KeySource],
    *,
    algorithms: Collection[str] = ALGORITHMS,
) -> AgentCardSignature:
    """The first signature of `card` that verifies with one of `keys` (§8.4.3); raises
    `CardSignatureError` saying why none does."""
    if not isinstance(keys, TrustedKeys):
        many = isinstance(keys, Sequence) and not isinstance(keys, (str, bytes))
        keys = TrustedKeys.load(*(keys if many else [keys]))  # type: ignore[misc]
    if isinstance(card, AgentCard):
        signatures: Sequence[object] = card.signatures
    else:
        found = card.get("signatures")
        signatures = found if isinstance(found, list) else []
    if not signatures:
        raise CardSignatureError("the agent card is not signed", "unsigned")
    errors: list[CardSignatureError] = []
    for i, signature in enumerate(signatures):
        if not isinstance(signature, (AgentCardSignature, Mapping)):
            errors.append(CardSignatureError(f"signatures[{i}] is not an object", "malformed"))
            continue
        try:
            verify_signature(signature, card, keys, algorithms=algorithms)
        except CardSignatureError as exc:
            errors.append(exc)
            continue
        if isinstance(signature, AgentCardSignature):
            return signature
        return msgspec.convert(signature, AgentCardSignature)
    if len(errors) == 1:
        raise errors[0]
    reasons = "; ".join(f"signatures[{i}]: {e}" for i, e in enumerate(errors))
    raise CardSignatureError(f"no signature of the card verifies: {reasons}", errors[-1].reason)
