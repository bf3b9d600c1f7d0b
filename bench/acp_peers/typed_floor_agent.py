"""The typed floor ACP agent: the floor agent (`floor_agent`) plus what any agent that
hands prompts to user code and takes schema types back must do, and nothing else.

`python -m bench.acp_peers.typed_floor_agent --updates K` answers `initialize`,
`session/new` and `session/prompt` (K `agent_message_chunk` updates, then `end_turn`)
on stdin/stdout. Like the floor, lines are split by hand and the id is echoed raw;
unlike it, each request's params are decoded whole into the schema's request type
(validated: params the schema refuses raise), a prompt runs in a task of its own (an
agent must go on reading while a turn runs: `session/cancel` comes meanwhile), the
user's `async` handler builds each update from the schema's types and awaits its send,
and every message is encoded from those types (`SessionNotification`,
`PromptResponse`). What a send queues goes out in one write per loop round. No method
table, no lifecycle, no bounds, no cancellation: what it costs beyond the floor is the
least a validating agent pays, the yardstick for what interlink's agent adds on top.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import msgspec

from interlink.acp import schema as s

_ABSENT = msgspec.Raw(b"")


class _In(msgspec.Struct):
    method: str = ""
    id: msgspec.Raw = _ABSENT
    params: msgspec.Raw = _ABSENT


class _Response(msgspec.Struct):
    id: msgspec.Raw
    result: object
    jsonrpc: str = "2.0"


class _Notification(msgspec.Struct):
    params: s.SessionNotification
    method: str = "session/update"
    jsonrpc: str = "2.0"


_decode = msgspec.json.Decoder(_In).decode
_decode_initialize = msgspec.json.Decoder(s.InitializeRequest).decode
_decode_new_session = msgspec.json.Decoder(s.NewSessionRequest).decode
_decode_prompt = msgspec.json.Decoder(s.PromptRequest).decode
_encode = msgspec.json.Encoder().encode


class _Out:
    """Lines queued for stdout, written together once per loop round."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._lines: list[bytes] = []
        self._loop = asyncio.get_running_loop()

    def put(self, message: object) -> None:
        if not self._lines:
            self._loop.call_soon(self._flush)
        self._lines.append(_encode(message))
        self._lines.append(b"\n")

    def _flush(self) -> None:
        self._writer.write(b"".join(self._lines))
        self._lines.clear()


class TypedFloorAgent:
    def __init__(self, out: _Out, updates: int) -> None:
        self._out = out
        self.updates = updates

    async def session_update(self, session_id: str, update: s.SessionUpdate) -> None:
        """What the user's handler awaits for each update."""
        self._out.put(_Notification(s.SessionNotification(session_id=session_id, update=update)))

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        """The user's handler."""
        for i in range(self.updates):
            chunk = s.AgentMessageChunk(content=s.TextContent(text=f"chunk {i} "))
            await self.session_update(params.session_id, chunk)
        return s.PromptResponse(stop_reason="end_turn")

    async def _turn(self, request_id: msgspec.Raw, params: s.PromptRequest) -> None:
        self._out.put(_Response(request_id, await self.prompt(params)))

    def answer(self, line: bytes, running: set[asyncio.Task[None]]) -> None:
        message = _decode(line)
        if not message.id:  # a notification
            return
        result: object
        if message.method == "session/prompt":
            turn = asyncio.create_task(self._turn(message.id, _decode_prompt(message.params)))
            running.add(turn)
            turn.add_done_callback(running.discard)
            return
        if message.method == "session/new":
            _decode_new_session(message.params)
            result = s.NewSessionResponse(session_id="sess-1")
        elif message.method == "initialize":
            version = _decode_initialize(message.params).protocol_version
            result = s.InitializeResponse(protocol_version=version)
        else:
            return
        self._out.put(_Response(message.id, result))


async def serve(updates: int) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=4 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    agent = TypedFloorAgent(_Out(writer), updates)
    running: set[asyncio.Task[None]] = set()
    buf = b""
    while data := await reader.read(256 * 1024):
        lines = (buf + data).split(b"\n")
        buf = lines.pop()
        for line in lines:
            agent.answer(line, running)
        await writer.drain()
    writer.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--updates", type=int, default=20)
    asyncio.run(serve(parser.parse_args().updates))


if __name__ == "__main__":
    main()
