"""The A2A JSON-RPC binding on a real HTTP server: every method, every rule."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import httpx
import pytest

from interlink.a2a import (
    A2AApp,
    AgentCardWarning,
    AgentExecutor,
    Call,
    EventSink,
    RequestContext,
    TaskUpdater,
    create_app,
    missing_card_fields,
)
from interlink.a2a import types as t
from interlink.jsonrpc import RpcError
from tests.a2a.agents import Scripted, card, message
from tests.a2a.conftest import VERSION, Json, Served
from tests.a2a.subscriptions import attached

Serve = Callable[[A2AApp], Awaitable[Served]]


def error_of(answer: Json) -> tuple[object, str]:
    error = answer["error"]
    assert isinstance(error, dict), answer
    data = error.get("data")
    reason = ""
    if isinstance(data, list) and data and isinstance(data[0], dict):
        reason = str(data[0].get("reason", ""))
    return error["code"], reason


@pytest.fixture
async def agent() -> Scripted:
    return Scripted()


@pytest.fixture
async def server(serve: Serve, agent: Scripted) -> Served:
    return await serve(create_app(agent, card()))


def task_of(result: Json) -> Json:
    task = result["task"]
    assert isinstance(task, dict)
    return task


async def test_agent_card_with_caching_headers(server: Served) -> None:
    url = server.url + ".well-known/agent-card.json"
    response = await server.client.get(url)
    assert response.status_code == 200
    assert response.json()["name"] == "test agent"
    assert "max-age" in response.headers["cache-control"]
    assert response.headers["last-modified"]
    etag = response.headers["etag"]
    again = await server.client.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert (await server.client.get(server.url + "nope")).status_code == 404


async def test_version_is_checked_on_every_call(server: Served) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    # without a version the request is 0.3 (§3.6.2), which has no GetTask: a 1.0 client
    # that forgot the header, told so in 1.0 form
    missing = (await server.client.post(server.url, json=body)).json()
    assert error_of(missing) == (-32009, "VERSION_NOT_SUPPORTED")
    assert missing["error"]["data"][0]["metadata"]["supported"] == "0.3,1.0"
    assert "send A2A-Version: 1.0" in missing["error"]["message"]
    future = (
        await server.client.post(server.url, json=body, headers={"A2A-Version": "2.0"})
    ).json()
    assert error_of(future)[0] == -32009
    by_query = (await server.client.post(server.url + "?A2A-Version=1.0", json=body)).json()
    assert error_of(by_query)[0] == -32001  # past the version check: the task is unknown


async def test_required_extensions_and_echo_of_activated_ones(serve: Serve) -> None:
    extensions = [
        t.AgentExtension(uri="urn:x:required", required=True),
        t.AgentExtension(uri="urn:x:optional"),
    ]
    app = create_app(Scripted(), card(extensions=extensions))
    server = await serve(app)
    assert error_of(await server.call("SendMessage", message("hi")))[0] == -32008
    response = await server.client.post(
        server.url,
        json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message("hi")},
        headers={**VERSION, "A2A-Extensions": "urn:x:required, urn:x:optional, urn:x:unknown"},
    )
    assert "result" in response.json()
    assert response.headers["a2a-extensions"] == "urn:x:optional, urn:x:required"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{nope", -32700),
        (b'[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]', -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":"Fly"}', -32601),
        (b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":5}}', -32602),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"status":"TASK_STATE_NAPPING"}}',
            -32602,
        ),
    ],
)
async def test_bad_requests_get_http_200_and_their_code(
    server: Served, body: bytes, code: int
) -> None:
    response = await server.client.post(server.url, content=body, headers=VERSION)
    assert response.status_code == 200
    error = response.json()["error"]
    assert error["code"] == code
    # the A2A shape: an array of typed details, the first a google.rpc.ErrorInfo
    assert error["data"][0]["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert error["data"][0]["domain"] == "a2a-protocol.org"
    # and the server goes on serving
    assert "result" in await server.call("SendMessage", message("after"))


async def test_field_violations_are_readable(server: Served) -> None:
    answer = await server.call("ListTasks", {"status": "TASK_STATE_NAPPING", "pageSize": 500})
    code, reason = error_of(answer)
    assert (code, reason) == (-32602, "INVALID_PARAMS")
    details = answer["error"]["data"][1]  # type: ignore[index]
    assert details["@type"] == "type.googleapis.com/google.rpc.BadRequest"
    assert details["fieldViolations"][0]["field"] == "status"
    assert "TASK_STATE_NAPPING" in details["fieldViolations"][0]["description"]


async def test_notifications_are_not_answered(server: Served) -> None:
    response = await server.client.post(
        server.url,
        json={"jsonrpc": "2.0", "method": "GetTask", "params": {"id": "x"}},
        headers=VERSION,
    )
    assert response.status_code == 204
    assert response.content == b""


async def test_a_body_over_the_limit_is_refused_without_reading_it_all(serve: Serve) -> None:
    server = await serve(create_app(Scripted(), card(), max_body=1024))
    response = await server.client.post(server.url, content=b"x" * 100_000, headers=VERSION)
    answer = response.json()
    assert answer["error"]["code"] == -32600
    assert response.status_code == 200  # a JSON-RPC error, like every other
    assert answer["error"]["data"][0]["reason"] == "INVALID_REQUEST"
    assert answer["error"]["data"][0]["metadata"]["limit"] == "1024"
    assert "result" in await server.call("SendMessage", message("small"))


async def test_blocking_send_returns_the_finished_task(server: Served) -> None:
    task = task_of(await server.result("SendMessage", message("echo hello")))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"  # type: ignore[index]
    assert task["artifacts"][0]["parts"] == [{"text": "hello"}]  # type: ignore[index]
    assert task["history"][0]["parts"] == [{"text": "echo hello"}]  # type: ignore[index]


async def test_return_immediately(server: Served, agent: Scripted) -> None:
    params = {**message("slow"), "configuration": {"returnImmediately": True}}
    task = task_of(await server.result("SendMessage", params))
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")  # type: ignore[index]
    agent.release.set()


async def test_history_length(server: Served) -> None:
    task = task_of(await server.result("SendMessage", message("ask")))
    task_id = task["id"]
    assert len(task["history"]) == 2  # type: ignore[arg-type]  # the user's and the agent's question
    got = await server.result("GetTask", {"id": task_id, "historyLength": 1})
    assert len(got["history"]) == 1  # type: ignore[arg-type]
    assert got["history"][0]["parts"] == [{"text": "say more"}]  # type: ignore[index]
    assert "history" not in await server.result("GetTask", {"id": task_id, "historyLength": 0})
    assert error_of(await server.call("GetTask", {"id": task_id, "historyLength": -1}))[0] == -32602


async def test_a_blocking_send_answers_the_task_as_stored(server: Served) -> None:
    task = task_of(await server.result("SendMessage", message("ask")))
    assert task == await server.result("GetTask", {"id": task["id"]})
    # with historyLength, the answer is cut and the stored task is not
    params = {**message("details", taskId=str(task["id"])), "configuration": {"historyLength": 1}}
    follow = task_of(await server.result("SendMessage", params))
    assert follow["status"]["state"] == "TASK_STATE_COMPLETED"  # type: ignore[index]
    assert len(follow["history"]) == 1  # type: ignore[arg-type]
    stored = await server.result("GetTask", {"id": task["id"]})
    assert len(stored["history"]) == 3  # type: ignore[arg-type]
    assert {**stored, "history": stored["history"][-1:]} == follow  # type: ignore[index]


async def test_follow_ups_take_the_context_from_the_task(server: Served) -> None:
    first = task_of(await server.result("SendMessage", message("ask")))
    assert first["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"  # type: ignore[index]
    follow = task_of(
        await server.result("SendMessage", message("details", taskId=str(first["id"])))
    )
    assert follow["id"] == first["id"]
    assert follow["contextId"] == first["contextId"]
    assert follow["status"]["state"] == "TASK_STATE_COMPLETED"  # type: ignore[index]
    assert follow["artifacts"][0]["parts"] == [{"text": "got details"}]  # type: ignore[index]
    # the finished task takes no more messages
    again = await server.call("SendMessage", message("more", taskId=str(first["id"])))
    assert error_of(again) == (-32004, "UNSUPPORTED_OPERATION")


async def test_follow_up_errors(server: Served) -> None:
    first = task_of(await server.result("SendMessage", message("ask")))
    mismatch = message("x", taskId=str(first["id"]), contextId="another")
    assert error_of(await server.call("SendMessage", mismatch))[0] == -32602
    unknown = message("x", taskId="no-such-task")
    assert error_of(await server.call("SendMessage", unknown)) == (-32001, "TASK_NOT_FOUND")


async def test_direct_message(server: Served) -> None:
    result = await server.result("SendMessage", message("message"))
    assert result["message"]["parts"] == [{"text": "direct"}]  # type: ignore[index]
    assert "task" not in result


async def test_executor_exception_fails_the_task_with_a_generic_reason(
    server: Served, caplog: pytest.LogCaptureFixture
) -> None:
    answer = await server.call("SendMessage", message("boom"))
    task = task_of(answer["result"])  # type: ignore[arg-type]
    status = task["status"]
    assert status["state"] == "TASK_STATE_FAILED"  # type: ignore[index]
    reason = status["message"]["parts"][0]["text"]  # type: ignore[index]
    assert reason == "the agent failed (the server's log says why)"
    stored = await server.result("GetTask", {"id": task["id"]})
    assert "broke" not in str(answer)
    assert "broke" not in str(stored)
    assert "ValueError" not in str(answer)
    # the log has it all, with the traceback
    logged = [r for r in caplog.records if r.name == "interlink.a2a" and r.exc_info]
    assert any("the agent broke" in str(r.exc_info[1]) for r in logged if r.exc_info)


@pytest.mark.parametrize("method", ["SendMessage", "SendStreamingMessage"])
async def test_an_exception_before_any_event_is_a_generic_32006(
    server: Served, caplog: pytest.LogCaptureFixture, method: str
) -> None:
    answer = await server.call(method, message("crash"))  # (refused before the stream)
    assert error_of(answer)[0] == -32006
    text = answer["error"]["message"]  # type: ignore[index]
    assert text == "the agent did not answer: the agent failed (the server's log says why)"
    assert "4300" not in str(answer)
    assert "ValueError" not in str(answer)
    assert any("4300" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


async def test_expose_errors_sends_the_exception_to_the_client(serve: Serve) -> None:
    server = await serve(create_app(Scripted(), card(), expose_errors=True))
    task = task_of(await server.result("SendMessage", message("boom")))
    reason = task["status"]["message"]["parts"][0]["text"]  # type: ignore[index]
    assert reason == "the agent failed: ValueError: the agent broke"
    for method in ("SendMessage", "SendStreamingMessage"):
        answer = await server.call(method, message("crash"))
        assert error_of(answer)[0] == -32006
        text = answer["error"]["message"]  # type: ignore[index]
        assert text.startswith("the agent did not answer: ValueError: Exceeds the limit (4300")


async def test_an_rpc_error_raised_on_purpose_reaches_the_client(serve: Serve) -> None:
    class Refuses(AgentExecutor):
        async def execute(self, context: RequestContext, events: EventSink) -> None:
            await TaskUpdater(context, events).working()
            raise RpcError("the quota is used up", code=-32099)

    server = await serve(create_app(Refuses(), card()))
    task = task_of(await server.result("SendMessage", message("hi")))
    reason = task["status"]["message"]["parts"][0]["text"]  # type: ignore[index]
    assert reason == "the agent failed: the quota is used up"


async def test_events_after_a_terminal_state_are_refused(server: Served, agent: Scripted) -> None:
    task = task_of(await server.result("SendMessage", message("twice")))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"  # type: ignore[index]
    await asyncio.wait_for(agent.refused.wait(), 5)  # the executor goes on after the answer
    assert "no event may follow" in str(agent.after_terminal[0])


async def test_an_executor_that_publishes_nothing(server: Served) -> None:
    assert error_of(await server.call("SendMessage", message("silent")))[0] == -32006


async def test_streaming_starts_with_the_task_and_ends_at_completion(server: Served) -> None:
    events = await server.stream("SendStreamingMessage", message("chunks 5"))
    kinds = [next(iter(e["result"])) for _, e in events]  # type: ignore[call-overload]
    assert kinds == ["task", "statusUpdate", *["artifactUpdate"] * 5, "statusUpdate"]
    ids = [int(i) for i, _ in events if i is not None]
    assert ids == sorted(ids)
    assert len(ids) == len(events)
    last = events[-1][1]["result"]["statusUpdate"]["status"]["state"]  # type: ignore[index]
    assert last == "TASK_STATE_COMPLETED"


async def test_a_follow_up_stream_starts_with_the_task_too(server: Served) -> None:
    first = await server.stream("SendStreamingMessage", message("ask"))
    assert next(iter(first[0][1]["result"])) == "task"  # type: ignore[call-overload]
    task_id = first[0][1]["result"]["task"]["id"]  # type: ignore[index]
    follow = await server.stream("SendStreamingMessage", message("now", taskId=task_id))
    kinds = [next(iter(e["result"])) for _, e in follow]  # type: ignore[call-overload]
    assert kinds[0] == "task"
    assert kinds[-1] == "statusUpdate"


async def test_subscribe(server: Served, agent: Scripted) -> None:
    params = {**message("slow"), "configuration": {"returnImmediately": True}}
    task = task_of(await server.result("SendMessage", params))
    await agent.started.wait()
    subscribers = [
        asyncio.create_task(server.stream("SubscribeToTask", {"id": task["id"]})) for _ in range(3)
    ]
    await attached(server, task["id"], 3)
    agent.release.set()
    streams = await asyncio.gather(*subscribers)
    for events in streams:
        assert next(iter(events[0][1]["result"])) == "task"  # type: ignore[call-overload]
        assert events[-1][1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"  # type: ignore[index]
    seen = [[(event_id, event["result"]) for event_id, event in events] for events in streams]
    assert seen[0] == seen[1] == seen[2]  # the same events, ids and order on every stream
    terminal = await server.call("SubscribeToTask", {"id": task["id"]})
    assert error_of(terminal) == (-32004, "UNSUPPORTED_OPERATION")
    assert error_of(await server.call("SubscribeToTask", {"id": "nope"}))[0] == -32001


async def test_subscribe_resumes_after_last_event_id(server: Served, agent: Scripted) -> None:
    params = {**message("slow"), "configuration": {"returnImmediately": True}}
    task = task_of(await server.result("SendMessage", params))
    await agent.started.wait()  # the log holds 1 (the task) and 2 (working)
    fresh = asyncio.create_task(server.stream("SubscribeToTask", {"id": task["id"]}))
    resumed = asyncio.create_task(
        server.stream("SubscribeToTask", {"id": task["id"]}, {"Last-Event-ID": "1"})
    )
    await attached(server, task["id"], 2)  # both attached before the task completes
    agent.release.set()
    # a fresh subscriber: the snapshot (as of event 2), then the live event 3
    assert [event_id for event_id, _ in await fresh] == ["2", "3"]
    # one that saw event 1: the snapshot (no id), the missed 2 from the log, then 3
    events = await resumed
    assert [event_id for event_id, _ in events] == [None, "2", "3"]
    kinds = [next(iter(e["result"])) for _, e in events]  # type: ignore[call-overload]
    assert kinds == ["task", "statusUpdate", "statusUpdate"]


async def test_idle_streams_get_keep_alive_comments(serve: Serve) -> None:
    agent = Scripted()
    server = await serve(create_app(agent, card(), keepalive=0.05))
    params = {**message("slow"), "configuration": {"returnImmediately": True}}
    task = task_of(await server.result("SendMessage", params))
    await agent.started.wait()
    body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task["id"]}}
    seen = b""
    async with server.client.stream("POST", server.url, json=body, headers=VERSION) as response:
        async for chunk in response.aiter_bytes():
            seen += chunk
            if seen.count(b": keep-alive") >= 2:
                agent.release.set()
    assert seen.count(b": keep-alive\n\n") >= 2
    assert b"TASK_STATE_COMPLETED" in seen


class SlowToStart(AgentExecutor):
    """Publishes nothing until released, then completes."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        await self.release.wait()
        await TaskUpdater(context, events).complete("done")


