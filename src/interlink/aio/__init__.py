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
from ._stdio import open_stdio

__all__ = [
    "ByteReader",
    "ByteWriter",
    "Connection",
    "NotificationHandler",
    "RawNotificationHandler",
    "RawRequestHandler",
    "RequestHandler",
    # stdio
    "open_stdio",
]
