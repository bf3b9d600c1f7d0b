"""JSON-RPC 2.0 message types.

Four shapes: `Request`, `Notification`, `SuccessResponse`, `ErrorResponse`. The
request-like ones and the success response are generic in their payload: what we
receive carries `msgspec.Raw` (decoded later by the method's params type, see
`_codec`), what we send carries typed values that msgspec encodes directly.

`jsonrpc` comes first on the wire because it is the first field; `params` is left out
when `UNSET` (a request without params), never sent as `null`.
"""

from __future__ import annotations

from typing import Generic, Literal, TypeAlias, TypeGuard, TypeVar

import msgspec

T = TypeVar("T")

RequestId: TypeAlias = int | str
"""An id we can answer. `null` ids only appear on error responses to unreadable input."""


class ErrorObject(msgspec.Struct, frozen=True, omit_defaults=True):
    """The `error` member of a JSON-RPC error response."""

    code: int
    message: str
    data: object = msgspec.UNSET


class Request(msgspec.Struct, Generic[T], frozen=True, kw_only=True):
    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId | None
    method: str
    params: T | msgspec.UnsetType = msgspec.UNSET


class Notification(msgspec.Struct, Generic[T], frozen=True, kw_only=True):
    jsonrpc: Literal["2.0"] = "2.0"
    method: str
    params: T | msgspec.UnsetType = msgspec.UNSET


class SuccessResponse(msgspec.Struct, Generic[T], frozen=True, kw_only=True):
    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId | None
    result: T


class ErrorResponse(msgspec.Struct, frozen=True, kw_only=True):
    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId | None
    error: ErrorObject


AnyRequest: TypeAlias = Request[msgspec.Raw]
AnyNotification: TypeAlias = Notification[msgspec.Raw]
AnyResponse: TypeAlias = SuccessResponse[msgspec.Raw] | ErrorResponse
AnyMessage: TypeAlias = AnyRequest | AnyResponse | AnyNotification
"""What the decoder yields for one valid incoming JSON-RPC message."""


def is_request(message: AnyMessage) -> TypeGuard[AnyRequest]:
    return type(message) is Request


def is_notification(message: AnyMessage) -> TypeGuard[AnyNotification]:
    return type(message) is Notification


def is_response(message: AnyMessage) -> TypeGuard[AnyResponse]:
    return type(message) is SuccessResponse or type(message) is ErrorResponse


def is_success(message: AnyMessage) -> TypeGuard[SuccessResponse[msgspec.Raw]]:
    return type(message) is SuccessResponse


def is_error(message: AnyMessage) -> TypeGuard[ErrorResponse]:
    return type(message) is ErrorResponse
