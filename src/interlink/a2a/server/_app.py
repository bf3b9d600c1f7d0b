"""`create_app`: an agent executor and its card, as a plain ASGI application.

The store is chosen by whoever runs the app: `create_app(..., store=...)` (a `TaskStore`
or a URL such as `sqlite:///var/lib/agent.db`), or later `app.use_store(...)` (the
`interlink a2a serve --store` option does this). With neither, tasks live in memory.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Sequence
from typing import TypedDict, Unpack

import msgspec

from interlink.a2a import _codec
from interlink.a2a._card_sign import SigningKey
from interlink.a2a._types import AgentCard, AgentInterface, SecurityRequirement, StringList
from interlink.a2a.server._auth import Authenticator
from interlink.a2a.server._executor import AgentExecutor
from interlink.a2a.server._handler import A2AServer, Authorize
from interlink.a2a.server._http import DEFAULT_BINDINGS, DEFAULT_MAX_BODY, A2AApp
from interlink.a2a.server._push import PushDelivery
from interlink.a2a.stores._base import TaskStore

__all__ = [
    "AgentCardWarning",
    "ServerOptions",
    "build_server",
    "create_app",
    "missing_card_fields",
    "with_interface",
]

logger = logging.getLogger("interlink.a2a")


def with_interface(
    card: AgentCard, url: str, interfaces: Sequence[tuple[str, str]] = (("JSONRPC", "/"),)
) -> AgentCard:
    """`card` listing the app's `interfaces` (A2A 1.0; `A2AApp.interfaces`: binding and
    path below the app, or absolute URL) at `url`, where the app is reached, when it
    lists none. By default one JSON-RPC interface at `url`."""
    if card.supported_interfaces:
        return card
    listed = [
        AgentInterface(
            url=where if "://" in where else url.rstrip("/") + where,
            protocol_binding=binding,
            protocol_version="1.0",
        )
        for binding, where in interfaces
    ]
    return msgspec.structs.replace(card, supported_interfaces=listed)


class AgentCardWarning(UserWarning):
    """The agent card given to `create_app` lacks fields A2A 1.0 marks REQUIRED
    (clients, the official SDKs among them, may refuse such a card)."""


def missing_card_fields(card: AgentCard) -> list[str]:
    """The REQUIRED fields (`field_behavior = REQUIRED` in a2a.proto) that `card` and
    what it holds leave empty, by their JSON paths. `supportedInterfaces` is not among
    them: an app fills it in from each request (or `--public-url`)."""
    return [v.field for v in _codec.missing_required(card) if v.field != "supportedInterfaces"]


class _HandlerOptions(TypedDict, total=False):
    """The options `build_server` passes on to `A2AServer` as they are (its defaults)."""

    extended_card: AgentCard | None
    authorize: Authorize
    stream_queue_limit: int
    stream_queue_bytes: int
    lease_ttl: float
    retention: float | None
    expose_errors: bool


class ServerOptions(_HandlerOptions, total=False):
    """The options of `create_app` that make its `A2AServer` (see there), for another
    binding's factory to take as they are (`create_grpc_server`)."""

    store: TaskStore | str | None
    auth: Sequence[Authenticator]
    push_allow: Sequence[str]


def build_server(
    executor: AgentExecutor,
    card: AgentCard,
    *,
    store: TaskStore | str | None = None,
    auth: Sequence[Authenticator] = (),
    push_allow: Sequence[str] = (),
    stacklevel: int = 2,
    **options: Unpack[_HandlerOptions],
) -> A2AServer:
    """The binding-neutral server of `create_app` and the gRPC server factory: the
    options as `create_app` describes them (the card's REQUIRED fields checked, its
    security schemes filled in from `auth`, the store opened from its URL; the others
    `A2AServer`'s, their defaults its own)."""
    missing = missing_card_fields(card)
    if missing:
        warnings.warn(
            f"agent card {card.name!r} lacks fields A2A 1.0 marks REQUIRED: "
            f"{', '.join(missing)} (clients may refuse it)",
            AgentCardWarning,
            stacklevel=stacklevel + 1,
        )
    if auth and not card.security_schemes:
        card = msgspec.structs.replace(
            card,
            security_schemes={a.name: a.scheme() for a in auth},
            security_requirements=[
                SecurityRequirement(schemes={a.name: StringList()}) for a in auth
            ],
        )
    if isinstance(store, str):
        from interlink.a2a.stores._url import open_store

        store = open_store(store)
    if store is None:
        from interlink.a2a.stores._memory import MemoryTaskStore

        store = MemoryTaskStore()
    push = None
    if card.capabilities.push_notifications is True:
        push = PushDelivery(store, allow_hosts=push_allow)
    return A2AServer(executor, card, store, push=push, **options)


