"""`interlink bridge a2a` between official SDKs: the ACP agents on the TypeScript and the
Python SDKs (`tests/interop/peers/ts_agent.mjs`, `py_agent.py`) and our example agent
behind the bridge, called by
the official Python A2A client (`a2a-sdk`, in this process) and by ours: a text turn, a
permission round trip through input-required, a cancel, a restart of the bridge."""

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
import pytest

from interlink.a2a import types as t
from tests.bridge.conftest import EXAMPLE_AGENT, bridge, connected
from tests.interop.conftest import PeerKind, SdkPeers, run_client

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
