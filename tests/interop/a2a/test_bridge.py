"""`interlink bridge a2a` between official SDKs: the ACP agents on the TypeScript and the
Python SDKs (`tests/interop/peers/ts_agent.mjs`, `py_agent.py`) and our example agent
behind the bridge, called by
the official Python A2A client (`a2a-sdk`, in this process) and by ours: a text turn, a
permission round trip through input-required, a cancel, a restart of the bridge. And
`interlink bridge acp` in front of the a2a-sdk agents (1.3, which lists its tasks, and
0.3, which cannot), driven by our ACP client and the official Python one: session/list
and session/load."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from interlink.a2a import types as t
from interlink.acp import LocalClient, spawn_agent
from interlink.acp import schema as acp_s
from interlink.jsonrpc import RpcError
from tests.bridge.conftest import EXAMPLE_AGENT, bridge, connected
from tests.bridge.test_bridge_acp import bridge_acp
from tests.interop.a2a.conftest import PEERS as A2A_PEERS
from tests.interop.a2a.conftest import peer_server, v03_env
from tests.interop.a2a.test_our_client import sdk_peer
from tests.interop.conftest import PeerKind, SdkPeers, run_client
from tests.serving import free_port

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

Json = dict[str, Any]


@pytest.fixture(params=["ts", "py", "example"])
def agent(request: pytest.FixtureRequest) -> list[str]:
    """The agent's command: on the TypeScript or the Python ACP SDK, or ours."""
    if request.param == "example":
        return EXAMPLE_AGENT
    peers: SdkPeers = request.getfixturevalue(f"{request.param}_sdk")
    return peers.agent_cmd


class SdkClient:
    """The official Python A2A client (a2a-sdk 1.3), its objects as ProtoJSON dicts."""

    def __init__(self, url: str, http: httpx.AsyncClient) -> None:
        from a2a.client import A2ACardResolver, ClientConfig, ClientFactory

        self.url = url
        self.http = http
        self.resolver = A2ACardResolver(http, url)
        self.factory = {
            streaming: ClientFactory(ClientConfig(streaming=streaming, httpx_client=http))
            for streaming in (True, False)
        }
        self.card: Any = None

    async def _client(self, streaming: bool) -> Any:
        if self.card is None:
            self.card = await self.resolver.get_agent_card()
        return self.factory[streaming].create(self.card)

    @staticmethod
    def _request(text: str, context_id: str = "", task_id: str = "") -> Any:
        from a2a.types import Message, Part, Role, SendMessageRequest

        message = Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
            context_id=context_id,
            task_id=task_id,
        )
        return SendMessageRequest(message=message)

    async def send(self, text: str, context_id: str = "", task_id: str = "") -> Json:
        client = await self._client(streaming=False)
        results = [
            _dict(r) async for r in client.send_message(self._request(text, context_id, task_id))
        ]
        assert len(results) == 1, results
        task: Json = results[0]["task"]
        return task

    async def stream(self, text: str, context_id: str = "") -> AsyncIterator[Json]:
        client = await self._client(streaming=True)
        async for response in client.send_message(self._request(text, context_id)):
            yield _dict(response)

    async def get(self, task_id: str) -> Json:
        from a2a.types import GetTaskRequest

        client = await self._client(streaming=False)
        return _dict(await client.get_task(GetTaskRequest(id=task_id)))

    async def cancel(self, task_id: str) -> Json:
        from a2a.types import CancelTaskRequest

        client = await self._client(streaming=False)
        return _dict(await client.cancel_task(CancelTaskRequest(id=task_id)))


def _dict(message: Any) -> Json:
    from google.protobuf import json_format

    result: Json = json_format.MessageToDict(message)
    return result


def artifact_text(task: Json) -> str:
    return "".join(p.get("text", "") for a in task.get("artifacts", []) for p in a["parts"])


def notes_in(tmp: Path, context_id: str, text: str) -> None:
    folder = tmp / "ws" / context_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.txt").write_text(text)


