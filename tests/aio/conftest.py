"""Connected pairs for driver tests: real sockets, one side raw when a test needs bytes."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from interlink.aio import Connection
from interlink.jsonrpc import Profile

PROFILE = Profile(cancel_method="$/cancel_request")


async def stream_pair() -> tuple[
    tuple[asyncio.StreamReader, asyncio.StreamWriter],
    tuple[asyncio.StreamReader, asyncio.StreamWriter],
]:
    a, b = socket.socketpair()
    return await asyncio.open_connection(sock=a), await asyncio.open_connection(sock=b)


class Forever:
    """A handler that waits until cancelled; `started` and `cancelled` say how far."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def __call__(self, params: object) -> str:
        self.started.set()
        try:
            await asyncio.Event().wait()
        finally:
            self.cancelled.set()
        return "never"


@dataclass
class RawPeer:
    """The far side as bytes: write lines, read lines, close."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def send(self, line: bytes) -> None:
        self.writer.write(line + b"\n")
        await self.writer.drain()

    async def recv(self) -> bytes:
        return (await asyncio.wait_for(self.reader.readline(), 5)).rstrip(b"\n")

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


@pytest.fixture
async def raw_pair() -> AsyncIterator[tuple[Connection, RawPeer]]:
    (r1, w1), (r2, w2) = await stream_pair()
    conn = Connection(r1, w1, profile=PROFILE, name="under-test")
    peer = RawPeer(r2, w2)
    yield conn, peer
    await conn.aclose()
    await peer.close()


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Connection, Connection]]:
    (r1, w1), (r2, w2) = await stream_pair()
    a = Connection(r1, w1, profile=PROFILE, name="a")
    b = Connection(r2, w2, profile=PROFILE, name="b")
    yield a, b
    await a.aclose()
    await b.aclose()
