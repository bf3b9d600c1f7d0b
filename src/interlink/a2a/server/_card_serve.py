"""The agent card as served at `/.well-known/agent-card.json`.

A card that lists its interfaces (the app was given its public URL: `with_interface`,
`interlink a2a serve --public-url`) is served as it is. A card that lists none gets an
interface for each binding the app serves, made from the request: its scheme, its
`Host` and the app's `root_path` (where it is mounted) with the binding's path (the
JSON-RPC path; none for HTTP+JSON, whose routes are below the URL); an interface
served elsewhere (gRPC) is listed at its own URL. So an app under plain
`uvicorn`, or mounted in Starlette or FastAPI, advertises the address its clients reach
it at; behind a proxy that rewrites the scheme, uvicorn's `--proxy-headers` puts the
client's scheme in the scope (`X-Forwarded-*` is read by nobody here). An unspecified
address (`0.0.0.0`, `[::]`) is never advertised: loopback stands for it.

The `Host` header is the client's to choose: one that is no `host[:port]` is refused
(HTTP 400), and the cards made from requests are kept for the last `VARIANTS`
(scheme, host, root path, version) only, each with its own `ETag`, served with `Vary: Host`.
Conditional GETs (`If-None-Match`, `If-Modified-Since`) are answered 304 per variant.
With a signing key, each variant is signed once, when it is made (§8.4).

A request without `A2A-Version` (a 0.3 client's) or asking for 0.3 gets the card with
its 0.3 fields beside the 1.0 ones (`server._v03.card_body`); `A2A-Version: 1.x` the 1.0
card alone. So every card is served in two variants, each with its own `ETag`, and with
`Vary: A2A-Version`.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Mapping, MutableMapping, Sequence
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from typing import Final, NamedTuple, cast
from urllib.parse import quote

import msgspec

from interlink.a2a import _codec
from interlink.a2a._card_sign import SigningKey, sign_card
from interlink.a2a._types import AgentCard, AgentInterface
from interlink.a2a.server._v03 import card_body, is_v03, requested_version, sdk_v03_payload

__all__ = ["CardVariant", "PublishedCard", "interface_url"]

VARIANTS: Final = 64
"""Cards made from requests kept at most (one per scheme, host and root path)."""
MAX_ROOT_PATH: Final = 1024
_HOST: Final = re.compile(
    r"(?P<host>\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9](?:[A-Za-z0-9._-]{0,252}))(?::(?P<port>[0-9]{1,5}))?"
)
_UNSPECIFIED: Final = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]", "[0:0:0:0:0:0:0:0]": "[::1]"}
_PATH_SAFE: Final = "/-._~!$&'()*+,;=:@"


class BadHost(ValueError):
    """A request whose `Host` (or mount path) cannot name the agent's address."""


class CardVariant(NamedTuple):
    body: bytes
    etag: bytes


def interface_url(
    scope: MutableMapping[str, object], headers: Mapping[str, str], rpc_path: str
) -> str:
    """The URL of the app's `rpc_path` (a binding's path) as the request reached it. Raises
    `BadHost` for a `Host` that is no `host[:port]` or a mount path that is too long."""
    scheme = cast(str, scope.get("scheme", "http"))
    if scheme not in ("http", "https"):
        scheme = "http"
    host = headers.get("host", "").strip()
    if not host:  # (HTTP/1.0): the address the connection reached
        server = scope.get("server")
        if not isinstance(server, (tuple, list)) or len(server) != 2:
            raise BadHost("the request names no host")
        name, port = str(server[0]), server[1]
        host = f"[{name}]" if ":" in name else name
        if port is not None:
            host += f":{port}"
    match = _HOST.fullmatch(host)
    if match is None or (match["port"] is not None and not 0 < int(match["port"]) < 65536):
        raise BadHost("the Host header is not a host[:port]")
    name = match["host"].lower()
    name = _UNSPECIFIED.get(name, name)
    host = name if match["port"] is None else f"{name}:{match['port']}"
    root = cast(str, scope.get("root_path", "")).rstrip("/")
    if len(root) > MAX_ROOT_PATH:
        raise BadHost(f"the mount path is longer than {MAX_ROOT_PATH} characters")
    return f"{scheme}://{host}{quote(root, safe=_PATH_SAFE)}{rpc_path}"


