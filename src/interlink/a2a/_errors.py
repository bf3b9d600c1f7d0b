"""A2A 1.0 errors: -32001..-32009, each answering with a `google.rpc.ErrorInfo`.

`error.data` is an array of ProtoJSON `Any` objects; the first is an `ErrorInfo` whose
`reason` names the error (`TASK_NOT_FOUND`) in the domain `a2a-protocol.org`. Invalid
params carry a `google.rpc.BadRequest` with one field violation per problem. The classes
are registered under the protocol "a2a", so a client rebuilds the same classes from a
server's answer (`RpcError.from_error_object(error, "a2a")`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar

import msgspec

from interlink.a2a._codec import FieldViolation
from interlink.jsonrpc import ConnectionClosed, ErrorObject, InvalidParams, RpcError

DOMAIN = "a2a-protocol.org"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"


def error_info(reason: str, metadata: Mapping[str, str] | None = None) -> list[object]:
    """`error.data` holding one `google.rpc.ErrorInfo`."""
    return [
        {"@type": ERROR_INFO, "reason": reason, "domain": DOMAIN, "metadata": dict(metadata or {})}
    ]


#: the ErrorInfo reason of the JSON-RPC core's own errors
CORE_REASONS: Mapping[int, str] = {
    -32700: "PARSE_ERROR",
    -32600: "INVALID_REQUEST",
    -32601: "METHOD_NOT_FOUND",
    -32602: "INVALID_PARAMS",
    -32603: "INTERNAL_ERROR",
}


def details_of(code: int, data: object) -> list[object]:
    """The typed details of an error whose `data` is `data`: as they are when they are
    a list already (the A2A errors'), else one `ErrorInfo` whose reason comes from the
    code and whose metadata are the items of a plain-object `data` (the core's errors),
    each a string (JSON for other values)."""
    if isinstance(data, list):
        return data
    metadata: dict[str, str] = {}
    if isinstance(data, dict):
        metadata = {
            str(k): v if isinstance(v, str) else msgspec.json.encode(v).decode()
            for k, v in data.items()
        }
    return error_info(CORE_REASONS.get(code, "ERROR"), metadata)


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
    """Base of the A2A-specific errors. Each states its code and message in its class
    line; `REASON`, the ErrorInfo reason, is its name in upper snake case."""

    PROTOCOL = "a2a"
    REASON: ClassVar[str] = ""

    def __init_subclass__(
        cls, code: int | None = None, message: str | None = None, **kwargs: object
    ) -> None:
        if code is not None:
            cls.REASON = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).upper()
        super().__init_subclass__(code=code, message=message, **kwargs)

    def __init__(self, message: str | None = None, **metadata: str) -> None:
        super().__init__(message, error_info(self.REASON, metadata))


class TaskNotFound(A2AError, code=-32001, message="Task not found"): ...


class TaskNotCancelable(A2AError, code=-32002, message="Task cannot be canceled"): ...


class PushNotificationNotSupported(
    A2AError, code=-32003, message="Push notifications are not supported"
): ...


class UnsupportedOperation(A2AError, code=-32004, message="This operation is not supported"): ...


class ContentTypeNotSupported(A2AError, code=-32005, message="Incompatible content types"): ...


class InvalidAgentResponse(A2AError, code=-32006, message="Invalid agent response"): ...


class ExtendedAgentCardNotConfigured(
    A2AError, code=-32007, message="Extended agent card is not configured"
): ...


class ExtensionSupportRequired(
    A2AError, code=-32008, message="A required extension was not activated"
): ...


class VersionNotSupported(A2AError, code=-32009, message="A2A version not supported"): ...


#: §5.4: a JSON-RPC error code as the gRPC status (its name in `grpc.StatusCode`) and
#: the HTTP status of the other two bindings; a code not listed is ("UNKNOWN", 500).
#: The JSON-RPC codes of the envelope are mapped as the SDKs do (-32601: UNIMPLEMENTED).
STATUS_OF: Mapping[int, tuple[str, int]] = {
    -32001: ("NOT_FOUND", 404),
    -32002: ("FAILED_PRECONDITION", 400),
    -32003: ("FAILED_PRECONDITION", 400),
    -32004: ("FAILED_PRECONDITION", 400),
    -32005: ("INVALID_ARGUMENT", 400),
    -32006: ("INTERNAL", 500),
    -32007: ("FAILED_PRECONDITION", 400),
    -32008: ("FAILED_PRECONDITION", 400),
    -32009: ("FAILED_PRECONDITION", 400),
    -32700: ("INVALID_ARGUMENT", 400),
    -32600: ("INVALID_ARGUMENT", 400),
    -32601: ("UNIMPLEMENTED", 404),
    -32602: ("INVALID_ARGUMENT", 400),
    -32603: ("INTERNAL", 500),
}
UNKNOWN_STATUS = ("UNKNOWN", 500)


def status_of(code: int) -> tuple[str, int]:
    """The gRPC status name and the HTTP status of a JSON-RPC error code (§5.4)."""
    return STATUS_OF.get(code, UNKNOWN_STATUS)


#: the JSON-RPC code of each `ErrorInfo` reason: the A2A errors' and the core's
REASON_CODES: Mapping[str, int] = {
    **{cls.REASON: cls.CODE for cls in A2AError.__subclasses__() if cls.REASON},
    **{reason: code for code, reason in CORE_REASONS.items()},
}
#: the gRPC status names only one JSON-RPC code maps to (NOT_FOUND: the task; the SDKs'
#: METHOD_NOT_FOUND says so in its reason), for an error that carries no `ErrorInfo`
_STATUS_CODES: Mapping[str, int] = {
    "NOT_FOUND": -32001,
    "INVALID_ARGUMENT": -32602,
    "UNIMPLEMENTED": -32601,
    "INTERNAL": -32603,
}


def error_from_status(message: str, details: Sequence[object], status: str = "") -> RpcError | None:
    """The typed error a `google.rpc.Status` stands for (an HTTP+JSON error body, a gRPC
    status): the class of the reason of its first `ErrorInfo` in the A2A domain, else
    of `status` (the gRPC status name) when one code alone maps to it; None otherwise.
    `data` is `details`, as a JSON-RPC error of the same class carries it, so
    `A2AInvalidParams.violations` reads its `BadRequest` alike."""
    code = None
    for detail in details:
        if isinstance(detail, dict) and detail.get("@type") == ERROR_INFO:
            reason = detail.get("reason")
            if detail.get("domain", DOMAIN) == DOMAIN and isinstance(reason, str):
                code = REASON_CODES.get(reason)
            break
    if code is None:
        code = _STATUS_CODES.get(status)
    if code is None:
        return None
    error = ErrorObject(code=code, message=message, data=list(details))
    return RpcError.from_error_object(error, "a2a")


# -- what a client raises besides the errors above ------------------------------------


class InvalidEventSequence(Exception):
    """An executor published an event that cannot follow the previous ones (the task
    lifecycle's refusal, `_lifecycle.TABLE`)."""


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
