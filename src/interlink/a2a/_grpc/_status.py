"""`google.rpc.Status`, the rich error of gRPC (`grpc-status-details-bin`, §10.6).

Its details are the same typed objects as a JSON-RPC error's `data` (ProtoJSON `Any`s:
`{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": ...}`), so both
bindings carry one error model: `encode` packs them, `decode` unpacks them. A detail of
a type protobuf does not know is left out (errors are rare: `json_format` is fine).
"""

from __future__ import annotations

import importlib
from typing import Final

from google.protobuf import any_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.message import DecodeError
from google.protobuf.message import Message as Proto

__all__ = ["KEY", "decode", "encode"]

#: the trailing metadata key of the status
KEY: Final = "grpc-status-details-bin"

# (googleapis-common-protos registers google.rpc's messages in the default pool; its
# modules have no type information, so the classes are looked up there)
importlib.import_module("google.rpc.status_pb2")
importlib.import_module("google.rpc.error_details_pb2")
_STATUS: Final[type[Proto]] = message_factory.GetMessageClass(
    descriptor_pool.Default().FindMessageTypeByName("google.rpc.Status")
)


def encode(code: int, message: str, details: list[object]) -> bytes:
    """The serialised `google.rpc.Status`."""
    packed = []
    for detail in details:
        if not isinstance(detail, dict):
            continue
        any_ = any_pb2.Any()
        try:
            json_format.ParseDict(detail, any_)
        except (json_format.ParseError, TypeError, AttributeError):
            continue
        packed.append(any_)
    return _STATUS(code=code, message=message, details=packed).SerializeToString()


def decode(data: bytes) -> tuple[int, str, list[object]] | None:
    """The code, message and details (ProtoJSON objects) of a serialised status; `None`
    when the bytes are none."""
    try:
        status = _STATUS.FromString(data)
    except DecodeError:
        return None
    details: list[object] = []
    for any_ in status.details:  # type: ignore[attr-defined]
        try:
            details.append(json_format.MessageToDict(any_))
        except (TypeError, KeyError, json_format.Error):
            continue
    return int(status.code), str(status.message), details  # type: ignore[attr-defined]
