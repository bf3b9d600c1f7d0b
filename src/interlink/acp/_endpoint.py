"""What the agent side and the client side of ACP share.

Each side is an `Endpoint` around one `interlink.aio.Connection` that registers no
request by name: each comes to `_dispatch_request` (the connection's fallback), which
looks it up once in the generated table of the methods *this* side handles (a `Route`:
the `MethodSpec` and the side's own part of it, `_on_<handler>`), checks the capability
gate, decodes params with the ACP codec (unknown fields and variants kept) and calls the
handler. Outgoing calls are typed by the method (`_call(m.PROMPT, params)` returns a
`PromptResponse`) and checked against the peer's advertised capabilities first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar, TypeVar, cast

import msgspec

from interlink.acp import _codec
from interlink.acp import _schema as s
from interlink.acp._lifecycle import Event
from interlink.acp._methods import MethodSpec
from interlink.acp._registry import Handlers
from interlink.aio import ByteReader, ByteWriter, Connection
from interlink.jsonrpc import (
    ConnectionClosed,
    InvalidParams,
    InvalidResult,
    MethodNotFound,
    NotificationType,
    ParseError,
    Profile,
    ResourceNotFound,
    RpcError,
    ValueCodec,
    decode_params,
)

__all__ = [
    "unadvertised_content",
    "LATEST_PROTOCOL_VERSION",
    "PROFILE",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "AcpCodec",
    "Endpoint",
    "ProtocolVersionError",
    "SessionNotFound",
    "gate_open",
    "nothing",
]

P = TypeVar("P")
R = TypeVar("R")
Handler = Callable[[Any], Awaitable[Any]]
#: a side's own part of a method: (the handler, the params, the session or None)
Rule = Callable[[Handler | None, Any, Any], Awaitable[Any]]

LATEST_PROTOCOL_VERSION = 1
SUPPORTED_PROTOCOL_VERSIONS = frozenset({1})
PROFILE = Profile(batches=False, cancel_method="$/cancel_request")  # default size limit


async def nothing() -> None:
    """What handling a notification no handler takes amounts to."""


class AcpCodec(ValueCodec):
    """Params and results through the ACP codec: unknown fields and variants survive."""

    decode = staticmethod(_codec.decode)  # type: ignore[assignment]  # (a call less)

    def decoder(self, type_: object) -> Callable[[bytes], object]:
        return _codec._decoder(type_).decode  # (the fast path: strict, unknown fields fail)

    encode = staticmethod(_codec.encode)


CODEC = AcpCodec()


class SessionNotFound(ResourceNotFound):
    """-32002 for a session that does not exist or is not active on this connection."""

    def __init__(self, session_id: str) -> None:
        super().__init__(data={"sessionId": session_id})


class ProtocolVersionError(Exception):
    """The peer answered `initialize` with a protocol version we cannot speak."""


def gate_open(gate: tuple[tuple[str, ...], ...], capabilities: dict[str, object]) -> bool:
    """A method is available when any of its gate paths holds `true` or an object."""
    if not gate:
        return True
    for path in gate:
        value: object = capabilities
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is True or isinstance(value, dict):
            return True
    return False


def elicitation_mode_open(params: object, root: str, capabilities: dict[str, object]) -> bool:
    """Whether an `elicitation/create` in its mode (`form`, `url`) was advertised:
    "Requests using a mode the Client has not advertised produce JSON-RPC -32602"."""
    mode = getattr(getattr(type(params), "__struct_config__", None), "tag", None)
    return not isinstance(mode, str) or gate_open(((root, "elicitation", mode),), capabilities)


#: prompt content blocks an agent takes only when it advertises them: (name, capability)
_PROMPT_GATES: dict[type, tuple[str, str]] = {
    s.ImageContent: ("image", "image"),
    s.AudioContent: ("audio", "audio"),
    s.EmbeddedResource: ("embedded resource", "embedded_context"),
}
_NONE_ADVERTISED = s.PromptCapabilities()


def unadvertised_content(
    capabilities: s.AgentCapabilities | msgspec.UnsetType | None, blocks: Sequence[object]
) -> InvalidParams | None:
    """The -32602 for the first prompt block the agent did not advertise, if any: "Clients
    MUST restrict types of content according to the Prompt Capabilities" (prompt-turn).
    Text and resource links need no capability."""
    allowed = getattr(capabilities, "prompt_capabilities", None)
    if not isinstance(allowed, s.PromptCapabilities):  # none advertised
        allowed = _NONE_ADVERTISED
    for i, block in enumerate(blocks):
        kind, flag = _PROMPT_GATES.get(type(block), ("", ""))
        if flag and not getattr(allowed, flag):
            return InvalidParams(
                f"the agent does not take {kind} content (promptCapabilities.{flag})",
                {"detail": f"prompt[{i}] is an {kind} block", "index": i},
            )
    return None


def capabilities_tree(root: str, capabilities: object) -> dict[str, object]:
    """`{root: capabilities as JSON values}`, the shape gate paths are written against."""
    if capabilities is msgspec.UNSET or capabilities is None:
        return {root: {}}
    return {root: _codec.to_builtins(capabilities)}


class Route(msgspec.Struct, frozen=True):
    """How this side serves one method of its table."""

    spec: MethodSpec[Any, Any]
    rule: Rule | None  # the side's `_on_<handler>`, if it has one
    arrive: Event = Event.REQUEST  # the lifecycle event of its arrival
    success: Event | None = None  # ... and of its success


class Endpoint:
    """One side of an ACP connection. Subclasses name the methods they handle."""

    #: "agent" or "client": which side of the method tables this endpoint handles
    SIDE: ClassVar[str] = ""
    #: the root key of *this* side's capabilities in gate paths
    OWN_ROOT = ""
    PEER_ROOT = ""

    def __init__(
        self,
        handlers: Handlers,
        reader: ByteReader,
        writer: ByteWriter,
        *,
        max_message_size: int | None = None,
        unstable: bool = False,
        name: str = "acp",
    ) -> None:
        #: the `Agent` or `Client` this side serves
        self._handlers = handlers
        if unstable:
            from interlink.acp import _methods_unstable as tables
        else:
            from interlink.acp import _methods as tables  # type: ignore[no-redef]
        agent, client = tables.AGENT_METHODS, tables.CLIENT_METHODS
        #: methods this side handles / sends, by wire name (unstable ones only on opt-in)
        self.handled, self.sent = (agent, client) if self.SIDE == "agent" else (client, agent)
        self.unstable = unstable
        profile = PROFILE
        if max_message_size is not None:
            profile = msgspec.structs.replace(PROFILE, max_message_size=max_message_size)
        self.connection = Connection(reader, writer, profile=profile, codec=CODEC, name=name)
        self.connection.on_unknown_request(self._dispatch_request)
        self.connection.on_unknown_notification(self._dispatch_notification)
        self._routes: dict[str, Route] = {}
        for spec in self.handled.values():
            route = self._route(spec)
            if spec.kind == "request":
                self._routes[spec.name] = route
            else:  # decoded by the connection, one hop less
                self.connection.on_notification(
                    NotificationType(spec.name, spec.params),  # type: ignore[arg-type]
                    self._notifier(route),
                )
        #: this side's capabilities and the peer's, as gate trees; set by `initialize`
        self._own_caps: dict[str, object] = {self.OWN_ROOT: {}}
        self._peer_caps: dict[str, object] = {self.PEER_ROOT: {}}

    # -- lifecycle --------------------------------------------------------------------

    async def __aenter__(self) -> Endpoint:
        await self.connection.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.connection.aclose()

    async def aclose(self) -> None:
        await self.connection.aclose()

    async def wait_closed(self) -> None:
        await self.connection.wait_closed()

    @property
    def closed(self) -> bool:
        return self.connection.closed

    # -- incoming ---------------------------------------------------------------------

    def _route(self, spec: MethodSpec[Any, Any]) -> Route:
        return Route(spec, getattr(self, f"_on_{spec.handler}", None))

    def _handler(self, spec: MethodSpec[Any, Any]) -> Handler | None:
        """The handler of a method: one registered on the instance, else its method."""
        found = self._handlers._registered.get(spec.name)
        return found if found is not None else getattr(self._handlers, spec.handler, None)

    def _dispatch_request(
        self, method: str, raw: msgspec.Raw | msgspec.UnsetType
    ) -> Awaitable[object]:  # (no coroutine of its own, nor has `_serve`: the hot path)
        route = self._routes.get(method)
        if route is None:
            return self._unknown_request(method, raw)
        return self._serve(route, raw)

    async def _unknown_request(self, method: str, raw: msgspec.Raw | msgspec.UnsetType) -> object:
        if method.startswith("_"):
            return await self._handlers.ext_method(method, self._ext_params(raw))
        raise RpcError.method_not_found(method)

    def _serve(self, route: Route, raw: msgspec.Raw | msgspec.UnsetType) -> Awaitable[object]:
        """What serving a request of `route` comes to: its handler's awaitable, or its
        rule's; a refusal (gate, params, no handler, no session) raises here."""
        spec = route.spec
        if not gate_open(spec.gate, self._own_caps):
            raise RpcError.method_not_found(spec.name)
        params: object = decode_params(raw, spec.params, CODEC)  # type: ignore[arg-type]
        handler = self._handler(spec)
        if handler is None:
            raise RpcError.method_not_found(spec.name)
        session = self._session(params) if spec.session_scoped else None
        if route.rule is None:
            return handler(params)
        return route.rule(handler, params, session)

    def _session(self, params: object) -> object:  # (the agent's: -32002 for none)
        raise NotImplementedError

    def _notifier(self, route: Route) -> Callable[[Any], Awaitable[None]]:
        """What handles one notification method this side takes: the rule's or the
        handler's awaitable, with no coroutine of its own (`_handler`'s lookup inline:
        the hot path)."""
        handlers, name, attr, rule = self._handlers, route.spec.name, route.spec.handler, route.rule

        def notified(params: object) -> Awaitable[None]:
            handler = handlers._registered.get(name) or getattr(handlers, attr, None)
            if rule is not None:
                return rule(handler, params, None)
            return nothing() if handler is None else handler(params)

        return notified

    async def _dispatch_notification(
        self, method: str, raw: msgspec.Raw | msgspec.UnsetType
    ) -> None:
        if method.startswith("_"):  # other unknown notifications are ignored (ACP: SHOULD)
            params = self._ext_params(raw)
            with contextlib.suppress(RpcError):
                await self._handlers.ext_notification(method, params)

    @staticmethod
    def _ext_params(raw: msgspec.Raw | msgspec.UnsetType) -> object:
        if raw is msgspec.UNSET:
            return None
        try:
            return msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:  # (invalid UTF-8 inside the params)
            raise ParseError(data={"detail": str(exc)}) from None

    # -- outgoing ---------------------------------------------------------------------

    async def closed_error(self, exc: ConnectionClosed) -> ConnectionClosed:
        """The error a caller sees when the connection ended under its request (a spawned
        agent's connection says how the process exited)."""
        return exc

    def _require(self, method: str) -> MethodSpec[Any, Any]:
        spec = self.sent.get(method)
        if spec is None:
            raise MethodNotFound(data={"method": method})
        if spec.gate and not gate_open(spec.gate, self._peer_caps):
            raise MethodNotFound(
                f"the peer did not advertise {'/'.join(spec.gate[0][1:])}",
                {"method": method},
            )
        return spec

    async def _call(self, method: MethodSpec[P, R], params: P) -> R:
        spec = self._require(method.name)  # (this side's table: unstable types on opt-in)
        try:
            raw = await self.connection.request_raw(spec.name, params)
        except ConnectionClosed as exc:
            raise await self.closed_error(exc) from None
        try:
            return cast(R, _codec.decode(spec.result, raw))
        except msgspec.ValidationError as exc:
            raise InvalidResult(str(exc)) from None

    async def _notify(self, method: MethodSpec[P, None], params: P) -> None:
        self._require(method.name)
        await self.connection.notify_raw(method.name, params)

    def _check_ready(self) -> None:
        """Raises when this side may not send yet (a client before `initialize`)."""

    async def ext_method(self, method: str, params: object = None) -> object:
        """Call an extension method (its name starts with `_`); the result as JSON values."""
        if not method.startswith("_"):
            raise ValueError("extension method names start with '_'")
        self._check_ready()
        try:
            raw = await self.connection.request_raw(method, {} if params is None else params)
        except ConnectionClosed as exc:
            raise await self.closed_error(exc) from None
        return msgspec.json.decode(raw)

    async def ext_notification(self, method: str, params: object = None) -> None:
        if not method.startswith("_"):
            raise ValueError("extension method names start with '_'")
        self._check_ready()
        await self.connection.notify_raw(method, {} if params is None else params)
