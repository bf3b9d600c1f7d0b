"""A2A 0.3 interop, both directions, with the official Python SDK's last 0.3 release
(``a2a-sdk==0.3.26``, installed at test time beside the venv: ``a2a_v03_sdk``).

- Its client (``peers/py_v03_client.py``, every scenario in one run, once over JSON-RPC
  and once over HTTP+JSON) against ``interlink a2a serve examples/a2a_agent.py:app``: no
  ``A2A-Version``, 0.3 method names (routes) and shapes, answered through the 0.3 edge
  of the server.
- Our client against its server (``peers/py_v03_server.py``: ``echo X``, ``slow``, ``ask``,
  ``message``), once serving JSON-RPC and once only HTTP+JSON (``--rest``): the card is a
  0.3 card, so the client speaks 0.3 to it over the binding it offers, and the caller
  sees the 1.0 objects and typed errors as with any agent; the command line too.
- Our client over 0.3 HTTP+JSON against our server, as a 0.3 client reads its card.

Objects are the SDK's 0.3 models dumped as JSON (``kind``, lower-case states; ``None``
fields absent); errors are ``{"code", "message", "data"}`` as the SDK surfaced them
(over HTTP+JSON it surfaces only the HTTP status: ``{"http": status}``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from interlink.a2a import (
    A2AClient,
    A2AHttpError,
    A2AInvalidParams,
    A2ATransportError,
    NoUsableInterface,
    Reconnect,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
)
from interlink.a2a import types as t
from interlink.a2a.compat import card_from_v03, v03
from interlink.a2a.server.bindings._rest_v03 import HTTP_STATUS
from interlink.jsonrpc import InternalError
from tests.a2a.test_compat_v03_serving import sdk_v03
from tests.cli.a2a_harness import a2a, header_ids, one_error_line
from tests.interop.a2a.conftest import (
    PEERS,
    ROOT,
    A2AServer,
    Delivery,
    PeerRunError,
    WebhookReceiver,
    peer_server,
    serve,
    v03_env,
)
from tests.interop.a2a.test_our_client import status_text
from tests.serving import free_port

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]  # (the first installs the SDK)

Json = dict[str, Any]
ASK_PROMPT = "What should I do? Send a follow-up message to this task."
ACTIVE = {"submitted", "working"}


def run_v03_client(sdk_dir: Path, server: A2AServer, *args: str) -> Json:
    """The JSON object the 0.3 client peer printed, run against `server` with `args`."""
    cmd = [sys.executable, str(PEERS / "py_v03_client.py"), server.url, *args]
    with subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=v03_env(sdk_dir),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate(timeout=10)
            raise PeerRunError(f"0.3 client timed out\n{stdout}\n{stderr}") from None
    if proc.returncode != 0:
        raise PeerRunError(
            f"0.3 client exited {proc.returncode}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
            f"\n--- server stderr\n{server.stderr_tail()}"
        )
    out: Json = json.loads(stdout)
    return out


@pytest.fixture(scope="module", params=["jsonrpc", "rest"])
def sdk_client_run(
    request: pytest.FixtureRequest, a2a_v03_sdk: Path, a2a_server: A2AServer
) -> Json:
    """What the 0.3 SDK client saw of our server, every scenario in one run, over the
    transport of the param (`transport` in the result)."""
    out = run_v03_client(a2a_v03_sdk, a2a_server, "--transport", request.param)
    out["transport"] = request.param
    return out


def text_of(parts: list[Json]) -> str:
    assert all(p["kind"] == "text" for p in parts), parts
    return "".join(p["text"] for p in parts)


def error(answer: Json, code: int, reason: str, http: int | None = None) -> None:
    """`answer` is the error `code`; over HTTP+JSON, where the SDK reports the HTTP
    status alone, its status (`http`, else the one of `code`)."""
    assert "result" not in answer, f"expected {code}, got a result: {answer}"
    if "http" in answer["error"]:
        assert answer["error"]["http"] == (http or HTTP_STATUS[code]), answer
        return
    assert answer["error"]["code"] == code, answer
    assert answer["error"]["data"]["reason"] == reason, answer  # (0.3: free-form data)


def check_task_stream(events: list[Json], last_state: str) -> Json:
    """A 0.3 task stream: the Task first, then updates of it, `final` only on the last."""
    assert events, "empty stream"
    task = events[0]
    assert task["kind"] == "task", events[0]
    for event in events[1:]:
        assert event["kind"] in {"status-update", "artifact-update"}, event
        assert event["taskId"] == task["id"]
        assert event["contextId"] == task["contextId"]
    last = events[-1]
    assert last["kind"] == "status-update", last
    assert last["status"]["state"] == last_state
    assert last["final"] is True
    for event in events[1:-1]:
        if event["kind"] == "status-update":
            assert event["final"] is False, event
            assert event["status"]["state"] in ACTIVE, event
    return task


# -- the 0.3 SDK client against our server ---------------------------------------------------


def test_the_sdk_client_speaks_0_3_and_reads_our_card(
    sdk_client_run: Json, a2a_server: A2AServer
) -> None:
    requests = sdk_client_run["requests"]
    assert requests[0]["path"] == "/.well-known/agent-card.json"
    assert all(r["a2aVersion"] is None for r in requests)  # a 0.3 client sends none
    if sdk_client_run["transport"] == "rest":
        assert {r["rpc"] for r in requests} == {None}
        assert {
            (r["http"], re.sub(r"/(tasks|pushNotificationConfigs)/[^/:]+", r"/\1/ID", r["path"]))
            for r in requests[1:]
        } == {
            ("POST", "/v1/message:send"),
            ("POST", "/v1/message:stream"),
            ("GET", "/v1/tasks/ID"),
            ("POST", "/v1/tasks/ID:cancel"),
            ("GET", "/v1/tasks/ID:subscribe"),
            ("POST", "/v1/tasks/ID/pushNotificationConfigs"),
            ("GET", "/v1/tasks/ID/pushNotificationConfigs/ID"),
        }
    else:
        assert {r["rpc"] for r in requests[1:]} == {
            "message/send",
            "message/stream",
            "tasks/get",
            "tasks/cancel",
            "tasks/resubscribe",
            "tasks/pushNotificationConfig/set",
            "tasks/pushNotificationConfig/get",
        }
    card = sdk_client_run["card"]
    assert card["url"] == a2a_server.url
    assert card["preferredTransport"] == "JSONRPC"
    assert card["additionalInterfaces"] == [
        {"transport": "JSONRPC", "url": a2a_server.url},
        {"transport": "HTTP+JSON", "url": a2a_server.url.rstrip("/")},
    ]
    assert card["protocolVersion"] == "0.3.0"
    assert card["capabilities"] == {"streaming": True, "pushNotifications": True}


def test_send_and_get(sdk_client_run: Json) -> None:
    (task,) = sdk_client_run["send"]["events"]
    assert task["kind"] == "task"
    assert task["status"]["state"] == "completed"
    (artifact,) = task["artifacts"]
    assert text_of(artifact["parts"]) == "hello v03"
    assert [m["role"] for m in task["history"]] == ["user"]
    assert sdk_client_run["get"]["result"] == task
    assert len(sdk_client_run["getHistory1"]["result"]["history"]) == 1
    error(sdk_client_run["getUnknown"], -32001, "TASK_NOT_FOUND")
    (message,) = sdk_client_run["message"]["events"]
    assert message["kind"] == "message"
    assert message["role"] == "agent"
    assert "taskId" not in message
    assert text_of(message["parts"]) == "a direct message: no task was created"


def test_stream(sdk_client_run: Json) -> None:
    stream = sdk_client_run["stream"]
    assert "error" not in stream, stream
    events = stream["events"]
    check_task_stream(events, "completed")
    chunks = [e for e in events if e["kind"] == "artifact-update"]
    assert [text_of(c["artifact"]["parts"]) for c in chunks] == ["hello ", "v03 ", "stream"]
    assert [c.get("append", False) for c in chunks] == [False, True, True]
    assert [c.get("lastChunk", False) for c in chunks] == [False, False, True]


def test_ask_and_follow_up(sdk_client_run: Json) -> None:
    (asked,) = sdk_client_run["ask"]["events"]
    assert asked["status"]["state"] == "input-required"
    assert text_of(asked["status"]["message"]["parts"]) == ASK_PROMPT
    (answered,) = sdk_client_run["answer"]["events"]
    assert answered["id"] == asked["id"]
    assert answered["status"]["state"] == "completed"
    assert text_of(answered["artifacts"][0]["parts"]) == "thanks, you said: blue"
    # over streams: the first ends `final` at input-required, the follow-up (only the
    # taskId) starts with the task and ends `final` at completed
    first = check_task_stream(sdk_client_run["askStream"]["events"], "input-required")
    follow = check_task_stream(sdk_client_run["answerStream"]["events"], "completed")
    assert follow["id"] == first["id"]
    assert follow["contextId"] == first["contextId"]


def test_slow_and_cancel(sdk_client_run: Json) -> None:
    slow = sdk_client_run["slow"]
    assert slow["status"]["state"] in ACTIVE  # blocking: false
    canceled = sdk_client_run["cancel"]["result"]
    assert canceled["id"] == slow["id"]
    assert canceled["status"]["state"] == "canceled"
    assert sdk_client_run["cancelAgain"]["result"]["status"]["state"] == "canceled"
    error(sdk_client_run["cancelCompleted"], -32002, "TASK_NOT_CANCELABLE")


def test_resubscribe(sdk_client_run: Json) -> None:
    events = sdk_client_run["resubscribe"]["events"]
    task = check_task_stream(events, "completed")
    assert task["status"]["state"] in ACTIVE
    progress = [
        text_of(e["status"]["message"]["parts"])
        for e in events[1:]
        # (over HTTP+JSON the SDK reads a status without a message as one without parts)
        if e["kind"] == "status-update" and e["status"].get("message", {}).get("parts")
    ]
    assert progress == ["1/3 s done", "2/3 s done", "3/3 s done"][-len(progress) :]
    terminal = sdk_client_run["resubscribeTerminal"]
    assert terminal["events"] == []
    # (over HTTP+JSON the error is a JSON answer, which the SDK reports as a 400)
    error(terminal, -32004, "UNSUPPORTED_OPERATION", http=400)


def test_push_config(sdk_client_run: Json) -> None:
    made = sdk_client_run["pushSet"]["result"]
    config = made["pushNotificationConfig"]
    assert config["url"] == "https://webhook.example.com/a2a"
    assert config["token"] == "tok-1"
    assert config["id"] == made["taskId"]  # (0.3: a config without an id gets the task's)
    assert sdk_client_run["pushGet"]["result"] == made


@pytest.fixture(scope="module")
def a2a_push_server() -> Iterator[A2AServer]:
    """Our server, with push webhooks allowed on 127.0.0.1."""
    with serve(["--push-allow", "127.0.0.1"]) as server:
        yield server


@pytest.mark.parametrize("transport", ["jsonrpc", "rest"])
def test_a_0_3_clients_webhook_gets_0_3_tasks(
    transport: str, a2a_v03_sdk: Path, a2a_push_server: A2AServer, webhook: WebhookReceiver
) -> None:
    """The SDK sets a push config on a task that asks; the follow-up completes it, and
    each event goes to the webhook as 0.3 posts it: the task, in 0.3 JSON, with the
    config's token (what the SDK's own server sends)."""
    out = run_v03_client(
        a2a_v03_sdk, a2a_push_server, "--transport", transport, "--push", webhook.url
    )
    assert "result" in out["pushSet"], out["pushSet"]
    task = out["pushed"]
    assert task["status"]["state"] == "completed"

    def done(deliveries: list[Delivery]) -> bool:
        return any(d.body.get("status", {}).get("state") == "completed" for d in deliveries)

    deliveries = webhook.wait_for(done, timeout=20)
    assert done(deliveries), deliveries
    for delivery in deliveries:
        sdk_v03().Task.model_validate(delivery.body)
        assert delivery.headers["x-a2a-notification-token"] == "tok-v03"
        assert delivery.body["kind"] == "task"
        assert delivery.body["id"] == task["id"]
        assert delivery.body["contextId"] == task["contextId"]
    assert deliveries[-1].body["artifacts"][0]["parts"] == [
        {"kind": "text", "text": "thanks, you said: red"}
    ]


# -- our client against the 0.3 SDK server ---------------------------------------------------

S = t.TaskState


class SdkServer(NamedTuple):
    url: str
    binding: str
    """The one binding it serves, as the card names it (`preferredTransport`)."""


@pytest.fixture(scope="module", params=["JSONRPC", "HTTP+JSON"])
def sdk_server(request: pytest.FixtureRequest, a2a_v03_sdk: Path) -> Iterator[SdkServer]:
    """An a2a-sdk 0.3.26 agent on loopback serving JSON-RPC, or HTTP+JSON alone."""
    port = free_port()
    rest = request.param == "HTTP+JSON"
    cmd = [sys.executable, str(PEERS / "py_v03_server.py"), str(port), *(["--rest"] * rest)]
    with peer_server(cmd, f"http://127.0.0.1:{port}/", v03_env(a2a_v03_sdk)) as url:
        yield SdkServer(url, request.param)


async def test_our_client_speaks_0_3_to_a_0_3_card(sdk_server: SdkServer) -> None:
    async with await A2AClient.connect(sdk_server.url) as client:
        assert (client.version, client.binding) == ("0.3", sdk_server.binding)
        (line,) = client.negotiation.lines()  # (the card offers one interface)
        assert line.startswith(f"{sdk_server.binding} 0.3 at http://127.0.0.1:"), line
        assert line.endswith(": picked (the only choice)"), line
        assert client.card.name == "py sdk 0.3 peer"
        assert client.card.supported_interfaces[0].protocol_version == "0.3.0"
        task = await client.send_message("echo hi")
        assert isinstance(task, t.Task)
        assert task.status.state == S.TASK_STATE_COMPLETED
        assert task.artifacts[-1].parts[0].text == "hi"
        got = await client.get_task(task.id, history_length=1)
        assert (got.id, got.status.state) == (task.id, S.TASK_STATE_COMPLETED)
        reply = await client.send_message("message")
        assert isinstance(reply, t.Message)
        assert reply.role == t.Role.ROLE_AGENT
        assert reply.parts[0].text == "direct"
        with pytest.raises(TaskNotFound):
            await client.get_task("no-such-task")
        with pytest.raises(UnsupportedOperation, match=r"ListTasks has no A2A 0\.3 form"):
            await client.list_tasks()


async def test_a_binding_the_card_does_not_offer_is_not_spoken(sdk_server: SdkServer) -> None:
    other = "jsonrpc" if sdk_server.binding == "HTTP+JSON" else "rest"
    with pytest.raises(NoUsableInterface, match="was not asked for"):
        await A2AClient.connect(sdk_server.url, binding=other)


async def test_ask_follow_up_cancel(sdk_server: SdkServer) -> None:
    async with await A2AClient.connect(sdk_server.url, version="0.3") as client:
        asked = await client.send_message("ask")
        assert isinstance(asked, t.Task)
        assert asked.status.state == S.TASK_STATE_INPUT_REQUIRED
        done = await client.send_message("more", task_id=asked.id, context_id=asked.context_id)
        assert isinstance(done, t.Task)
        assert done.status.state == S.TASK_STATE_COMPLETED
        assert done.artifacts[-1].parts[0].text == "got more"
        slow = await client.send_message("slow", return_immediately=True)
        assert isinstance(slow, t.Task)
        canceled = await client.cancel_task(slow.id)
        assert canceled.status.state == S.TASK_STATE_CANCELED
        with pytest.raises(TaskNotCancelable):
            await client.cancel_task(done.id)


async def test_stream_and_resubscribe(sdk_server: SdkServer) -> None:
    once = Reconnect(attempts=1, initial=0.01)
    async with await A2AClient.connect(sdk_server.url, reconnect=once) as client:
        events = [e async for e in client.stream_message("echo streamed")]
        assert isinstance(events[0].payload, t.Task)
        assert any(isinstance(e.payload, t.TaskArtifactUpdateEvent) for e in events)
        last = events[-1].payload
        assert isinstance(last, t.TaskStatusUpdateEvent)
        assert last.status.state == S.TASK_STATE_COMPLETED
        asked = [e async for e in client.stream_message("ask")]
        last = asked[-1].payload
        assert isinstance(last, t.TaskStatusUpdateEvent)
        assert last.status.state == S.TASK_STATE_INPUT_REQUIRED
        slow = await client.send_message("slow", return_immediately=True)
        assert isinstance(slow, t.Task)
        seen = [e async for e in client.subscribe(slow.id)]
        steps = [status_text(e.payload) for e in seen if status_text(e.payload)]
        assert steps == sorted(steps, key=int)
        final = seen[-1].payload
        assert isinstance(final, t.TaskStatusUpdateEvent | t.Task)
        assert final.status.state == S.TASK_STATE_COMPLETED
        if sdk_server.binding == "JSONRPC":
            # the 0.3 SDK refuses to resubscribe to a terminal task with -32602 (as an
            # event of an SSE answer): the typed error reaches the caller
            with pytest.raises(A2AInvalidParams, match="terminal state"):
                async for _ in client.subscribe(slow.id):
                    pass
        else:
            # over HTTP+JSON its server raises inside the SSE answer it began: the
            # connection breaks off, and after the reconnects it is lost
            with pytest.raises(A2ATransportError, match="incomplete chunked read"):
                async for _ in client.subscribe(slow.id):
                    pass


async def test_push_configs_over_0_3(sdk_server: SdkServer) -> None:
    async with await A2AClient.connect(sdk_server.url) as client:
        asked = await client.send_message("ask")
        assert isinstance(asked, t.Task)
        made = await client.create_push_config(
            asked.id, "https://hooks.example/a2a", config_id="c1", token="tok"
        )
        assert (made.id, made.task_id, made.url, made.token) == (
            "c1",
            asked.id,
            "https://hooks.example/a2a",
            "tok",
        )
        assert await client.get_push_config(asked.id, "c1") == made
        if sdk_server.binding == "JSONRPC":
            # over JSON-RPC the 0.3 SDK serves list and delete too
            assert (await client.list_push_configs(asked.id)).configs == [made]
            await client.delete_push_config(asked.id, "c1")
            assert (await client.list_push_configs(asked.id)).configs == []
            return
        # over HTTP+JSON the SDK's server has the routes of these two and does not serve them
        with pytest.raises(InternalError, match="unknown exception"):
            await client.list_push_configs(asked.id)
        with pytest.raises(A2AHttpError) as no_delete:
            await client.delete_push_config(asked.id, "c1")
        assert no_delete.value.status == 405


def test_the_command_line_speaks_0_3(sdk_server: SdkServer) -> None:
    binding = "rest" if sdk_server.binding == "HTTP+JSON" else "jsonrpc"
    pinned = ("--a2a-version", "0.3", "--binding", binding)
    card = a2a("card", sdk_server.url, *pinned)
    assert card.returncode == 0, card.stderr
    assert f"interfaces\n  {sdk_server.binding} 0.3.0  " in card.stdout
    assert "    → picked: the only choice\n" in card.stdout
    sent = a2a("send", sdk_server.url, "echo over 0.3", *pinned)
    assert sent.returncode == 0, sent.stderr
    header_ids(sent.stdout)
    assert sent.stdout.splitlines()[-2:] == ["over 0.3", "● completed"]
    tasks = a2a("tasks", sdk_server.url, *pinned)
    assert tasks.returncode == 5
    assert "ListTasks has no A2A 0.3 form" in one_error_line(tasks)


# -- our client over 0.3 HTTP+JSON against our server --------------------------------------


async def test_our_client_over_0_3_http_json_against_our_server(a2a_server: A2AServer) -> None:
    """Our card read as a 0.3 client reads it (its 0.3 fields alone): the client picks
    0.3 over JSON-RPC first, over HTTP+JSON when asked to, and every behaviour holds."""
    import httpx
    import msgspec

    async with httpx.AsyncClient(timeout=30) as http:
        raw = (await http.get(a2a_server.url + ".well-known/agent-card.json")).json()
    del raw["supportedInterfaces"]
    old_card = card_from_v03(msgspec.convert(raw, v03.AgentCard))
    async with await A2AClient.from_card(old_card, card_url=a2a_server.url) as client:
        assert (client.version, client.binding) == ("0.3", "JSONRPC")
    async with await A2AClient.from_card(
        old_card, card_url=a2a_server.url, binding="rest"
    ) as client:
        assert (client.version, client.binding) == ("0.3", "HTTP+JSON")
        done = await client.send_message("echo hello v03")
        assert isinstance(done, t.Task)
        assert done.status.state == S.TASK_STATE_COMPLETED
        assert "".join(str(p.text) for a in done.artifacts for p in a.parts) == "hello v03"
        assert (await client.get_task(done.id)).id == done.id
        with pytest.raises(TaskNotFound):
            await client.get_task("no-such-task")
        with pytest.raises(TaskNotCancelable):
            await client.cancel_task(done.id)

        asked = await client.send_message("ask")
        assert isinstance(asked, t.Task)
        assert asked.status.state == S.TASK_STATE_INPUT_REQUIRED
        answered = await client.send_message("blue", task_id=asked.id)
        assert isinstance(answered, t.Task)
        assert answered.artifacts[-1].parts[0].text == "thanks, you said: blue"

        slow = await client.send_message("slow 30", return_immediately=True)
        assert isinstance(slow, t.Task)
        assert (await client.cancel_task(slow.id)).status.state == S.TASK_STATE_CANCELED

        working = await client.send_message("slow 2", return_immediately=True)
        assert isinstance(working, t.Task)
        seen = [e async for e in client.subscribe(working.id)]
        steps = [status_text(e.payload) for e in seen if status_text(e.payload)]
        assert steps[-2:] == ["1/2 s done", "2/2 s done"]
        final = seen[-1].payload
        assert isinstance(final, t.TaskStatusUpdateEvent)
        assert final.status.state == S.TASK_STATE_COMPLETED
        with pytest.raises(UnsupportedOperation, match="nothing to subscribe to"):
            async for _ in client.subscribe(working.id):
                pass


async def test_a_client_pinned_to_0_3_reads_our_card_as_0_3(a2a_server: A2AServer) -> None:
    """Pinned to 0.3, the client asks for the card as a 0.3 client asks (no A2A-Version)
    and reads its 0.3 form: our server's 0.3 interfaces, over either binding. Unpinned,
    the same URL still gives the 1.0 card (the cache keeps the two apart)."""
    async with await A2AClient.connect(a2a_server.url, version="0.3") as client:
        assert (client.version, client.binding) == ("0.3", "JSONRPC")
        done = await client.send_message("echo pinned")
        assert isinstance(done, t.Task)
        assert done.status.state == S.TASK_STATE_COMPLETED
    async with await A2AClient.connect(a2a_server.url, version="0.3", binding="rest") as client:
        assert (client.version, client.binding) == ("0.3", "HTTP+JSON")
        done = await client.send_message("echo pinned")
        assert isinstance(done, t.Task)
        assert done.status.state == S.TASK_STATE_COMPLETED
    async with await A2AClient.connect(a2a_server.url) as client:
        assert client.version == "1.0"


def test_the_command_line_speaks_0_3_to_our_server(a2a_server: A2AServer) -> None:
    pinned = ("--a2a-version", "0.3")
    card = a2a("card", a2a_server.url, *pinned)
    assert card.returncode == 0, card.stderr
    assert "  JSONRPC 0.3.0  " in card.stdout
    assert "  HTTP+JSON 0.3.0  " in card.stdout
    for binding in ("jsonrpc", "rest"):
        sent = a2a("send", a2a_server.url, "echo over 0.3", *pinned, "--binding", binding)
        assert sent.returncode == 0, sent.stderr
        assert sent.stdout.splitlines()[-2:] == ["over 0.3", "● completed"]


# -- a signed card ----------------------------------------------------------------------------

VERIFY_V03 = """
import json, sys
from a2a.types import AgentCard
from a2a.utils.signing import create_signature_verifier
card = AgentCard.model_validate(json.load(open(sys.argv[1])))
key = open(sys.argv[2], "rb").read()
create_signature_verifier(lambda kid, jku: key, ["ES256"])(card)
card.name = "someone else"
try:
    create_signature_verifier(lambda kid, jku: key, ["ES256"])(card)
