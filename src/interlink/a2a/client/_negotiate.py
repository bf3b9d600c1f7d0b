"""Which interface of an agent card to talk to (§5.2, §8.3, §3.6.3), and why.

Every interface of the card is a candidate. One the client cannot or must not speak is
skipped, saying why: a binding we do not have (gRPC without the `grpc` extra), one the
caller ruled out (`binding=`), a version no binding of ours speaks or not the one the
caller pinned (`version=`; then no other version is tried: §3.6.3 asks that a client
needing a version's features does not fall back silently), a missing or bad URL.

The others are tried in this order: the newest A2A version first; then the caller's
binding preference (`binding=`: one binding, or several in order; by default JSON-RPC,
HTTP+JSON, gRPC); then the card's order (§8.3.1: the agent's preference).

Trying an interface is one harmless call: `GetTask` of a task id no agent has. An A2A
answer in the binding's own form shows the interface is there and picks it:
`TaskNotFound`, but also another A2A error, or HTTP 401 or 403 (authentication comes
first, and the credentials are the caller's problem on every interface alike, §5.1).
The next candidate is tried when the interface does not answer so (see `failure`): the
connection fails or is refused, no answer within `probe_timeout`, an HTTP status with no
A2A error in it (404/405/406/415/501: nothing serves this binding there; 3xx: sent
elsewhere, which is not followed), an answer that is not the binding's, -32601 (a
JSON-RPC server that is not A2A), or `VersionNotSupported` (the card claims a version
the interface does not serve). Each failure is kept with its reason in the
`Negotiation`.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final, cast
from urllib.parse import urljoin

from interlink.a2a._card import InvalidAgentURL, NoCompatibleInterface, checked_url
from interlink.a2a._errors import (
    A2AHttpError,
    A2ATransportError,
    InvalidAgentResponse,
    VersionNotSupported,
)
from interlink.a2a._methods import GET_TASK
from interlink.a2a._types import AgentCard, AgentInterface, GetTaskRequest
from interlink.a2a.client import _jsonrpc, _rest
from interlink.a2a.client._transport import (
    GRPC,
    HTTP_JSON,
    JSONRPC,
    Transport,
    TransportFactory,
)
from interlink.jsonrpc import MethodNotFound, RpcError

__all__ = [
    "BINDING_NAMES",
    "DEFAULT_PREFERENCE",
    "Candidate",
    "Negotiation",
    "NoInterfaceAnswered",
    "NoUsableInterface",
    "Outcome",
    "binding_name",
    "failure",
    "plan",
    "transport_factory",
]

#: the bindings in the order they are preferred when the caller says nothing
DEFAULT_PREFERENCE: Final = (JSONRPC, HTTP_JSON, GRPC)
#: what `binding=` and the CLI accept for each binding (any case)
BINDING_NAMES: Final = {
    "jsonrpc": JSONRPC,
    "json-rpc": JSONRPC,
    "rest": HTTP_JSON,
    "http+json": HTTP_JSON,
    "http": HTTP_JSON,
    "grpc": GRPC,
}
#: HTTP statuses that say nothing serves the binding at that URL
_NOT_SERVED: Final = frozenset({404, 405, 406, 415, 501})
#: HTTP statuses without an A2A error that still show the interface is there
_ANSWERS: Final = frozenset({401, 403})


class Outcome(StrEnum):
    PICKED = "picked"
    FAILED = "failed"
    """Tried; it did not answer."""
    SKIPPED = "skipped"
    """Not tried: this client cannot or must not speak it."""
    NOT_TRIED = "not tried"
    """Speakable, but one before it answered."""


@dataclass(frozen=True)
class Candidate:
    """One interface of the card and what became of it."""

    index: int
    """Its position in the card's `supportedInterfaces`."""
    interface: AgentInterface
    binding: str
    """The binding's name, upper-case (`JSONRPC`, `HTTP+JSON`, `GRPC`, or the card's)."""
    version: str
    """The A2A version, Major.Minor ("" when the card gives none we can read)."""
    url: str
    """Where requests go: the HTTP bindings' URL made absolute, gRPC's address as given."""
    outcome: Outcome
    reason: str

    def describe(self) -> str:
        where = self.url or self.interface.url or "?"
        tenant = f" tenant {self.interface.tenant}" if self.interface.tenant else ""
        return (
            f"{self.binding or '?'} {self.version or self.interface.protocol_version or '?'} "
            f"at {where}{tenant}: {self.outcome} ({self.reason})"
        )


