"""The SDK peers against each other: every client x agent combination, every scenario.

These pin the scenario contract (see ``peers/README.md``) that interlink's own example
agent and client are tested against, and show the official SDKs interoperate.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.interop.conftest import PeerKind, SdkPeers, run_client

pytestmark = pytest.mark.interop

NOTES = "line one\nline two: ünïcödé 🎉\n"
COMBOS: list[tuple[PeerKind, PeerKind]] = [("py", "py"), ("py", "ts"), ("ts", "py"), ("ts", "ts")]
AGENT_NAMES = {"py": "py-sdk-agent", "ts": "ts-sdk-agent"}


class Combo:
    def __init__(self, client: PeerKind, agent: PeerKind, agent_cmd: list[str]) -> None:
        self.client = client
        self.agent = agent
        self.agent_cmd = agent_cmd

    def run(self, scenario: str, cwd: Path, *extra: str) -> dict[str, Any]:
        return run_client(self.client, self.agent_cmd, scenario, cwd, timeout=50, extra_args=extra)


@pytest.fixture(params=COMBOS, ids=[f"{c}-client-{a}-agent" for c, a in COMBOS])
def combo(request: pytest.FixtureRequest) -> Combo:
    client, agent = request.param
    request.getfixturevalue(f"{client}_sdk")
    peers: SdkPeers = request.getfixturevalue(f"{agent}_sdk")
    return Combo(client, agent, peers.agent_cmd)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text(NOTES, encoding="utf-8")
    return tmp_path


def chunks(updates: list[dict[str, Any]]) -> list[str]:
    return [
        u["content"]["text"]
        for u in updates
        if u["sessionUpdate"] == "agent_message_chunk" and u["content"]["type"] == "text"
    ]


def check_header(out: dict[str, Any], combo: Combo) -> None:
    assert out["protocolVersion"] == 1
    assert out["agentInfo"]["name"] == AGENT_NAMES[combo.agent]
    assert isinstance(out["agentInfo"]["version"], str)
    assert "error" not in out


def check_echo(out: dict[str, Any], combo: Combo, prompt: str = "hello interop world") -> None:
    check_header(out, combo)
    assert isinstance(out["sessionId"], str)
    assert out["sessionId"]
    assert out["stopReason"] == "end_turn"
    assert out["text"] == prompt
    texts = chunks(out["updates"])
    assert len(texts) == len(prompt.split())
    assert "".join(texts) == prompt
    assert all(u["sessionUpdate"] == "agent_message_chunk" for u in out["updates"])


def check_tool_allowed(out: dict[str, Any], combo: Combo, cwd: Path) -> None:
    check_header(out, combo)
    session_id = out["sessionId"]
    assert out["stopReason"] == "end_turn"
    [request] = out["permissionRequests"]
    assert request["sessionId"] == session_id
    assert request["toolCall"]["toolCallId"] == "call_1"
    assert {(o["optionId"], o["kind"]) for o in request["options"]} == {
        ("allow", "allow_once"),
        ("reject", "reject_once"),
    }
    [read] = out["fsReads"]
    assert read == {"sessionId": session_id, "path": str(cwd / "notes.txt")}
    start, done, message = out["updates"]
    assert start == {
        "sessionUpdate": "tool_call",
        "toolCallId": "call_1",
        "title": "Read notes.txt",
        "kind": "read",
        "status": "pending",
    }
    assert done["sessionUpdate"] == "tool_call_update"
    assert done["toolCallId"] == "call_1"
    assert done["status"] == "completed"
    assert done["content"] == [{"type": "content", "content": {"type": "text", "text": NOTES}}]
    assert message["sessionUpdate"] == "agent_message_chunk"
    # Characters are code points in both agents (the emoji counts once).
    assert out["text"] == f"read {len(NOTES)} characters"


def check_cancel(out: dict[str, Any], combo: Combo) -> None:
    check_header(out, combo)
    assert out["stopReason"] == "cancelled"
    assert out["updatesBeforeCancel"] >= 1
    assert out["updatesAfterCancel"] <= 2
    assert out["secondsAfterCancel"] < 5
    assert set(chunks(out["updates"])) == {"working"}


def test_echo(combo: Combo, workdir: Path) -> None:
    out = combo.run("echo", workdir)
    check_echo(out, combo)
    assert out["agentExitCode"] == 0


def test_echo_keeps_spaces_and_unicode(combo: Combo, workdir: Path) -> None:
    prompt = "  grüße,  🌍 world\t tabs  "
    out = combo.run("echo", workdir, "--prompt", prompt)
    check_header(out, combo)
    assert out["text"] == prompt
    assert "".join(chunks(out["updates"])) == prompt


def test_tool_allowed_reads_the_file(combo: Combo, workdir: Path) -> None:
    out = combo.run("tool", workdir)
    check_tool_allowed(out, combo, workdir)


def test_tool_rejected(combo: Combo, workdir: Path) -> None:
    out = combo.run("tool-reject", workdir)
    check_header(out, combo)
    assert out["stopReason"] == "end_turn"
    assert len(out["permissionRequests"]) == 1
    assert out["fsReads"] == []
    start, failed = out["updates"]
    assert start["sessionUpdate"] == "tool_call"
    assert failed["sessionUpdate"] == "tool_call_update"
    assert failed["toolCallId"] == "call_1"
    assert failed["status"] == "failed"
    assert out["text"] == ""


def test_tool_missing_file_fails_the_tool_call(combo: Combo, workdir: Path) -> None:
    out = combo.run("tool", workdir, "--prompt", "tool missing.txt")
    check_header(out, combo)
    assert out["stopReason"] == "end_turn"
    assert out["fsReads"] == [{"sessionId": out["sessionId"], "path": str(workdir / "missing.txt")}]
    failed = out["updates"][-1]
    assert failed["status"] == "failed"
    # The client answered -32002 (resource not found); the agent reports it.
    assert failed["content"][0]["content"]["text"].startswith("-32002")


def test_tool_without_fs_capability_never_reads(combo: Combo, workdir: Path) -> None:
    out = combo.run("tool", workdir, "--no-fs")
    check_header(out, combo)
    assert out["fsReads"] == []
    assert out["updates"][-1]["status"] == "failed"
    assert out["stopReason"] == "end_turn"


def test_cancel(combo: Combo, workdir: Path) -> None:
    out = combo.run("cancel", workdir)
    check_cancel(out, combo)
    assert out["agentExitCode"] == 0


def test_all(combo: Combo, workdir: Path) -> None:
    out = combo.run("all", workdir)
    check_header(out, combo)
    check_echo(out["echo"], combo)
    check_tool_allowed(out["tool"], combo, workdir)
    check_cancel(out["cancel"], combo)
    ids = {out[name]["sessionId"] for name in ("echo", "tool", "cancel")}
    assert len(ids) == 3


# A raw agent that answers initialize and fails session/new: shows the clients record
# JSON-RPC errors instead of crashing.
FAILING_AGENT = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        reply = {"result": {"protocolVersion": 1, "agentInfo": {"name": "raw", "version": "0"}}}
    else:
        reply = {"error": {"code": -32000, "message": "Authentication required",
                           "data": {"hint": "log in"}}}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **reply}) + "\n")
    sys.stdout.flush()
"""


@pytest.mark.parametrize("client", ["py", "ts"])
def test_client_records_jsonrpc_errors(
    client: PeerKind, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    request.getfixturevalue(f"{client}_sdk")
    out = run_client(client, [sys.executable, "-c", FAILING_AGENT], "echo", tmp_path, timeout=50)
    assert out["protocolVersion"] == 1
    assert out["error"] == {
        "code": -32000,
        "message": "Authentication required",
        "data": {"hint": "log in"},
    }
    assert out["errorMethod"] == "session/new"
    assert "stopReason" not in out
