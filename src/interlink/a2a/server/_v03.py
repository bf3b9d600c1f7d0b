"""A2A 0.3 clients at the edge of the server: their calls carried out by the 1.0 handler.

A request that names no `A2A-Version` (header or query) is 0.3 (§3.6.2), and so is one
naming 0.3. Its 0.3 method and params become the 1.0 method and request
(`compat.request_from_v03`), the 1.0 handler runs as for any call, and its result goes
back in 0.3 form (`compat.result_to_v03`); a stream's events are translated one by one
(`final` true on the status update after which the stream ends), errors by
`compat.error_to_v03`; on JSON-RPC, the errors of a 0.3 streaming method come as an
event of an SSE stream, as 0.3 says every answer to one is (its clients read nothing
else). The 0.3 HTTP+JSON routes (`bindings._rest_v03`) make the same calls. A 1.0
method in a 0.3 request is `VersionNotSupported` (the caller forgot the header: what
1.0 clients of the official SDKs are told too); a 0.3 method in a 1.0 request is not
found, as 1.0 has no such method.

The agent card is read by 0.3 clients too: without a version (what 0.3 clients send), or
asking for 0.3, the card carries the 0.3 fields (`url`, `preferredTransport`,
`protocolVersion`, `additionalInterfaces`, ...) beside the 1.0 ones, which are exactly
the 1.0 card's, so that a 1.0 reader that parses the card (and drops what it does not
know) reads, and verifies the signatures of, the 1.0 card; `A2A-Version: 1.x` gets the
1.0 card alone (a verifier that canonicalizes the JSON as received needs it so). A
signed card gets one more signature there, over what the official 0.3 SDK verifies
(`sdk_v03_payload`), so that its readers verify it too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, MutableMapping
from typing import Final, cast
from urllib.parse import parse_qs

import msgspec

from interlink.a2a import _codec
from interlink.a2a._card_sign import _drop_empty
from interlink.a2a._errors import VersionNotSupported, bad_request
from interlink.a2a._methods import METHODS
from interlink.a2a._types import AgentCard, AgentInterface, StreamResponse
from interlink.a2a.compat import _v03 as compat
from interlink.a2a.compat import _v03_types as v
from interlink.a2a.server._handler import A2AServer, Call, Handler
from interlink.a2a.server._stream import TaskStream
from interlink.jsonrpc import ErrorObject, ErrorResponse, MethodNotFound, RpcError, encode

__all__ = [
    "BINDINGS",
    "STREAMING",
    "V03",
    "call_v03",
    "card_body",
    "card_v03",
    "error_body_v03",
    "bad_params",
    "event_to_v03",
    "event_v03",
    "is_v03",
    "requested_version",
    "sdk_v03_payload",
]

V03: Final = compat.VERSION
#: the bindings that serve 0.3 (HTTP+JSON at its `/v1/...` routes: `bindings._rest_v03`)
BINDINGS: Final = frozenset({"JSONRPC", "HTTP+JSON"})
#: the 0.3 methods whose every answer is an SSE stream, errors too
STREAMING: Final = frozenset(name for name, method in v.METHODS.items() if method.streaming)
_AT: Final = re.compile(r"^(?P<text>.*?)(?: - at `\$\.?(?P<field>[^`]*)`)?$", re.DOTALL)


def requested_version(scope: MutableMapping[str, object], headers: Mapping[str, str]) -> str:
    """The `A2A-Version` of a request: its header, else its query parameter, else ""."""
    version = headers.get("a2a-version", "").strip()
    if not version:
        query = parse_qs(cast(bytes, scope.get("query_string", b"")).decode("latin-1"))
        version = (query.get("A2A-Version") or query.get("a2a-version") or [""])[0].strip()
    return version


def is_v03(version: str) -> bool:
    """Whether a request of `version` is 0.3: "" (no version named) or 0.3.x."""
    return not version or ".".join(version.split(".")[:2]) == V03


async def call_v03(
    server: A2AServer,
    method: str,
    params: object,
    call: Call,
    interfaces: Callable[[], list[AgentInterface]] = list,
) -> object | TaskStream:
    """Carry out a 0.3 call with its `params` (decoded JSON, None for none): the result
    as a 0.3 object (`msgspec.json.encode` writes its JSON), or the stream (its events
    still 1.0: `event_v03` each). A card without interfaces (an extended card as
    configured) gets `interfaces()`, those of the public card as served: 0.3 requires
    its `url`."""
    if method in METHODS:
        raise VersionNotSupported(
            f"{method} is an A2A 1.0 method, and a request without A2A-Version is 0.3: "
            "send A2A-Version: 1.0",
            supported="0.3,1.0",
        )
    if method not in compat.METHOD_FROM_V03:
        raise MethodNotFound(data={"method": method})
    try:
        new, request = compat.request_from_v03(method, params)
    except ValueError as exc:  # (msgspec.ValidationError too)
        raise bad_params(exc) from None
    handler: Handler = getattr(server, new.handler)
    result = await handler(request, call)
    if isinstance(result, TaskStream):
        return result
    if isinstance(result, AgentCard):
        if not result.supported_interfaces:
            result = msgspec.structs.replace(result, supported_interfaces=interfaces())
        return card_v03(result)
    return compat.result_to_v03(new.name, result)


def bad_params(exc: ValueError) -> RpcError:
    """-32602 for 0.3 params that are not of their shape: `exc`'s text, at the field it
    names (msgspec's `- at `$.field``), else at `params`."""
    match = _AT.match(str(exc))
    assert match is not None  # (the pattern matches any text)
    return bad_request([(match["field"] or "params", match["text"])])


def card_v03(card: AgentCard) -> v.AgentCard:
    """The card as 0.3 clients get it: its interfaces of the bindings that serve 0.3
    (`BINDINGS`: a 0.3 client that picked another would find nothing at its 0.3 paths);
    ValueError for a card without any."""
    served = [i for i in card.supported_interfaces if i.protocol_binding.upper() in BINDINGS]
    return compat.card_to_v03(msgspec.structs.replace(card, supported_interfaces=served))


def event_v03(payload: bytes) -> compat.StreamEventV03:
    """One event of a 1.0 stream (a `StreamResponse`'s JSON) as its 0.3 object."""
    return compat.stream_event_to_v03(_codec.decode(StreamResponse, payload))


def event_to_v03(payload: bytes) -> bytes:
    """One event of a 1.0 stream as its 0.3 JSON."""
    return msgspec.json.encode(event_v03(payload))


def error_body_v03(response: ErrorResponse) -> bytes:
    """A JSON-RPC error as a 0.3 client reads it: same code and message, free-form
    `data` (see `compat.error_to_v03`)."""
    error = compat.error_to_v03(response.error)
    old = ErrorObject(error.code, error.message, error.data)
    return encode(ErrorResponse(id=response.id, error=old))


def card_body(card: AgentCard, body: bytes) -> bytes:
    """The JSON `body` of the 1.0 `card` with the card's 0.3 fields beside the 1.0 ones
    (a 1.0 field is never changed: where both have an object, the 0.3 one's other keys
    are added to it, and so for the objects of lists at the same index). A card that has
    no 0.3 form (no JSON-RPC interface) is `body` as it is."""
    try:
        old = msgspec.to_builtins(card_v03(card))
    except ValueError:
        return body
    new = msgspec.json.decode(body)
    assert isinstance(new, dict)
    assert isinstance(old, dict)
    return msgspec.json.encode(_beside(new, old))


#: the card's fields with a default in the official SDK's 0.3 models
_SDK_DEFAULTS: Final = (
    ("protocolVersion", compat.PROTOCOL_VERSION),
    ("preferredTransport", "JSONRPC"),
)


def sdk_v03_payload(card: AgentCard) -> bytes | None:
    """The payload the official Python SDK 0.3 (`a2a-sdk` 0.3.x) checks a card's
    signatures against: the 0.3 card without `signatures` and without the fields at their
    0.3 defaults (`protocolVersion` "0.3.0", `preferredTransport` "JSONRPC", a security
    scheme's `type`: pydantic's `exclude_defaults`), empty values dropped, written by
    `json.dumps(sort_keys=True)` (not RFC 8785: non-ASCII as escapes). None for a card
    without a 0.3 form (`card_v03`)."""
    try:
        old = msgspec.to_builtins(card_v03(card))
    except ValueError:
        return None
    assert isinstance(old, dict)
    old.pop("signatures", None)
    for name, default in _SDK_DEFAULTS:
        if old.get(name) == default:
            del old[name]
    for scheme in old.get("securitySchemes", {}).values():
        scheme.pop("type", None)
    return json.dumps(_drop_empty(old), separators=(",", ":"), sort_keys=True).encode()


def _beside(new: dict[str, object], old: dict[str, object]) -> dict[str, object]:
    for key, value in old.items():
        mine = new.get(key)
        if key not in new:
            new[key] = value
        elif isinstance(mine, dict) and isinstance(value, dict):
            _beside(mine, value)
        elif isinstance(mine, list) and isinstance(value, list):
            for a, b in zip(mine, value, strict=False):
                if isinstance(a, dict) and isinstance(b, dict):
                    _beside(a, b)
    return new
