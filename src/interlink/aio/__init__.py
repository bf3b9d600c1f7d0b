"""The asyncio driver: a bidirectional JSON-RPC `Connection` over a byte stream pair."""

from ._connection import (
    ByteReader,
    ByteWriter,
    Connection,
    NotificationHandler,
    RawNotificationHandler,
    RawRequestHandler,
    RequestHandler,
)

__all__ = [
    "ByteReader",
    "ByteWriter",
    "Connection",
    "NotificationHandler",
    "RawNotificationHandler",
    "RawRequestHandler",
    "RequestHandler",
]
