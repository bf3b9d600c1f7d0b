"""The JSON-RPC peer's rules, sans IO: what an incoming message is and what answers it.

Two sides share the rules. The *single-message* side is for bindings that carry one
message per body (HTTP): `read_body` says what a body is (a request, a notification,
or the error response to send for it) and `answer_body` / `error_answer` build the
reply. The *stream* side (`Peer`, below) is for a byte stream carrying many messages
both ways (NDJSON on stdio or a socket).
"""

from __future__ import annotations

from typing import TypeAlias

import msgspec

from ._codec import Batch, Invalid, decode
from ._errors import InvalidRequest, ParseError, RpcError
from ._messages import (
    AnyNotification,
    AnyRequest,
    ErrorResponse,
    Notification,
    Request,
    RequestId,
)
from ._methods import Profile

__all__ = ["Incoming", "answer_body", "error_answer", "read_body"]

Incoming: TypeAlias = AnyRequest | AnyNotification | ErrorResponse
"""What one body (or one batch entry) is: a message to serve, or the error to send."""

_DEFAULT_PROFILE = Profile()


def _not_a_request(message: object) -> ErrorResponse:
    """A response where a request was expected: -32600 with the response's id."""
    refusal = InvalidRequest(data={"detail": "a response is not a request"})
    return refusal.to_response(getattr(message, "id", None))


def _incoming(message: object) -> Incoming:
    kind = type(message)
    if kind is Request or kind is Notification:
        return message  # type: ignore[return-value]
    if kind is Invalid:
        return message.response()  # type: ignore[attr-defined,no-any-return]
    return _not_a_request(message)


def read_body(data: bytes, profile: Profile = _DEFAULT_PROFILE) -> Incoming | list[Incoming]:
    """What one whole message body is.

    A request or a notification comes back as decoded (params left raw); anything else
    comes back as the `ErrorResponse` to send: invalid JSON is -32700 with id null, a
    JSON value that is not a message is -32600 with its id when one can be read, and a
    response is -32600 "a response is not a request" with its id. With
    `profile.batches`, a non-empty array gives a list with one entry per item, each as
    above (an empty array is one -32600); without, an array is one -32600. The size
    limit is the binding's to apply before reading (see `oversize`).
    """
    message = decode(data, batches=profile.batches)
    if type(message) is Batch:
        return [_incoming(item) for item in message.items]
    return _incoming(message)


def answer_body(id: RequestId | None, result: bytes) -> bytes:
    """The success response to request `id` around `result`, already encoded JSON."""
    return b'{"jsonrpc":"2.0","id":' + msgspec.json.encode(id) + b',"result":' + result + b"}"


def error_answer(id: RequestId | None, exc: BaseException) -> ErrorResponse:
    """The error response to request `id` whose handler raised `exc`.

    An `RpcError` answers with itself, except that one the handler got from the peer it
    called (`from_peer`) is -32603 (passing the peer's code on would mislead), and a
    `ParseError` (params that turned out not to be JSON) has id null (DECISIONS.md:
    invalid JSON -> id null). Any other exception is -32603 with no detail (the
    caller logs it).
    """
    if isinstance(exc, RpcError):
        if exc.from_peer:
            detail = {"detail": f"a request this handler made failed: {exc}"}
            return RpcError.internal_error(detail).to_response(id)
        return exc.to_response(None if type(exc) is ParseError else id)
    return RpcError.internal_error().to_response(id)
