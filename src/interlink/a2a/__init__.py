"""A2A 1.0 (Agent2Agent) on interlink's JSON-RPC core: both sides.

Server: write an `AgentExecutor` (a `TaskUpdater` makes the common cases a few lines),
describe the agent with an `AgentCard`, and `create_app(executor, card)` gives a plain
ASGI app: JSON-RPC, Server-Sent Events, the agent card, durable tasks (`store=`: memory,
SQLite, PostgreSQL). Client: `await A2AClient.connect(url)` and call any method;
it picks the card's interface (JSON-RPC, HTTP+JSON or gRPC; A2A 1.0 or 0.3) and falls
back when one does not answer; streams and subscriptions are async iterators that
resume by `Last-Event-ID`.
Types: `interlink.a2a.types`.
"""

from interlink.a2a import types
from interlink.a2a._card import (
    CardError,
    InvalidAgentURL,
    NoCompatibleInterface,
    ResolvedCard,
    checked_url,
    clear_card_cache,
    fetch_card,
    resolve_card,
    select_interface,
)
from interlink.a2a._card_sign import (
    CardSignatureError,
    KeySource,
    SigningKey,
    TrustedKeys,
    protected_header,
    sign_card,
    verify_card,
    verify_signature,
)
from interlink.a2a._codec import ValidationError, decode, encode
from interlink.a2a._errors import DOMAIN as ERROR_DOMAIN
from interlink.a2a._errors import (
    REASON_CODES,
    A2AError,
    A2AHttpError,
    A2AInvalidParams,
    A2ATransportError,
    AuthenticationRequired,
    ContentTypeNotSupported,
    ExtendedAgentCardNotConfigured,
    ExtensionSupportRequired,
    InvalidAgentResponse,
    PushNotificationNotSupported,
    StreamInterrupted,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
    VersionNotSupported,
    status_of,
)
from interlink.a2a._lifecycle import ACTIVE as ACTIVE_STATES
from interlink.a2a._lifecycle import INTERRUPTED as INTERRUPTED_STATES
from interlink.a2a._lifecycle import TERMINAL as TERMINAL_STATES
from interlink.a2a.client._client import (
    A2AClient,
    ClientOptions,
    Reconnect,
    StreamEvent,
    StreamPayload,
)
from interlink.a2a.client._http import KEEPALIVE_EXPIRY, http_client
from interlink.a2a.client._negotiate import (
    Candidate,
    Negotiation,
    NoInterfaceAnswered,
    NoUsableInterface,
    Outcome,
)
from interlink.a2a.client._transport import StreamHints, StreamMethod, Transport, TransportConfig
from interlink.a2a.server._app import (
    AgentCardWarning,
    create_app,
    missing_card_fields,
    with_interface,
)
from interlink.a2a.server._auth import ApiKeyAuth, Authenticator, BearerAuth
from interlink.a2a.server._executor import (
    AgentExecutor,
    Event,
    EventSink,
    InvalidEventSequence,
    RequestContext,
    TaskUpdater,
    new_id,
)
from interlink.a2a.server._handler import A2AServer, Authorize, Call, owner_only
from interlink.a2a.server._http import A2AApp
from interlink.a2a.server._replicas import SharedStore
from interlink.a2a.server._tenants import TenantRouter
from interlink.a2a.stores._base import StoreError, TaskStore
from interlink.a2a.stores._sqlite import SqliteTaskStore
from interlink.a2a.stores._url import default_store_path, open_store

__all__ = [
    # errors on the wire: the ErrorInfo domain, reason -> code, code -> (gRPC, HTTP) status
    "ERROR_DOMAIN",
    "REASON_CODES",
    "status_of",
    # the task lifecycle's state sets
    "ACTIVE_STATES",
    "INTERRUPTED_STATES",
    "TERMINAL_STATES",
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
    "AgentCardWarning",
    "Authorize",
    "Call",
    "create_app",
    "missing_card_fields",
    "owner_only",
    "with_interface",
    "TenantRouter",
    # authentication
    "ApiKeyAuth",
    "Authenticator",
    "BearerAuth",
    # storing tasks
    "SharedStore",
    "SqliteTaskStore",
    "StoreError",
    "TaskStore",
    "default_store_path",
    "open_store",
    # the client
    "A2AClient",
    "CardError",
    "ClientOptions",
    "InvalidAgentURL",
    "KEEPALIVE_EXPIRY",
    "http_client",
    # picking an interface, and the transports behind the client
    "Candidate",
    "Negotiation",
    "NoInterfaceAnswered",
    "NoUsableInterface",
    "Outcome",
    "StreamHints",
    "StreamMethod",
    "Transport",
    "TransportConfig",
    "fetch_card",
    # signed cards (§8.4)
    "CardSignatureError",
    "KeySource",
    "SigningKey",
    "TrustedKeys",
    "protected_header",
    "sign_card",
    "verify_card",
    "verify_signature",
    "NoCompatibleInterface",
    "Reconnect",
    "ResolvedCard",
    "checked_url",
    "StreamEvent",
    "StreamPayload",
    "clear_card_cache",
    "resolve_card",
    "select_interface",
    # errors
    "A2AError",
    "A2AHttpError",
    "A2AInvalidParams",
    "A2ATransportError",
    "AuthenticationRequired",
    "StreamInterrupted",
    "ContentTypeNotSupported",
    "ExtendedAgentCardNotConfigured",
    "ExtensionSupportRequired",
    "InvalidAgentResponse",
    "PushNotificationNotSupported",
    "TaskNotCancelable",
    "TaskNotFound",
    "UnsupportedOperation",
    "VersionNotSupported",
    # types and their ProtoJSON codec
    "types",
    "ValidationError",
    "decode",
    "encode",
]