async def test_a_stream_gets_keep_alives_before_its_first_event(serve: Serve) -> None:
    """An agent slow to publish its first event: the stream starts with keep-alive
    comments (a client with an idle timeout does not take the server for dead), then
    the events as usual."""
    agent = SlowToStart()
    server = await serve(create_app(agent, card(), keepalive=0.05))
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": message("hi")}
    seen = b""
    async with server.client.stream("POST", server.url, json=body, headers=VERSION) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        async for chunk in response.aiter_bytes():
            seen += chunk
            if seen.count(b": keep-alive") >= 2:
                agent.release.set()
    assert seen.startswith(b": keep-alive\n\n: keep-alive\n\n")
    assert b"TASK_STATE_COMPLETED" in seen


async def test_list_tasks(server: Served) -> None:
    ids = [
        task_of(await server.result("SendMessage", message(f"echo {i}")))["id"] for i in range(7)
    ]
    page = await server.result("ListTasks", {"pageSize": 3})
    assert page["totalSize"] == 7
    assert page["pageSize"] == 3
    seen = [task["id"] for task in page["tasks"]]  # type: ignore[attr-defined]
    while page["nextPageToken"]:
        page = await server.result("ListTasks", {"pageSize": 3, "pageToken": page["nextPageToken"]})
        seen += [task["id"] for task in page["tasks"]]  # type: ignore[attr-defined]
    assert sorted(map(str, seen)) == sorted(map(str, ids))
    assert len(seen) == len(set(seen))
    assert page["nextPageToken"] == ""
    assert all("artifacts" not in task for task in page["tasks"])  # type: ignore[attr-defined]
    with_artifacts = await server.result("ListTasks", {"includeArtifacts": True, "pageSize": 1})
    assert "artifacts" in with_artifacts["tasks"][0]  # type: ignore[index]
    newest_first = await server.result("ListTasks", {})
    times = [task["status"]["timestamp"] for task in newest_first["tasks"]]  # type: ignore[attr-defined]
    assert times == sorted(times, reverse=True)
    assert error_of(await server.call("ListTasks", {"pageSize": 0}))[0] == -32602
    assert error_of(await server.call("ListTasks", {"pageToken": "!!"}))[0] == -32602
    one = task_of(await server.result("SendMessage", message("ask")))
    by_context = await server.result("ListTasks", {"contextId": one["contextId"]})
    assert [task["id"] for task in by_context["tasks"]] == [one["id"]]  # type: ignore[attr-defined]
    waiting = await server.result("ListTasks", {"status": "TASK_STATE_INPUT_REQUIRED"})
    assert [task["id"] for task in waiting["tasks"]] == [one["id"]]  # type: ignore[attr-defined]


