"""A2A 1.0 (Agent2Agent) on interlink's JSON-RPC core: the server side.

Write an `AgentExecutor` (a `TaskUpdater` makes the common cases a few lines), describe
the agent with an `AgentCard`, and `create_app(executor, card)` gives a plain ASGI app:
JSON-RPC, Server-Sent Events, the agent card, durable tasks (`store=`: memory, SQLite).
Types: `interlink.a2a.types`.
"""

from interlink.a2a import types
from interlink.a2a._app import create_app, with_interface
from interlink.a2a._auth import ApiKeyAuth, Authenticator, BearerAuth
from interlink.a2a._errors import (
    A2AError,
    ContentTypeNotSupported,
    ExtendedAgentCardNotConfigured,
    ExtensionSupportRequired,
    InvalidAgentResponse,
    PushNotificationNotSupported,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
    VersionNotSupported,
)
from interlink.a2a._executor import (
    AgentExecutor,
    Event,
    EventSink,
    InvalidEventSequence,
    RequestContext,
    TaskUpdater,
    new_id,
)
from interlink.a2a._http import A2AApp
from interlink.a2a._server import A2AServer, Authorize, Call, owner_only
from interlink.a2a._store import StoreError, TaskStore
from interlink.a2a._store_url import default_store_path, open_store
from interlink.a2a._tenants import TenantRouter

__all__ = [
    # writing an agent
    "AgentExecutor",
    "Event",
    "EventSink",
    "InvalidEventSequence",
    "RequestContext",
    "TaskUpdater",
    "new_id",
    # serving it
    "A2AApp",
    "A2AServer",
    "Authorize",
    "Call",
    "create_app",
    "owner_only",
    "with_interface",
    "TenantRouter",
    # authentication
    "ApiKeyAuth",
    "Authenticator",
    "BearerAuth",
    # storing tasks
    "StoreError",
    "TaskStore",
    "default_store_path",
    "open_store",
    # errors
    "A2AError",
    "ContentTypeNotSupported",
    "ExtendedAgentCardNotConfigured",
    "ExtensionSupportRequired",
    "InvalidAgentResponse",
    "PushNotificationNotSupported",
    "TaskNotCancelable",
    "TaskNotFound",
    "UnsupportedOperation",
    "VersionNotSupported",
    # types
    "types",
]