def create_app(
    executor: AgentExecutor,
    card: AgentCard,
    *,
    rpc_path: str = "/",
    bindings: Sequence[str] = DEFAULT_BINDINGS,
    grpc_url: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    keepalive: float = 15.0,
    signing_key: SigningKey | str | os.PathLike[str] | bytes | None = None,
    **options: Unpack[ServerOptions],
) -> A2AApp:
    """The ASGI app serving `executor`: JSON-RPC at `rpc_path` and HTTP+JSON (§11: its
    routes, `/message:send` ...) with SSE streams, the agent card at
    `/.well-known/agent-card.json`. Serve it with uvicorn, or mount it in Starlette or
    FastAPI.

    `bindings` chooses what is served and the card's order of preference among them
    (`"JSONRPC"`, `"HTTP+JSON"`, and `"GRPC"`, which another server serves: give its
    `grpc_url`; a `grpc_url` alone lists it last). The card lists an interface for
    each (§8.3.1), made from each request unless the card lists its own.

    The other options make the `A2AServer` (`ServerOptions`, their defaults those of
    `build_server` and `A2AServer`: `store`, `extended_card`, `authorize`, ...).

    `auth`: authenticators for the card's security schemes (`ApiKeyAuth`, `BearerAuth`,
    or your own); when given, a call without valid credentials gets HTTP 401, the card
    lists the schemes, and each task belongs to the principal that created it.

    When the card declares push notifications, an outbox worker delivers them;
    webhooks on non-public addresses are refused unless their host is in `push_allow`
    (`"127.0.0.1"`, `"localhost:8080"`, ...), for local development and tests.

    With `retention` (seconds), the event logs of tasks finished longer ago are pruned
    (the tasks stay). A stream whose client reads slower than its task's events come
    is cut off once `stream_queue_limit` events or `stream_queue_bytes` bytes wait for
    it (the client resumes with `Last-Event-ID`). On a store that several replicas
    share (PostgreSQL), a replica that dies has its running tasks failed (or re-run,
    when the executor is resumable) by another within about 1.25 x `lease_ttl` seconds.

    An exception an executor raises is logged (logger `interlink.a2a`, with its
    traceback); the client reads "the agent failed (the server's log says why)" in the
    task's FAILED status (or in the -32006 error of a task that never began).
    `expose_errors=True` sends the exception's type and text instead, for development
    (they may name files, hosts and data). An `RpcError` the executor raises on purpose
    always reaches the client with its message.

    A card that lacks fields A2A 1.0 marks REQUIRED gets an `AgentCardWarning` naming
    them (`missing_card_fields`).

    `signing_key` (a `SigningKey`, or a PEM private key file or its text: EC, RSA or
    Ed25519) signs the card as served and the extended card (§8.4, `interlink[sign]`)."""
    server = build_server(executor, card, stacklevel=2, **options)
    app = A2AApp(
        server,
        rpc_path=rpc_path,
        max_body=max_body,
        keepalive=keepalive,
        authenticators=options.get("auth", ()),
        bindings=bindings,
        grpc_url=grpc_url,
    )
    if signing_key is not None:
        key = signing_key
        app.sign_cards(key if isinstance(key, SigningKey) else SigningKey.load(key))
    return app