async def test_cancel(server: Served, agent: Scripted) -> None:
    params = {**message("slow"), "configuration": {"returnImmediately": True}}
    running = task_of(await server.result("SendMessage", params))
    await agent.started.wait()
    canceled = await server.result("CancelTask", {"id": running["id"]})
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"  # type: ignore[index]
    assert agent.cancels == [running["id"]]
    again = await server.result("CancelTask", {"id": running["id"]})  # idempotent
    assert again["status"]["state"] == "TASK_STATE_CANCELED"  # type: ignore[index]
    done = task_of(await server.result("SendMessage", message("echo x")))
    assert error_of(await server.call("CancelTask", {"id": done["id"]})) == (
        -32002,
        "TASK_NOT_CANCELABLE",
    )
    waiting = task_of(await server.result("SendMessage", message("ask")))
    canceled = await server.result("CancelTask", {"id": waiting["id"]})
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"  # type: ignore[index]
    assert error_of(await server.call("CancelTask", {"id": "nope"}))[0] == -32001


async def test_push_config_crud(server: Served) -> None:
    task = task_of(await server.result("SendMessage", message("ask")))
    config = {"taskId": task["id"], "url": "https://example.invalid/hook", "token": "tok"}
    created = await server.result("CreateTaskPushNotificationConfig", config)
    assert created["id"]
    assert created["taskId"] == task["id"]
    got = await server.result(
        "GetTaskPushNotificationConfig", {"taskId": task["id"], "id": created["id"]}
    )
    assert got == created
    listed = await server.result("ListTaskPushNotificationConfigs", {"taskId": task["id"]})
    assert listed["configs"] == [created]
    for _ in range(2):  # idempotent
        answer = await server.call(
            "DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": created["id"]}
        )
        assert answer["result"] is None
    gone = await server.call(
        "GetTaskPushNotificationConfig", {"taskId": task["id"], "id": created["id"]}
    )
    assert error_of(gone)[0] == -32001


