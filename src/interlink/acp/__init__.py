"""ACP v1 (Agent Client Protocol): both sides, on interlink's JSON-RPC core.

An agent subclasses `Agent` and runs with `run_agent(MyAgent())` on stdio; a client
implements `Client` handlers and talks to an agent through `spawn_agent(...)` or a
`ClientSideConnection`. Types: `interlink.acp.schema`.
"""

from typing import TYPE_CHECKING

from interlink.acp import methods, schema
from interlink.acp._agent import Agent, AgentSideConnection
from interlink.acp._client_handle import ClientHandle, TerminalHandle
from interlink.acp._codec import convert, encode
from interlink.acp._endpoint import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    ProtocolVersionError,
    SessionNotFound,
)
from interlink.acp._process import (
    AgentExited,
    AgentProcess,
    WireTap,
    run_agent,
    serve_agent,
    spawn_agent,
)

if TYPE_CHECKING:
    from interlink.acp._client import Client, ClientSideConnection
    from interlink.acp._local import (
        LocalClient,
        PermissionPolicy,
        UpdateHandler,
        allow_first,
        reject_first,
    )
    from interlink.acp._transcript import ToolCallState, Transcript, content_text


def __getattr__(name: str) -> object:
    """The client side loads on first use: an agent's start-up does not pay for it."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from interlink.acp import _client, _local, _transcript

    value = next(getattr(m, name) for m in (_client, _local, _transcript) if hasattr(m, name))
    globals()[name] = value
    return value


__all__ = [
    # agent side
    "Agent",
    "AgentSideConnection",
    "ClientHandle",
    "TerminalHandle",
    "run_agent",
    "serve_agent",
    # client side
    "Client",
    "ClientSideConnection",
    "AgentProcess",
    "AgentExited",
    "spawn_agent",
    "WireTap",
    "Transcript",
    "ToolCallState",
    "content_text",
    "LocalClient",
    "PermissionPolicy",
    "UpdateHandler",
    "allow_first",
    "reject_first",
    # protocol
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "ProtocolVersionError",
    "SessionNotFound",
    "convert",
    "encode",
    "methods",
    "schema",
]
