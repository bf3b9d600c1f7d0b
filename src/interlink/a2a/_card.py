"""Finding an agent: fetch its card, check it, and pick the interface to talk to.

`resolve_card(url)` reads `{url}/.well-known/agent-card.json` (a URL already ending in
that path is used as is), decodes it with the codec (a bad card is a `CardError` naming
each bad field; an A2A 0.3 card is read in its 1.0 form, `compat.card_from_v03`) and
picks the first interface, in the card's order, whose
`protocolBinding` is `JSONRPC` and whose `protocolVersion` is 1.0 (the patch number is
ignored). Cards are cached per URL in the process: `Cache-Control: max-age` (less
`Age`) keeps a card fresh; after that, or with `no-cache`, a card with an `ETag` is
revalidated with `If-None-Match` (304 keeps it); `no-store` is never cached.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urljoin

import httpx
import msgspec

from interlink.a2a import _codec
from interlink.a2a._types import AgentCard, AgentInterface
from interlink.a2a.client._h1 import HttpError
from interlink.a2a.client._h1pool import Headers, Pool, Response

__all__ = [
    "CARD_PATH",
    "CardError",
    "NoCompatibleInterface",
    "ResolvedCard",
    "clear_card_cache",
    "fetch_card",
    "resolve_card",
    "select_interface",
]

CARD_PATH: Final = "/.well-known/agent-card.json"
BINDING: Final = "JSONRPC"
PROTOCOL_VERSION: Final = "1.0"
_MAX_AGE: Final = re.compile(r"(?:^|,)\s*max-age\s*=\s*\"?(\d+)\"?\s*(?:,|$)", re.I)


class CardError(Exception):
    """The agent card could not be fetched, or is not a valid A2A 1.0 card."""

    def __init__(self, message: str, url: str) -> None:
        super().__init__(message)
        self.url = url


class InvalidAgentURL(CardError):
    """An agent's URL (given, or in its card) that cannot be used: not http(s), no host,
    a port out of range, unparseable."""


class NoCompatibleInterface(CardError):
    """The card offers no interface this client speaks (JSON-RPC, A2A 1.0)."""


@dataclass(frozen=True)
class ResolvedCard:
    """A card and the interface chosen on it."""

    card: AgentCard
    interface: AgentInterface
    url: str
    """Where the JSON-RPC calls go (the interface's URL, made absolute)."""
    card_url: str
    tenant: str = ""
    """The interface's tenant, sent in every request ("" = none)."""


@dataclass
class _Entry:
    card: AgentCard
    etag: str | None
    expires: float  # time.monotonic(); the card is fresh until then


_CACHE: dict[tuple[str, bool], _Entry] = {}  # by card URL and whether read as 0.3


def clear_card_cache() -> None:
    """Forget every cached card."""
    _CACHE.clear()


def checked_url(url: str, what: str = "URL", card_url: str = "") -> httpx.URL:
    """`url` parsed, or `InvalidAgentURL` saying what is wrong with it."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise InvalidAgentURL(f"the {what} {url!r} is not valid: {exc}", card_url or url) from None
    problem = ""
    if parsed.scheme not in ("http", "https"):
        problem = "it is not an http:// or https:// URL"
    elif not parsed.host:
        problem = "it names no host"
    elif parsed.port is not None and not 0 < parsed.port < 65536:
        problem = f"port {parsed.port} is out of range"
    if problem:
        raise InvalidAgentURL(f"the {what} {url!r} is not valid: {problem}", card_url or url)
    return parsed


def card_url_of(url: str) -> str:
    """Where the agent card of the agent at `url` is (its path gains the well-known
    path, before any query)."""
    parsed = checked_url(url, "agent URL")
    path = parsed.path.rstrip("/")
    if not path.endswith(CARD_PATH):
        path += CARD_PATH
    return str(parsed.copy_with(path=path))


def _version_matches(version: str) -> bool:
    return version.strip().split(".")[:2] == PROTOCOL_VERSION.split(".")


def select_interface(card: AgentCard, card_url: str = "") -> ResolvedCard:
    """The first JSON-RPC interface for A2A 1.0 in the card's order."""
    for interface in card.supported_interfaces:
        if interface.protocol_binding.upper() == BINDING and _version_matches(
            interface.protocol_version
        ):
            if not interface.url:
                raise CardError(f"the card's {BINDING} interface has no url", card_url)
            url = urljoin(card_url, interface.url) if card_url else interface.url
            checked_url(url, f"card's {BINDING} interface URL", card_url)
            return ResolvedCard(card, interface, url, card_url, interface.tenant)
    offered = ", ".join(
        f"{i.protocol_binding or '?'} {i.protocol_version or '?'} at {i.url or '?'}"
        for i in card.supported_interfaces
    )
    raise NoCompatibleInterface(
        f"agent card {card_url or card.name!r} offers no {BINDING} interface for A2A "
        f"{PROTOCOL_VERSION}; it offers: {offered or 'no interfaces'}",
        card_url,
    )


def _decode_card(body: bytes, url: str) -> AgentCard:
    try:
        card = _codec.decode(AgentCard, body)
    except _codec.ValidationError as exc:
        old = _v03_card(body)
        if old is not None:
            return old
        problems = "; ".join(f"{v.field or '<card>'}: {v.description}" for v in exc.violations)
        raise CardError(f"invalid agent card at {url}: {problems}", url) from None
    if not card.supported_interfaces:
        return _v03_card(body) or card
    return card


def _v03_card(body: bytes) -> AgentCard | None:
    """An A2A 0.3 card (`url`, `preferredTransport`, no `supportedInterfaces`) in its
    1.0 form, its interfaces at version 0.3; None when `body` is not one."""
    from interlink.a2a.compat import _v03 as compat
    from interlink.a2a.compat import _v03_types as v

    try:
        old = msgspec.json.decode(body, type=v.AgentCard)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return compat.card_from_v03(old) if old.url else None


def _lifetime(headers: httpx.Headers | Headers) -> float | None:
    """Seconds the answer stays fresh; `None` = do not store it."""
    control = headers.get("cache-control", "")
    directives = {d.strip().split("=")[0].lower() for d in control.split(",")}
    if "no-store" in directives:
        return None
    if "no-cache" in directives:
        return 0.0
    match = _MAX_AGE.search(control)
    if match is None:
        return 0.0
    age = headers.get("age", "0")
    return max(0.0, int(match[1]) - (int(age) if age.isdigit() else 0))


async def fetch_card(
    url: str,
    *,
    client: httpx.AsyncClient | Pool | None = None,
    headers: Mapping[str, str] | None = None,
    version: str | None = None,
) -> tuple[AgentCard, str]:
    """Fetch (or reuse) the agent card at `url`: the card and its URL (with `client`,
    an httpx client or the A2A client's own pool; else an httpx client of its own). With `version`
    "0.3" the card is asked for as a 0.3 client asks (no `A2A-Version`) and read in its
    0.3 form, so a server that negotiates its card (ours) shows its 0.3 interfaces."""
    card_url = card_url_of(url)
    own = client is None
    http = httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=10.0)) if own else client
    assert http is not None
    try:
        return await _fetch(http, card_url, headers or {}, _is_v03(version)), card_url
    finally:
        if own:
            await http.aclose()


