"""interlink's A2A server against the official A2A 1.0 clients (Python and JS SDKs).

Each test runs one client peer (``peers/py_client.py`` on ``a2a-sdk``,
``peers/js_client.mjs`` on ``@a2a-js/sdk``) against ``interlink a2a serve
examples/a2a_agent.py:app`` and checks what the SDK observed, once over each binding the
server serves (JSON-RPC, HTTP+JSON, gRPC with ``--grpc-port``: the SDK's client is allowed
that one only, and takes the card's interface for it). Objects are ProtoJSON as the SDKs
re-serialize them, so fields holding a proto default (``""``, ``false``, ``0``, ``[]``) are
absent; SDK errors are ``{"name", "code", "message"}`` with the JSON-RPC code the SDK
surfaced (none from the JS SDK over HTTP+JSON or gRPC: its ``reason`` then, and over gRPC
the call's ``grpcStatus`` too).
"""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from interlink.a2a._errors import A2AError, status_of
from interlink.a2a._routes import find
from tests.interop.a2a.conftest import A2AServer, PeerKind, run_peer

pytestmark = pytest.mark.interop

Json = dict[str, Any]

CARD_NAME = "interlink example agent"
ASK_PROMPT = "What should I do? Send a follow-up message to this task."
DIRECT_REPLY = "a direct message: no task was created"
ACTIVE = {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}


@pytest.fixture(
    params=[
        ("py", "JSONRPC"),
        ("js", "JSONRPC"),
        ("py", "HTTP+JSON"),
        ("js", "HTTP+JSON"),
        ("py", "GRPC"),
        ("js", "GRPC"),
    ],
    ids=["py-sdk", "js-sdk", "py-sdk-rest", "js-sdk-rest", "py-sdk-grpc", "js-sdk-grpc"],
)
def sdk(request: pytest.FixtureRequest) -> tuple[PeerKind, str]:
    """The client peer and the binding it speaks (the SDKs' gRPC clients talk to the gRPC
    interface that ``--grpc-port`` adds to the card)."""
    kind: PeerKind = request.getfixturevalue(f"a2a_{request.param[0]}_sdk")
    return kind, request.param[1]


class Run:
    def __init__(self, sdk: PeerKind, server: A2AServer, binding: str) -> None:
        self.sdk = sdk
        self.server = server
        self.binding = binding

    def __call__(self, scenario: str, *extra: str) -> Json:
        out = run_peer(self.sdk, self.server, scenario, (*extra, "--binding", self.binding))
        assert out["scenario"] == scenario
        check_requests(out, self.server, self.binding)
        out["binding"] = self.binding
        return out


@pytest.fixture
def run(sdk: tuple[PeerKind, str], request: pytest.FixtureRequest) -> Run:
    kind, binding = sdk
    server = request.getfixturevalue("a2a_grpc_server" if binding == "GRPC" else "a2a_server")
    return Run(kind, server, binding)


# -- helpers ----------------------------------------------------------------------------------


def method_of(request: Json) -> str:
    """The A2A method of an HTTP+JSON request, by its route (a subscription may be
    posted, as §11.3.2's text has it)."""
    found = find(request["http"], request["path"])
    if found is None and request["http"] == "POST":
        found = find("GET", request["path"])
    assert found is not None, f"no HTTP+JSON route: {request}"
    return found[0].method.name


def check_requests(out: Json, server: A2AServer, binding: str) -> None:
    """Every request the SDK made carried ``A2A-Version: 1.0``; RPCs went to the card's
    URL (JSON-RPC), to the routes of a2a.proto below it (HTTP+JSON), or carried
    ``a2a-version: 1.0`` metadata (gRPC)."""
    requests = out["requests"]
    assert requests, "the peer recorded no HTTP request"
    assert requests[0] == {
        "http": "GET",
        "path": "/.well-known/agent-card.json",
        "rpc": None,
        "a2aVersion": "1.0",
    }
    if binding == "GRPC":
        for req in requests[1:]:
            assert set(req) == {"grpc", "a2aVersion"}, req
            assert req["a2aVersion"] == "1.0", req
        return
    for req in requests[1:]:
        if binding == "HTTP+JSON":
            assert req["a2aVersion"] == "1.0", req
            req["rpc"] = method_of(req)
            continue
        assert req["http"] == "POST", req
        assert req["path"] == "/", req
        assert req["a2aVersion"] == "1.0", req
        assert isinstance(req["rpc"], str), req
        assert "/" not in req["rpc"], req  # 1.0 PascalCase names, not 0.3 ones