async def test_push_and_streaming_need_their_capabilities(serve: Serve) -> None:
    server = await serve(create_app(Scripted(), card(streaming=False, push_notifications=False)))
    task = task_of(await server.result("SendMessage", message("ask")))
    config = {"taskId": task["id"], "url": "https://example.invalid/hook"}
    assert error_of(await server.call("CreateTaskPushNotificationConfig", config))[0] == -32003
    inline = {
        **message("x"),
        "configuration": {"taskPushNotificationConfig": {"url": "https://h/"}},
    }
    assert error_of(await server.call("SendMessage", inline))[0] == -32003
    assert error_of(await server.call("SendStreamingMessage", message("x")))[0] == -32004
    assert error_of(await server.call("GetExtendedAgentCard"))[0] == -32004


async def test_extended_card(serve: Serve) -> None:
    declared = await serve(create_app(Scripted(), card(extended_agent_card=True)))
    assert error_of(await declared.call("GetExtendedAgentCard"))[0] == -32007
    extended = t.AgentCard(name="secret", capabilities=t.AgentCapabilities())
    configured = await serve(
        create_app(Scripted(), card(extended_agent_card=True), extended_card=extended)
    )
    assert (await configured.result("GetExtendedAgentCard"))["name"] == "secret"


async def test_200_concurrent_sends_make_200_tasks(server: Served) -> None:
    results = await asyncio.gather(
        *(server.result("SendMessage", message(f"echo {i}")) for i in range(200))
    )
    ids = {task_of(r)["id"] for r in results}
    assert len(ids) == 200
    assert all(task_of(r)["status"]["state"] == "TASK_STATE_COMPLETED" for r in results)  # type: ignore[index]


