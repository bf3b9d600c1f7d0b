"""The client side against real agents: typed calls, ordering, gates both ways,
cancellation of pending permission requests, forward compatibility, version checks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from interlink.acp import (
    Agent,
    AgentSideConnection,
    Client,
    ClientSideConnection,
    ProtocolVersionError,
)
from interlink.acp import schema as s
from interlink.acp._codec import UnknownVariant
from interlink.jsonrpc import MethodNotFound
from tests.aio.conftest import RawPeer, stream_pair


class ToolAgent(Agent):
    """Streams numbered chunks; `perm` asks permission; `read` reads a file."""

    def __init__(self) -> None:
        self.errors: list[BaseException] = []

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(protocol_version=1)

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(session_id="s1")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        text = "".join(b.text for b in params.prompt if isinstance(b, s.TextContent))
        if text == "perm":
            answer = await self.client.request_permission(
                params.session_id,
                s.ToolCallUpdate(tool_call_id="t"),
                [s.PermissionOption(option_id="ok", name="OK", kind="allow_once")],
            )
            kind = type(answer.outcome).__name__
            await self.client.send_text(params.session_id, kind)
        elif text == "read":
            try:
                await self.client.read_text_file(params.session_id, "/etc/hostname")
            except MethodNotFound as exc:
                self.errors.append(exc)
                await self.client.send_text(params.session_id, "not allowed")
        else:
            for i in range(100):
                await self.client.send_text(params.session_id, f"{i},")
        return s.PromptResponse(stop_reason="end_turn")


class SlowClient(Client):
    def __init__(self) -> None:
        self.updates: list[object] = []
        self.updated = asyncio.Event()
        self.asked = asyncio.Event()

    async def session_update(self, params: s.SessionNotification) -> None:
        await asyncio.sleep(0)  # a handler that yields must still keep the order
        self.updates.append(params.update)
        self.updated.set()

    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        self.asked.set()
        await asyncio.Event().wait()  # the person never answers
        raise AssertionError("unreachable")


@pytest.fixture
async def pair() -> AsyncIterator[tuple[ToolAgent, SlowClient, ClientSideConnection]]:
    (r1, w1), (r2, w2) = await stream_pair()
    agent, client = ToolAgent(), SlowClient()
    connection = ClientSideConnection(client, r2, w2)
    async with AgentSideConnection(agent, r1, w1), connection, asyncio.timeout(10):
        yield agent, client, connection


async def test_every_update_is_handled_in_order_before_prompt_returns(
    pair: tuple[ToolAgent, SlowClient, ClientSideConnection],
) -> None:
    _, client, conn = pair
    await conn.initialize()
    session = await conn.new_session("/tmp")
    response, transcript = await conn.prompt_transcript(session.session_id, "go")
    assert response.stop_reason == "end_turn"
    assert len(client.updates) == 100
    assert transcript.text == "".join(f"{i}," for i in range(100))
    assert transcript.stop_reason == "end_turn"


async def test_cancel_answers_pending_permission_requests_cancelled(
    pair: tuple[ToolAgent, SlowClient, ClientSideConnection],
) -> None:
    _, client, conn = pair
    await conn.initialize()
    session = (await conn.new_session("/tmp")).session_id
    turn = asyncio.create_task(conn.prompt(session, "perm"))
    await client.asked.wait()
    await conn.cancel(session)
    assert (await turn).stop_reason == "cancelled"


async def test_the_permission_answer_on_the_wire_is_cancelled() -> None:
    (r1, w1), (r2, w2) = await stream_pair()
    raw = RawPeer(r1, w1)
    client = SlowClient()
    conn = ClientSideConnection(client, r2, w2)
    async with conn, asyncio.timeout(10):
        init = asyncio.create_task(conn.initialize())
        request = json.loads(await raw.recv())
        await raw.send(b'{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":1}}' % request["id"])
        await init
        ask = {
            "sessionId": "s1",
            "toolCall": {"toolCallId": "t"},
            "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}],
        }
        await raw.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": 9, "method": "session/request_permission", "params": ask}
            ).encode()
        )
        await client.asked.wait()
        await conn.cancel("s1")
        lines = [json.loads(await raw.recv()) for _ in range(2)]
        assert {
            "jsonrpc": "2.0",
            "method": "session/cancel",
            "params": {"sessionId": "s1"},
        } in lines
        assert {"jsonrpc": "2.0", "id": 9, "result": {"outcome": {"outcome": "cancelled"}}} in lines
        await raw.close()


class AllowingClient(Client):
    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        return s.RequestPermissionResponse(
            outcome=s.SelectedPermissionOutcome(option_id=params.options[0].option_id)
        )


async def test_answered_permission_requests_leave_no_entry_behind() -> None:
    """An agent asking about ever new session ids must not grow the client's memory:
    the per-session set of pending permission requests goes once it is empty."""
    (r1, w1), (r2, w2) = await stream_pair()
    raw = RawPeer(r1, w1)
    conn = ClientSideConnection(AllowingClient(), r2, w2)
    async with conn, asyncio.timeout(10):
        init = asyncio.create_task(conn.initialize())
        request = json.loads(await raw.recv())
        await raw.send(b'{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":1}}' % request["id"])
        await init
        for i in range(20):
            ask = {
                "sessionId": f"s{i}",
                "toolCall": {"toolCallId": "t"},
                "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}],
            }
            call = {"jsonrpc": "2.0", "id": i, "method": "session/request_permission"}
            await raw.send(json.dumps({**call, "params": ask}).encode())
            answer = json.loads(await raw.recv())
            assert answer["result"]["outcome"]["outcome"] == "selected"
        assert conn._permissions == {}
        await raw.close()


async def test_calls_the_peer_did_not_advertise_fail_locally_with_32601(
    pair: tuple[ToolAgent, SlowClient, ClientSideConnection],
) -> None:
    agent, _, conn = pair
    await conn.initialize()  # no fs capability advertised
    session = (await conn.new_session("/tmp")).session_id
    _, transcript = await conn.prompt_transcript(session, "read")
    assert transcript.text == "not allowed"
    assert agent.errors
    assert isinstance(agent.errors[0], MethodNotFound)
    with pytest.raises(MethodNotFound, match="loadSession"):
        await conn.load_session(session, "/tmp")


async def test_unknown_update_variants_and_fields_reach_the_client() -> None:
    (r1, w1), (r2, w2) = await stream_pair()
    raw = RawPeer(r1, w1)
    client = SlowClient()
    conn = ClientSideConnection(client, r2, w2)
    async with conn, asyncio.timeout(10):
        init = asyncio.create_task(conn.initialize())
        request = json.loads(await raw.recv())
        await raw.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "result": {"protocolVersion": 1, "future": 1},
                }
            ).encode()
        )
        assert (await init).extra == {"future": 1}
        future_update = {"sessionUpdate": "hologram", "beam": [1, 2]}
        await raw.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": "s", "update": future_update, "_meta": {"k": "v"}},
                }
            ).encode()
        )
        # a request after it is answered only once the update was handled
        await raw.send(b'{"jsonrpc":"2.0","id":"x","method":"fs/read_text_file","params":{}}')
        answer = json.loads(await raw.recv())
        assert answer["error"]["code"] == -32601  # fs not advertised
        await client.updated.wait()
        update = client.updates[0]
        assert isinstance(update, UnknownVariant)
        assert update.tag == "hologram"
        assert update.data == future_update
        await raw.close()


async def test_an_agent_speaking_another_version_is_refused() -> None:
    (r1, w1), (r2, w2) = await stream_pair()
    raw = RawPeer(r1, w1)
    conn = ClientSideConnection(Client(), r2, w2)
    async with conn, asyncio.timeout(10):
        init = asyncio.create_task(conn.initialize())
        request = json.loads(await raw.recv())
        await raw.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": 7}}
            ).encode()
        )
        with pytest.raises(ProtocolVersionError, match="version 7"):
            await init
        await raw.close()


async def test_handlers_can_be_registered_instead_of_subclassing() -> None:
    from interlink.acp import methods

    agent = Agent()

    @agent.on(methods.INITIALIZE)
    async def initialize(params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(protocol_version=1)

    @agent.on(methods.NEW_SESSION)
    async def new_session(params: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(session_id="registered")

    @agent.on(methods.PROMPT)
    async def prompt(params: s.PromptRequest) -> s.PromptResponse:
        await agent.client.send_text(params.session_id, "from a registered handler")
        return s.PromptResponse(stop_reason="end_turn")

    client = Client()
    seen: list[str] = []

    @client.on(methods.SESSION_UPDATE)
    async def update(params: s.SessionNotification) -> None:
        seen.append(type(params.update).__name__)

    (r1, w1), (r2, w2) = await stream_pair()
    conn = ClientSideConnection(client, r2, w2)
    async with AgentSideConnection(agent, r1, w1), conn, asyncio.timeout(10):
        await conn.initialize()
        session = await conn.new_session("/tmp")
        assert session.session_id == "registered"
        _, transcript = await conn.prompt_transcript(session.session_id, "hi")
        assert transcript.text == "from a registered handler"
        assert seen == ["AgentMessageChunk"]
        with pytest.raises(MethodNotFound):
            await conn.set_session_mode("registered", "x")
