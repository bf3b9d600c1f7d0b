"""The typed floor ACP client: the floor client (`floor_client`) plus the two things any
client that hands updates to user code must do, and nothing else.

`python -m bench.acp_peers.typed_floor_client [options]` spawns `floor_agent` and runs
the workload of `bench.acp_peers._measure`. Like the floor, lines are split by hand and
responses matched by integer id; unlike it, every `session/update` is decoded whole into
the schema's `SessionNotification` (validated: an update the schema refuses raises) and
awaited through an `async` handler, as a client library calls its user's, and the
`session/prompt` result is decoded into `PromptResponse`. No method table, no ordering
rule, no bounds: what it costs beyond the floor is the least a validating client pays,
the yardstick for what interlink's client adds on top.
"""

from __future__ import annotations

import msgspec

from bench.acp_peers import _measure
from bench.acp_peers.floor_client import FloorAgent
from interlink.acp import schema as s

_ABSENT = msgspec.Raw(b"")


class _In(msgspec.Struct):
    """Any message the agent sends here, its params left undecoded."""

    id: int | None = None
    method: str | None = None
    params: msgspec.Raw = _ABSENT
    result: msgspec.Raw = _ABSENT


_decode = msgspec.json.Decoder(_In).decode
_decode_update = msgspec.json.Decoder(s.SessionNotification).decode
_decode_prompt = msgspec.json.Decoder(s.PromptResponse).decode


class TypedFloorAgent(FloorAgent):
    async def session_update(self, params: s.SessionNotification) -> None:
        """The user's handler."""
        if isinstance(params.update, s.AgentMessageChunk):
            self._handled += 1

    async def _read(self) -> None:
        buf = b""
        handle = self.session_update
        while data := await self._reader.read(256 * 1024):
            lines = (buf + data).split(b"\n")
            buf = lines.pop()
            for line in lines:
                message = _decode(line)
                if message.id is None:
                    if message.method == "session/update":
                        await handle(_decode_update(message.params))
                elif message.result:
                    self._pending.pop(message.id).set_result(message.result)
        for future in self._pending.values():
            future.set_exception(ConnectionError("the agent closed its stdout"))

    async def prompt(self, text: str) -> int:
        self._handled = 0
        result = await self._request(
            "session/prompt",
            {"sessionId": self._session, "prompt": [{"type": "text", "text": text}]},
        )
        _decode_prompt(result)
        return self._handled


async def spawn(updates: int, agent: str) -> TypedFloorAgent:
    return TypedFloorAgent(await _measure.spawn_python(agent, updates))


if __name__ == "__main__":
    _measure.run(spawn, "bench.acp_peers.floor_agent")