async def test_a_stream_that_stops_reading_is_cut_off_without_slowing_the_others(
    serve: Serve,
) -> None:
    agent = Scripted()
    server = await serve(create_app(agent, card(), stream_queue_limit=16))
    params = {**message("big 300"), "configuration": {"returnImmediately": True}}
    task = task_of(await server.result("SendMessage", params))
    await agent.started.wait()
    body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task["id"]}}
    stalled = httpx.AsyncClient(timeout=30)
    try:
        async with stalled.stream("POST", server.url, json=body, headers=VERSION) as response:
            assert response.status_code == 200
            reader = asyncio.create_task(server.stream("SubscribeToTask", {"id": task["id"]}))
            await attached(server, task["id"], 2)  # both, before the agent starts
            agent.release.set()
            events = await reader  # a client that reads gets every event to the end
            assert len(events) == 1 + 300 + 1
            final = events[-1][1]["result"]["statusUpdate"]["status"]["state"]  # type: ignore[index]
            assert final == "TASK_STATE_COMPLETED"
            # the stalled client was cut off: its stream ended before the task did
            received = b""
            async for chunk in response.aiter_bytes():
                received += chunk
            assert received.count(b"\ndata: ") + received.startswith(b"data: ") < 302
            assert b"TASK_STATE_COMPLETED" not in received
    finally:
        await stalled.aclose()