async def resolve_card(
    url: str,
    *,
    client: httpx.AsyncClient | None = None,
    headers: Mapping[str, str] | None = None,
) -> ResolvedCard:
    """Fetch (or reuse) the agent card at `url` and pick its JSON-RPC 1.0 interface
    (`A2AClient.connect` picks among all bindings and versions)."""
    card, card_url = await fetch_card(url, client=client, headers=headers)
    return select_interface(card, card_url)


def _is_v03(version: str | None) -> bool:
    return version is not None and version.strip().startswith("0.")


async def _fetch(
    http: httpx.AsyncClient | Pool, url: str, extra: Mapping[str, str], v03: bool = False
) -> AgentCard:
    key = (url, v03)
    entry = _CACHE.get(key)
    now = time.monotonic()
    if entry is not None and now < entry.expires:
        return entry.card
    headers = {"Accept": "application/json", **({} if v03 else {"A2A-Version": PROTOCOL_VERSION})}
    headers.update(extra)
    if entry is not None and entry.etag:
        headers["If-None-Match"] = entry.etag
    try:
        if isinstance(http, Pool):
            raw = [(name.encode(), value.encode()) for name, value in headers.items()]
            response: httpx.Response | Response = await http.request("GET", url, raw)
        else:
            response = await http.get(url, headers=headers)
    except (httpx.HTTPError, HttpError) as exc:
        raise CardError(f"could not fetch the agent card at {url}: {exc!r}", url) from exc
    lifetime = _lifetime(response.headers)
    if response.status_code == 304 and entry is not None:
        entry.expires = now + (lifetime or 0.0)
        if "etag" in response.headers:
            entry.etag = response.headers["etag"]
        return entry.card
    if response.status_code != 200:
        raise CardError(
            f"could not fetch the agent card at {url}: HTTP {response.status_code} "
            f"{response.text[:200]!r}",
            url,
        )
    card = (v03 and _v03_card(response.content)) or _decode_card(response.content, url)
    if lifetime is None:
        _CACHE.pop(key, None)
    else:
        etag = response.headers.get("etag", "") or None
        _CACHE[key] = _Entry(card, etag, now + lifetime)
    return card
