"""Edges of the ACP side: lifecycle, cancellation, ordering, gates both ways, frame
limits, half-closed pipes, spawned agents that misbehave, and `LocalClient` edges.

Hangs are detected by waiting on the awaited event with a bound (`within`), never by
sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from interlink.acp import (
    Agent,
    AgentExited,
    AgentSideConnection,
    Client,
    ClientSideConnection,
    LocalClient,
    TerminalHandle,
    spawn_agent,
)
from interlink.acp import schema as s
from interlink.jsonrpc import (
    InvalidParams,
    MethodNotFound,
    ProtocolMisuse,
    ResourceNotFound,
    RpcError,
)
from tests.aio.conftest import RawPeer, stream_pair

Json = dict[str, Any]
T = TypeVar("T")
PY = sys.executable
HANG = 3.0  # seconds an answer may take before the test calls it a hang


async def within(awaitable: Awaitable[T], what: str, seconds: float = HANG) -> T:
    """`awaitable`'s result; a hang (no answer in `seconds`) fails the test."""
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except TimeoutError:
        pytest.fail(f"hang: {what}")


class Wire:
    """One side of an ACP connection written as raw JSON lines."""

    def __init__(self, raw: RawPeer) -> None:
        self.raw = raw
        self.notifications: list[Json] = []
        self.requests: list[Json] = []

    async def send(self, message: Json) -> None:
        await self.raw.send(json.dumps(message).encode())

    async def call(self, id: int | str, method: str, params: object) -> Json:
        await self.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        return await self.answer(id)

    async def answer(self, id: object) -> Json:
        while True:
            line: Json = json.loads(await self.raw.recv())
            if "method" in line:
                (self.requests if "id" in line else self.notifications).append(line)
            elif line.get("id") == id:
                return line

    async def init(self) -> None:
        answer = await self.call("init", "initialize", {"protocolVersion": 1})
        assert "result" in answer, answer


def code_of(answer: Json) -> object:
    error = answer.get("error")
    assert isinstance(error, dict), answer
    return error["code"]


@contextlib.asynccontextmanager
async def connected(
    agent: Agent, client: Client, *, seconds: float = 9
) -> AsyncIterator[ClientSideConnection]:
    """`agent` served to `client` over a socket pair."""
    (r1, w1), (r2, w2) = await stream_pair()
    conn = ClientSideConnection(client, r2, w2)
    async with AgentSideConnection(agent, r1, w1), conn, asyncio.timeout(seconds):
        yield conn


@contextlib.asynccontextmanager
async def raw_client(agent: Agent) -> AsyncIterator[tuple[AgentSideConnection, Wire]]:
    """`agent` served to a client written as raw lines."""
    (r1, w1), (r2, w2) = await stream_pair()
    raw = RawPeer(r2, w2)
    connection = AgentSideConnection(agent, r1, w1)
    try:
        async with connection, asyncio.timeout(9):
            yield connection, Wire(raw)
    finally:
        await raw.close()


@contextlib.asynccontextmanager
async def raw_agent(client: Client) -> AsyncIterator[tuple[ClientSideConnection, Wire]]:
    """`client` connected to an agent written as raw lines."""
    (r1, w1), (r2, w2) = await stream_pair()
    raw = RawPeer(r1, w1)
    conn = ClientSideConnection(client, r2, w2)
    try:
        async with conn, asyncio.timeout(9):
            yield conn, Wire(raw)
    finally:
        await raw.close()


async def answer_initialize(wire: Wire, result: Json | None = None) -> None:
    request: Json = json.loads(await wire.raw.recv())
    assert request["method"] == "initialize"
    await wire.send(
        {"jsonrpc": "2.0", "id": request["id"], "result": result or {"protocolVersion": 1}}
    )


class SessionAgent(Agent):
    """One session `s1`; its prompt blocks until `release` is set (or is cancelled)."""

    capabilities = s.AgentCapabilities(
        load_session=True,
        session_capabilities=s.SessionCapabilities(
            close=s.SessionCloseCapabilities(), delete=s.SessionDeleteCapabilities()
        ),
    )

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.prompts: list[s.PromptRequest] = []
        self.calls: list[str] = []

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(protocol_version=1, agent_capabilities=self.capabilities)

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(session_id="s1")

    async def delete_session(self, params: s.DeleteSessionRequest) -> s.DeleteSessionResponse:
        self.calls.append("session/delete")
        return s.DeleteSessionResponse()

    async def close_session(self, params: s.CloseSessionRequest) -> s.CloseSessionResponse:
        self.calls.append("session/close")
        return s.CloseSessionResponse()

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        self.prompts.append(params)
        self.started.set()
        await self.release.wait()
        return s.PromptResponse(stop_reason="end_turn")