except Exception as exc:
    print(type(exc).__name__)
"""


def test_a_signed_card_verifies_for_the_0_3_sdk_and_for_1_0_readers(
    a2a_v03_sdk: Path, tmp_path: Path
) -> None:
    pytest.importorskip("joserfc")
    import msgspec

    from interlink.a2a import verify_card
    from interlink.a2a._card_sign import SigningKey
    from interlink.a2a.server._card_serve import PublishedCard
    from tests.a2a.agents import card
    from tests.a2a.test_card_sign import pem_pair

    private, public = pem_pair(tmp_path, "ES256")
    bearer = t.SecurityScheme(
        http_auth_security_scheme=t.HTTPAuthSecurityScheme(scheme="Bearer", bearer_format="JWT")
    )
    secured = msgspec.structs.replace(card(), name="signé", security_schemes={"bearer": bearer})
    published = PublishedCard(secured, "/", SigningKey.load(private))
    scope: dict[str, object] = {
        "type": "http",
        "scheme": "https",
        "headers": [(b"host", b"agent.example")],
    }
    _, _, body = published.response(scope, {"host": "agent.example"})
    served = msgspec.json.decode(body)
    assert len(served["signatures"]) == 2  # (1.0's, then the 0.3 SDK's)
    verify_card(served, public)
    (tmp_path / "card.json").write_bytes(body)
    checked = subprocess.run(
        [sys.executable, "-c", VERIFY_V03, str(tmp_path / "card.json"), str(public)],
        env=v03_env(a2a_v03_sdk),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == "InvalidSignaturesError"  # (and a changed card fails)
