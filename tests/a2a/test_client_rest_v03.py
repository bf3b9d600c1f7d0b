"""The client speaking A2A 0.3 over HTTP+JSON (`client._v03.V03_REST`): each call on its
0.3 route in the 0.3 proto's ProtoJSON, the answers as the 1.0 objects, errors typed
whether a server says them in the body (ours) or by the status alone (the official
SDK's); then every call against our server's 0.3 routes. The interop with the official
SDK's 0.3 agent is in `tests/interop/a2a/test_v03.py`."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import msgspec
import pytest

from interlink.a2a import (
    A2AHttpError,
    ExtendedAgentCardNotConfigured,
    PushNotificationNotSupported,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
    create_app,
)
from interlink.a2a import types as t
from interlink.a2a.client._client import A2AClient, A2AInvalidParams
from interlink.a2a.compat import card_from_v03, v03
from tests.a2a.agents import Scripted, card
from tests.a2a.test_client_rest import TASK, mock_rest, ok
from tests.a2a.test_rest_v03 import Serve, parsed

pytestmark = pytest.mark.timeout(20)
Json = dict[str, Any]


@contextlib.asynccontextmanager
async def mock_agent(
    answer: Callable[[httpx.Request], httpx.Response],
) -> AsyncIterator[tuple[A2AClient, list[httpx.Request]]]:
    """A client of a mock agent whose card offers HTTP+JSON 0.3 alone."""
    async with mock_rest(answer, version="0.3.0") as opened:
        yield opened


def body_of(request: httpx.Request) -> Json:
    out: Json = json.loads(request.content)
    return out


async def test_each_call_goes_to_its_0_3_route_in_the_0_3_proto() -> None:
    async with mock_agent(ok({"task": TASK})) as (client, seen):
        assert (client.version, client.binding) == ("0.3", "HTTP+JSON")
        task = await client.send_message("hi", return_immediately=True)
        assert isinstance(task, t.Task)
        assert task.status.state == t.TaskState.TASK_STATE_WORKING
        sent = seen[-1]
        assert (sent.method, sent.url.path) == ("POST", "/a2a/v1/message:send")
        assert sent.headers["content-type"] == "application/json"
        assert sent.headers["accept"] == "application/json"
        assert sent.headers["a2a-version"] == "0.3"
        message = parsed(body_of(sent), "SendMessageRequest")  # (strictly the 0.3 proto)
        assert message.request.content[0].text == "hi"
        assert body_of(sent)["configuration"] == {"blocking": False}
        await client.send_message("hi")
        assert body_of(seen[-1])["configuration"] == {"blocking": True}  # (absent: false)

    async with mock_agent(ok(TASK)) as (client, seen):
        await client.get_task("t/1", history_length=2)
        assert (seen[-1].method, seen[-1].url.raw_path) == (
            "GET",
            b"/a2a/v1/tasks/t%2F1?historyLength=2",
        )
        await client.cancel_task("t/1")
        assert (seen[-1].method, seen[-1].url.raw_path) == ("POST", b"/a2a/v1/tasks/t%2F1:cancel")
        assert body_of(seen[-1]) == {"name": "tasks/t/1"}

    named = {
        "name": "tasks/t1/pushNotificationConfigs/c1",
        "pushNotificationConfig": {"id": "c1", "url": "https://hook.example/", "token": "k"},
    }
    async with mock_agent(ok(named)) as (client, seen):
        made = await client.create_push_config("t1", "https://hook.example/", config_id="c1")
        assert made == t.TaskPushNotificationConfig(
            id="c1", task_id="t1", url="https://hook.example/", token="k"
        )
        assert seen[-1].url.path == "/a2a/v1/tasks/t1/pushNotificationConfigs"
        parsed(body_of(seen[-1]), "CreateTaskPushNotificationConfigRequest")
        assert body_of(seen[-1])["parent"] == "tasks/t1"
        assert await client.get_push_config("t1", "c1") == made
        assert seen[-1].url.path == "/a2a/v1/tasks/t1/pushNotificationConfigs/c1"

    async with mock_agent(ok({"configs": [named]})) as (client, seen):
        listed = await client.list_push_configs("t1")
        assert [c.id for c in listed.configs] == ["c1"]
    async with mock_agent(ok({})) as (client, seen):
        await client.delete_push_config("t1", "c1")
        assert (seen[-1].method, seen[-1].url.path) == (
            "DELETE",
            "/a2a/v1/tasks/t1/pushNotificationConfigs/c1",
        )


async def test_list_tasks_has_no_0_3_form_and_is_never_sent() -> None:
    async with mock_agent(ok({})) as (client, seen):
        with pytest.raises(UnsupportedOperation, match=r"ListTasks has no A2A 0\.3 form"):
            await client.list_tasks()
        assert seen == []


async def test_a_stream_of_0_3_events() -> None:
    update = {"taskId": "t/1", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
    events = [{"task": TASK}, {"statusUpdate": {**update, "final": True}}]
    sse = "".join(f"id: {i}\ndata: {json.dumps(e)}\n\n" for i, e in enumerate(events, 1))

    def answer(request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "text/event-stream"}
        return httpx.Response(200, content=sse.encode(), headers=headers)

    async with mock_agent(answer) as (client, seen):
        got = [e async for e in client.stream_message("hi")]
        assert seen[-1].url.path == "/a2a/v1/message:stream"
        assert seen[-1].headers["accept"] == "text/event-stream, application/json"
        assert [type(e.payload) for e in got] == [t.Task, t.TaskStatusUpdateEvent]
        assert [e.id for e in got] == ["1", "2"]
        subscribed = [e async for e in client.subscribe("t/1")]
        assert (seen[-1].method, seen[-1].url.raw_path) == ("GET", b"/a2a/v1/tasks/t%2F1:subscribe")
        assert len(subscribed) == 2


async def test_errors_are_typed_from_the_body_or_the_status() -> None:
    ours = {"code": -32001, "message": "Task 'x' not found", "data": {"taskId": "x"}}
    async with mock_agent(lambda r: httpx.Response(404, json=ours)) as (client, _):
        with pytest.raises(TaskNotFound, match="Task 'x' not found") as found:
            await client.get_task("x")
        assert found.value.data[-1]["value"] == {"taskId": "x"}  # type: ignore[index]

    def sdk(status: int) -> Callable[[httpx.Request], httpx.Response]:
        return lambda request: httpx.Response(status, json={"message": "said by the SDK"})

    cases: list[tuple[int, Callable[[A2AClient], Any], type[Exception]]] = [
        (404, lambda c: c.get_task("x"), TaskNotFound),
        (409, lambda c: c.cancel_task("x"), TaskNotCancelable),
        (422, lambda c: c.send_message("x"), A2AInvalidParams),
        (
            501,
            lambda c: c.create_push_config("x", "https://h.example/"),
            PushNotificationNotSupported,
        ),
        (404, lambda c: c.get_extended_card(), ExtendedAgentCardNotConfigured),
    ]
    for status, call, error in cases:
        async with mock_agent(sdk(status)) as (client, _):
            with pytest.raises(error, match="said by the SDK"):
                await call(client)
    # a 404 that is no A2A answer (a server without the route) stays an HTTP error
    no_route = lambda r: httpx.Response(404, json={"detail": "Not Found"})  # noqa: E731
    async with mock_agent(no_route) as (client, _):
        with pytest.raises(A2AHttpError) as http:
            await client.get_task("x")
        assert http.value.status == 404


# -- against our server's 0.3 routes -------------------------------------------------------------


async def v03_view(served_url: str, http: httpx.AsyncClient) -> t.AgentCard:
    """Our card as a 0.3 client reads it: its 0.3 fields alone."""
    raw = (await http.get(served_url + ".well-known/agent-card.json")).json()
    del raw["supportedInterfaces"]
    return card_from_v03(msgspec.convert(raw, v03.AgentCard))


async def test_every_call_against_our_servers_0_3_routes(serve: Serve) -> None:
    agent = Scripted()
    served = await serve(create_app(agent, card()))
    old_card = await v03_view(served.url, served.client)
    async with await A2AClient.from_card(old_card, card_url=served.url, binding="rest") as client:
        assert (client.version, client.binding) == ("0.3", "HTTP+JSON")
        assert client.url == served.url.rstrip("/")
        done = await client.send_message("echo hi")
        assert isinstance(done, t.Task)
        assert done.status.state == t.TaskState.TASK_STATE_COMPLETED
        assert done.artifacts[-1].parts[0].text == "hi"
        assert (await client.get_task(done.id, history_length=1)).id == done.id
        reply = await client.send_message("message")
        assert isinstance(reply, t.Message)
        with pytest.raises(TaskNotFound):
            await client.get_task("nope")
        with pytest.raises(TaskNotCancelable):
            await client.cancel_task(done.id)
        with pytest.raises(UnsupportedOperation):
            await client.get_extended_card()

        asked = [e async for e in client.stream_message("ask")]
        assert isinstance(asked[0].payload, t.Task)
        last = asked[-1].payload
        assert isinstance(last, t.TaskStatusUpdateEvent)
        assert last.status.state == t.TaskState.TASK_STATE_INPUT_REQUIRED
        answered = await client.send_message("blue", task_id=last.task_id)
        assert isinstance(answered, t.Task)
        assert answered.artifacts[-1].parts[0].text == "got blue"

        slow = await client.send_message("slow", return_immediately=True)
        assert isinstance(slow, t.Task)
        seen: list[t.TaskState] = []
        async for event in client.subscribe(slow.id):
            payload = event.payload
            if isinstance(payload, t.Task | t.TaskStatusUpdateEvent):
                seen.append(payload.status.state)
            agent.release.set()  # (once subscribed: the task completes)
        assert seen[-1] == t.TaskState.TASK_STATE_COMPLETED
        with pytest.raises(UnsupportedOperation, match="nothing to subscribe to"):
            async for _ in client.subscribe(slow.id):
                pass

        agent.release.clear()
        cancelled = await client.send_message("slow", return_immediately=True)
        assert isinstance(cancelled, t.Task)
        assert (await client.cancel_task(cancelled.id)).status.state == (
            t.TaskState.TASK_STATE_CANCELED
        )

        made = await client.create_push_config(
            answered.id, "https://hooks.example/a2a", config_id="c1", token="tok"
        )
        assert (made.id, made.task_id, made.token) == ("c1", answered.id, "tok")
        assert await client.get_push_config(answered.id, "c1") == made
        assert (await client.list_push_configs(answered.id)).configs == [made]
        await client.delete_push_config(answered.id, "c1")
        assert (await client.list_push_configs(answered.id)).configs == []
