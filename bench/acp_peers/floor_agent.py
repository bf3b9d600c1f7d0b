"""The floor ACP agent: bare asyncio + msgspec, no validation, the minimum ACP messages.

`python -m bench.acp_peers.floor_agent --updates K` answers `initialize`, `session/new`
and `session/prompt` (K `agent_message_chunk` updates, then `end_turn`) on stdin/stdout.
Everything else is ignored. Each read's answers go out in one write.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import msgspec

_ABSENT = msgspec.Raw(b"")


class _In(msgspec.Struct):
    method: str = ""
    id: msgspec.Raw = _ABSENT
    params: msgspec.Raw = _ABSENT


class _Session(msgspec.Struct, rename="camel"):
    session_id: str


class _Response(msgspec.Struct):
    id: msgspec.Raw
    result: object
    jsonrpc: str = "2.0"


class _Text(msgspec.Struct, tag_field="type", tag="text"):
    text: str


class _Chunk(msgspec.Struct, tag_field="sessionUpdate", tag="agent_message_chunk"):
    content: _Text


class _Update(msgspec.Struct, rename="camel"):
    session_id: str
    update: _Chunk


class _Notification(msgspec.Struct):
    params: _Update
    method: str = "session/update"
    jsonrpc: str = "2.0"


_decode = msgspec.json.Decoder(_In).decode
_decode_session = msgspec.json.Decoder(_Session).decode
_encode = msgspec.json.Encoder().encode
_INITIALIZED = {"protocolVersion": 1}
_END_TURN = {"stopReason": "end_turn"}


def _answer(line: bytes, updates: int, out: list[bytes]) -> None:
    message = _decode(line)
    if not message.id:  # a notification
        return
    if message.method == "session/prompt":
        session = _decode_session(message.params).session_id
        for i in range(updates):
            out.append(_encode(_Notification(_Update(session, _Chunk(_Text(f"chunk {i} "))))))
            out.append(b"\n")
        result: object = _END_TURN
    elif message.method == "session/new":
        result = {"sessionId": "sess-1"}
    elif message.method == "initialize":
        result = _INITIALIZED
    else:
        return
    out.append(_encode(_Response(message.id, result)))
    out.append(b"\n")


async def serve(updates: int) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=4 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    buf = b""
    while data := await reader.read(256 * 1024):
        lines = (buf + data).split(b"\n")
        buf = lines.pop()
        out: list[bytes] = []
        for line in lines:
            _answer(line, updates, out)
        if out:
            writer.write(b"".join(out))
            await writer.drain()
    writer.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--updates", type=int, default=20)
    asyncio.run(serve(parser.parse_args().updates))


if __name__ == "__main__":
    main()
