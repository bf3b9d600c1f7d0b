"""What the agent side and the client side of ACP share.

Each side is an `Endpoint` around one `interlink.aio.Connection`. Incoming requests and
notifications all go through one dispatch function per side (registered as the
connection's fallback), which looks the method up in the generated method table of
the methods *this* side handles, checks the capability gate, decodes params with the
ACP codec (unknown fields and variants kept) and calls the handler. Outgoing calls are
checked against the peer's advertised capabilities before anything is sent.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import ClassVar

import msgspec

from interlink.acp import _codec
from interlink.acp import _schema as s
from interlink.acp._methods import MethodSpec
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
]

LATEST_PROTOCOL_VERSION = 1
SUPPORTED_PROTOCOL_VERSIONS = frozenset({1})
PROFILE = Profile(batches=False, cancel_method="$/cancel_request")  # default size limit


class AcpCodec(ValueCodec):
    """Params and results through the ACP codec: unknown fields and variants survive."""

    def decode(self, type_: object, data: bytes | msgspec.Raw) -> object:
        return _codec.decode(type_, data)

    def encode_message(self, message: object) -> bytes:
        return _codec.encode(message) + b"\n"


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


def unadvertised_content(
    capabilities: s.AgentCapabilities | msgspec.UnsetType | None, blocks: Sequence[object]
) -> InvalidParams | None:
    """The -32602 for the first prompt block the agent did not advertise, if any: "Clients
    MUST restrict types of content according to the Prompt Capabilities" (prompt-turn).
    Text and resource links need no capability."""
    allowed = getattr(capabilities, "prompt_capabilities", None)
    if not isinstance(allowed, s.PromptCapabilities):  # none advertised
        allowed = s.PromptCapabilities()
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


class Endpoint:
    """One side of an ACP connection. Subclasses name the methods they handle."""

    #: "agent" or "client": which side of the method tables this endpoint handles
    SIDE: ClassVar[str] = ""
    #: the root key of *this* side's capabilities in gate paths
    OWN_ROOT = ""
    PEER_ROOT = ""

    def __init__(
        self,
        reader: ByteReader,
        writer: ByteWriter,
        *,
        max_message_size: int | None = None,
        unstable: bool = False,
        name: str = "acp",
    ) -> None:
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
            profile = Profile(
                batches=False,
                max_message_size=max_message_size,
                cancel_method=PROFILE.cancel_method,
            )
        self.connection = Connection(reader, writer, profile=profile, codec=CODEC, name=name)
        self.connection.on_unknown_request(self._dispatch_request)
        self.connection.on_unknown_notification(self._dispatch_notification)
        for spec in self.handled.values():  # decoded by the connection, one hop less
            if spec.kind == "notification":
                self.connection.on_notification(
                    NotificationType(spec.name, spec.params),  # type: ignore[arg-type]
                    functools.partial(self._handle_notification, spec),
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

    async def _dispatch_request(self, method: str, raw: msgspec.Raw | msgspec.UnsetType) -> object:
        spec = self.handled.get(method)
        if spec is None or spec.kind != "request":
            if method.startswith("_"):
                return await self._ext_request(method, self._ext_params(raw))
            raise RpcError.method_not_found(method)
        self._check_request(spec)
        if not gate_open(spec.gate, self._own_caps):
            raise RpcError.method_not_found(method)
        params: object = decode_params(raw, spec.params, CODEC)  # type: ignore[arg-type]
        return await self._handle_request(spec, params)

    async def _dispatch_notification(
        self, method: str, raw: msgspec.Raw | msgspec.UnsetType
    ) -> None:
        spec = self.handled.get(method)
        if spec is None or spec.kind != "notification":
            if method.startswith("_"):
                await self._ext_notification(method, self._ext_params(raw))
            return  # unknown notifications are ignored (ACP: SHOULD ignore)
        params: object = decode_params(raw, spec.params, CODEC)  # type: ignore[arg-type]
        await self._handle_notification(spec, params)

    @staticmethod
    def _ext_params(raw: msgspec.Raw | msgspec.UnsetType) -> object:
        if raw is msgspec.UNSET:
            return None
        try:
            return msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:  # (invalid UTF-8 inside the params)
            raise ParseError(data={"detail": str(exc)}) from None

    def _check_request(self, spec: MethodSpec) -> None:
        """Rules that apply before a request is decoded (initialisation, auth)."""

    async def _handle_request(self, spec: MethodSpec, params: object) -> object:
        raise NotImplementedError

    async def _handle_notification(self, spec: MethodSpec, params: object) -> None:
        raise NotImplementedError

    async def _ext_request(self, method: str, params: object) -> object:
        raise RpcError.method_not_found(method)

    async def _ext_notification(self, method: str, params: object) -> None:
        return None

    # -- outgoing ---------------------------------------------------------------------

    async def closed_error(self, exc: ConnectionClosed) -> ConnectionClosed:
        """The error a caller sees when the connection ended under its request (a spawned
        agent's connection says how the process exited)."""
        return exc

    def _require(self, method: str) -> MethodSpec:
        spec = self.sent.get(method)
        if spec is None:
            raise MethodNotFound(data={"method": method})
        if spec.gate and not gate_open(spec.gate, self._peer_caps):
            raise MethodNotFound(
                f"the peer did not advertise {'/'.join(spec.gate[0][1:])}",
                {"method": method},
            )
        return spec

    async def _call(self, method: str, params: object) -> object:
        spec = self._require(method)
        try:
            raw = await self.connection.request_raw(method, params)
        except ConnectionClosed as exc:
            raise await self.closed_error(exc) from None
        try:
            return _codec.decode(spec.result, raw)
        except msgspec.ValidationError as exc:
            raise InvalidResult(str(exc)) from None

    async def _notify(self, method: str, params: object) -> None:
        self._require(method)
        await self.connection.notify_raw(method, params)

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