async def test_idle_interrupted_tasks_are_only_rows(server: Served) -> None:
    task = task_of(await server.result("SendMessage", message("ask")))
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"  # type: ignore[index]
    live = server.app.server.live.get(("", str(task["id"])))
    if live is not None and live.runner is not None:
        await live.runner  # the executor returned after asking...
        await asyncio.sleep(0)  # ...and its done-callback runs on the next loop turn
    assert server.app.server.live == {}
    row = await server.app.server.store.get("", str(task["id"]))
    assert row is not None
    assert row.state == "TASK_STATE_INPUT_REQUIRED"


class Resumable(Scripted):
    resumable = True


async def test_resumable_executors_are_rerun_after_a_restart(tmp_path: object) -> None:
    from pathlib import Path

    from interlink.a2a.server._runtime import task_row
    from interlink.a2a.stores._sqlite import SqliteTaskStore

    assert isinstance(tmp_path, Path)
    path = tmp_path / "tasks.db"
    store = SqliteTaskStore(path)
    await store.open()
    user = t.Message(message_id="u", role=t.Role.ROLE_USER, parts=[t.Part(text="echo again")])
    working = t.Task(
        id="t1",
        context_id="c1",
        status=t.TaskStatus(state=t.TaskState.TASK_STATE_WORKING),
        history=[user],
    )
    await store.create(task_row(working, tenant="", owner=""), [])
    await store.close()

    from interlink.a2a import A2AServer

    server = A2AServer(Resumable(), card(), SqliteTaskStore(path))
    await server.startup()
    try:
        live = server.live.get(("", "t1"))
        if live is not None and live.runner is not None:
            await asyncio.wait_for(asyncio.shield(live.runner), 10)
        row = await server.store.get("", "t1")
        assert row is not None
        assert row.state == "TASK_STATE_COMPLETED"
        task = await server.get_task(t.GetTaskRequest(id="t1"), Call())
        assert task.artifacts[0].parts[0].text == "again"
    finally:
        await server.shutdown()


