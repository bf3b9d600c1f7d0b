"""The floor ACP client: bare asyncio + msgspec, no validation, the minimum ACP messages.

`python -m bench.acp_peers.floor_client [options]` spawns `floor_agent` and runs the
workload of `bench.acp_peers._measure`. Lines are split by hand, responses matched to
requests by integer id, `session/update` notifications counted in arrival order.
"""

from __future__ import annotations

import asyncio

import msgspec

from bench.acp_peers import _measure


class _Kind(msgspec.Struct, rename="camel"):
    session_update: str


class _UpdateParams(msgspec.Struct):
    update: _Kind


_ABSENT = msgspec.Raw(b"")


class _In(msgspec.Struct):
    """Any message the agent sends here: a response, or a `session/update`."""

    id: int | None = None
    method: str | None = None
    params: _UpdateParams | None = None
    result: msgspec.Raw = _ABSENT


class _Session(msgspec.Struct, rename="camel"):
    session_id: str


class _Request(msgspec.Struct):
    id: int
    method: str
    params: object
    jsonrpc: str = "2.0"


_decode = msgspec.json.Decoder(_In).decode
_decode_session = msgspec.json.Decoder(_Session).decode
_encode = msgspec.json.Encoder().encode
_INITIALIZE = {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
}


class FloorAgent:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self._process = process
        self._writer = process.stdin
        self._reader = process.stdout
        self._next = 0
        self._pending: dict[int, asyncio.Future[msgspec.Raw]] = {}
        self._handled = 0
        self._session = ""
        self._task = asyncio.create_task(self._read())

    @property
    def pid(self) -> int:
        return self._process.pid

    async def _request(self, method: str, params: object) -> msgspec.Raw:
        self._next += 1
        future: asyncio.Future[msgspec.Raw] = asyncio.get_running_loop().create_future()
        self._pending[self._next] = future
        self._writer.write(_encode(_Request(self._next, method, params)) + b"\n")
        return await future

    async def _read(self) -> None:
        buf = b""
        while data := await self._reader.read(256 * 1024):
            lines = (buf + data).split(b"\n")
            buf = lines.pop()
            for line in lines:
                message = _decode(line)
                if message.id is None:
                    if message.params is not None:
                        self._handled += message.params.update.session_update == (
                            "agent_message_chunk"
                        )
                elif message.result:
                    self._pending.pop(message.id).set_result(message.result)
        for future in self._pending.values():
            future.set_exception(ConnectionError("the agent closed its stdout"))

    async def initialize(self) -> None:
        await self._request("initialize", _INITIALIZE)

    async def new_session(self) -> None:
        result = await self._request("session/new", {"cwd": "/", "mcpServers": []})
        self._session = _decode_session(result).session_id

    async def prompt(self, text: str) -> int:
        self._handled = 0
        await self._request(
            "session/prompt",
            {"sessionId": self._session, "prompt": [{"type": "text", "text": text}]},
        )
        return self._handled

    async def aclose(self) -> None:
        self._writer.close()
        await _measure.stop(self._process)
        await self._task


async def spawn(updates: int, agent: str) -> FloorAgent:
    return FloorAgent(await _measure.spawn_python(agent, updates))


if __name__ == "__main__":
    _measure.run(spawn, "bench.acp_peers.floor_agent")
