"""interlink's A2A client against the official A2A 1.0 servers (Python and JS SDKs).

Each peer server (``peers/py_server.py`` on ``a2a-sdk``, ``peers/js_server.mjs`` on
``@a2a-js/sdk``) runs in a subprocess on 127.0.0.1 with the same agent: ``echo X``,
``slow`` (working 0..6 then completed; cancellable), ``ask`` and ``message``. The
Python one also serves HTTP+JSON only (``py-sdk-rest``), and behind a card whose first
two interfaces do not answer (``fallback``).
"""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import Iterator

import pytest

from interlink.a2a import (
    NoInterfaceAnswered,
    Outcome,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
    _card,
)
from interlink.a2a import types as t
from interlink.a2a.client._client import A2AClient, StreamEvent
from tests.interop.a2a.conftest import PEERS, PeerKind, peer_server
from tests.serving import free_port

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]
COMPLETED = t.TaskState.TASK_STATE_COMPLETED


@contextlib.contextmanager
def sdk_peer(kind: str, mode: str = "jsonrpc") -> Iterator[str]:
    """The `kind` peer server (in `mode`, for the Python one) on a free port: its URL.
    `py-grpc` offers gRPC only (its card lists one `GRPC` interface)."""
    port = free_port()
    if kind == "py-grpc":
        cmd = [sys.executable, str(PEERS / "py_grpc_server.py"), str(port), str(free_port())]
    elif kind == "py":
        cmd = [sys.executable, str(PEERS / "py_server.py"), str(port), mode]
    else:
        cmd = [shutil.which("node") or "node", str(PEERS / "js_server.mjs"), str(port)]
    with peer_server(cmd, f"http://127.0.0.1:{port}/") as url:
        _card.clear_card_cache()
        yield url


@pytest.fixture(
    params=[("py", "jsonrpc"), ("js", "jsonrpc"), ("py", "rest")],
    ids=["py-sdk", "js-sdk", "py-sdk-rest"],
)
def peer(request: pytest.FixtureRequest) -> Iterator[str]:
    name, mode = request.param
    kind: PeerKind = request.getfixturevalue(f"a2a_{name}_sdk")
    with sdk_peer(kind, mode) as url:
        yield url


@pytest.fixture(
    params=[("py", "jsonrpc"), ("js", "jsonrpc"), ("py", "rest"), ("py-grpc", "grpc")],
    ids=["py-sdk", "js-sdk", "py-sdk-rest", "py-sdk-grpc"],
)
def agent(request: pytest.FixtureRequest) -> Iterator[str]:
    """`peer`, and the Python SDK's agent offering only gRPC, which the client
    negotiates from its card (`interlink[grpc]`)."""
    name, mode = request.param
    request.getfixturevalue(f"a2a_{name.split('-')[0]}_sdk")
    with sdk_peer(name, mode) as url:
        yield url


def status_text(payload: object) -> str:
    if isinstance(payload, t.Task | t.TaskStatusUpdateEvent) and payload.status.message:
        return "".join(str(p.text) for p in payload.status.message.parts)
    return ""


async def test_send_get_list_cancel(agent: str) -> None:
    async with await A2AClient.connect(agent) as client:
        assert client.card.name.endswith("sdk peer")
        assert client.binding == client.card.supported_interfaces[0].protocol_binding
        task = await client.send_message("echo hi")
        assert isinstance(task, t.Task)
        assert task.status.state == COMPLETED
        assert task.artifacts[-1].parts[0].text == "hi"
        assert (await client.get_task(task.id)).id == task.id
        reply = await client.send_message("message")
        assert isinstance(reply, t.Message)
        assert reply.parts[0].text == "direct"
        asked = await client.send_message("ask")
        assert isinstance(asked, t.Task)
        assert asked.status.state == t.TaskState.TASK_STATE_INPUT_REQUIRED
        done = await client.send_message("more", task_id=asked.id, context_id=asked.context_id)
        assert isinstance(done, t.Task)
        assert done.status.state == COMPLETED
        assert done.artifacts[-1].parts[0].text == "got more"
        page = await client.list_tasks(page_size=1)
        assert len(page.tasks) == 1
        ids = {task.id async for task in client.iter_tasks(page_size=1)}
        assert {task.id, asked.id} <= ids
        slow = await client.send_message("slow", return_immediately=True)
        assert isinstance(slow, t.Task)
        canceled = await client.cancel_task(slow.id)
        assert canceled.status.state == t.TaskState.TASK_STATE_CANCELED
        with pytest.raises(TaskNotCancelable):
            await client.cancel_task(task.id)
        with pytest.raises(TaskNotFound):
            await client.get_task("no-such-task")


async def test_stream_and_subscribe(agent: str) -> None:
    async with await A2AClient.connect(agent) as client:
        events = [e async for e in client.stream_message("echo streamed")]
        assert isinstance(events[0].payload, t.Task)
        assert any(isinstance(e.payload, t.TaskArtifactUpdateEvent) for e in events)
        last = events[-1].payload
        assert isinstance(last, t.TaskStatusUpdateEvent | t.Task)
        assert last.status.state == COMPLETED
        slow = await client.send_message("slow", return_immediately=True)
        assert isinstance(slow, t.Task)
        seen: list[StreamEvent] = [e async for e in client.subscribe(slow.id)]
        assert isinstance(seen[0].payload, t.Task)
        steps = [status_text(e.payload) for e in seen[1:] if status_text(e.payload)]
        assert steps == sorted(steps, key=int)
        final = seen[-1].payload
        assert isinstance(final, t.TaskStatusUpdateEvent | t.Task)
        assert final.status.state == COMPLETED
        with pytest.raises(UnsupportedOperation):
            async for _ in client.subscribe(slow.id):
                pass


async def test_falls_back_to_the_interface_that_answers(a2a_py_sdk: PeerKind) -> None:
    with sdk_peer(a2a_py_sdk, "fallback") as url:
        async with await A2AClient.connect(url, probe_timeout=5) as client:
            assert client.binding == "HTTP+JSON"
            assert client.url == url
            reasons = [(c.outcome, c.reason) for c in client.negotiation.candidates]
            assert reasons == [
                (Outcome.FAILED, "did not answer: connection refused"),
                (Outcome.FAILED, "HTTP 307: redirected elsewhere (not followed)"),
                (Outcome.PICKED, "it answered"),
            ]
            task = await client.send_message("echo after the fallback")
            assert isinstance(task, t.Task)
            assert task.artifacts[-1].parts[0].text == "after the fallback"
        async with await A2AClient.connect(url, binding="rest") as pinned:
            assert pinned.negotiation.candidates[2].reason == "the only choice"
            assert (await pinned.get_task(task.id)).status.state == COMPLETED
        with pytest.raises(NoInterfaceAnswered, match="connection refused"):
            await A2AClient.connect(url, binding="jsonrpc")
