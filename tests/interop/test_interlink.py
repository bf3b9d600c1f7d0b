"""interlink against the official ACP SDKs, both directions, real subprocesses:
each SDK's client against our example agent, and our client against an agent written on
each SDK — initialize, a session, streamed updates, a permission round trip with a file
read, and cancellation."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from interlink.acp import Client, spawn_agent
from interlink.acp import schema as s
from tests.interop.conftest import SdkPeers, run_client

pytestmark = pytest.mark.interop

EXAMPLE = [sys.executable, str(Path(__file__).resolve().parents[2] / "examples" / "acp_agent.py")]
NOTES = "interop notes: 42\n"


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text(NOTES)
    return tmp_path


@pytest.fixture(params=["py", "ts"])
def sdk(request: pytest.FixtureRequest) -> SdkPeers:
    peers = request.getfixturevalue(f"{request.param}_sdk")
    assert isinstance(peers, SdkPeers)
    return peers


def test_sdk_client_against_our_example_agent(sdk: SdkPeers, cwd: Path) -> None:
    report = run_client(sdk.kind, EXAMPLE, "all", cwd)
    assert report["protocolVersion"] == 1
    assert report["agentInfo"]["name"] == "interlink-example-agent"
    echo = report["echo"]
    assert echo["stopReason"] == "end_turn"
    assert echo["text"] == "hello interop world"
    chunks = [u for u in echo["updates"] if u["sessionUpdate"] == "agent_message_chunk"]
    assert len(chunks) >= 3  # streamed, not one block
    assert any(u["sessionUpdate"] == "plan" for u in echo["updates"])
    tool = report["tool"]
    assert tool["stopReason"] == "end_turn"
    assert len(tool["permissionRequests"]) == 1
    assert tool["fsReads"][0]["path"] == str(cwd / "notes.txt")
    assert tool["text"].endswith(f"read {len(NOTES)} characters")
    statuses = [
        u.get("status") for u in tool["updates"] if u["sessionUpdate"].startswith("tool_call")
    ]
    assert statuses[0] == "pending"
    assert statuses[-1] == "completed"
    assert report["cancel"]["stopReason"] == "cancelled"


def test_sdk_client_rejecting_permission(sdk: SdkPeers, cwd: Path) -> None:
    report = run_client(sdk.kind, EXAMPLE, "tool-reject", cwd)
    assert report["stopReason"] == "end_turn"
    assert report["fsReads"] == []
    assert report["updates"][-1]["status"] == "failed"


class InteropClient(Client):
    def __init__(self, root: Path) -> None:
        self.root = root
        self.updates: list[object] = []
        self.first_update = asyncio.Event()
        self.permissions: list[s.RequestPermissionRequest] = []
        self.reads: list[str] = []

    async def session_update(self, params: s.SessionNotification) -> None:
        self.updates.append(params.update)
        self.first_update.set()

    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        self.permissions.append(params)
        allow = next(o for o in params.options if o.kind == "allow_once")
        return s.RequestPermissionResponse(
            outcome=s.SelectedPermissionOutcome(option_id=allow.option_id)
        )

    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        self.reads.append(params.path)
        content = await asyncio.to_thread(Path(params.path).read_text)
        return s.ReadTextFileResponse(content=content)


async def test_our_client_against_the_sdk_agent(sdk: SdkPeers, cwd: Path) -> None:
    client = InteropClient(cwd)
    capabilities = s.ClientCapabilities(fs=s.FileSystemCapabilities(read_text_file=True))
    async with asyncio.timeout(60), spawn_agent(sdk.agent_cmd, client, cwd=cwd) as proc:
        agent = proc.agent
        init = await agent.initialize(capabilities)
        assert init.protocol_version == 1
        session = (await agent.new_session(str(cwd))).session_id

        response, transcript = await agent.prompt_transcript(session, "hello interop world")
        assert response.stop_reason == "end_turn"
        assert transcript.text == "hello interop world"
        assert len(transcript.updates) >= 3

        response, transcript = await agent.prompt_transcript(session, "tool notes.txt")
        assert response.stop_reason == "end_turn"
        assert len(client.permissions) == 1
        assert client.reads == [str(cwd / "notes.txt")]
        call = transcript.tool_calls["call_1"]
        assert call.status == "completed"
        assert NOTES in call.text()

        client.first_update.clear()
        turn = asyncio.create_task(agent.prompt(session, "slow"))
        await client.first_update.wait()
        await agent.cancel(session)
        assert (await turn).stop_reason == "cancelled"