@pytest.mark.usefixtures("a2a_py_sdk")
async def test_the_python_sdk_client_through_the_bridge(agent: list[str], tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    async with (
        bridge(tmp_path, agent, store=store) as served,
        httpx.AsyncClient(timeout=30) as http,
    ):
        sdk = SdkClient(served.url, http)
        # a text turn
        task = await sdk.send("hello interop world")
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert artifact_text(task) == "hello interop world"
        assert (await sdk.get(task["id"]))["status"]["state"] == "TASK_STATE_COMPLETED"
        # a permission round trip: the question, then the option by its name
        notes_in(tmp_path, "perm", "four")
        asked = await sdk.send("tool notes.txt", context_id="perm")
        assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        question = asked["status"]["message"]["parts"]
        options = question[1]["data"]["permission"]["options"]
        assert [o["optionId"] for o in options] == ["allow", "reject"]
        done = await sdk.send("Allow", task_id=asked["id"])
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"
        assert artifact_text(done) == "read 4 characters"
        # a cancel, once the turn streams
        task_id = ""
        async for response in sdk.stream("slow", context_id="slow"):
            task_id = task_id or response.get("task", {}).get("id", "")
            if "artifactUpdate" in response:
                break
        canceled = await sdk.cancel(task_id)
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        # a restart of the bridge while a turn runs
        running = ""
        async for response in sdk.stream("slow", context_id="slow"):
            running = running or response.get("task", {}).get("id", "")
            if "artifactUpdate" in response:
                break
        os.kill(served.proc.pid, signal.SIGKILL)
        await served.proc.wait()
    async with (
        bridge(tmp_path, agent, store=store) as served,
        httpx.AsyncClient(timeout=30) as http,
    ):
        sdk = SdkClient(served.url, http)
        failed = await sdk.get(running)
        assert failed["status"]["state"] == "TASK_STATE_FAILED"
        assert "stopped while this task was running" in str(failed["status"]["message"])
        assert (await sdk.get(canceled["id"]))["status"]["state"] == "TASK_STATE_CANCELED"
        after = await sdk.send("after the restart", context_id="slow")
        assert after["status"]["state"] == "TASK_STATE_COMPLETED"
        assert artifact_text(after) == "after the restart"


async def test_our_client_through_the_bridge_to_the_ts_agent(
    ts_sdk: SdkPeers, tmp_path: Path
) -> None:
    async with connected(tmp_path, ts_sdk.agent_cmd) as client:
        assert client.card.name == "ts-sdk-agent"
        task = await client.send_message("hello interop world")
        assert isinstance(task, t.Task)
        assert task.status.state == t.TaskState.TASK_STATE_COMPLETED
        chunks = [p.text for a in task.artifacts for p in a.parts]
        assert "".join(str(c) for c in chunks) == "hello interop world"
        notes_in(tmp_path, "p", "abc")
        asked = await client.send_message("tool notes.txt", context_id="p")
        assert isinstance(asked, t.Task)
        assert asked.status.state == t.TaskState.TASK_STATE_INPUT_REQUIRED
        answer = t.Message(
            message_id="a",
            role=t.Role.ROLE_USER,
            task_id=asked.id,
            parts=[t.Part(data={"optionId": "reject"})],
        )
        rejected = await client.send_message(answer)
        assert isinstance(rejected, t.Task)
        assert rejected.status.state == t.TaskState.TASK_STATE_COMPLETED
        # asked again, and canceled while it asks: the agent hears `cancelled`
        again = await client.send_message("tool notes.txt", context_id="p")
        assert isinstance(again, t.Task)
        canceled = await client.cancel_task(again.id)
        assert canceled.status.state == t.TaskState.TASK_STATE_CANCELED
        async with asyncio.timeout(30):
            after = await client.send_message("free again", context_id="p")
        assert isinstance(after, t.Task)
        assert after.status.state == t.TaskState.TASK_STATE_COMPLETED


@pytest.mark.parametrize("kind", ["py", "ts"])
async def test_the_official_acp_clients_through_both_bridges(
    kind: PeerKind, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The ACP client peers on the official SDKs drive `bridge acp`, which calls `bridge
    a2a`, which drives our example ACP agent: echo and cancel come through intact."""
    request.getfixturevalue(f"{kind}_sdk")
    async with bridge(tmp_path, EXAMPLE_AGENT) as served:
        command = [sys.executable, "-m", "interlink", "bridge", "acp", served.url]
        for scenario in ("echo", "cancel"):
            out = await asyncio.to_thread(run_client, kind, command, scenario, tmp_path)
            assert out["agentInfo"]["name"] == "interlink-example-agent"
            if scenario == "echo":
                assert (out["text"], out["stopReason"]) == ("hello interop world", "end_turn")
            else:
                assert out["stopReason"] == "cancelled"
                assert out["text"].startswith("working")


# -- bridge acp: session/list and session/load from the agent's tasks ------------------------


def said_of(updates: list[Json]) -> list[tuple[str, str]]:
    """Who said what in ACP updates as the Python SDK gave them (consecutive chunks joined)."""
    turns: list[tuple[str, str]] = []
    for update in updates:
        kind = update.get("sessionUpdate")
        if kind not in ("user_message_chunk", "agent_message_chunk"):
            continue
        who, text = kind.split("_")[0], update["content"].get("text", "")
        if turns and turns[-1][0] == who:
            turns[-1] = (who, turns[-1][1] + text)
        else:
            turns.append((who, text))
    return turns


@pytest.mark.usefixtures("a2a_py_sdk", "py_sdk")
async def test_bridge_acp_lists_and_loads_the_python_sdk_agents_tasks(tmp_path: Path) -> None:
    """`bridge acp` in front of the a2a-sdk 1.3 agent (which serves ListTasks): sessions
    our ACP client opened are listed and loaded by it and by the official Python client."""
    with sdk_peer("py") as url:
        async with (
            LocalClient(tmp_path) as local,
            spawn_agent(bridge_acp(url), local, cwd=tmp_path) as agent,
        ):
            info = await agent.agent.initialize(LocalClient.capabilities())
            assert isinstance(info.agent_capabilities, acp_s.AgentCapabilities)
            assert info.agent_capabilities.load_session is True
            first = (await agent.agent.new_session(tmp_path)).session_id
            _, said = await agent.agent.prompt_transcript(first, "echo one two")
            assert said.text == "one two"
            _, said = await agent.agent.prompt_transcript(first, "ask")
            assert said.text == "say more"
            _, said = await agent.agent.prompt_transcript(first, "blue")
            assert said.text == "got blue"
            second = (await agent.agent.new_session(tmp_path)).session_id
            await agent.agent.prompt_transcript(second, "echo three")
            listed = await agent.agent.list_sessions()
            assert [i.session_id for i in listed.sessions] == [second, first]
            assert [i.title for i in listed.sessions] == ["echo three", "echo one two"]
        out = await asyncio.to_thread(
            run_client,
            "py",
            bridge_acp(url),
            "history",
            tmp_path,
            extra_args=["--session", first, "--prompt", "echo four"],
        )
    assert out["agentCapabilities"]["loadSession"] is True
    assert out["agentCapabilities"]["sessionCapabilities"]["list"] == {}
    assert [i["sessionId"] for i in out["sessions"]] == [second, first]
    assert {i["cwd"] for i in out["sessions"]} == {str(tmp_path)}
    assert all(i["updatedAt"] for i in out["sessions"])
    assert said_of(out["loaded"]) == [
        ("user", "echo one two"),
        ("agent", "one two"),
        ("user", "ask"),
        ("agent", "say more"),
        ("user", "blue"),
        ("agent", "got blue"),
    ]
    assert (out["stopReason"], out["text"]) == ("end_turn", "four")  # (in that context)


async def test_bridge_acp_offers_no_history_without_list_tasks(
    a2a_v03_sdk: Path, tmp_path: Path
) -> None:
    """An A2A 0.3 agent (a2a-sdk 0.3.26) has no ListTasks: neither session/list nor
    session/load is advertised, and session/list answers -32601."""
    port = free_port()
    cmd = [sys.executable, str(A2A_PEERS / "py_v03_server.py"), str(port)]
    with peer_server(cmd, f"http://127.0.0.1:{port}/", v03_env(a2a_v03_sdk)) as url:
        async with (
            LocalClient(tmp_path) as local,
            spawn_agent(bridge_acp(url), local, cwd=tmp_path) as agent,
        ):
            info = await agent.agent.initialize(LocalClient.capabilities())
            caps = info.agent_capabilities
            assert isinstance(caps, acp_s.AgentCapabilities)
            assert caps.load_session is False
            assert isinstance(caps.session_capabilities, acp_s.SessionCapabilities)
            assert caps.session_capabilities.list_ is msgspec.UNSET
            session = (await agent.agent.new_session(tmp_path)).session_id
            _, said = await agent.agent.prompt_transcript(session, "echo still works")
            assert said.text == "still works"
            with pytest.raises(RpcError) as refused:
                await agent.agent.list_sessions()
            assert refused.value.code == -32601
