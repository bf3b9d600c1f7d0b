"""`interlink a2a check` cases: the agent card (served, its fields, its interfaces, its
caching headers, its signatures), and `probe`, which fetches it and chooses the
interfaces the other cases speak to."""

from __future__ import annotations

import re

import httpx

from interlink.a2a import (
    CardSignatureError,
    TrustedKeys,
    ValidationError,
    decode,
    protected_header,
    verify_signature,
)
from interlink.a2a import types as t
from interlink.check._a2a_bindings import (
    BINDINGS,
    GRPC,
    Binding,
    Unavailable,
    contactable,
    make_binding,
)
from interlink.check._a2a_runner import Ctx, required_extensions
from interlink.check._a2a_wire import Json, Refused
from interlink.check._cases import MAY, MUST, SHOULD, Cases, Fail, Skip

__all__ = ["probe"]

UNKNOWN_TASK = "a2a-check-no-such-task-0f1e2d3c"


def interfaces(card: Json) -> list[Json]:
    entries = card.get("supportedInterfaces")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


async def probe(ctx: Ctx) -> None:
    """Fetch the card and choose the interfaces the cases speak to: of each binding, the
    first interface the checker may contact. Problems are kept for the cases to report."""
    try:
        ctx.card_reply = await ctx.wire.get(ctx.card_url)
    except (httpx.HTTPError, ValueError, Refused) as exc:
        ctx.card_problem = f"GET {ctx.card_url} failed: {type(exc).__name__}: {exc}"
    else:
        if ctx.card_reply.status != 200 or not isinstance(ctx.card_reply.body, dict):
            ctx.card_problem = f"GET {ctx.card_url}: {ctx.card_reply.describe()}"
        else:
            ctx.card = ctx.card_reply.body
            ctx.wire.activate = ", ".join(required_extensions(ctx.card))
    if not ctx.card_problem:
        ctx.bindings = {name: _choose(ctx, name) for name in BINDINGS}


def _choose(ctx: Ctx, binding: str) -> Binding | str:
    """The first interface of `binding` that may be contacted, or why there is none."""
    elsewhere = []
    for entry in interfaces(ctx.card):
        url = entry.get("url")
        if str(entry.get("protocolBinding", "")).upper() != binding or not isinstance(url, str):
            continue
        if contactable(ctx.wire, binding, url):
            try:
                return make_binding(ctx.wire, binding, url)
            except Unavailable as exc:
                return str(exc)
        elsewhere.append(url)
    if elsewhere:
        return f"the {binding} interface is elsewhere, not contacted: {elsewhere[0]}"
    return f"the card declares no {binding} interface"


def _card(ctx: Ctx) -> Json:
    if ctx.card_problem:
        raise Skip(f"no agent card: {ctx.card_problem}")
    return ctx.card


def _header(ctx: Ctx, name: str) -> str | None:
    """The card response's header `name` (SKIP when there is no card)."""
    _card(ctx)
    assert ctx.card_reply is not None
    value: str | None = ctx.card_reply.headers.get(name)
    return value


# -- the card --------------------------------------------------------------------------


async def card_served(ctx: Ctx) -> str:
    if ctx.card_problem:
        raise Fail(ctx.card_problem)
    return f"GET {ctx.card_url}: 200, {len(ctx.card_reply.raw) if ctx.card_reply else 0} bytes"


async def card_required(ctx: Ctx) -> str:
    _card(ctx)
    assert ctx.card_reply is not None
    try:
        card = decode(t.AgentCard, ctx.card_reply.raw, check_required=True)
    except ValidationError as exc:
        raise Fail(f"the card is not a valid AgentCard: {exc}") from None
    return f"a valid AgentCard: {card.name!r} {card.version}, {len(card.skills)} skill(s)"


_USER_MAPS = {"params", "metadata", "header"}  # values are user data, any key
_NAMED_MAPS = {"securitySchemes", "scopes"}  # keys are names, values are ours


def _snake_keys(value: object, path: str, out: list[str]) -> None:
    if isinstance(value, list):
        for i, item in enumerate(value):
            _snake_keys(item, f"{path}[{i}]", out)
    elif isinstance(value, dict):
        for key, item in value.items():
            if "_" in key:
                out.append(f"{path}.{key}".lstrip("."))
            if key in _USER_MAPS:
                continue
            if key in _NAMED_MAPS and isinstance(item, dict):
                for name, sub in item.items():
                    _snake_keys(sub, f"{path}.{key}.{name}", out)
                continue
            _snake_keys(item, f"{path}.{key}", out)


async def card_camel_case(ctx: Ctx) -> str:
    found: list[str] = []
    _snake_keys(_card(ctx), "", found)
    if found:
        raise Fail(f"snake_case field names: {', '.join(found[:8])}")
    return "every field name is camelCase"