@dataclass(frozen=True)
class Negotiation:
    """Every interface of the card, in the card's order, with its outcome."""

    card_url: str
    candidates: tuple[Candidate, ...]

    @property
    def picked(self) -> Candidate | None:
        return next((c for c in self.candidates if c.outcome is Outcome.PICKED), None)

    def lines(self) -> list[str]:
        """One line per interface, for people."""
        return [c.describe() for c in self.candidates] or ["the card lists no interfaces"]

    def with_outcome(self, index: int, outcome: Outcome, reason: str) -> Negotiation:
        candidates = tuple(
            replace(c, outcome=outcome, reason=reason) if c.index == index else c
            for c in self.candidates
        )
        return Negotiation(self.card_url, candidates)


class NoInterfaceAnswered(A2ATransportError):
    """Every interface that could be spoken was tried and none answered; `negotiation`
    says what each did."""

    def __init__(self, negotiation: Negotiation, url: str) -> None:
        tried = "; ".join(negotiation.lines())
        super().__init__(f"no interface of the agent card answered: {tried}", url)
        self.negotiation = negotiation


def binding_name(name: str) -> str:
    """A binding's `protocolBinding` name from what a caller may call it (`rest`)."""
    return BINDING_NAMES.get(name.strip().lower(), name.strip().upper())


def _version_key(version: str) -> tuple[int, int] | None:
    """Major.Minor of a version string (the patch is ignored, §3.6), or None."""
    parts = version.strip().split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        return None
    return int(parts[0]), int(parts[1])


def _grpc() -> tuple[TransportFactory, frozenset[str]]:
    """The gRPC transport and its versions; ImportError without the `grpc` extra."""
    module = importlib.import_module("interlink.a2a.client._grpc")
    versions = getattr(module, "VERSIONS", ("1.0",))
    return cast(TransportFactory, module.GrpcTransport), frozenset(versions)


def transport_factory(binding: str) -> tuple[TransportFactory, frozenset[str]] | str:
    """The transport of `binding` and the versions it speaks, or why there is none."""
    if binding == JSONRPC:
        return _jsonrpc.JsonRpcTransport, frozenset(_jsonrpc.DIALECTS)
    if binding == HTTP_JSON:
        return _rest.RestTransport, frozenset(_rest.DIALECTS)
    if binding == GRPC:
        try:
            return _grpc()
        except ImportError as exc:
            return f"gRPC needs the grpc extra (pip install 'interlink[grpc]'): {exc}"
    return f"this client has no {binding} binding"


@dataclass(frozen=True)
class Step:
    """A candidate to try: its index in the card, its transport and version."""

    index: int
    factory: TransportFactory
    url: str
    version: str


