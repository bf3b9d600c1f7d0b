"""What every binding does the same way (§5.1): a `Call` from the service parameters,
and a method carried out by the generated table.

A binding reads its envelope (JSON-RPC, HTTP+JSON routes, gRPC) and hands over the
service parameters as a plain mapping (lower-case names: `a2a-version`,
`a2a-extensions`, `last-event-id`) and the method's params as ProtoJSON; it answers
with what `invoke` returns, framed its own way, and with the errors raised here mapped
by `status_of` (§5.4).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import msgspec

from interlink.a2a import _codec
from interlink.a2a._errors import (
    ExtensionSupportRequired,
    TaskNotFound,
    VersionNotSupported,
    bad_request,
)
from interlink.a2a._methods import Method
from interlink.a2a._types import AgentCard
from interlink.a2a.server._handler import A2AServer, Call, Handler
from interlink.a2a.server._stream import TaskStream

__all__ = [
    "SUPPORTED_VERSIONS",
    "V10_ONLY",
    "CardExtensions",
    "build_call",
    "dispatch",
    "invoke",
]

SUPPORTED_VERSIONS = ("0.3", "1.0")
"""The A2A versions served: 1.0, and 0.3 translated at the edge (`server._v03`: on
JSON-RPC, and on HTTP+JSON at 0.3's own routes, `bindings._rest_v03`; the 1.0 routes
and gRPC serve 1.0, `V10_ONLY`)."""
V10_ONLY = ("1.0",)
_NO_EXTENSIONS: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True)
class CardExtensions:
    """The extensions a card declares, and those of them it requires."""

    supported: frozenset[str] = _NO_EXTENSIONS
    required: frozenset[str] = _NO_EXTENSIONS

    @classmethod
    def of(cls, card: AgentCard) -> CardExtensions:
        extensions = card.capabilities.extensions
        return cls(
            frozenset(e.uri for e in extensions), frozenset(e.uri for e in extensions if e.required)
        )


def build_call(
    params: Mapping[str, str],
    extensions: CardExtensions,
    *,
    principal: str = "",
    tenant: str = "",
    headers: Mapping[str, str] | None = None,
    versions: Sequence[str] = V10_ONLY,
) -> Call:
    """The `Call` of a request whose service parameters are `params` (lower-case
    names). A missing `a2a-version` means 0.3 (§3.6.2); one the binding does not serve
    (`versions`) raises `VersionNotSupported` listing those it does (a patch level is
    ignored); the call's `version` is the Major.Minor asked for. A required extension
    of the card that `a2a-extensions` does not activate raises
    `ExtensionSupportRequired`; the activated ones are those the card declares.
    `headers` (default `params`) is what the executor sees of the request."""
    asked = params.get("a2a-version", "").strip() or "0.3"
    version = ".".join(asked.split(".")[:2])
    if version not in versions:
        raise VersionNotSupported(
            f"A2A version {asked!r} is not supported; this server speaks {', '.join(versions)}",
            supported=",".join(versions),
        )
    wanted = params.get("a2a-extensions")
    active = _NO_EXTENSIONS
    if wanted is not None or extensions.required:
        requested = {u.strip() for u in (wanted or "").split(",") if u.strip()}
        missing = extensions.required - requested
        if missing:
            raise ExtensionSupportRequired(
                f"activate the required extension(s): {', '.join(sorted(missing))}",
                extensions=",".join(sorted(missing)),
            )
        active = frozenset(requested & extensions.supported)
    last = params.get("last-event-id", "").strip()
    return Call(
        principal=principal,
        version=version,
        tenant=tenant,
        extensions=active,
        headers=params if headers is None else headers,
        last_event_id=int(last) if last.isascii() and last.isdigit() and len(last) < 19 else None,
    )


async def invoke(
    server: A2AServer,
    method: Method[msgspec.Struct, msgspec.Struct],
    params: bytes | msgspec.Raw,
    call: Call,
) -> msgspec.Struct | TaskStream:
    """Carry out `method` with its ProtoJSON `params`: decoded by the table (invalid
    params raise -32602 with a `BadRequest`), then as `dispatch` does."""
    try:
        decoded = _codec.decode(method.params, params)
    except _codec.ValidationError as exc:
        raise bad_request((v.field, v.description) for v in exc.violations) from None
    return await dispatch(server, method, decoded, call)


async def dispatch(
    server: A2AServer,
    method: Method[msgspec.Struct, msgspec.Struct],
    params: msgspec.Struct,
    call: Call,
) -> msgspec.Struct | TaskStream:
    """Carry out `method` with its decoded `params` (a binding that reads them in
    another form than ProtoJSON, as gRPC does, calls this): the tenant of the params
    checked against the call's (a tenant of the URL wins; another is refused; without
    one, a tenant the server does not answer for is not found), its handler called. The
    result is the method's result object, or the stream of a streaming method."""
    tenant = getattr(params, "tenant", "")
    if tenant and tenant != call.tenant:
        if call.tenant:
            raise bad_request([("tenant", f"differs from the tenant {call.tenant!r} of the URL")])
        if tenant not in server.tenants:  # (a router gives each app its own)
            raise TaskNotFound(f"unknown tenant {tenant!r}", tenant=tenant)
        call = dataclasses.replace(call, tenant=tenant)
    handler: Handler = getattr(server, method.handler)
    return await handler(params, call)
