"""A2A 1.0 errors: -32001..-32009, each answering with a `google.rpc.ErrorInfo`.

`error.data` is an array of ProtoJSON `Any` objects; the first is an `ErrorInfo` whose
`reason` names the error (`TASK_NOT_FOUND`) in the domain `a2a-protocol.org`. Invalid
params carry a `google.rpc.BadRequest` with one field violation per problem. The classes
are registered under the protocol "a2a", so a client rebuilds the same classes from a
server's answer (`RpcError.from_error_object(error, "a2a")`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar

from interlink.a2a._codec import FieldViolation
from interlink.jsonrpc import ConnectionClosed, InvalidParams, RpcError

DOMAIN = "a2a-protocol.org"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"


def error_info(reason: str, metadata: Mapping[str, str] | None = None) -> list[object]:
    """`error.data` holding one `google.rpc.ErrorInfo`."""
    return [
        {"@type": ERROR_INFO, "reason": reason, "domain": DOMAIN, "metadata": dict(metadata or {})}
    ]


def bad_request(violations: Iterable[tuple[str, str]]) -> InvalidParams:
    """-32602 with an `ErrorInfo` and a `google.rpc.BadRequest` listing each violation."""
    fields = [{"field": field, "description": text} for field, text in violations]
    detail = "; ".join(f"{v['field']}: {v['description']}" for v in fields)
    return InvalidParams(
        f"Invalid params: {detail}" if detail else None,
        [
            *error_info("INVALID_PARAMS"),
            {"@type": BAD_REQUEST, "fieldViolations": fields},
        ],
    )


class A2AError(RpcError):
    """Base of the A2A-specific errors; `REASON` is the ErrorInfo reason."""

    PROTOCOL = "a2a"
    REASON: ClassVar[str] = ""

    def __init__(self, message: str | None = None, **metadata: str) -> None:
        super().__init__(message, error_info(self.REASON, metadata))


class TaskNotFound(A2AError):
    CODE = -32001
    MESSAGE = "Task not found"
    REASON = "TASK_NOT_FOUND"


class TaskNotCancelable(A2AError):
    CODE = -32002
    MESSAGE = "Task cannot be canceled"
    REASON = "TASK_NOT_CANCELABLE"


class PushNotificationNotSupported(A2AError):
    CODE = -32003
    MESSAGE = "Push notifications are not supported"
    REASON = "PUSH_NOTIFICATION_NOT_SUPPORTED"


class UnsupportedOperation(A2AError):
    CODE = -32004
    MESSAGE = "This operation is not supported"
    REASON = "UNSUPPORTED_OPERATION"


class ContentTypeNotSupported(A2AError):
    CODE = -32005
    MESSAGE = "Incompatible content types"
    REASON = "CONTENT_TYPE_NOT_SUPPORTED"


class InvalidAgentResponse(A2AError):
    CODE = -32006
    MESSAGE = "Invalid agent response"
    REASON = "INVALID_AGENT_RESPONSE"


class ExtendedAgentCardNotConfigured(A2AError):
    CODE = -32007
    MESSAGE = "Extended agent card is not configured"
    REASON = "EXTENDED_AGENT_CARD_NOT_CONFIGURED"


class ExtensionSupportRequired(A2AError):
    CODE = -32008
    MESSAGE = "A required extension was not activated"
    REASON = "EXTENSION_SUPPORT_REQUIRED"


class VersionNotSupported(A2AError):
    CODE = -32009
    MESSAGE = "A2A version not supported"
    REASON = "VERSION_NOT_SUPPORTED"


# -- what a client raises besides the errors above ------------------------------------


class A2AInvalidParams(InvalidParams):
    """-32602 from an A2A agent; `violations` are the `google.rpc.BadRequest` items."""

    PROTOCOL = "a2a"
    CODE = -32602

    @property
    def violations(self) -> tuple[FieldViolation, ...]:
        items = self.data if isinstance(self.data, list) else []
        out: list[FieldViolation] = []
        for item in items:
            if isinstance(item, dict) and item.get("@type") == BAD_REQUEST:
                for v in item.get("fieldViolations") or ():
                    if isinstance(v, dict):
                        field_, text = v.get("field", ""), v.get("description", "")
                        out.append(FieldViolation(str(field_), str(text)))
        return tuple(out)


class A2ATransportError(ConnectionClosed):
    """The agent could not be reached, or the connection failed mid-answer."""

    def __init__(self, reason: str, url: str) -> None:
        super().__init__(f"{reason} ({url})")
        self.url = url


class StreamInterrupted(A2ATransportError):
    """A `stream_message` stream broke off; resume it with `subscribe(task_id,
    last_event_id=last_event_id)` when `task_id` is known."""

    def __init__(self, reason: str, url: str, task_id: str, last_event_id: str | None) -> None:
        super().__init__(reason, url)
        self.task_id = task_id
        self.last_event_id = last_event_id


class A2AHttpError(Exception):
    """The agent answered with an HTTP status other than 200."""

    def __init__(self, message: str, status: int, body: bytes) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class AuthenticationRequired(A2AHttpError):
    """HTTP 401: missing or wrong credentials; `challenge` is the `WWW-Authenticate`."""

    def __init__(self, url: str, challenge: str, body: bytes) -> None:
        super().__init__(
            f"{url} requires authentication (HTTP 401, WWW-Authenticate: {challenge or '-'})",
            401,
            body,
        )
        self.challenge = challenge
