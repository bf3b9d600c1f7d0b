"""The ACP rules the library enforces for every agent, checked on the wire (raw JSON
lines over a real socket) against small agents written for each rule."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import ClassVar

import pytest

from interlink.acp import Agent, AgentSideConnection, SessionNotFound
from interlink.acp import schema as s
from tests.aio.conftest import RawPeer, stream_pair

Json = dict[str, object]


class Peer:
    """A client written as raw JSON lines, to see exactly what the agent answers."""

    def __init__(self, raw: RawPeer) -> None:
        self.raw = raw
        self.next_id = 0
        self.notifications: list[Json] = []

    async def send(self, message: Json) -> None:
        await self.raw.send(json.dumps(message).encode())

    async def call(self, method: str, params: object = None) -> Json:
        self.next_id += 1
        message: Json = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.answer(self.next_id)

    async def answer(self, id: object) -> Json:
        while True:
            line = json.loads(await self.raw.recv())
            if "method" in line and "id" not in line:
                self.notifications.append(line)
            elif line.get("id") == id:
                assert isinstance(line, dict)
                return line

    async def notify(self, method: str, params: object) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def init(self, version: int = 1) -> Json:
        return await self.call("initialize", {"protocolVersion": version})

    async def new_session(self) -> str:
        answer = await self.call("session/new", {"cwd": "/tmp", "mcpServers": []})
        result = answer["result"]
        assert isinstance(result, dict)
        session_id = result["sessionId"]
        assert isinstance(session_id, str)
        return session_id


def error_of(answer: Json) -> tuple[object, object]:
    error = answer["error"]
    assert isinstance(error, dict), answer
    return error["code"], error.get("data")


CONFIG: list[s.SessionConfigOption] = [
    s.SessionConfigOptionSelect(
        id="model",
        name="Model",
        current_value="fast",
        options=[
            s.SessionConfigSelectOption(value="fast", name="Fast"),
            s.SessionConfigSelectOption(value="smart", name="Smart"),
        ],
    ),
    s.SessionConfigOptionBoolean(id="verbose", name="Verbose", current_value=False),
]


class RuleAgent(Agent):
    """Modes `ask`/`code`, a select option `model` (fast|smart), a boolean `verbose`."""

    def __init__(self) -> None:
        self.cancelled: list[str] = []
        self.gate = asyncio.Event()
        self.started = asyncio.Event()

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(
            protocol_version=1,
            agent_capabilities=s.AgentCapabilities(
                load_session=False,
                session_capabilities=s.SessionCapabilities(
                    delete=s.SessionDeleteCapabilities(), close=s.SessionCloseCapabilities()
                ),
            ),
        )

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(
            session_id=f"s{len(self.cancelled)}-{id(params)}",
            modes=s.SessionModeState(
                current_mode_id="ask",
                available_modes=[
                    s.SessionMode(id="ask", name="Ask"),
                    s.SessionMode(id="code", name="Code"),
                ],
            ),
            config_options=CONFIG,
        )

    async def load_session(self, params: s.LoadSessionRequest) -> s.LoadSessionResponse:
        return s.LoadSessionResponse()  # implemented, but not advertised

    async def set_session_mode(self, params: s.SetSessionModeRequest) -> s.SetSessionModeResponse:
        return s.SetSessionModeResponse()

    async def set_session_config_option(
        self, params: s.SetSessionConfigOptionRequest
    ) -> s.SetSessionConfigOptionResponse:
        return s.SetSessionConfigOptionResponse(config_options=CONFIG)  # (always all of it)

    async def delete_session(self, params: s.DeleteSessionRequest) -> s.DeleteSessionResponse:
        raise SessionNotFound(params.session_id)

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        self.started.set()
        await self.gate.wait()
        return s.PromptResponse(stop_reason="end_turn")

    async def cancel(self, params: s.CancelNotification) -> None:
        self.cancelled.append(params.session_id)

    async def ext_method(self, method: str, params: object) -> object:
        if method == "_test/echo":
            return {"echo": params}
        return await super().ext_method(method, params)


@pytest.fixture
async def served() -> AsyncIterator[tuple[RuleAgent, Peer]]:
    (r1, w1), (r2, w2) = await stream_pair()
    agent = RuleAgent()
    connection = AgentSideConnection(agent, r1, w1)
    raw = RawPeer(r2, w2)
    async with connection, asyncio.timeout(10):
        yield agent, Peer(raw)
        await raw.close()


async def test_requests_before_initialize_are_32600(served: tuple[RuleAgent, Peer]) -> None:
    _, peer = served
    assert error_of(await peer.call("session/new", {"cwd": "/", "mcpServers": []}))[0] == -32600
    assert (await peer.init())["result"]
    second = await peer.init()
    assert error_of(second)[0] == -32600


@pytest.mark.parametrize(("requested", "answered"), [(1, 1), (99, 1), (0, 1)])
async def test_version_negotiation(
    served: tuple[RuleAgent, Peer], requested: int, answered: int
) -> None:
    _, peer = served
    result = (await peer.init(requested))["result"]
    assert isinstance(result, dict)
    assert result["protocolVersion"] == answered


async def test_unknown_unimplemented_and_ungated_methods_are_32601(
    served: tuple[RuleAgent, Peer],
) -> None:
    _, peer = served
    await peer.init()
    session = await peer.new_session()
    assert error_of(await peer.call("session/fly", {}))[0] == -32601
    # implemented but not advertised (loadSession false), or not implemented at all
    load = {"sessionId": session, "cwd": "/", "mcpServers": []}
    assert error_of(await peer.call("session/load", load))[0] == -32601
    assert error_of(await peer.call("session/list", {}))[0] == -32601
    assert error_of(await peer.call("authenticate", {"methodId": "x"})) == (
        -32601,
        {"method": "authenticate"},
    )
    assert error_of(await peer.call("_vendor/unknown", {}))[0] == -32601
    assert (await peer.call("_test/echo", {"a": 1}))["result"] == {"echo": {"a": 1}}
    await peer.notify("_vendor/ignored", {})
    await peer.notify("session/unknown_notification", {})
    assert "result" in await peer.call("session/set_mode", {"sessionId": session, "modeId": "code"})


async def test_unknown_sessions_are_32002_with_the_session_id(
    served: tuple[RuleAgent, Peer],
) -> None:
    _, peer = served
    await peer.init()
    for method, params in [
        ("session/prompt", {"sessionId": "nope", "prompt": []}),
        ("session/set_mode", {"sessionId": "nope", "modeId": "ask"}),
        ("session/set_config_option", {"sessionId": "nope", "configId": "model", "value": "fast"}),
        ("session/close", {"sessionId": "nope"}),
    ]:
        assert error_of(await peer.call(method, params)) == (-32002, {"sessionId": "nope"}), method
    # deleting what does not exist succeeds
    assert (await peer.call("session/delete", {"sessionId": "nope"}))["result"] == {}


async def test_bad_params_modes_and_config_values_are_32602(
    served: tuple[RuleAgent, Peer],
) -> None:
    _, peer = served
    await peer.init()
    session = await peer.new_session()
    code, data = error_of(await peer.call("session/new", {"cwd": 5, "mcpServers": []}))
    assert code == -32602
    assert "$.cwd" in str(data)
    assert (
        error_of(await peer.call("session/set_mode", {"sessionId": session, "modeId": "fly"}))[0]
        == -32602
    )
    bad_id = {"sessionId": session, "configId": "colour", "value": "red"}
    assert error_of(await peer.call("session/set_config_option", bad_id))[0] == -32602
    bad_value = {"sessionId": session, "configId": "model", "value": "huge"}
    assert error_of(await peer.call("session/set_config_option", bad_value))[0] == -32602
    good = {"sessionId": session, "configId": "model", "value": "smart"}
    assert "result" in await peer.call("session/set_config_option", good)
    boolean = {"sessionId": session, "configId": "verbose", "type": "boolean", "value": True}
    assert "result" in await peer.call("session/set_config_option", boolean)


async def test_session_cancel_ends_the_prompt_with_cancelled(
    served: tuple[RuleAgent, Peer],
) -> None:
    agent, peer = served
    await peer.init()
    session = await peer.new_session()
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": "p",
            "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]},
        }
    )
    await agent.started.wait()
    await peer.notify("session/cancel", {"sessionId": session})
    answer = await peer.answer("p")
    assert answer["result"] == {"stopReason": "cancelled"}
    assert agent.cancelled == [session]


async def test_cancel_request_on_a_prompt_is_32800(served: tuple[RuleAgent, Peer]) -> None:
    agent, peer = served
    await peer.init()
    session = await peer.new_session()
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": 41,
            "method": "session/prompt",
            "params": {"sessionId": session, "prompt": []},
        }
    )
    await agent.started.wait()
    await peer.notify("$/cancel_request", {"requestId": 41})
    assert error_of(await peer.answer(41))[0] == -32800
    # the session is free again
    agent.gate.set()
    assert (await peer.call("session/prompt", {"sessionId": session, "prompt": []}))["result"] == {
        "stopReason": "end_turn"
    }


async def test_a_second_concurrent_prompt_is_refused(served: tuple[RuleAgent, Peer]) -> None:
    agent, peer = served
    await peer.init()
    session = await peer.new_session()
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": "a",
            "method": "session/prompt",
            "params": {"sessionId": session, "prompt": []},
        }
    )
    await agent.started.wait()
    assert (
        error_of(await peer.call("session/prompt", {"sessionId": session, "prompt": []}))[0]
        == -32600
    )
    agent.gate.set()
    assert (await peer.answer("a"))["result"] == {"stopReason": "end_turn"}


class LockedAgent(RuleAgent):
    requires_authentication: ClassVar[bool] = True

    async def authenticate(self, params: s.AuthenticateRequest) -> s.AuthenticateResponse:
        if params.method_id != "token":
            raise SessionNotFound("not-a-session")  # any error: authentication failed
        return s.AuthenticateResponse()


async def test_agents_that_require_authentication_answer_32000_until_it_succeeds() -> None:
    (r1, w1), (r2, w2) = await stream_pair()
    raw = RawPeer(r2, w2)
    peer = Peer(raw)
    async with AgentSideConnection(LockedAgent(), r1, w1), asyncio.timeout(10):
        await peer.init()
        new = {"cwd": "/", "mcpServers": []}
        assert error_of(await peer.call("session/new", new))[0] == -32000
        assert "error" in await peer.call("authenticate", {"methodId": "wrong"})
        assert error_of(await peer.call("session/new", new))[0] == -32000
        assert "result" in await peer.call("authenticate", {"methodId": "token"})
        assert "result" in await peer.call("session/new", new)
        await raw.close()


class ForkingAgent(RuleAgent):
    """Advertises `sessionCapabilities.fork` (unstable) and implements `session/fork`."""

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(
            protocol_version=1,
            agent_capabilities=s.AgentCapabilities(
                extra={"sessionCapabilities": {"fork": {}}},
            ),
        )

    async def session_fork(self, params: object) -> object:
        from interlink.acp import _schema_unstable as u

        assert isinstance(params, u.ForkSessionRequest)
        return u.ForkSessionResponse(session_id=params.session_id + "-fork")


@pytest.mark.parametrize("unstable", [False, True])
async def test_unstable_methods_exist_only_on_opt_in(unstable: bool) -> None:
    (r1, w1), (r2, w2) = await stream_pair()
    raw = RawPeer(r2, w2)
    peer = Peer(raw)
    async with AgentSideConnection(ForkingAgent(), r1, w1, unstable=unstable), asyncio.timeout(10):
        await peer.init()
        session = await peer.new_session()
        answer = await peer.call("session/fork", {"sessionId": session, "cwd": "/tmp"})
        if unstable:
            assert answer["result"] == {"sessionId": session + "-fork"}
        else:
            assert error_of(answer)[0] == -32601
        await raw.close()


async def test_prompt_content_the_agent_did_not_advertise_is_32602(
    served: tuple[RuleAgent, Peer],
) -> None:
    """prompt-turn: "Clients MUST restrict types of content according to the Prompt
    Capabilities"; an agent on interlink refuses what it did not advertise (no image,
    audio or embedded context here) before its handler sees it. Text and resource links
    need no capability."""
    agent, peer = served
    await peer.init()
    session = await peer.new_session()
    text = {"type": "text", "text": "look"}
    for index, block in enumerate(
        [
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "a"}},
        ]
    ):
        prompt = [text] * index + [block]
        code, data = error_of(
            await peer.call("session/prompt", {"sessionId": session, "prompt": prompt})
        )
        assert code == -32602, block
        assert isinstance(data, dict)
        assert data["index"] == index
    assert not agent.started.is_set()  # the handler never saw them
    agent.gate.set()
    link = {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"}
    answer = await peer.call("session/prompt", {"sessionId": session, "prompt": [text, link]})
    assert answer["result"] == {"stopReason": "end_turn"}
