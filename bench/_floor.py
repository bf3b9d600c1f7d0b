"""The floor: hand-written asyncio + msgspec JSON-RPC with no validation at all.

What a JSON-RPC exchange costs when nothing but bytes, newlines and ids is handled;
interlink's core is measured as a fraction of it.
"""

from __future__ import annotations

import asyncio

import msgspec


class _InRequest(msgspec.Struct):
    id: int
    params: msgspec.Raw


class _InResponse(msgspec.Struct):
    id: int
    result: msgspec.Raw


class _Out(msgspec.Struct):
    jsonrpc: str
    id: int
    result: msgspec.Raw


class _Req(msgspec.Struct):
    jsonrpc: str
    id: int
    method: str
    params: object


_request_decoder = msgspec.json.Decoder(_InRequest)
_response_decoder = msgspec.json.Decoder(_InResponse)
_encoder = msgspec.json.Encoder()


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Echo every request's params back as its result."""
    buf = b""
    while True:
        data = await reader.read(256 * 1024)
        if not data:
            break
        lines = (buf + data).split(b"\n")
        buf = lines.pop()
        out = []
        for line in lines:
            msg = _request_decoder.decode(line)
            out.append(_encoder.encode(_Out("2.0", msg.id, msg.params)))
            out.append(b"\n")
        writer.write(b"".join(out))
        await writer.drain()
    writer.close()


class Client:
    """Sends requests and matches responses by id."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._next = 0
        self._pending: dict[int, asyncio.Future[msgspec.Raw]] = {}
        self._task = asyncio.create_task(self._read())

    async def request(self, method: str, params: object) -> msgspec.Raw:
        self._next += 1
        future: asyncio.Future[msgspec.Raw] = asyncio.get_running_loop().create_future()
        self._pending[self._next] = future
        self._writer.write(_encoder.encode(_Req("2.0", self._next, method, params)) + b"\n")
        return await future

    async def _read(self) -> None:
        buf = b""
        while True:
            data = await self._reader.read(256 * 1024)
            if not data:
                break
            lines = (buf + data).split(b"\n")
            buf = lines.pop()
            for line in lines:
                response = _response_decoder.decode(line)
                self._pending.pop(response.id).set_result(response.result)

    async def aclose(self) -> None:
        self._writer.close()
        await self._task