def plan(
    card: AgentCard,
    card_url: str = "",
    *,
    binding: str | Sequence[str] | None = None,
    version: str | None = None,
    factories: Callable[[str], tuple[TransportFactory, frozenset[str]] | str] = transport_factory,
) -> tuple[Negotiation, list[Step]]:
    """The candidates of `card` (skipped ones with their reason, the others NOT_TRIED)
    and the order to try them in."""
    if binding is None:
        preference: tuple[str, ...] = DEFAULT_PREFERENCE
    elif isinstance(binding, str):
        preference = (binding_name(binding),)
    else:
        preference = tuple(binding_name(b) for b in binding)
    pinned = None if version is None else _version_key(version)
    if version is not None and pinned is None:
        raise ValueError(f"not an A2A version (Major.Minor): {version!r}")
    candidates: list[Candidate] = []
    ranked: list[tuple[tuple[int, ...], Step]] = []
    for index, interface in enumerate(card.supported_interfaces):
        name = interface.protocol_binding.strip().upper()
        key = _version_key(interface.protocol_version)
        major_minor = "" if key is None else f"{key[0]}.{key[1]}"
        url = interface.url
        if name and name != GRPC and url:  # (gRPC's address is host:port, as given)
            url = urljoin(card_url, url) if card_url else url
        transport = factories(name) if name else "the interface names no protocolBinding"
        if isinstance(transport, str):
            reason = transport
        elif name not in preference:
            reason = f"{name} was not asked for (only {', '.join(preference)})"
        elif key is None:
            reason = f"no A2A version we can read: {interface.protocol_version!r}"
        elif pinned is not None and key != pinned:
            reason = f"version {major_minor}, not the {pinned[0]}.{pinned[1]} asked for"
        elif major_minor not in transport[1]:
            spoken = ", ".join(sorted(transport[1])) or "none"
            reason = f"this client speaks {name} in A2A {spoken}, not {major_minor}"
        else:
            reason = _url_problem(name, url, card_url)
        if not reason and not isinstance(transport, str) and key is not None:
            order = (-key[0], -key[1], preference.index(name), index)
            ranked.append((order, Step(index, transport[0], url, major_minor)))
        outcome = Outcome.NOT_TRIED if not reason else Outcome.SKIPPED
        candidates.append(Candidate(index, interface, name, major_minor, url, outcome, reason))
    ranked.sort(key=lambda r: r[0])
    steps = [step for _, step in ranked]
    for rank, step in enumerate(steps, 1):
        why = f"choice {rank} of {len(steps)}"
        candidates[step.index] = replace(candidates[step.index], reason=why)
    return Negotiation(card_url, tuple(candidates)), steps


def _url_problem(binding: str, url: str, card_url: str) -> str:
    if not url:
        return "the interface has no url"
    if binding != GRPC:
        try:
            checked_url(url, f"card's {binding} interface URL", card_url)
        except InvalidAgentURL as exc:
            return str(exc)
    return ""


class NoUsableInterface(NoCompatibleInterface):
    """The card offers no interface this client may speak (a `CardError`); `negotiation`
    says why for each."""

    def __init__(self, card: AgentCard, negotiation: Negotiation) -> None:
        lines = "; ".join(negotiation.lines())
        super().__init__(
            f"agent card {negotiation.card_url or card.name!r} offers no interface this "
            f"client can use: {lines}",
            negotiation.card_url,
        )
        self.negotiation = negotiation


def failure(exc: BaseException) -> str | None:
    """Why the interface that raised `exc` on the probe counts as not answering; None
    when `exc` is an answer of the binding (the interface is there)."""
    if isinstance(exc, TimeoutError):
        return f"no answer in time ({exc})"
    if isinstance(exc, A2ATransportError):
        return f"did not answer: {_network_cause(exc)}"
    if isinstance(exc, A2AHttpError):
        if exc.status in _ANSWERS:
            return None  # (authentication comes before the binding, on every interface)
        if exc.status in _NOT_SERVED:
            return f"HTTP {exc.status}: nothing serves this binding there"
        if 300 <= exc.status < 400:
            return f"HTTP {exc.status}: redirected elsewhere (not followed)"
        return f"HTTP {exc.status} without an A2A error"
    if isinstance(exc, VersionNotSupported):
        return f"the interface does not serve this version: {exc}"
    if isinstance(exc, InvalidAgentResponse):
        return f"the answer is not this binding's: {exc}"
    if isinstance(exc, MethodNotFound):
        return f"answered -32601: not an A2A endpoint ({exc})"
    if isinstance(exc, RpcError):
        return None
    return f"failed: {exc!r}"


def _network_cause(exc: BaseException) -> str:
    """The socket error under `exc`, in words ("connection refused"), else `exc`."""
    seen: list[BaseException] = []
    found: BaseException | None = exc
    while found is not None and found not in seen:
        if isinstance(found, OSError) and found.errno:
            return os.strerror(found.errno).lower()
        seen.append(found)
        found = found.__cause__ or found.__context__
    return str(exc)


async def probe(transport: Transport, tenant: str, within: float) -> str | None:
    """Try `transport` (see `failure`), waiting `within` seconds at most for its answer;
    None when it answered."""
    request = GetTaskRequest(tenant=tenant, id=f"interlink-probe-{uuid.uuid4().hex}")
    try:
        async with asyncio.timeout(within):
            await transport.call(GET_TASK, request)
    except TimeoutError:
        return f"no answer within {within:g} s"
    except Exception as exc:
        return failure(exc)
    return None
