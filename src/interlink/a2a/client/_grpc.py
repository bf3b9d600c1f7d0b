"""The gRPC binding of the A2A client (§10, `interlink[grpc]`): a `Transport` on grpc.aio.

The interface's URL is a gRPC target: `host:port` (plain text, as the card gives it),
or `grpc://host:port`, `http://host:port` (plain text) and `https://host[:port]` /
`grpcs://` (TLS with the system's roots); a path after the address is ignored. Each
rpc is `/lf.a2a.v1.A2AService/<method>` with the request in protobuf and the service
parameters (`TransportConfig.service_params()`) as metadata under lower-case keys; a
resumed subscription sends `last-event-id`. gRPC events carry no ids, so `StreamEvent.id`
is None: a re-subscription starts again from the task's snapshot.

Errors are those of the other bindings (`error_from_status`): the `ErrorInfo` reason in
the status details (`grpc-status-details-bin`) names the A2A error class
(`TaskNotFound`, ...; invalid params are `A2AInvalidParams` with the `BadRequest`
violations); without one, a status that only one code maps to stands for it
(INVALID_ARGUMENT -32602, NOT_FOUND -32001, UNIMPLEMENTED -32601, INTERNAL -32603);
UNAUTHENTICATED is `AuthenticationRequired` (the challenge from `www-authenticate`);
UNAVAILABLE, a deadline or a cancellation the server made is `A2ATransportError`; an
answer that is no protobuf of the method's type is `InvalidAgentResponse`.

A stream has no read timeout: gRPC sends no keep-alive messages, so `idle_timeout`
does not apply to events; the channel's HTTP/2 pings (every 5 minutes while a call is
open, the interval default servers accept) tell a dead connection from a quiet task.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Final, TypeVar
from urllib.parse import urlsplit

import grpc
import msgspec

from interlink.a2a import _codec
from interlink.a2a._errors import (
    A2ATransportError,
    AuthenticationRequired,
    InvalidAgentResponse,
    error_from_status,
)
from interlink.a2a._grpc import _convert, _status
from interlink.a2a._methods import Method
from interlink.a2a.client._transport import (
    GRPC,
    StreamEvent,
    StreamHints,
    StreamMethod,
    TransportConfig,
)
from interlink.jsonrpc import ErrorObject, RpcError

if TYPE_CHECKING:
    import httpx

__all__ = ["VERSIONS", "GrpcTransport", "error_of", "target_of"]

R = TypeVar("R", bound=msgspec.Struct)

#: the A2A versions this binding speaks
VERSIONS: Final = ("1.0",)
SERVICE: Final = "lf.a2a.v1.A2AService"
_MAX_MESSAGE: Final = 64 * 1024 * 1024
_TRANSPORT: Final = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.CANCELLED,
    }
)


def target_of(url: str) -> tuple[str, bool]:
    """The gRPC target of an interface URL and whether it takes TLS."""
    if "://" not in url:
        return url.strip().rstrip("/"), False
    parts = urlsplit(url)
    secure = parts.scheme.lower() in ("https", "grpcs")
    host = parts.netloc.rpartition("@")[2]
    if secure and parts.port is None:
        host += ":443"
    return host, secure


class GrpcTransport:
    """The gRPC transport of one interface (`http`, for the HTTP bindings, is unused)."""

    binding: Final = GRPC

    def __init__(self, config: TransportConfig, http: httpx.AsyncClient | None = None) -> None:
        if ".".join(config.version.strip().split(".")[:2]) not in VERSIONS:
            raise ValueError(f"gRPC: A2A version {config.version} is not spoken here")
        self.config = config
        self.activated_extensions: frozenset[str] = frozenset()
        target, secure = target_of(config.url)
        options = [
            ("grpc.max_receive_message_length", _MAX_MESSAGE),
            ("grpc.keepalive_time_ms", 300_000),
            ("grpc.keepalive_timeout_ms", 20_000),
        ]
        if secure:
            credentials = grpc.ssl_channel_credentials()
            self._channel = grpc.aio.secure_channel(target, credentials, options=options)
        else:
            self._channel = grpc.aio.insecure_channel(target, options=options)
        self._metadata = tuple((k.lower(), v) for k, v in config.service_params().items())

    async def aclose(self) -> None:
        await self._channel.close()

    def _path(self, method: Method[msgspec.Struct, msgspec.Struct]) -> str:
        return f"/{SERVICE}/{method.name}"

    async def call(self, method: Method[msgspec.Struct, R], params: msgspec.Struct) -> R:
        rpc: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = self._channel.unary_unary(
            self._path(method)
        )
        call = rpc(_convert.encode(params), metadata=self._metadata, timeout=self.config.timeout)
        try:
            data = await call
            self.activated_extensions = _activated(await call.initial_metadata())
        except grpc.aio.AioRpcError as exc:
            raise error_of(exc, self.config.url) from None
        return _decode(method, data)

    async def stream(
        self, method: StreamMethod, params: msgspec.Struct, hints: StreamHints | None = None
    ) -> AsyncGenerator[StreamEvent, None]:
        rpc: grpc.aio.UnaryStreamMultiCallable[bytes, bytes] = self._channel.unary_stream(
            self._path(method)
        )
        metadata = self._metadata
        if hints is not None and hints.last_event_id:
            metadata = (*metadata, ("last-event-id", hints.last_event_id))
        call = rpc(_convert.encode(params), metadata=metadata)
        try:
            self.activated_extensions = _activated(await call.initial_metadata())
            async for data in call:
                payload = _decode(method, data).payload
                if payload is None:
                    raise InvalidAgentResponse(f"{method.name} sent an empty event")
                yield StreamEvent(payload)
        except grpc.aio.AioRpcError as exc:
            raise error_of(exc, self.config.url) from None
        finally:
            call.cancel()  # (a caller that stops reading ends the call)


def _decode(method: Method[msgspec.Struct, R], data: bytes) -> R:
    try:
        return _convert.decode(method.result, data)
    except _codec.ValidationError as exc:
        raise InvalidAgentResponse(f"{method.name}: invalid answer: {exc}") from None


def _activated(metadata: object) -> frozenset[str]:
    """The extensions the agent says it activated (`a2a-extensions` metadata)."""
    for key, value in metadata or ():  # type: ignore[attr-defined]
        if key == "a2a-extensions" and isinstance(value, str):
            return frozenset(u.strip() for u in value.split(",") if u.strip())
    return frozenset()


def error_of(exc: grpc.aio.AioRpcError, url: str) -> Exception:
    """The exception a failed call stands for (see the module's docstring)."""
    code = exc.code()
    message = exc.details() or code.name
    trailing = tuple(exc.trailing_metadata() or ())
    if code is grpc.StatusCode.UNAUTHENTICATED:
        challenge = next((str(v) for k, v in trailing if k == "www-authenticate"), "")
        return AuthenticationRequired(url, challenge, message.encode())
    details: list[object] = []
    for key, value in trailing:
        if key == _status.KEY and isinstance(value, bytes):
            found = _status.decode(value)
            details = found[2] if found is not None else []
    error = error_from_status(message, details, code.name)
    if error is not None:
        return error
    if code in _TRANSPORT:
        return A2ATransportError(f"gRPC {code.name}: {message}", url)
    data = details or msgspec.UNSET
    return RpcError.from_error_object(ErrorObject(code=-32603, message=message, data=data), "a2a")
