"""What a binding gives the A2A client: a `Transport` for one interface of an agent card.

`A2AClient` builds every request (a generated `Method` and its typed params, the
`tenant` already set) and reads every answer through a transport, so each binding
(JSON-RPC `_jsonrpc`, HTTP+JSON `_rest`, gRPC `_grpc`) only moves bytes:

- `call(method, params)`: one unary call, the typed result of `method.result`;
- `stream(method, params, hints)`: the events of a streaming method as `StreamEvent`s
  (the `StreamResponse`'s payload and the event id, `None` when the server gave none),
  resuming after `hints.last_event_id` (SSE `Last-Event-ID`; the gRPC binding sends it
  as metadata); the server's reconnection delay goes to `hints.retry_ms`;
- `aclose()`; and `activated_extensions`, what the agent said it activated on the last
  answer.

The service parameters (§3.2.6) are in `TransportConfig`: `service_params()` is
`A2A-Version`, `A2A-Extensions` and the caller's and credentials' headers, sent as HTTP
headers by the HTTP bindings and as gRPC metadata (lower-cased keys) by gRPC.

Errors are the same whatever the binding, because the client's logic (retries, resumes)
reads them: an A2A error is the `interlink.a2a` class its code or `ErrorInfo` reason
names (`TaskNotFound`, ...; -32602 is `A2AInvalidParams`); the agent unreachable or the
connection lost mid-answer is `A2ATransportError`; a stream silent for `idle_timeout`
is `TimeoutError`; an HTTP status with no A2A error in it is `A2AHttpError` (401:
`AuthenticationRequired`); an answer that cannot be read is `InvalidAgentResponse`.

Versions: `TransportConfig.version` is the A2A version the interface was picked for.
A binding sends it as `A2A-Version` and speaks it through the dialect registered for it:
`_jsonrpc.DIALECTS` and `_rest.DIALECTS` map "1.0" to `V10` (method names or routes,
ProtoJSON, errors) and "0.3" to the 0.3 dialects of `_v03` (the same protocols,
`_jsonrpc.Dialect` and `_rest.RestDialect`, translating with `interlink.a2a.compat`):
negotiation offers a binding's interfaces in the versions its `DIALECTS` has (0.3 after
1.0) and the transport picks the dialect from `config.version`. Constructing a
transport does no I/O (the negotiation builds some it never uses).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

import msgspec

from interlink.a2a._card import PROTOCOL_VERSION
from interlink.a2a._methods import Method
from interlink.a2a._types import Message, StreamResponse, Task, TaskArtifactUpdateEvent
from interlink.a2a._types import TaskStatusUpdateEvent as _StatusUpdate

if TYPE_CHECKING:
    import httpx

    from interlink.a2a.client._h1pool import Pool

__all__ = [
    "JSONRPC",
    "GRPC",
    "HTTP_JSON",
    "StreamEvent",
    "StreamHints",
    "StreamMethod",
    "StreamPayload",
    "Transport",
    "TransportConfig",
    "TransportFactory",
]

R = TypeVar("R", bound=msgspec.Struct)
StreamPayload = Task | Message | _StatusUpdate | TaskArtifactUpdateEvent

#: the `protocolBinding` names of the three standard bindings (§5.8: compared upper-case)
JSONRPC: Final = "JSONRPC"
HTTP_JSON: Final = "HTTP+JSON"
GRPC: Final = "GRPC"


@dataclass(frozen=True)
class StreamEvent:
    """One event of a stream: the payload, the event id it came with, and whether it is
    the task snapshot that opened a re-subscription (`resync`, set by the client)."""

    payload: StreamPayload
    id: str | None = None
    resync: bool = False


@dataclass
class StreamHints:
    """Where a stream resumes and what it learnt that outlives it: the event to resume
    after (`last_event_id`), and the server's reconnection delay (SSE `retry:`,
    milliseconds), kept across the streams a resumed subscription opens."""

    last_event_id: str | None = None
    retry_ms: int | None = None


StreamMethod = Method[msgspec.Struct, StreamResponse]
"""A streaming method of the generated table."""


@dataclass(frozen=True)
class TransportConfig:
    """Where one interface is and how to talk to it."""

    url: str
    """The interface's URL, absolute."""
    version: str = PROTOCOL_VERSION
    """The A2A version (Major.Minor) this interface is spoken in."""
    extensions: tuple[str, ...] = ()
    """The extensions to activate (`A2A-Extensions`)."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """The caller's and the credentials' headers (`Authorization`, an API key header)."""
    query: Mapping[str, str] = field(default_factory=dict)
    """Query parameters of every HTTP request (an API key the card puts in the query)."""
    timeout: float = 60.0
    connect_timeout: float = 10.0
    idle_timeout: float | None = 60.0
    """A stream silent (not even a keep-alive) this long counts as dropped."""

    def service_params(self) -> dict[str, str]:
        """The service parameters of every request, by their HTTP header names."""
        params = {"A2A-Version": self.version, **self.headers}
        if self.extensions:
            params["A2A-Extensions"] = ", ".join(self.extensions)
        return params


class Transport(Protocol):
    """One binding's wire for one interface (see the module for the contract)."""

    @property
    def binding(self) -> str:
        """The binding's `protocolBinding` name (`JSONRPC`, `HTTP+JSON`, `GRPC`)."""
        ...

    @property
    def config(self) -> TransportConfig: ...

    @property
    def activated_extensions(self) -> frozenset[str]:
        """The extensions the agent said it activated on the last answer."""
        ...

    async def call(self, method: Method[msgspec.Struct, R], params: msgspec.Struct) -> R:
        """One unary call: `method` with `params`, its typed result."""
        ...

    def stream(
        self, method: StreamMethod, params: msgspec.Struct, hints: StreamHints | None = None
    ) -> AsyncGenerator[StreamEvent, None]:
        """The events of a streaming call, resumed after `hints.last_event_id` when given."""
        ...

    async def aclose(self) -> None:
        """Release what the transport opened (an httpx client passed in stays open)."""
        ...


#: how a binding is opened: its config, and the HTTP client to share (httpx's or the
#: client's own `Pool`: the HTTP bindings use it; `None`: the transport opens and
#: closes its own)
TransportFactory = Callable[[TransportConfig, "httpx.AsyncClient | Pool | None"], Transport]
