"""Multi-tenancy: one server, one agent per tenant, tenants never see each other.

`TenantRouter` routes `/{tenant}/...` to that tenant's app (its card at
`/{tenant}/.well-known/agent-card.json`, its JSON-RPC at `/{tenant}/`), passing the
tenant in the ASGI scope so every task operation is scoped to it; a request to `/`
whose params carry a `tenant` field is routed by that field (a body that is no JSON-RPC
request, or too large, gets the JSON-RPC error any app gives). An unknown tenant is HTTP
404. The apps may share one store: every row is keyed by tenant.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import cast

import msgspec

from interlink.a2a.server._asgi import TENANT_SCOPE_KEY, Message, Receive, Scope, Send
from interlink.a2a.server._http import DEFAULT_MAX_BODY, A2AApp
from interlink.a2a.server.bindings._jsonrpc import error_body
from interlink.jsonrpc import Invalid, decode, oversize

__all__ = ["TenantRouter"]

_NOT_FOUND = b'{"error":"unknown tenant"}'


class _Tenant(msgspec.Struct):
    tenant: str = ""


_tenant_of = msgspec.json.Decoder(_Tenant).decode


class TenantRouter:
    """ASGI app dispatching to one `A2AApp` per tenant."""

    def __init__(self, tenants: Mapping[str, A2AApp], *, max_body: int = DEFAULT_MAX_BODY) -> None:
        if not tenants:
            raise ValueError("a tenant router needs at least one tenant")
        self.tenants = dict(tenants)
        self.max_body = max_body
        for name, app in self.tenants.items():
            app.server.tenants = frozenset({name})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path = cast(str, scope["path"])
        root = cast(str, scope.get("root_path", ""))
        local = path[len(root) :] if root and path.startswith(root) else path
        name, _, _rest = local.lstrip("/").partition("/")
        if name in self.tenants:
            inner = dict(scope)  # ASGI style: `path` stays whole, `root_path` grows
            inner["root_path"] = root + "/" + name
            inner[TENANT_SCOPE_KEY] = name
            await self.tenants[name](inner, receive, send)
            return
        if local == "/" and scope["method"] == "POST":
            await self._by_field(scope, receive, send)
            return
        await _respond(send, 404, _NOT_FOUND)

    async def _by_field(self, scope: Scope, receive: Receive, send: Send) -> None:
        """`POST /` with `params.tenant`: read the body, then replay it to the tenant."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            chunk = cast(bytes, message.get("body", b""))
            size += len(chunk)
            if size > self.max_body:  # as every transport answers it
                await _respond(send, 200, error_body(oversize(size, self.max_body).response()))
                return
            chunks.append(chunk)
            if not message.get("more_body", False) or message["type"] == "http.disconnect":
                break
        body = b"".join(chunks)
        decoded = decode(body)
        if isinstance(decoded, Invalid):  # not JSON, not JSON-RPC: the usual answer
            await _respond(send, 200, error_body(decoded.response()))
            return
        tenant = ""
        params = getattr(decoded, "params", msgspec.UNSET)
        if isinstance(params, msgspec.Raw):
            with contextlib.suppress(msgspec.DecodeError):  # (params not an object)
                tenant = _tenant_of(params).tenant
        app = self.tenants.get(tenant)
        if app is None:
            await _respond(send, 404, _NOT_FOUND)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        inner = dict(scope)
        inner[TENANT_SCOPE_KEY] = tenant
        await app(inner, replay, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    for app in self.tenants.values():
                        await app._start()
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for app in self.tenants.values():
                    await app.server.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _respond(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
