"""Sans-IO JSON-RPC 2.0: messages, the two-phase codec, errors, framing, bookkeeping.

Nothing here does I/O or imports asyncio; `interlink.aio` drives it over streams.
"""

from ._codec import (
    DEFAULT_CODEC,
    Batch,
    Invalid,
    InvalidResult,
    ValueCodec,
    decode,
    decode_message,
    decode_params,
    decode_result,
    encode,
    encode_line,
    oversize,
)
from ._errors import (
    AuthRequired,
    ConnectionClosed,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    ParseError,
    ProtocolMisuse,
    RequestCancelled,
    ResourceNotFound,
    RpcError,
)
from ._framing import DEFAULT_MAX_MESSAGE_SIZE, LineFramer, Oversize
from ._messages import (
    AnyMessage,
    AnyNotification,
    AnyRequest,
    AnyResponse,
    ErrorObject,
    ErrorResponse,
    Notification,
    Request,
    RequestId,
    SuccessResponse,
    is_error,
    is_notification,
    is_request,
    is_response,
    is_success,
)
from ._methods import NotificationType, Profile, RequestType
from ._peer import (
    CancelRequested,
    Decoded,
    Event,
    Incoming,
    Peer,
    Queued,
    Reply,
    answer_body,
    answer_id,
    error_answer,
    read_body,
)
from ._pending import BatchReply, PendingRequests

__all__ = [
    # messages
    "AnyMessage",
    "AnyNotification",
    "AnyRequest",
    "AnyResponse",
    "ErrorObject",
    "ErrorResponse",
    "Notification",
    "Request",
    "RequestId",
    "SuccessResponse",
    "is_error",
    "is_notification",
    "is_request",
    "is_response",
    "is_success",
    # codec
    "Batch",
    "Invalid",
    "decode",
    "decode_message",
    "decode_params",
    "decode_result",
    "encode",
    "encode_line",
    "oversize",
    "DEFAULT_CODEC",
    "ValueCodec",
    # errors
    "AuthRequired",
    "ConnectionClosed",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "InvalidResult",
    "MethodNotFound",
    "ParseError",
    "ProtocolMisuse",
    "RequestCancelled",
    "ResourceNotFound",
    "RpcError",
    # framing and bookkeeping
    "DEFAULT_MAX_MESSAGE_SIZE",
    "BatchReply",
    "LineFramer",
    "Oversize",
    "PendingRequests",
    # the peer: single-message side
    "Incoming",
    "answer_body",
    "error_answer",
    "read_body",
    # the peer: stream side
    "CancelRequested",
    "Decoded",
    "Event",
    "Peer",
    "Queued",
    "Reply",
    "answer_id",
    # method tables
    "NotificationType",
    "Profile",
    "RequestType",
]