def rpcs(out: Json) -> list[str]:
    return [r.get("rpc") or r["grpc"] for r in out["requests"][1:]]


def text_of(parts: list[Json]) -> str:
    assert all(set(p) == {"text"} for p in parts), parts
    return "".join(p["text"] for p in parts)


def state(task: Json) -> str:
    value: str = task["status"]["state"]
    return value


#: the ErrorInfo reason of each A2A error code (the JS SDK's HTTP+JSON and gRPC errors
#: carry the reason, not a code)
REASONS = {cls.CODE: cls.REASON for cls in A2AError.__subclasses__()}


def error(answer: Json, name: str, code: int) -> None:
    assert "result" not in answer, f"expected {name} ({code}), got a result: {answer}"
    assert answer["error"]["name"] == name, answer
    if answer["error"]["code"] is None:
        assert answer["error"]["reason"] == REASONS[code], answer
    else:
        assert answer["error"]["code"] == code, answer
    if "grpcStatus" in answer["error"]:  # §5.4: the gRPC status of the code
        assert answer["error"]["grpcStatus"] == grpc.StatusCode[status_of(code)[0]].value[0], answer


def result(answer: Json) -> Json:
    assert "error" not in answer, f"expected a result, got {answer['error']}"
    value: Json = answer["result"]
    return value


def check_task_stream(events: list[Json], final_state: str) -> Json:
    """A task stream: Task first, then updates of that task, ``final_state`` last."""
    assert events, "empty stream"
    assert list(events[0]) == ["task"], f"first event is not a Task: {events[0]}"
    task: Json = events[0]["task"]
    assert task["id"]
    assert task["contextId"]
    for event in events[1:]:
        (kind,) = event
        assert kind in {"statusUpdate", "artifactUpdate"}, event
        assert event[kind]["taskId"] == task["id"], event
        assert event[kind]["contextId"] == task["contextId"], event
    last = events[-1]
    assert "statusUpdate" in last, f"last event is not a status update: {last}"
    assert state(last["statusUpdate"]) == final_state, last
    for event in events[1:-1]:
        if "statusUpdate" in event:
            assert state(event["statusUpdate"]) in ACTIVE, f"update after terminal: {event}"
    return task


def artifact_chunks(events: list[Json]) -> list[Json]:
    return [e["artifactUpdate"] for e in events if "artifactUpdate" in e]


# -- scenarios --------------------------------------------------------------------------------


