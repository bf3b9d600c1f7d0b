"""The initialisation gate over real pipes: what is written in one write together with
`initialize` waits for it and is then served (or refused with -32600 when it failed);
what comes with no `initialize` before it is refused (DECISIONS.md, ACP v1)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from interlink.acp import Agent, AgentSideConnection
from interlink.acp import schema as s
from interlink.jsonrpc import RpcError

pytestmark = pytest.mark.any_loop

Json = dict[str, object]


def line(id: object, method: str, params: object) -> bytes:
    message: Json = {"jsonrpc": "2.0", "method": method, "params": params}
    if id is not None:
        message["id"] = id
    return json.dumps(message).encode() + b"\n"


INIT = line("i", "initialize", {"protocolVersion": 1})
NEW = line("n", "session/new", {"cwd": "/tmp", "mcpServers": []})


class GateAgent(Agent):
    """Logs what it is asked, in order; `initialize` can be held and made to fail."""

    def __init__(self, *, hold: bool = False) -> None:
        self.log: list[str] = []
        self.release = asyncio.Event()
        self.entered = asyncio.Event()
        self.noted = asyncio.Event()  # an `_test/last` notification was handled
        self.fail = False
        if not hold:
            self.release.set()

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        self.entered.set()
        await self.release.wait()
        self.log.append("initialize")
        if self.fail:
            raise RpcError.internal_error({"detail": "cannot start"})
        return s.InitializeResponse(protocol_version=1)

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        self.log.append("session/new")
        return s.NewSessionResponse(session_id="s1")

    async def cancel(self, params: s.CancelNotification) -> None:
        self.log.append(f"cancel {params.session_id}")

    async def ext_notification(self, method: str, params: object) -> None:
        self.log.append(method)
        if method == "_test/last":
            self.noted.set()


class Wire:
    """The client end of two pipes, in raw bytes."""

    def __init__(self, reader: asyncio.StreamReader, write_fd: int) -> None:
        self.reader = reader
        self.write_fd = write_fd

    def write(self, data: bytes) -> None:
        """All of `data` in one write(2) (it is far below the pipe's capacity)."""
        assert os.write(self.write_fd, data) == len(data)

    async def recv(self) -> Json:
        raw = await asyncio.wait_for(self.reader.readline(), 10)
        assert raw, "the agent closed its output"
        value = json.loads(raw)
        assert isinstance(value, dict)
        return value

    async def answers(self, count: int) -> list[Json]:
        """The next `count` answers, in the order they were written."""
        return [await self.recv() for _ in range(count)]


class _Protocol(asyncio.StreamReaderProtocol):
    """A pipe end whose closing can be awaited (the fd is free for reuse after it)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        super().__init__(reader)
        self.lost = asyncio.Event()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.lost.set()


async def _read_end(fd: int) -> tuple[asyncio.StreamReader, asyncio.ReadTransport, _Protocol]:
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_read_pipe(
        lambda: _Protocol(reader), os.fdopen(fd, "rb", 0)
    )
    return reader, transport, protocol


@asynccontextmanager
async def piped(agent: Agent) -> AsyncIterator[Wire]:
    """`agent` served on one pipe pair (as on stdio), the client end as a `Wire`."""
    to_agent_r, to_agent_w = os.pipe()
    to_client_r, to_client_w = os.pipe()
    loop = asyncio.get_running_loop()
    agent_in, in_transport, in_protocol = await _read_end(to_agent_r)
    out_transport, out_protocol = await loop.connect_write_pipe(
        lambda: _Protocol(asyncio.StreamReader()), os.fdopen(to_client_w, "wb", 0)
    )
    agent_out = asyncio.StreamWriter(out_transport, out_protocol, None, loop)
    client_in, client_transport, client_protocol = await _read_end(to_client_r)
    try:
        async with AgentSideConnection(agent, agent_in, agent_out), asyncio.timeout(20):
            yield Wire(client_in, to_agent_w)
    finally:
        os.close(to_agent_w)
        async with asyncio.timeout(10):
            for transport, protocol in (
                (in_transport, in_protocol),
                (client_transport, client_protocol),
            ):
                transport.close()
                await protocol.lost.wait()


def error_of(answer: Json) -> tuple[object, object]:
    error = answer.get("error")
    assert isinstance(error, dict), answer
    return error["code"], error.get("data")


async def test_a_request_in_the_same_write_as_initialize_is_served_every_time() -> None:
    for _ in range(20):
        agent = GateAgent()
        async with piped(agent) as wire:
            wire.write(INIT + NEW)
            init, new = await wire.answers(2)
            assert init["id"] == "i"  # the initialize answer comes first
            assert init["result"] == {"protocolVersion": 1}
            assert new == {"jsonrpc": "2.0", "id": "n", "result": {"sessionId": "s1"}}
            assert agent.log == ["initialize", "session/new"]


async def test_what_comes_while_initialize_is_handled_waits_for_it_in_order() -> None:
    agent = GateAgent(hold=True)
    async with piped(agent) as wire:
        wire.write(
            INIT
            + line(None, "session/cancel", {"sessionId": "a"})
            + NEW
            + line(None, "_test/note", {})
            + line(None, "session/cancel", {"sessionId": "b"})
            + line(None, "_test/last", {})
        )
        await agent.entered.wait()
        assert agent.log == []  # nothing ran ahead of initialize
        agent.release.set()
        answers = {a["id"]: a for a in await wire.answers(2)}
        assert "result" in answers["i"]
        assert answers["n"]["result"] == {"sessionId": "s1"}
        await agent.noted.wait()
        assert agent.log[0] == "initialize"
        notes = [entry for entry in agent.log if entry != "session/new"]
        assert notes == ["initialize", "cancel a", "_test/note", "cancel b", "_test/last"]


async def test_a_second_initialize_while_the_first_is_handled_is_32600_at_once() -> None:
    agent = GateAgent(hold=True)
    async with piped(agent) as wire:
        wire.write(INIT + line("i2", "initialize", {"protocolVersion": 1}))
        second = await wire.recv()  # answered while the first is still held
        assert second["id"] == "i2"
        assert error_of(second)[0] == -32600
        agent.release.set()
        assert "result" in await wire.recv()


async def test_when_initialize_fails_what_waited_for_it_is_32600_and_a_retry_works() -> None:
    agent = GateAgent(hold=True)
    agent.fail = True
    async with piped(agent) as wire:
        wire.write(INIT + line(None, "session/cancel", {"sessionId": "a"}) + NEW)
        await agent.entered.wait()
        agent.release.set()
        init, new = await wire.answers(2)
        assert (init["id"], error_of(init)) == ("i", (-32603, {"detail": "cannot start"}))
        assert new["id"] == "n"
        assert error_of(new) == (-32600, {"detail": "the initialize before this request failed"})
        agent.fail = False  # the gate is as it was: initialize may be sent again
        wire.write(INIT + NEW + line(None, "_test/last", {}))
        init, new = await wire.answers(2)
        assert "result" in init
        assert new["result"] == {"sessionId": "s1"}
        await agent.noted.wait()
        # the cancel that waited for the failed initialize was dropped, not delivered late
        assert "cancel a" not in agent.log


async def test_initialize_with_bad_params_and_a_request_in_one_write() -> None:
    async with piped(GateAgent()) as wire:
        wire.write(line("i", "initialize", {"protocolVersion": "one"}) + NEW)
        init, new = await wire.answers(2)
        assert error_of(init)[0] == -32602
        assert error_of(new)[0] == -32600
        wire.write(INIT + NEW)
        assert [("result" in a) for a in await wire.answers(2)] == [True, True]


async def test_with_no_initialize_before_it_a_request_is_still_32600() -> None:
    agent = GateAgent()
    async with piped(agent) as wire:
        wire.write(NEW)
        assert error_of(await wire.recv()) == (-32600, {"detail": "initialize first"})
        # before initialize in the same write: still refused; initialize then works
        wire.write(line("x", "_test/echo", {}) + INIT + line(None, "_test/last", {}))
        refused, init = await wire.answers(2)
        assert (refused["id"], error_of(refused)[0]) == ("x", -32600)
        assert "result" in init
        await agent.noted.wait()
        assert "session/new" not in agent.log


class AskingAgent(GateAgent):
    """`initialize` asks the client something before answering."""

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        self.log.append(f"asked: {await self.client.ext_method('_test/ask', {})}")
        return s.InitializeResponse(protocol_version=1)


async def test_initialize_that_asks_the_client_gets_its_answer_behind_a_waiting_note() -> None:
    """A notification written with `initialize` waits for it; the answer to what the
    `initialize` handler asks the client must not wait behind that notification (it
    did: a deadlock)."""
    agent = AskingAgent()
    async with piped(agent) as wire:
        wire.write(INIT + line(None, "_test/last", {}))
        ask = await wire.recv()
        assert ask["method"] == "_test/ask"
        wire.write(
            json.dumps({"jsonrpc": "2.0", "id": ask["id"], "result": "yes"}).encode() + b"\n"
        )
        init = await wire.recv()
        assert init["id"] == "i"
        assert "result" in init
        await agent.noted.wait()
        assert agent.log == ["asked: yes", "_test/last"]