def _variant(card: AgentCard, signer: SigningKey | None, v03: bool) -> CardVariant:
    """The card as served: signed (the 1.0 card is), and with its 0.3 fields for `v03`
    (signed for the 0.3 SDK's readers too)."""
    signed = card if signer is None else sign_card(card, signer)
    payload = sdk_v03_payload(signed) if v03 and signer is not None else None
    if payload is not None:
        assert signer is not None
        signed = sign_card(signed, signer, payload=payload)
    body = _codec.encode(signed)
    if v03:
        body = card_body(signed, body)
    return CardVariant(body, b'"' + hashlib.sha256(body).hexdigest()[:32].encode() + b'"')


class PublishedCard:
    """One card, served per request: as it is, or with the interfaces of the request.

    `interfaces` are (protocol binding, path below the app or absolute URL; for gRPC
    always its `host:port`), in the order of preference; by default the one JSON-RPC
    interface at `rpc_path`."""

    def __init__(
        self,
        card: AgentCard,
        rpc_path: str = "/",
        signer: SigningKey | None = None,
        *,
        interfaces: Sequence[tuple[str, str]] | None = None,
    ) -> None:
        self.card = card
        self.rpc_path = rpc_path
        self.interfaces = tuple(interfaces or (("JSONRPC", rpc_path),))
        self.signer = signer
        #: whether the interface comes from each request (the card lists none)
        self.per_request = not card.supported_interfaces
        self._fixed = (
            None
            if self.per_request
            else (_variant(card, signer, False), _variant(card, signer, True))
        )
        self._variants: OrderedDict[tuple[str, str, str, bool], CardVariant] = OrderedDict()
        self.modified_at = datetime.now(UTC).replace(microsecond=0)
        self.modified = format_datetime(self.modified_at, usegmt=True).encode()

    def variant(
        self, scope: MutableMapping[str, object], headers: Mapping[str, str]
    ) -> CardVariant:
        """The card for this request (raises `BadHost`)."""
        v03 = is_v03(requested_version(scope, headers))
        if self._fixed is not None:
            return self._fixed[v03]
        key = (
            cast(str, scope.get("scheme", "")),
            headers.get("host", ""),
            cast(str, scope.get("root_path", "")),
            v03,
        )
        found = self._variants.get(key)
        if found is not None:
            self._variants.move_to_end(key)
            return found
        card = msgspec.structs.replace(
            self.card, supported_interfaces=self.served_interfaces(scope, headers)
        )
        found = _variant(card, self.signer, v03)
        self._variants[key] = found
        while len(self._variants) > VARIANTS:
            self._variants.popitem(last=False)
        return found

    def served_interfaces(
        self, scope: MutableMapping[str, object], headers: Mapping[str, str]
    ) -> list[AgentInterface]:
        """The card's interfaces as served for this request: its own, or those of
        `interfaces` at the address the request reached (raises `BadHost`)."""
        if not self.per_request:
            return list(self.card.supported_interfaces)
        return [
            AgentInterface(
                url=where
                if "://" in where or binding == "GRPC"
                else interface_url(scope, headers, where),
                protocol_binding=binding,
                protocol_version="1.0",
            )
            for binding, where in self.interfaces
        ]

    def not_modified(self, variant: CardVariant, headers: Mapping[str, str]) -> bool:
        """Whether a conditional GET of `variant` may be answered 304 (RFC 9110, 13.1):
        `If-None-Match` (`*`, a list, weak comparison) wins over `If-Modified-Since`."""
        tags = headers.get("if-none-match")
        if tags is not None:
            etag = variant.etag.decode()
            return any(
                tag == "*" or tag.removeprefix("W/") == etag
                for tag in (t.strip() for t in tags.split(","))
            )
        since = headers.get("if-modified-since")
        if since is None:
            return False
        try:
            return parsedate_to_datetime(since) >= self.modified_at
        except (TypeError, ValueError):  # not an HTTP date: ignored, as the RFC says
            return False

    def response(
        self, scope: MutableMapping[str, object], headers: Mapping[str, str]
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Status, headers and body of the answer to a GET of the card."""
        try:
            variant = self.variant(scope, headers)
        except BadHost as exc:
            body = msgspec.json.encode({"error": str(exc)})
            return 400, [(b"content-type", b"application/json")], body
        common = [
            (b"cache-control", b"public, max-age=300"),
            (b"etag", variant.etag),
            (b"last-modified", self.modified),
        ]
        common.append((b"vary", b"Host, A2A-Version" if self.per_request else b"A2A-Version"))
        if self.not_modified(variant, headers):
            return 304, common, b""
        return 200, [(b"content-type", b"application/json"), *common], variant.body