def test_card_discovery(run: Run) -> None:
    out = run("card")
    card = out["card"]
    assert card["name"] == CARD_NAME
    interfaces = [
        {"url": run.server.url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {
            "url": run.server.url.rstrip("/"),
            "protocolBinding": "HTTP+JSON",
            "protocolVersion": "1.0",
        },
    ]
    if run.server.grpc:
        interfaces.append(
            {"url": run.server.grpc, "protocolBinding": "GRPC", "protocolVersion": "1.0"}
        )
    assert card["supportedInterfaces"] == interfaces
    assert card["capabilities"] == {"streaming": True, "pushNotifications": True}
    assert card["defaultInputModes"] == ["text/plain"]
    assert card["defaultOutputModes"] == ["text/plain"]
    assert [s["id"] for s in card["skills"]] == ["echo"]
    assert card["skills"][0]["tags"] == ["example"]
    if run.sdk == "js":
        assert out["clientProtocolVersion"] == "1.0"
    # A client made from the resolved card talks to the advertised interface.
    assert state(out["sent"]["task"]) == "TASK_STATE_COMPLETED"
    assert rpcs(out) == ["SendMessage"]


def test_send_blocking(run: Run) -> None:
    out = run("send")
    assert list(out["result"]) == ["task"]
    task = out["result"]["task"]
    assert state(task) == "TASK_STATE_COMPLETED"
    assert task["id"]
    assert task["contextId"]
    (artifact,) = task["artifacts"]
    assert artifact["name"] == "echo"
    assert artifact["artifactId"]
    assert text_of(artifact["parts"]) == "hello interop"
    user = [m for m in task["history"] if m["role"] == "ROLE_USER"]
    assert [text_of(m["parts"]) for m in user] == ["echo hello interop"]
    for message in task["history"]:
        assert message["taskId"] == task["id"]
        assert message["contextId"] == task["contextId"]
    assert rpcs(out) == ["SendMessage"]


def test_stream(run: Run) -> None:
    out = run("stream")
    assert "error" not in out, out["error"]
    events = out["events"]
    task = check_task_stream(events, "TASK_STATE_COMPLETED")
    assert state(task) in ACTIVE
    chunks = artifact_chunks(events)
    assert [text_of(c["artifact"]["parts"]) for c in chunks] == ["hello ", "interop ", "stream"]
    assert len({c["artifact"]["artifactId"] for c in chunks}) == 1
    assert [c.get("append", False) for c in chunks] == [False, True, True]
    assert [c.get("lastChunk", False) for c in chunks] == [False, False, True]
    assert all(c["artifact"]["name"] == "echo" for c in chunks)
    # The artifact is complete before the task completes.
    assert "artifactUpdate" in events[-2]
    assert rpcs(out) == ["SendStreamingMessage"]


def test_get_task(run: Run) -> None:
    out = run("get")
    sent = out["sent"]
    assert state(sent) == "TASK_STATE_COMPLETED"
    assert result(out["got"]) == sent
    no_history = result(out["gotHistory0"])
    assert "history" not in no_history
    assert no_history == {k: v for k, v in sent.items() if k != "history"}
    assert result(out["gotHistory1"])["history"] == sent["history"][-1:]
    error(out["unknown"], "TaskNotFoundError", -32001)
    assert rpcs(out) == ["SendMessage", "GetTask", "GetTask", "GetTask", "GetTask"]


def test_list_tasks(run: Run) -> None:
    out = run("list")
    first, second, third = out["taskIds"]
    newest_first = [third, second, first]
    everything = result(out["all"])
    assert [t["id"] for t in everything["tasks"]] == newest_first
    assert everything["totalSize"] == 3
    assert everything["pageSize"] == 50
    assert everything.get("nextPageToken", "") == ""
    for task in everything["tasks"]:
        assert task["contextId"] == out["contextId"]
        assert state(task) == "TASK_STATE_COMPLETED"
        assert "artifacts" not in task  # includeArtifacts defaults to false
    page1 = result(out["page1"])
    assert [t["id"] for t in page1["tasks"]] == newest_first[:2]
    assert page1["nextPageToken"]
    assert page1["pageSize"] == 2
    assert page1["totalSize"] == 3
    page2 = result(out["page2"])
    assert [t["id"] for t in page2["tasks"]] == newest_first[2:]
    assert page2.get("nextPageToken", "") == ""
    with_artifacts = result(out["withArtifacts"])
    texts = [text_of(t["artifacts"][0]["parts"]) for t in with_artifacts["tasks"]]
    assert texts == ["list three", "list two", "list one"]
    assert rpcs(out) == ["SendMessage"] * 3 + ["ListTasks"] * 4


def test_cancel(run: Run) -> None:
    out = run("cancel")
    started = out["started"]
    assert state(started) in ACTIVE
    canceled = result(out["canceled"])
    assert canceled["id"] == started["id"]
    assert canceled["contextId"] == started["contextId"]
    assert state(canceled) == "TASK_STATE_CANCELED"
    assert "artifacts" not in canceled  # slow 20 never got to its result
    assert state(result(out["after"])) == "TASK_STATE_CANCELED"
    # Cancelling a CANCELED task again returns it (idempotent, DECISIONS.md).
    again = result(out["again"])
    assert again["id"] == started["id"]
    assert state(again) == "TASK_STATE_CANCELED"
    error(out["completed"], "TaskNotCancelableError", -32002)
    error(out["unknown"], "TaskNotFoundError", -32001)


def test_subscribe(run: Run) -> None:
    out = run("subscribe")
    started = out["started"]
    assert state(started) in ACTIVE
    sub = out["subscribe"]
    assert "error" not in sub, sub["error"]
    events = sub["events"]
    task = check_task_stream(events, "TASK_STATE_COMPLETED")
    assert task["id"] == started["id"]
    assert state(task) in ACTIVE
    progress = [
        text_of(e["statusUpdate"]["status"]["message"]["parts"])
        for e in events
        if "statusUpdate" in e and "message" in e["statusUpdate"]["status"]
    ]
    expected = ["1/3 s done", "2/3 s done", "3/3 s done"]
    assert progress, "no progress updates"
    assert progress == expected[len(expected) - len(progress) :], progress
    (chunk,) = artifact_chunks(events)
    assert text_of(chunk["artifact"]["parts"]) == "worked 3 s"
    # A terminal task has nothing to subscribe to; an unknown one is not found.
    assert out["terminal"]["events"] == []
    error(out["terminal"], "UnsupportedOperationError", -32004)
    assert out["unknown"]["events"] == []
    error(out["unknown"], "TaskNotFoundError", -32001)


def test_ask_input_required_round_trip(run: Run) -> None:
    out = run("ask")
    asked = out["asked"]
    assert state(asked) == "TASK_STATE_INPUT_REQUIRED"
    prompt = asked["status"]["message"]
    assert prompt["role"] == "ROLE_AGENT"
    assert text_of(prompt["parts"]) == ASK_PROMPT
    # The follow-up carried only the taskId: the server inferred the contextId.
    answered = out["answered"]["task"]
    assert answered["id"] == asked["id"]
    assert answered["contextId"] == asked["contextId"]
    assert state(answered) == "TASK_STATE_COMPLETED"
    (artifact,) = answered["artifacts"]
    assert artifact["name"] == "answer"
    assert text_of(artifact["parts"]) == "thanks, you said: blue"
    follow_up = [m for m in answered["history"] if text_of(m["parts"]) == "blue"]
    assert len(follow_up) == 1
    assert follow_up[0]["contextId"] == asked["contextId"]
    assert follow_up[0]["taskId"] == asked["id"]
    error(out["terminal"], "UnsupportedOperationError", -32004)


def test_ask_over_streams(run: Run) -> None:
    out = run("ask")
    first = out["streamAsk"]
    assert "error" not in first, first["error"]
    task = check_task_stream(first["events"], "TASK_STATE_INPUT_REQUIRED")
    follow = out["streamFollowUp"]
    assert "error" not in follow, follow["error"]
    # A follow-up stream starts with the Task snapshot too (DECISIONS.md).
    snapshot = check_task_stream(follow["events"], "TASK_STATE_COMPLETED")
    assert snapshot["id"] == task["id"]
    assert snapshot["contextId"] == task["contextId"]
    (chunk,) = artifact_chunks(follow["events"])
    assert text_of(chunk["artifact"]["parts"]) == "thanks, you said: green"


def check_direct_message(message: Json) -> None:
    assert message["role"] == "ROLE_AGENT"
    assert message["messageId"]
    assert message["contextId"]
    assert text_of(message["parts"]) == DIRECT_REPLY


def test_direct_message(run: Run) -> None:
    out = run("message")
    assert list(out["send"]) == ["message"]
    check_direct_message(out["send"]["message"])
    stream = out["stream"]
    assert "error" not in stream, stream["error"]
    assert [list(e) for e in stream["events"]] == [["message"]]
    check_direct_message(stream["events"][0]["message"])
    assert rpcs(out) == ["SendMessage", "SendStreamingMessage"]


def test_direct_message_names_no_task(run: Run) -> None:
    """a2a.proto, Message: "For server messages, context_id must be provided, and task_id
    only if a task was created." The ``message`` reply creates no task."""
    out = run("message")
    assert "taskId" not in out["send"]["message"], out["send"]["message"]
    assert "taskId" not in out["stream"]["events"][0]["message"]


def test_push_config_crud(run: Run) -> None:
    out = run("push-crud")
    task_id = out["taskId"]
    created = result(out["created"])
    assert created["id"]
    assert created == {
        "id": created["id"],
        "taskId": task_id,
        "url": "https://webhook.example.com/a2a",
        "token": "tok-1",
        "authentication": {"scheme": "Bearer", "credentials": "secret-1"},
    }
    with_id = result(out["createdWithId"])
    assert with_id == {"id": "cfg-b", "taskId": task_id, "url": "https://webhook.example.com/a2a/b"}
    assert result(out["got"]) == created
    listed = result(out["listed"])["configs"]
    assert sorted(listed, key=lambda c: c["id"] == "cfg-b") == [created, with_id]
    assert result(out["deleted"]) is None
    assert result(out["listedAfterDelete"]) == {"configs": [with_id]}
    error(out["gotDeleted"], "TaskNotFoundError", -32001)
    assert result(out["deletedAgain"]) is None  # delete is idempotent
    assert result(out["deletedB"]) is None
    error(out["unknownTask"], "TaskNotFoundError", -32001)


def test_push_config_inline(run: Run) -> None:
    """§8.1 / a2a.proto SendMessageConfiguration.task_push_notification_config: a config
    sent inline with SendMessage (taskId left empty) is registered for the new task."""
    out = run("push-inline")
    sent = result(out["sent"])
    task = sent["task"]
    assert state(task) == "TASK_STATE_INPUT_REQUIRED"
    (config,) = result(out["listed"])["configs"]
    assert config["id"]
    assert config == {
        "id": config["id"],
        "taskId": task["id"],
        "url": "https://webhook.example.com/a2a/inline",
        "token": "tok-inline",
        "authentication": {"scheme": "Bearer", "credentials": "secret-inline"},
    }
