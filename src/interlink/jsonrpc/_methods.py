"""Typed method descriptors: a protocol's method table is made of these.

A `RequestType[P, R]` names a method with its params type `P` and result type `R`; a
`NotificationType[P]` a method with params and no answer. The asyncio driver types
`request()`, `notify()` and handler registration by them, and decodes params and
results with the types they carry.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import msgspec

from ._framing import DEFAULT_MAX_MESSAGE_SIZE

__all__ = ["NotificationType", "Profile", "RequestType"]

P = TypeVar("P")
R = TypeVar("R")


# (Structs, not dataclasses: built in C at import, and `dataclasses` stays unloaded, a
# start-up cost of every agent)


class RequestType(msgspec.Struct, Generic[P, R], frozen=True):
    method: str
    params: type[P]
    result: type[R]


class NotificationType(msgspec.Struct, Generic[P], frozen=True):
    method: str
    params: type[P]


class Profile(msgspec.Struct, frozen=True):
    """What a protocol turns on in the core.

    - `batches`: JSON-RPC batch arrays accepted (off: an array is one -32600).
    - `max_message_size`: a larger message is answered -32600 and skipped.
    - `cancel_method`: the notification that cancels an in-flight request, sent with
      params `{"requestId": id}` when a caller stops awaiting, and honoured when
      received; `None` turns request cancellation over the wire off.
    """

    batches: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    cancel_method: str | None = None