# -- initialisation ------------------------------------------------------------------------


@pytest.mark.parametrize("params", [{"protocolVersion": "1.0.0"}, {}, {"protocolVersion": 70000}])
async def test_a_malformed_initialize_does_not_brick_the_connection(params: Json) -> None:
    async with raw_client(SessionAgent()) as (_, wire):
        assert code_of(await wire.call(1, "initialize", params)) == -32602
        retry = await wire.call(2, "initialize", {"protocolVersion": 1})
        assert retry.get("result", {}).get("protocolVersion") == 1, retry


async def test_a_second_initialize_while_the_first_waits_is_refused_locally() -> None:
    async with raw_agent(Client()) as (conn, wire):
        first = asyncio.create_task(conn.initialize())
        await asyncio.sleep(0)  # (one turn: the first call is on its way)
        with pytest.raises(ProtocolMisuse):
            await conn.initialize()
        await answer_initialize(wire)
        assert (await first).protocol_version == 1


async def test_cancel_before_initialize_is_refused_locally() -> None:
    async with raw_agent(Client()) as (conn, _):
        with pytest.raises(ProtocolMisuse):
            await conn.cancel("s1")


@pytest.mark.parametrize("cwd", [".", "src/app", "", "~/work", Path("relative")])
async def test_a_relative_cwd_is_refused_locally_naming_the_path(cwd: str | Path) -> None:
    sessions: Json = {"list": {}, "resume": {}}
    async with raw_agent(Client()) as (conn, wire):
        init = asyncio.create_task(conn.initialize())
        caps = {"loadSession": True, "sessionCapabilities": sessions}
        await answer_initialize(wire, {"protocolVersion": 1, "agentCapabilities": caps})
        await init
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: conn.new_session(cwd),
            lambda: conn.load_session("s1", cwd),
            lambda: conn.resume_session("s1", cwd),
            lambda: conn.list_sessions(cwd=cwd),
        ]
        for call in calls:
            with pytest.raises(ProtocolMisuse) as info:
                await call()
            assert f"cwd {str(cwd)!r} is a relative path" in str(info.value)
            assert "ACP requires an absolute one" in str(info.value)
        # nothing went out: the next line the agent reads is the call with an absolute path
        new = asyncio.create_task(conn.new_session(Path("/tmp")))
        request: Json = json.loads(await wire.raw.recv())
        assert (request["method"], request["params"]["cwd"]) == ("session/new", "/tmp")
        await wire.send({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": "s1"}})
        assert (await new).session_id == "s1"


class PickyAgent(SessionAgent):
    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        raise RpcError.invalid_params({"detail": f"{params.cwd} is not a project"})


async def test_an_error_from_the_agent_says_why_in_its_text() -> None:
    async with connected(PickyAgent(), Client()) as conn:
        await conn.initialize()
        with pytest.raises(InvalidParams) as bad:
            await conn.new_session("/tmp")
        assert str(bad.value) == "Invalid params (-32602): /tmp is not a project"
        with pytest.raises(ResourceNotFound) as unknown:
            await conn.prompt("nope", "hi")
        assert str(unknown.value) == "Resource not found (-32002): sessionId=nope"


# -- session lifecycle and cancellation ------------------------------------------------------


async def test_session_close_during_a_prompt_answers_it_cancelled_and_forgets_the_session() -> None:
    agent = SessionAgent()
    async with connected(agent, Client()) as conn:
        await conn.initialize()
        await conn.new_session("/tmp")
        turn = asyncio.create_task(conn.prompt("s1", "hi"))
        await agent.started.wait()
        await conn.close_session("s1")
        assert (await within(turn, "prompt after session/close")).stop_reason == "cancelled"
        with pytest.raises(ResourceNotFound) as info:
            await conn.prompt("s1", "again")
        assert info.value.data == {"sessionId": "s1"}
        assert agent.calls == ["session/close"]


class CancelHookAgent(SessionAgent):
    async def cancel(self, params: s.CancelNotification) -> None:
        self.calls.append(f"cancel {params.session_id}")


async def test_session_close_calls_the_cancel_hook_before_the_close_handler() -> None:
    """session-close: the agent cancels "as if `session/cancel` had been called", then
    frees what the session held."""
    agent = CancelHookAgent()
    async with connected(agent, Client()) as conn:
        await conn.initialize()
        await conn.new_session("/tmp")
        turn = asyncio.create_task(conn.prompt("s1", "hi"))
        await agent.started.wait()
        await conn.close_session("s1")
        assert (await within(turn, "prompt after session/close")).stop_reason == "cancelled"
    assert agent.calls == ["cancel s1", "session/close"]


async def test_session_delete_during_a_prompt_still_answers_the_prompt() -> None:
    agent = SessionAgent()
    async with connected(agent, Client()) as conn:
        await conn.initialize()
        await conn.new_session("/tmp")
        turn = asyncio.create_task(conn.prompt("s1", "hi"))
        await agent.started.wait()
        await conn.delete_session("s1")
        try:
            response = await within(turn, "session/prompt after session/delete")
        except RpcError:  # -32800 would do as well as a result
            return
        assert response.stop_reason == "cancelled"


async def test_a_cancel_pipelined_in_the_same_write_as_the_prompt_cancels_it() -> None:
    agent = SessionAgent()
    async with raw_client(agent) as (_, wire):
        await wire.init()
        await wire.call(1, "session/new", {"cwd": "/", "mcpServers": []})
        prompt = {"sessionId": "s1", "prompt": [{"type": "text", "text": "x"}]}
        wire.raw.writer.write(
            json.dumps(
                {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt}
            ).encode()
            + b"\n"
            + json.dumps(
                {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}
            ).encode()
            + b"\n"
        )
        await wire.raw.writer.drain()
        assert (await wire.answer(2))["result"] == {"stopReason": "cancelled"}


class AbortingAgent(SessionAgent):
    """Its model client turns the cancellation into its own exception, as many do."""

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise RuntimeError("the model request was aborted") from None
        raise AssertionError("unreachable")


class SwallowingAgent(SessionAgent):
    """Its prompt catches the cancellation and ends its turn as if nothing happened."""

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        self.started.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()
        return s.PromptResponse(stop_reason="end_turn")


@pytest.mark.parametrize(
    "kind", [AbortingAgent, SwallowingAgent], ids=["raises-its-own-error", "swallows-it"]
)
async def test_a_cancelled_prompt_answers_cancelled_whatever_its_handler_does(
    kind: type[SessionAgent],
) -> None:
    agent = kind()
    async with connected(agent, Client()) as conn:
        await conn.initialize()
        await conn.new_session("/tmp")
        turn = asyncio.create_task(conn.prompt("s1", "hi"))
        await agent.started.wait()
        await conn.cancel("s1")
        assert (await turn).stop_reason == "cancelled"


class KillOnCancelAgent(SessionAgent):
    """Runs a command in a client terminal; on `session/cancel` it kills the command."""

    def __init__(self) -> None:
        super().__init__()
        self.terminal: TerminalHandle | None = None
        self.killed = asyncio.Event()

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        self.terminal = await self.client.create_terminal(
            params.session_id, PY, ["-c", "import time; time.sleep(30)"]
        )
        self.started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def cancel(self, params: s.CancelNotification) -> None:
        assert self.terminal is not None
        await self.terminal.kill()
        self.killed.set()


async def test_an_agent_cancel_hook_that_kills_its_terminal_does_not_deadlock(
    tmp_path: Path,
) -> None:
    agent = KillOnCancelAgent()
    async with LocalClient(tmp_path) as local, connected(agent, local) as conn:
        await conn.initialize(local.capabilities())
        await conn.new_session(str(tmp_path))
        turn = asyncio.create_task(conn.prompt("s1", "run"))
        await agent.started.wait()
        await conn.cancel("s1")
        assert (await turn).stop_reason == "cancelled"
        await within(agent.killed.wait(), "the cancel hook's terminal/kill never returned")


class TalkingAgent(SessionAgent):
    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        await self.client.send_text(params.session_id, "which mode?")
        return s.PromptResponse(stop_reason="end_turn")

    async def set_session_mode(self, params: s.SetSessionModeRequest) -> s.SetSessionModeResponse:
        return s.SetSessionModeResponse()


class AskBackClient(Client):
    """Its update handler calls the agent (a UI switching mode on an update)."""

    def __init__(self) -> None:
        self.conn: ClientSideConnection | None = None

    async def session_update(self, params: s.SessionNotification) -> None:
        assert self.conn is not None
        await self.conn.set_session_mode(params.session_id, "code")


async def test_a_session_update_handler_that_calls_the_agent_does_not_deadlock() -> None:
    client = AskBackClient()
    async with connected(TalkingAgent(), client) as conn:
        client.conn = conn
        await conn.initialize()
        await conn.new_session("/tmp")
        response = await within(conn.prompt("s1", "hi"), "prompt with a handler calling back")
        assert response.stop_reason == "end_turn"


class ConfigAgent(SessionAgent):
    """Announces an explicitly empty (complete) list of config options."""

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(session_id="s1", config_options=[])

    async def set_session_config_option(
        self, params: s.SetSessionConfigOptionRequest
    ) -> s.SetSessionConfigOptionResponse:
        self.calls.append("session/set_config_option")
        return s.SetSessionConfigOptionResponse(config_options=[])


async def test_a_config_id_not_in_an_empty_option_list_is_32602() -> None:
    agent = ConfigAgent()
    async with connected(agent, Client()) as conn:
        await conn.initialize()
        await conn.new_session("/tmp")
        with pytest.raises(InvalidParams):
            await conn.set_session_config_option("s1", "colour", "red")
        assert agent.calls == []


# -- ordering ------------------------------------------------------------------------------


class ReplayAgent(SessionAgent):
    async def load_session(self, params: s.LoadSessionRequest) -> s.LoadSessionResponse:
        for i in range(3000):  # more than the inbox and outgoing queue bounds (1024)
            await self.client.send_text(params.session_id, f"{i},")
        return s.LoadSessionResponse()


class CollectingClient(Client):
    def __init__(self) -> None:
        self.texts: list[str] = []

    async def session_update(self, params: s.SessionNotification) -> None:
        await asyncio.sleep(0)  # a handler that yields
        update = params.update
        assert isinstance(update, s.AgentMessageChunk)
        assert isinstance(update.content, s.TextContent)
        self.texts.append(update.content.text)


async def test_a_replay_past_the_queue_bounds_arrives_whole_and_in_order_before_load_returns() -> (
    None
):
    client = CollectingClient()
    async with connected(ReplayAgent(), client) as conn:
        await conn.initialize()
        await conn.load_session("s1", "/tmp")
        assert client.texts == [f"{i}," for i in range(3000)]


# -- capabilities and extensions ------------------------------------------------------------


class ReadOnlyClient(Client):
    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        return s.ReadTextFileResponse(content="ok")


async def test_the_client_answers_32601_to_what_it_did_not_advertise_and_keeps_serving() -> None:
    caps = s.ClientCapabilities(
        fs=s.FileSystemCapabilities(read_text_file=True),
        elicitation=s.ElicitationCapabilities(),  # present, but no mode
    )
    async with raw_agent(ReadOnlyClient()) as (conn, wire):
        init = asyncio.create_task(conn.initialize(caps))
        await answer_initialize(wire)
        await init
        for id, method, params in [
            (1, "fs/write_text_file", {"sessionId": "s", "path": "/tmp/x", "content": ""}),
            (2, "terminal/create", {"sessionId": "s", "command": "true"}),
            (
                3,
                "elicitation/create",
                {"mode": "form", "sessionId": "s", "message": "m", "requestedSchema": {}},
            ),
            (4, "_vendor/unknown", {}),
            (5, "session/prompt", {"sessionId": "s", "prompt": []}),  # an agent method
        ]:
            assert code_of(await wire.call(id, method, params)) == -32601, method
        await wire.send({"jsonrpc": "2.0", "method": "_vendor/note", "params": {}})
        read = await wire.call(6, "fs/read_text_file", {"sessionId": "s", "path": "/tmp/x"})
        assert read["result"] == {"content": "ok"}


class ProbingAgent(SessionAgent):
    """Tries what the client did not advertise; records what was refused locally."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: list[str] = []

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        sid = params.session_id
        url = s.CreateElicitationRequestUrl(
            session_id=sid, message="m", elicitation_id="e", url="https://x"
        )
        attempts: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("write", lambda: self.client.write_text_file(sid, "/tmp/x", "")),
            ("terminal", lambda: self.client.create_terminal(sid, "true")),
            ("elicitation", lambda: self.client.create_elicitation(url)),
            ("extension", lambda: self.client.ext_method("_vendor/unknown", {})),
        ]
        for name, attempt in attempts:
            try:
                await attempt()
            except MethodNotFound:
                self.refused.append(name)
        return s.PromptResponse(stop_reason="end_turn")


async def test_gated_calls_are_refused_on_both_sides_without_reaching_the_peer() -> None:
    agent = ProbingAgent()
    agent.capabilities = s.AgentCapabilities()  # advertises nothing optional
    async with connected(agent, ReadOnlyClient()) as conn:
        await conn.initialize(
            s.ClientCapabilities(fs=s.FileSystemCapabilities(read_text_file=True))
        )
        await conn.new_session("/tmp")
        assert (await conn.prompt("s1", "probe")).stop_reason == "end_turn"
        assert agent.refused == ["write", "terminal", "elicitation", "extension"]
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: conn.close_session("s1"),
            lambda: conn.delete_session("s1"),
            lambda: conn.resume_session("s1", "/tmp"),
            lambda: conn.list_sessions(),
            lambda: conn.logout(),
            lambda: conn.load_session("s1", "/tmp"),
        ]
        for call in calls:
            with pytest.raises(MethodNotFound):
                await call()
        assert agent.calls == []


class ElicitingClient(Client):
    def __init__(self) -> None:
        self.asked: list[object] = []

    async def create_elicitation(
        self, params: s.CreateElicitationRequest
    ) -> s.CreateElicitationResponse:
        self.asked.append(params)
        return s.CreateElicitationResponseCancel()


async def test_elicitation_in_a_mode_the_client_did_not_advertise_is_32602() -> None:
    client = ElicitingClient()
    caps = s.ClientCapabilities(
        elicitation=s.ElicitationCapabilities(url=s.ElicitationUrlCapabilities())
    )
    async with raw_agent(client) as (conn, wire):
        init = asyncio.create_task(conn.initialize(caps))
        await answer_initialize(wire)
        await init
        form = {
            "mode": "form",
            "sessionId": "s",
            "message": "name?",
            "requestedSchema": {"type": "object", "properties": {}},
        }
        assert code_of(await wire.call(1, "elicitation/create", form)) == -32602
        assert client.asked == []


async def test_prompt_content_the_agent_did_not_advertise_is_not_sent() -> None:
    agent = SessionAgent()
    agent.release.set()
    async with connected(agent, Client()) as conn:
        await conn.initialize()  # the agent advertises no promptCapabilities
        await conn.new_session("/tmp")
        with contextlib.suppress(RpcError, ProtocolMisuse, ValueError):
            await conn.prompt("s1", [s.ImageContent(data="AAAA", mime_type="image/png")])
        assert agent.prompts == []


# -- transport edges -------------------------------------------------------------------------


class EchoAgent(SessionAgent):
    async def ext_method(self, method: str, params: object) -> object:
        return {"echo": method}


def ext_line(id: int, size: int) -> bytes:
    """A request line of exactly `size` bytes (without its newline)."""
    head = b'{"jsonrpc":"2.0","id":%d,"method":"_pad/echo","params":{"pad":"' % id
    tail = b'"}}'
    return head + b"a" * (size - len(head) - len(tail)) + tail


async def test_a_line_of_exactly_the_limit_passes_and_one_byte_more_is_refused() -> None:
    limit = 4096
    (r1, w1), (r2, w2) = await stream_pair()
    raw = RawPeer(r2, w2)
    wire = Wire(raw)
    connection = AgentSideConnection(EchoAgent(), r1, w1, max_message_size=limit)
    async with connection, asyncio.timeout(9):
        await wire.init()
        await raw.send(ext_line(1, limit))
        assert (await wire.answer(1))["result"] == {"echo": "_pad/echo"}
        await raw.send(ext_line(2, limit + 1))
        refused = await wire.answer(None)
        assert code_of(refused) == -32600
        assert refused["error"]["data"]["limit"] == limit
        await raw.send(ext_line(3, 100))
        assert (await wire.answer(3))["result"] == {"echo": "_pad/echo"}
        await raw.close()


class LateAgent(SessionAgent):
    """Its prompt finishes after the client closed its side; it still reports."""

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        self.started.set()
        await self.release.wait()
        await self.client.send_text(params.session_id, "late")
        return s.PromptResponse(stop_reason="end_turn")


async def test_stdin_eof_mid_prompt_still_delivers_the_turn_then_the_agent_ends() -> None:
    agent = LateAgent()
    (r1, w1), (r2, w2) = await stream_pair()
    raw = RawPeer(r2, w2)
    wire = Wire(raw)
    connection = AgentSideConnection(agent, r1, w1)
    async with connection, asyncio.timeout(9):
        await wire.init()
        await wire.call(1, "session/new", {"cwd": "/", "mcpServers": []})
        await wire.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/prompt",
                "params": {"sessionId": "s1", "prompt": []},
            }
        )
        await agent.started.wait()
        raw.writer.write_eof()  # the client closes the agent's stdin mid-request
        agent.release.set()
        assert (await wire.answer(2))["result"] == {"stopReason": "end_turn"}
        assert [n["params"]["update"]["content"]["text"] for n in wire.notifications] == ["late"]
        assert await raw.reader.read() == b""
        await within(connection.wait_closed(), "the agent did not end after stdin EOF")
        await raw.close()


# -- spawned agents ---------------------------------------------------------------------------


async def test_an_agent_that_exits_at_once_fails_initialize_with_its_code_and_stderr() -> None:
    code = "import sys; sys.stderr.write('cannot start: no API key\\n'); sys.exit(7)"
    async with asyncio.timeout(9), spawn_agent([PY, "-c", code], Client()) as proc:
        with pytest.raises(AgentExited) as info:
            await proc.agent.initialize()
    assert info.value.returncode == 7
    assert "no API key" in info.value.stderr_tail


AGENT_PRELUDE = """
import os, sys
from interlink.acp import Agent, run_agent
from interlink.acp import schema as s

class Plain(Agent):
    async def initialize(self, params):
        return s.InitializeResponse(protocol_version=1)

    async def new_session(self, params):
        return s.NewSessionResponse(session_id="p")

    async def prompt(self, params):
        await self.client.send_text(params.session_id, "pong")
        return s.PromptResponse(stop_reason="end_turn")

    async def ext_method(self, method, params):
        os.write(2, b"fatal: the extension crashed\\n")
        os._exit(3)
"""


async def test_a_banner_on_stdout_before_the_protocol_does_not_stop_the_client(
    tmp_path: Path,
) -> None:
    script = tmp_path / "banner_agent.py"
    script.write_text(
        "import os\nos.write(1, b'Starting agent v1.0 ...\\n')\n"
        + AGENT_PRELUDE
        + "run_agent(Plain())\n"
    )
    async with asyncio.timeout(9), spawn_agent([PY, str(script)], Client()) as proc:
        await proc.agent.initialize()
        session = await proc.agent.new_session("/tmp")
        _, transcript = await proc.agent.prompt_transcript(session.session_id, "ping")
        assert transcript.text == "pong"
    assert proc.returncode == 0


async def test_an_extension_call_to_an_agent_that_dies_fails_with_agent_exited(
    tmp_path: Path,
) -> None:
    script = tmp_path / "dying_agent.py"
    script.write_text(AGENT_PRELUDE + "run_agent(Plain())\n")
    async with asyncio.timeout(9), spawn_agent([PY, str(script)], Client()) as proc:
        await proc.agent.initialize()
        with pytest.raises(AgentExited) as info:
            await proc.agent.ext_method("_vendor/crash", {})
    assert info.value.returncode == 3
    assert "the extension crashed" in info.value.stderr_tail


async def test_an_agent_that_exits_leaving_a_grandchild_on_its_pipes_fails_pending_requests(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    script = tmp_path / "forking_agent.py"
    script.write_text(
        "import pathlib, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "pathlib.Path(sys.argv[1]).write_text(str(child.pid))\n"
        "sys.exit(4)\n"
    )
    async with (
        asyncio.timeout(9),
        spawn_agent([PY, str(script), str(pid_file)], Client(), close_timeout=1) as proc,
    ):
        try:
            with pytest.raises(AgentExited) as info:
                await within(proc.agent.initialize(), "initialize to an agent that exited")
            assert info.value.returncode == 4
        finally:
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)


# -- LocalClient ---------------------------------------------------------------------------


async def test_reading_a_fifo_under_the_root_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    agent = SessionAgent()
    async with LocalClient(tmp_path) as local, connected(agent, local) as conn:
        await conn.initialize(local.capabilities())
        await conn.new_session(str(tmp_path))
        read = asyncio.create_task(agent.client.read_text_file("s1", str(fifo)))
        try:
            done, _ = await asyncio.wait({read}, timeout=HANG)
            assert read in done, "hang: fs/read_text_file of a FIFO was never answered"
            with pytest.raises(RpcError):
                read.result()
        finally:
            if not read.done():  # let the stuck thread go: a writer opens and closes
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                os.close(fd)
                with contextlib.suppress(Exception):
                    await read