def _malformed(url: str, binding: str) -> str:
    """What is wrong with an interface's URL ("" when nothing): an absolute URL, or for
    gRPC also "hostname:port" (a2a.proto AgentInterface.url)."""
    if binding == GRPC and re.fullmatch(r"[\w.-]+:\d+|\[[0-9a-fA-F:.]+\]:\d+", url):
        return ""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        parsed = None
    return "" if parsed is not None and parsed.is_absolute_url else f"not an absolute URL: {url!r}"


async def card_interfaces(ctx: Ctx) -> str:
    entries = interfaces(_card(ctx))
    if not entries:
        raise Fail("supportedInterfaces is empty")
    seen, problems = [], []
    for i, entry in enumerate(entries):
        url, binding = entry.get("url"), entry.get("protocolBinding")
        if not isinstance(url, str) or not isinstance(binding, str) or not binding:
            problems.append(f"[{i}] url or protocolBinding missing: {entry}")
            continue
        binding = binding.upper()
        if wrong := _malformed(url, binding):
            problems.append(f"[{i}] {wrong}")
        elif binding not in BINDINGS:
            seen.append(f"[{i}] {binding} {url} (binding not checked by this version)")
        elif not contactable(ctx.wire, binding, url):
            seen.append(f"[{i}] {binding} {url} (another host: not contacted)")
        else:
            try:
                spoken = make_binding(ctx.wire, binding, url)
            except Unavailable as exc:
                seen.append(f"[{i}] {binding} {url} (not checked: {exc})")
                continue
            reply = await spoken.call("GetTask", {"id": UNKNOWN_TASK})
            if reply.error is None or not spoken.speaks(reply):
                problems.append(f"[{i}] {url} does not answer {binding}: {reply.describe()}")
            else:
                seen.append(f"[{i}] {binding} {url} answers {binding}")
    if problems:
        raise Fail("; ".join(problems))
    return "; ".join(seen)


async def card_version_format(ctx: Ctx) -> str:
    versions = [str(e.get("protocolVersion")) for e in interfaces(_card(ctx))]
    bad = [v for v in versions if not re.fullmatch(r"\d+\.\d+", v)]
    if bad:
        raise Fail(f"protocolVersion not Major.Minor: {', '.join(bad)}")
    return f"protocolVersion {', '.join(versions)}"


async def card_cache_control(ctx: Ctx) -> str:
    value = _header(ctx, "cache-control")
    if value is None or not re.search(r"(^|[\s,])max-age=\d+", value):
        raise Fail(f"Cache-Control: {value!r}")
    return f"Cache-Control: {value}"


def _required_header(ctx: Ctx, name: str) -> str:
    """The card response's header `name`, shown as it is; FAIL when it is absent or empty."""
    value = _header(ctx, name.lower())
    if not value:
        raise Fail(f"no {name} header")
    return f"{name}: {value}"


async def card_etag(ctx: Ctx) -> str:
    return _required_header(ctx, "ETag")


async def card_conditional(ctx: Ctx) -> str:
    etag = _header(ctx, "etag")
    if not etag:
        raise Skip("the card has no ETag to revalidate")
    reply = await ctx.wire.get(ctx.card_url, {"If-None-Match": etag})
    if reply.status != 304:
        raise Fail(f"If-None-Match: {etag} got HTTP {reply.status}, not 304")
    return f"If-None-Match {etag}: 304"


async def card_last_modified(ctx: Ctx) -> str:
    return _required_header(ctx, "Last-Modified")


class Unverifiable(Exception):
    """The signature cannot be checked here (no key reachable, an unknown algorithm)."""


def _signatures(ctx: Ctx) -> list[tuple[Json, Json]]:
    """Each signature with its decoded protected header; FAIL when one is malformed."""
    signatures = _card(ctx).get("signatures")
    if not signatures:
        raise Skip("the card is not signed (signing is a MAY, §8.4)")
    if not isinstance(signatures, list):
        raise Fail(f"signatures is not an array: {signatures!r}")
    out = []
    for i, sig in enumerate(signatures):
        if not isinstance(sig, dict):
            raise Fail(f"signatures[{i}] is not an object")
        try:
            out.append((sig, protected_header(sig)))
        except CardSignatureError as exc:
            raise Fail(f"signatures[{i}]: {exc}") from None
    return out


async def card_signature(ctx: Ctx) -> str:
    found = _signatures(ctx)
    return "; ".join(f"alg {h['alg']}, kid {h['kid']}" for _, h in found)