async def test_mountable_inside_starlette(serve: Serve, tmp_path: object) -> None:
    # Starlette does not pass lifespan events to mounted apps: the host's lifespan does
    from starlette.applications import Starlette
    from starlette.routing import Mount

    agent_app = create_app(Scripted(), card(), store=f"sqlite:///{tmp_path}/mounted.db")
    host = Starlette(
        routes=[Mount("/agents/echo", app=agent_app)], lifespan=lambda _: agent_app.lifespan()
    )
    server = await serve(host)  # type: ignore[arg-type]
    response = await server.client.get(server.url + "agents/echo/.well-known/agent-card.json")
    assert response.json()["name"] == "test agent"
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message("echo mounted")}
    answer = (
        await server.client.post(server.url + "agents/echo/", json=body, headers=VERSION)
    ).json()
    assert answer["result"]["task"]["artifacts"][0]["parts"] == [{"text": "mounted"}]


def field_violations(answer: Json) -> list[str]:
    error = answer["error"]
    assert isinstance(error, dict), answer
    details = error["data"]
    assert isinstance(details, list)
    bad = next(d for d in details if d["@type"].endswith("google.rpc.BadRequest"))
    return [v["field"] for v in bad["fieldViolations"]]


@pytest.mark.parametrize("method", ["SendMessage", "SendStreamingMessage"])
@pytest.mark.parametrize(
    ("drop", "fields"),
    [
        ({"messageId": None}, ["message.messageId"]),
        ({"messageId": ""}, ["message.messageId"]),
        ({"role": None}, ["message.role"]),
        ({"role": "ROLE_UNSPECIFIED"}, ["message.role"]),
        ({"messageId": None, "role": None}, ["message.messageId", "message.role"]),
    ],
)
async def test_a_message_without_its_id_or_role_is_refused(
    server: Served, agent: Scripted, method: str, drop: dict[str, str | None], fields: list[str]
) -> None:
    body = message("hello")
    sent = body["message"]
    assert isinstance(sent, dict)
    for name, value in drop.items():
        if value is None:
            del sent[name]
        else:
            sent[name] = value
    answer = await server.call(method, body)  # (a stream refused at once: plain JSON)
    assert error_of(answer) == (-32602, "INVALID_PARAMS")
    assert field_violations(answer) == fields
    assert all(f in answer["error"]["message"] for f in fields)  # type: ignore[index]
    # nothing ran, and the server goes on serving
    listed = await server.result("ListTasks", {})
    assert listed["tasks"] == []
    assert "result" in await server.call("SendMessage", message("after"))


def test_create_app_warns_about_a_card_missing_required_fields() -> None:
    bare = t.AgentCard(
        name="bare",
        capabilities=t.AgentCapabilities(),
        skills=[t.AgentSkill(id="s", name="S")],  # no description, no tags
        provider=t.AgentProvider(organization="acme"),  # no url
    )
    with pytest.warns(AgentCardWarning) as caught:
        create_app(Scripted(), bare)
    assert len(caught) == 1
    text = str(caught[0].message)
    for field in (
        "description",
        "version",
        "defaultInputModes",
        "defaultOutputModes",
        "skills[0].description",
        "skills[0].tags",
        "provider.url",
    ):
        assert field in text.split(": ", 1)[1]
    assert "supportedInterfaces" not in text  # filled in from each request
    assert caught[0].filename == __file__  # it points at the create_app call
    assert missing_card_fields(card()) == []
    create_app(Scripted(), card())  # a complete card: no warning (warnings are errors here)
