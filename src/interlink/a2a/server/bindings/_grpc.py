"""The A2A gRPC binding (§10): `lf.a2a.v1.A2AService` on grpc.aio (`interlink[grpc]`).

Every rpc of the method table (`_methods.METHODS`) is served at
`/lf.a2a.v1.A2AService/<rpc>`: its request is read from protobuf into the method's
params type (`_grpc._convert`), carried out by the binding-neutral handler
(`_calls.dispatch`, the same rules as JSON-RPC and HTTP+JSON), and answered in
protobuf; `SendStreamingMessage` and `SubscribeToTask` are server streams of
`StreamResponse`s (the Task snapshot first), which end when the task's stream does.

Service parameters are metadata (§10.2): `a2a-version` (missing: 0.3, refused),
`a2a-extensions` (the activated ones are echoed in the initial metadata), the
credentials the `Authenticator`s read (`authorization`, an API key's header), and
`last-event-id` for a subscription that resumes. The tenant is the request's `tenant`.

Errors (§5.4, §10.6) are the gRPC status of their code (`status_of`) with a
`google.rpc.Status` in `grpc-status-details-bin` whose details are those of the
JSON-RPC error (`ErrorInfo`, and `BadRequest` for invalid params). Bytes that are no
protobuf request are INVALID_ARGUMENT; an rpc the service lacks is UNIMPLEMENTED with
the ErrorInfo `METHOD_NOT_FOUND`; missing credentials are UNAUTHENTICATED with the
challenges in `www-authenticate`. An error never ends the server.

Conversion: protobuf parses and serialises in C; the fields are moved between the
protobuf message and the msgspec struct by each type's descriptor (`_convert`), not
through ProtoJSON text. CPU time per message on this (shared, loaded) machine: reading a
SendMessageRequest ~5 us, writing a status-update StreamResponse ~3 us and the
SendMessageResponse with its Task ~9 us, where `json_format`'s way (protobuf <->
ProtoJSON <-> codec) takes ~40-50 us, ~30 us and ~80 us; a blocking SendMessage spends
~60-80 us in the binding-neutral handler and ~700 us in all (grpc.aio's own share: a
bare grpc.aio server answering fixed bytes spends ~440 us), against ~3.8 ms in
a2a-sdk's gRPC server (`python -m bench a2a --binding grpc`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn, Unpack

import grpc
import msgspec

from interlink.a2a import _codec
from interlink.a2a._card_sign import SigningKey, sign_card
from interlink.a2a._errors import TaskNotFound, bad_request, details_of, status_of
from interlink.a2a._grpc import _convert, _status
from interlink.a2a._methods import METHODS, Method
from interlink.a2a._types import AgentCard, StreamResponse
from interlink.a2a.server._app import ServerOptions, build_server
from interlink.a2a.server._auth import Authenticator
from interlink.a2a.server._calls import CardExtensions, build_call, dispatch
from interlink.a2a.server._executor import AgentExecutor
from interlink.a2a.server._handler import A2AServer, Call
from interlink.a2a.server._http import A2AApp
from interlink.a2a.server._stream import TaskStream
from interlink.a2a.server._tenants import TenantRouter
from interlink.jsonrpc import MethodNotFound, RpcError

__all__ = ["SERVICE", "GrpcBinding", "GrpcServer", "create_grpc_server"]

logger = logging.getLogger("interlink.a2a")

SERVICE = "lf.a2a.v1.A2AService"
_PREFIX = f"/{SERVICE}/"

Context = grpc.aio.ServicerContext[bytes, bytes]


class _Refused(Exception):
    """The call ends with this status (authentication, before any A2A error)."""

    def __init__(self, code: grpc.StatusCode, message: str, metadata: Sequence[tuple[str, str]]):
        super().__init__(message)
        self.code = code
        self.metadata = metadata


@dataclass
class _Agent:
    """What the binding serves for one tenant: its server, authenticators, extensions."""

    server: A2AServer
    authenticators: tuple[Authenticator, ...]
    extensions: CardExtensions


class GrpcBinding(grpc.GenericRpcHandler):
    """The `A2AService` of one `A2AServer` (or of each tenant's, `for_tenants`), for
    `grpc.aio.Server.add_generic_rpc_handlers` (see `GrpcServer` for a server that runs
    it)."""

    def __init__(self, server: A2AServer, *, authenticators: Sequence[Authenticator] = ()) -> None:
        self._default: _Agent | None = _Agent(
            server, tuple(authenticators), CardExtensions.of(server.card)
        )
        #: the agent of each tenant (a router's); empty: the one agent takes every call
        self._tenants: dict[str, _Agent] = {}
        #: the open streams, cut when the server stops (`end_streams`)
        self._streams: set[TaskStream] = set()
        self._ending = False
        self._handlers: dict[str, grpc.RpcMethodHandler[bytes, bytes]] = {}
        for name, method in METHODS.items():
            handler: grpc.RpcMethodHandler[bytes, bytes]
            if method.streaming:
                handler = grpc.unary_stream_rpc_method_handler(self._streamer(method))
            else:
                handler = grpc.unary_unary_rpc_method_handler(self._unary(method))
            self._handlers[_PREFIX + name] = handler

    @classmethod
    def for_tenants(
        cls, tenants: Mapping[str, tuple[A2AServer, Sequence[Authenticator]]]
    ) -> GrpcBinding:
        """One agent per tenant (a `TenantRouter`'s): a call goes to the agent of the
        `tenant` of its request, with that agent's credentials and extensions; an
        unknown tenant is not found (-32001), never another tenant's agent."""
        if not tenants:
            raise ValueError("a tenant binding needs at least one tenant")
        (first, _), *_ = tenants.values()
        binding = cls(first)
        binding._default = None
        binding._tenants = {
            name: _Agent(server, tuple(auth), CardExtensions.of(server.card))
            for name, (server, auth) in tenants.items()
        }
        return binding

    @property
    def servers(self) -> list[A2AServer]:
        """The servers the binding calls (one per tenant)."""
        agents = [self._default] if self._default is not None else self._tenants.values()
        return [agent.server for agent in agents]

    def use_card(self, card: AgentCard) -> None:
        """The card changed (`A2AApp.use_card`): its extensions are the ones checked."""
        if self._default is not None:
            self._default.extensions = CardExtensions.of(card)

    def service(
        self, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler[bytes, bytes] | None:
        path = handler_call_details.method
        handler = self._handlers.get(path)
        if handler is None and path.startswith(_PREFIX):  # (other paths: grpc's own answer)
            return grpc.unary_unary_rpc_method_handler(_not_found(path[len(_PREFIX) :]))
        return handler

    def end_streams(self) -> None:
        """The server stops: every open stream ends after what it has queued (its client
        subscribes again), and one opened from now on ends after its first events."""
        self._ending = True
        for stream in list(self._streams):
            stream.cut()

    # -- calls --------------------------------------------------------------------

    async def _call(self, agent: _Agent, context: Context) -> Call:
        """The call's `Call`, from its metadata; raises `_Refused` without credentials
        (when the agent asks for them) and the A2A errors of the service parameters."""
        metadata = _metadata(context)
        principal = ""
        if agent.authenticators:
            request = _Request(metadata)
            for authenticator in agent.authenticators:
                found = await authenticator.authenticate(request)
                if found is not None:
                    principal = found
                    break
            else:
                challenge = ", ".join(a.challenge() for a in agent.authenticators)
                raise _Refused(
                    grpc.StatusCode.UNAUTHENTICATED,
                    "authentication required",
                    [("www-authenticate", challenge)],
                )
        call = build_call(metadata, agent.extensions, principal=principal)
        if call.extensions:
            active = ", ".join(sorted(call.extensions))
            await context.send_initial_metadata((("a2a-extensions", active),))
        return call

    async def _begin(
        self, method: Method[msgspec.Struct, msgspec.Struct], request: bytes, context: Context
    ) -> msgspec.Struct | TaskStream:
        try:
            params = _convert.decode(method.params, request)
        except _codec.ValidationError as exc:
            raise bad_request((v.field, v.description) for v in exc.violations) from None
        agent = self._default
        if agent is None:  # (a tenant's agent, by the tenant of the request)
            tenant = getattr(params, "tenant", "")
            agent = self._tenants.get(tenant)
            if agent is None:
                raise TaskNotFound(f"unknown tenant {tenant!r}", tenant=tenant)
        call = await self._call(agent, context)
        return await dispatch(agent.server, method, params, call)

    def _unary(
        self, method: Method[msgspec.Struct, msgspec.Struct]
    ) -> Callable[[bytes, Context], Awaitable[bytes]]:
        async def unary(request: bytes, context: Context) -> bytes:
            try:
                result = await self._begin(method, request, context)
            except Exception as exc:
                await _abort(context, method.name, exc)
            assert not isinstance(result, TaskStream)
            return _convert.encode(result)

        return unary

    def _streamer(
        self, method: Method[msgspec.Struct, msgspec.Struct]
    ) -> Callable[[bytes, Context], Awaitable[None]]:
        async def streamer(request: bytes, context: Context) -> None:
            try:
                stream = await self._begin(method, request, context)
                assert isinstance(stream, TaskStream)
            except Exception as exc:
                await _abort(context, method.name, exc)
            self._streams.add(stream)
            if self._ending:
                stream.cut()
            try:
                await self._events(stream, context)
            except RpcError as exc:  # (after events: the status ends the stream)
                await _abort(context, method.name, exc)
            finally:
                self._streams.discard(stream)
                await stream.aclose()

        return streamer

    async def _events(self, stream: TaskStream, context: Context) -> None:
        """Write the stream's events until it is over (the client going away cancels
        this: the stream is closed by the caller). Each is converted from its
        `StreamResponse` as the server made it; only one read back from the store
        (a resumed subscription's backlog, another replica's events) is decoded first."""
        while True:
            batch = await stream.batch()
            if batch is None:
                return
            for _, payload, response in batch:
                if response is None:
                    response = _codec.decode(StreamResponse, payload)
                await context.write(_convert.encode(response))


def _not_found(name: str) -> Callable[[bytes, Context], Awaitable[bytes]]:
    async def not_found(request: bytes, context: Context) -> bytes:
        await _abort(context, name, MethodNotFound(data={"method": name}))

    return not_found


class _Request:
    """What authenticators see of a gRPC call: its metadata as headers."""

    def __init__(self, metadata: Mapping[str, str]) -> None:
        self.headers = metadata
        self.query: Mapping[str, list[str]] = {}


def _metadata(context: Context) -> dict[str, str]:
    """The call's text metadata by lower-case key; a key given twice is one
    comma-separated value (as HTTP headers are)."""
    out: dict[str, str] = {}
    for key, value in context.invocation_metadata() or ():
        if isinstance(value, bytes):
            continue  # (`-bin` keys: nothing of A2A)
        key = key.lower()
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out


async def _abort(context: Context, method: str, exc: Exception) -> NoReturn:
    """End the call with the status of `exc` (an A2A error as §5.4 maps its code)."""
    if isinstance(exc, _Refused):
        await context.abort(exc.code, str(exc), trailing_metadata=tuple(exc.metadata))
    if not isinstance(exc, RpcError):
        logger.error("A2A method %s failed (gRPC)", method, exc_info=exc)
        exc = RpcError.internal_error()
    code = grpc.StatusCode[status_of(exc.code)[0]]
    details = details_of(exc.code, exc.data)
    status = _status.encode(code.value[0], exc.message, details)
    await context.abort(code, exc.message, trailing_metadata=((_status.KEY, status),))


# ---------------------------------------------------------------------------- the server


class GrpcServer:
    """A grpc.aio server for one `A2AServer`: `await start(address)`, `await stop()`
    (or `async with`). With `owner=True` (`create_grpc_server`) it starts and stops the
    `A2AServer` too; beside an HTTP app sharing the same one (`for_app`, `for_router`),
    the app's lifespan does.

    `stop` ends the open streams first (each after what it has queued), answers
    blocking `SendMessage`s with their tasks as they stand, then stops grpc, which waits
    `grace` seconds at most for the calls still running before it cancels them."""

    def __init__(
        self,
        server: A2AServer | GrpcBinding,
        *,
        authenticators: Sequence[Authenticator] = (),
        max_message: int = 16 * 1024 * 1024,
        owner: bool = True,
    ) -> None:
        if isinstance(server, GrpcBinding):
            self.binding = server
        else:
            self.binding = GrpcBinding(server, authenticators=authenticators)
        self.max_message = max_message
        self.owner = owner
        self._grpc: grpc.aio.Server | None = None
        #: the port bound by `start`
        self.port = 0

    @property
    def server(self) -> A2AServer:
        """The `A2AServer` (the first tenant's, beside a router)."""
        return self.binding.servers[0]

    @classmethod
    def for_app(cls, app: A2AApp, *, max_message: int | None = None) -> GrpcServer:
        """gRPC beside `app`, one `A2AServer` for both (one store, one runtime): the
        app's authenticators, its body limit as the message limit; the app's lifespan
        starts and stops the server."""
        limit = app.max_body if max_message is None else max_message
        return cls(app.server, authenticators=app.authenticators, max_message=limit, owner=False)

    @classmethod
    def for_router(cls, router: TenantRouter, *, max_message: int | None = None) -> GrpcServer:
        """gRPC beside a `TenantRouter`: each call goes to the app of its request's
        `tenant` (`GrpcBinding.for_tenants`); the router's lifespan starts the apps."""
        tenants = {name: (app.server, app.authenticators) for name, app in router.tenants.items()}
        limit = router.max_body if max_message is None else max_message
        return cls(GrpcBinding.for_tenants(tenants), max_message=limit, owner=False)

    async def start(self, address: str = "127.0.0.1:0") -> int:
        """Listen on `address` (`host:port`; port 0 takes a free one) and serve; the port."""
        servers = self.binding.servers if self.owner else []
        for server in servers:
            await server.startup()
        options = [
            ("grpc.max_receive_message_length", self.max_message),
            ("grpc.max_send_message_length", self.max_message),
            ("grpc.so_reuseport", 0),
        ]
        self._grpc = grpc.aio.server(options=options)
        self._grpc.add_generic_rpc_handlers((self.binding,))
        self.binding._ending = False
        try:
            self.port = self._grpc.add_insecure_port(address)
            await self._grpc.start()
        except BaseException:
            self._grpc = None
            for server in servers:
                await server.shutdown()
            raise
        return self.port

    async def stop(self, grace: float = 5.0) -> None:
        if self._grpc is None:
            return
        self.binding.end_streams()
        for server in self.binding.servers:
            server.answer_now()
        await self._grpc.stop(grace)
        self._grpc = None
        if self.owner:
            for server in self.binding.servers:
                await server.shutdown()

    async def __aenter__(self) -> GrpcServer:
        if self._grpc is None:
            await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def create_grpc_server(
    executor: AgentExecutor,
    card: AgentCard,
    *,
    max_message: int = 16 * 1024 * 1024,
    signing_key: SigningKey | str | os.PathLike[str] | bytes | None = None,
    **options: Unpack[ServerOptions],
) -> GrpcServer:
    """`executor` served over gRPC alone, with the options of `create_app` (`store`,
    `auth`, `extended_card`, ...: read its documentation; `max_message` is the largest
    request or answer, in bytes; `signing_key` signs the extended card). A gRPC agent
    publishes its card over HTTP, listing this server as its `GRPC` interface: serve
    `create_app` beside it with `GrpcServer.for_app` to have both from one process."""
    server = build_server(executor, card, stacklevel=2, **options)
    if signing_key is not None and server.extended_card is not None:
        key = signing_key if isinstance(signing_key, SigningKey) else SigningKey.load(signing_key)
        server.extended_card = sign_card(server.extended_card, key)
    return GrpcServer(server, authenticators=options.get("auth", ()), max_message=max_message)