async def _key(ctx: Ctx, header: Json) -> Json:
    """The signing key: the header's `jwk`, or the `kid` entry of the JWKS at `jku`."""
    jwk = header.get("jwk")
    if isinstance(jwk, dict):
        return jwk
    jku = header.get("jku")
    if not isinstance(jku, str):
        raise Unverifiable("no jwk or jku in the protected header (a trusted key store?)")
    if not ctx.wire.allowed(jku):
        raise Unverifiable(f"the key set {jku} is on another host: not contacted")
    reply = await ctx.wire.get(jku)
    keys = reply.obj.get("keys")
    for key in keys if isinstance(keys, list) else []:
        if isinstance(key, dict) and key.get("kid") == header.get("kid"):
            return key
    raise Fail(f"no key {header.get('kid')!r} in the key set at {jku}: {reply.describe()}")


async def card_signature_valid(ctx: Ctx) -> str:
    """Each signature against the keys given (`--verify-key`, `--jwks`), else against
    the key its header names: a key that does not verify it is a FAIL."""
    verified, unverifiable = [], []
    given = ctx.options.trusted_keys
    for sig, header in _signatures(ctx):
        try:
            keys = given if given is not None else TrustedKeys.load(await _key(ctx, header))
            verify_signature(sig, ctx.card, keys)
        except CardSignatureError as exc:
            if exc.reason in ("invalid", "malformed"):
                raise Fail(str(exc)) from None
            unverifiable.append(f"kid {header['kid']!r}: {exc}")
            continue
        except (Unverifiable, ValueError) as exc:  # (ValueError: a JWK it cannot use)
            unverifiable.append(f"kid {header['kid']!r}: {exc}")
            continue
        verified.append(f"kid {header['kid']!r} ({header['alg']})")
    if not verified:
        raise Skip("; ".join(unverifiable))
    return "verified: " + ", ".join(verified) + "".join(f"; {u}" for u in unverifiable)


CASES: Cases[Ctx] = {
    card_served: (
        "card.served",
        "the agent card is served at /.well-known/agent-card.json",
        MUST,
        "§8.1",
        "A2A Servers **MUST** make an Agent Card available.",
    ),
    card_required: (
        "card.required",
        "the card has every field the proto marks REQUIRED",
        MUST,
        "§5.7",
        "Fields marked with `[(google.api.field_behavior) = REQUIRED]` indicate that the field "
        "**MUST** be present and set in valid messages.",
    ),
    card_camel_case: (
        "card.camel_case",
        "the card's field names are camelCase",
        MUST,
        "§5.5",
        "All JSON serializations of the A2A protocol data model **MUST** use **camelCase** "
        "naming for field names, not the snake_case convention used in Protocol Buffer "
        "definitions.",
    ),
    card_interfaces: (
        "card.interfaces",
        "each declared interface names its binding and an absolute URL, and answers there",
        MUST,
        "§8.3.1",
        "Each interface **MUST** accurately declare its transport protocol and URL",
    ),
    card_version_format: (
        "card.version_format",
        "protocolVersion is Major.Minor, without a patch number",
        SHOULD,
        "§3.6",
        "Patch version numbers SHOULD NOT be used in requests, responses and Agent Cards",
    ),
    card_cache_control: (
        "card.cache_control",
        "the card response has Cache-Control with max-age",
        SHOULD,
        "§8.6.1",
        "Agent Card HTTP endpoints **SHOULD** include a `Cache-Control` response header with a "
        "`max-age` directive appropriate for the agent's expected update frequency",
    ),
    card_etag: (
        "card.etag",
        "the card response has an ETag",
        SHOULD,
        "§8.6.1",
        "Agent Card HTTP endpoints **SHOULD** include an `ETag` response header derived from "
        "the Agent Card's `version` field or a hash of the card content",
    ),
    card_conditional: (
        "card.conditional",
        "a conditional GET with the card's ETag is answered 304 Not Modified",
        SHOULD,
        "§8.6",
        "Servers and clients **SHOULD** use standard HTTP caching mechanisms to reduce "
        "unnecessary network overhead.",
    ),
    card_last_modified: (
        "card.last_modified",
        "the card response has Last-Modified",
        MAY,
        "§8.6.1",
        "Agent Card HTTP endpoints **MAY** include a `Last-Modified` response header",
    ),
    card_signature: (
        "card.signature",
        "each card signature is a JWS whose protected header has alg and kid",
        MUST,
        "§8.4.2",
        "The protected header **MUST** include: `alg`: Algorithm used for signing "
        '(e.g., "ES256", "RS256") [...] `kid`: Key ID for identifying the signing key',
    ),
    card_signature_valid: (
        "card.signature_valid",
        "each card signature verifies over the JCS-canonical card without signatures",
        MUST,
        "§8.4.1",
        "Before signing, the Agent Card content **MUST** be canonicalized using the JSON "
        "Canonicalization Scheme (JCS) as defined in [RFC 8785]",
    ),
}
