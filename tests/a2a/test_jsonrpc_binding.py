"""Edges of the A2A 1.0 JSON-RPC binding: envelope, notifications, ProtoJSON input,
headers, card caching, tenants, paging, historyLength, cancel and subscribe edge cases,
and races between requests (a store whose reads wait, as SQLite's do)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone

import pytest

from interlink.a2a import (
    A2AApp,
    BearerAuth,
    EventSink,
    RequestContext,
    TaskUpdater,
    TenantRouter,
    create_app,
)
from interlink.a2a import types as t
from interlink.a2a.client._sse import SSEEvent, SSEParser
from interlink.a2a.stores._base import TaskRow
from interlink.a2a.stores._memory import MemoryTaskStore
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


def task_of(result: Json) -> Json:
    task = result["task"]
    assert isinstance(task, dict)
    return task


def ids_of(page: Json) -> list[str]:
    """The ids of a ListTasks page's tasks, in order."""
    tasks = page["tasks"]
    assert isinstance(tasks, list)
    return [str(task["id"]) for task in tasks]


def state_of(task: object) -> str:
    assert isinstance(task, dict)
    status = task["status"]
    assert isinstance(status, dict)
    return str(status["state"])


class Agent(Scripted):
    """`Scripted` plus `reject`, `auth` and `fail` (each ends its task that way)."""

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        if context.task is None and context.text == "reject":
            await task.reject("no")
        elif context.task is None and context.text == "auth":
            await task.requires_auth("log in")
        elif context.task is None and context.text == "fail":
            await task.failed("broken")
        else:
            await super().execute(context, events)


@pytest.fixture
async def agent() -> Agent:
    return Agent()


@pytest.fixture
async def server(serve: Serve, agent: Agent) -> Served:
    return await serve(create_app(agent, card()))


async def post(server: Served, body: bytes, headers: dict[str, str] | None = None) -> Json:
    response = await server.client.post(
        server.url, content=body, headers={**VERSION, **(headers or {})}
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert isinstance(answer, dict)
    return answer


# -- JSON-RPC envelope ----------------------------------------------------------------


async def test_ids_are_echoed_exactly_on_results_and_errors(server: Served) -> None:
    big = 12345678901234567890123
    answer = await post(server, b'{"jsonrpc":"2.0","id":%d,"method":"ListTasks"}' % big)
    assert (answer["id"], "result" in answer) == (big, True)
    answer = await post(server, b'{"jsonrpc":"2.0","id":"007","method":"Fly"}')
    assert (answer["id"], error_of(answer)[0]) == ("007", -32601)
    answer = await post(server, b'{"jsonrpc":"1.0","id":"x","method":"GetTask"}')
    assert (answer["id"], error_of(answer)[0]) == ("x", -32600)
    answer = await post(server, b'{"jsonrpc":"2.0","id":null,"method":"ListTasks"}')
    assert (answer["id"], "result" in answer) == (None, True)
    for bad_id in (b"1.5", b"true", b"[1]", b'{"a":1}'):
        answer = await post(server, b'{"jsonrpc":"2.0","id":' + bad_id + b',"method":"ListTasks"}')
        assert (answer["id"], error_of(answer)[0]) == (None, -32600), bad_id


async def test_params_that_are_not_objects(server: Served) -> None:
    array = await post(server, b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":["x"]}')
    assert error_of(array)[0] == -32602
    scalar = await post(server, b'{"jsonrpc":"2.0","id":2,"method":"GetTask","params":"x"}')
    assert (scalar["id"], error_of(scalar)[0]) == (2, -32600)
    null = await post(server, b'{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":null}')
    assert "result" in null
    extra = await post(
        server, b'{"jsonrpc":"2.0","id":4,"method":"ListTasks","params":{},"x-extra":1}'
    )
    assert "result" in extra
    answer_to_us = await post(server, b'{"jsonrpc":"2.0","id":5,"result":{}}')
    assert (answer_to_us["id"], error_of(answer_to_us)[0]) == (5, -32600)


async def test_a_notification_is_still_executed(server: Served) -> None:
    body = {"jsonrpc": "2.0", "method": "SendMessage", "params": message("echo quiet")}
    response = await server.client.post(server.url, json=body, headers=VERSION)
    assert response.status_code == 204
    listed = await server.result("ListTasks", {})
    assert listed["totalSize"] == 1


async def test_a_missing_task_id_is_bad_params_not_an_unknown_task(server: Served) -> None:
    for method, params, field in [
        ("GetTask", {}, "id"),
        ("CancelTask", {"id": ""}, "id"),
        ("SubscribeToTask", {}, "id"),
        ("GetTaskPushNotificationConfig", {"id": "c1"}, "taskId"),
    ]:
        answer = await server.call(method, params)
        assert error_of(answer)[0] == -32602, (method, answer)
        assert field in str(answer["error"]), (method, answer)


async def test_a_streaming_notification_starts_the_task_and_sends_nothing(
    server: Served,
) -> None:
    body = {"jsonrpc": "2.0", "method": "SendStreamingMessage", "params": message("echo s")}
    response = await server.client.post(server.url, json=body, headers=VERSION)
    assert (response.status_code, response.content) == (204, b"")
    for live in list(server.app.server.live.values()):  # its executor goes on: let it end
        if live.runner is not None:
            async with asyncio.timeout(5):
                await live.runner
    listed = await server.result("ListTasks", {})
    assert [state_of(task) for task in listed["tasks"]] == ["TASK_STATE_COMPLETED"]  # type: ignore[attr-defined]


# -- service parameters ----------------------------------------------------------------


async def test_a_patch_version_is_not_considered(server: Served) -> None:
    answer = await server.call("ListTasks", {}, **{"A2A-Version": "1.0.1"})
    assert "result" in answer, answer


async def test_version_header_wins_over_the_query(server: Served) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
    url = server.url + "?A2A-Version=1.0"
    old = await server.client.post(url, json=body, headers={"A2A-Version": "0.3"})
    assert error_of(old.json())[0] == -32009
    empty_header = await server.client.post(url, json=body, headers={"A2A-Version": ""})
    assert "result" in empty_header.json()


async def test_extensions_over_two_header_lines(serve: Serve) -> None:
    extensions = [
        t.AgentExtension(uri="urn:x:required", required=True),
        t.AgentExtension(uri="urn:x:optional"),
    ]
    server = await serve(create_app(Scripted(), card(extensions=extensions)))
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
    headers = [
        ("A2A-Version", "1.0"),
        ("A2A-Extensions", "urn:x:required"),
        ("A2A-Extensions", "urn:x:optional"),
    ]
    response = await server.client.post(server.url, json=body, headers=headers)
    assert "result" in response.json(), response.json()
    assert response.headers["a2a-extensions"] == "urn:x:optional, urn:x:required"


async def test_activated_extensions_are_echoed_on_streams_and_errors(serve: Serve) -> None:
    server = await serve(create_app(Scripted(), card(extensions=[t.AgentExtension(uri="urn:x")])))
    headers = {**VERSION, "A2A-Extensions": "urn:x"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": message("x")}
    async with server.client.stream("POST", server.url, json=body, headers=headers) as response:
        assert response.headers["a2a-extensions"] == "urn:x"
        await response.aread()
    body = {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "nope"}}
    response = await server.client.post(server.url, json=body, headers=headers)
    assert error_of(response.json())[0] == -32001
    assert response.headers["a2a-extensions"] == "urn:x"


# -- agent card -------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["star", "list", "weak"])
async def test_card_if_none_match_forms(server: Served, form: str) -> None:
    url = server.url + ".well-known/agent-card.json"
    etag = (await server.client.get(url)).headers["etag"]
    value = {"star": "*", "list": f'"other", {etag}', "weak": f"W/{etag}"}[form]
    again = await server.client.get(url, headers={"If-None-Match": value})
    assert again.status_code == 304


async def test_card_if_modified_since(server: Served) -> None:
    url = server.url + ".well-known/agent-card.json"
    modified = (await server.client.get(url)).headers["last-modified"]
    again = await server.client.get(url, headers={"If-Modified-Since": modified})
    assert again.status_code == 304


async def test_card_head_and_stale_etag(server: Served) -> None:
    url = server.url + ".well-known/agent-card.json"
    head = await server.client.head(url)
    assert head.status_code == 200
    assert head.headers["etag"]
    stale = await server.client.get(url, headers={"If-None-Match": '"stale"'})
    assert stale.status_code == 200
    assert stale.json()["name"] == "test agent"


async def test_extensions_are_echoed_on_an_error_before_the_stream(serve: Serve) -> None:
    server = await serve(create_app(Scripted(), card(extensions=[t.AgentExtension(uri="urn:x")])))
    headers = {**VERSION, "A2A-Extensions": "urn:x"}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": message("silent"),
    }
    response = await server.client.post(server.url, json=body, headers=headers)
    assert error_of(response.json())[0] == -32006  # the agent published nothing
    assert response.headers.get("a2a-extensions") == "urn:x"


# -- ProtoJSON input ----------------------------------------------------------------------


async def test_snake_case_params_on_every_level(server: Served) -> None:
    params = {
        "message": {
            "message_id": "m1",
            "role": "ROLE_USER",
            "parts": [{"text": "ask", "media_type": "text/plain"}],
            "reference_task_ids": ["r"],
        },
        "configuration": {"history_length": 1, "return_immediately": False},
    }
    task = task_of(await server.result("SendMessage", params))
    assert len(task["history"]) == 1  # type: ignore[arg-type]
    got = await server.result("GetTask", {"id": task["id"], "history_length": 0})
    assert "history" not in got
    page = await server.result("ListTasks", {"page_size": 1, "include_artifacts": True})
    assert page["pageSize"] == 1
    both = await server.call("ListTasks", {"page_size": 1, "pageSize": 2})
    assert error_of(both)[0] == -32602


def raw_part(data: str) -> Json:
    return {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"raw": data}]}}


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("ListTasks", {"pageSize": "2"}),  # int32 as a string
        ("ListTasks", {"historyLength": None}),  # null = the field's default
        ("ListTasks", {"contextId": None}),
        ("SendMessage", raw_part("aGk")),  # base64 without padding
        ("SendMessage", raw_part("-_8=")),  # URL-safe base64
    ],
    ids=["int-as-string", "null-int", "null-string", "unpadded-base64", "url-safe-base64"],
)
async def test_protojson_lenient_input_forms(server: Served, method: str, params: Json) -> None:
    answer = await server.call(method, params)
    assert "result" in answer, answer


async def test_timestamps_with_offsets_filter_like_utc(server: Served) -> None:
    task = task_of(await server.result("SendMessage", message("echo t")))
    stamp = str(task["status"]["timestamp"])  # type: ignore[index]
    assert stamp.endswith("Z")
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    shifted = moment.astimezone(timezone(timedelta(hours=2))).isoformat()
    inclusive = await server.result("ListTasks", {"statusTimestampAfter": shifted})
    assert ids_of(inclusive) == [task["id"]]
    later = (moment + timedelta(microseconds=1)).isoformat()
    assert (await server.result("ListTasks", {"statusTimestampAfter": later}))["tasks"] == []
    naive = await server.call("ListTasks", {"statusTimestampAfter": "2026-01-01T00:00:00"})
    assert error_of(naive)[0] == -32602


# -- historyLength ------------------------------------------------------------------------


async def test_history_length_on_streams(server: Served) -> None:
    first = await server.stream(
        "SendStreamingMessage", {**message("ask"), "configuration": {"historyLength": 0}}
    )
    snapshot = first[0][1]["result"]["task"]  # type: ignore[index]
    assert "history" not in snapshot
    follow = await server.stream(
        "SendStreamingMessage",
        {**message("more", taskId=snapshot["id"]), "configuration": {"historyLength": 1}},
    )
    assert len(follow[0][1]["result"]["task"]["history"]) <= 1  # type: ignore[index]


async def test_history_length_on_list_tasks(server: Served) -> None:
    task_of(await server.result("SendMessage", message("ask")))
    cut = await server.result("ListTasks", {"historyLength": 1})
    assert [len(x["history"]) for x in cut["tasks"]] == [1]  # type: ignore[attr-defined]
    none = await server.result("ListTasks", {"historyLength": 0})
    assert all("history" not in x for x in none["tasks"])  # type: ignore[attr-defined]
    everything = await server.result("ListTasks", {})
    assert [len(x["history"]) for x in everything["tasks"]] == [2]  # type: ignore[attr-defined]
    assert error_of(await server.call("ListTasks", {"historyLength": -1}))[0] == -32602
    negative = {**message("x"), "configuration": {"historyLength": -1}}
    assert error_of(await server.call("SendMessage", negative))[0] == -32602
    assert (await server.result("ListTasks", {}))["totalSize"] == 1  # refused before a task


# -- tenants ----------------------------------------------------------------------------


async def test_a_plain_app_refuses_an_unknown_tenant_field(server: Served) -> None:
    answer = await server.call("SendMessage", {**message("echo x"), "tenant": "ghost"})
    assert "error" in answer, answer


async def routed(serve: Serve, router: TenantRouter) -> Served:
    return await serve(router)  # type: ignore[arg-type]


async def test_router_oversize_body_is_a_json_rpc_error(serve: Serve) -> None:
    router = TenantRouter({"acme": create_app(Scripted(), card())}, max_body=1024)
    server = await routed(serve, router)
    response = await server.client.post(server.url, content=b" " * 4096, headers=VERSION)
    assert response.status_code == 200
    assert error_of(response.json())[0] == -32600


async def test_router_invalid_json_is_a_parse_error(serve: Serve) -> None:
    server = await routed(serve, TenantRouter({"acme": create_app(Scripted(), card())}))
    response = await server.client.post(server.url, content=b"{nope", headers=VERSION)
    assert response.status_code == 200
    assert error_of(response.json())[0] == -32700


async def test_router_tenant_prefix_without_slash_and_query_version(serve: Serve) -> None:
    server = await routed(serve, TenantRouter({"acme": create_app(Scripted(), card())}))
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message("echo hi")}
    made = (await server.client.post(server.url + "acme?A2A-Version=1.0", json=body)).json()
    task_id = made["result"]["task"]["id"]
    body = {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}}
    root = (await server.client.post(server.url, json=body, headers=VERSION)).status_code
    assert root == 404  # no tenant: not another tenant's data
    by_field = {**body, "params": {"id": task_id, "tenant": "acme"}}
    answer = (await server.client.post(server.url, json=by_field, headers=VERSION)).json()
    assert answer["result"]["id"] == task_id


# -- ListTasks ----------------------------------------------------------------------------


def owner_only_by_hand(principal: str, row: TaskRow, operation: str) -> bool:
    return row.owner == principal  # the default rule, but not the default function


async def test_list_tasks_with_a_custom_authorize_hook(serve: Serve) -> None:
    auth = [BearerAuth({"t-alice": "alice", "t-bob": "bob"})]
    app = create_app(Scripted(), card(), auth=auth, authorize=owner_only_by_hand)
    server = await serve(app)

    async def call(token: str, method: str, params: object) -> Json:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        headers = {**VERSION, "Authorization": f"Bearer {token}"}
        answer = (await server.client.post(server.url, json=body, headers=headers)).json()
        assert "result" in answer, answer
        result = answer["result"]
        assert isinstance(result, dict)
        return result

    mine = [
        str(task_of(await call("t-alice", "SendMessage", message(f"x{i}")))["id"]) for i in "abc"
    ]
    for i in range(3):  # newer than alice's
        await call("t-bob", "SendMessage", message(f"echo {i}"))
    page = await call("t-alice", "ListTasks", {"pageSize": 2})
    seen = ids_of(page)
    while page["nextPageToken"]:
        more = {"pageSize": 2, "pageToken": page["nextPageToken"]}
        page = await call("t-alice", "ListTasks", more)
        seen += ids_of(page)
    assert sorted(seen) == sorted(mine)
    assert page["totalSize"] == 3


async def test_list_tasks_paging_while_tasks_change(server: Served, agent: Agent) -> None:
    async def new(text: str) -> str:
        return str(task_of(await server.result("SendMessage", message(text)))["id"])

    waiting = [await new("ask") for _ in range(3)]
    done = [await new(f"echo {i}") for i in range(3)]
    page = await server.result("ListTasks", {"pageSize": 2})
    seen = ids_of(page)
    assert seen == done[::-1][:2]
    # an unseen task moves to the top (this walk skips it); a terminal one cannot move
    await server.result("SendMessage", message("now", taskId=str(waiting[0])))
    refused = await server.call("SendMessage", message("now", taskId=str(done[2])))
    assert error_of(refused)[0] == -32004  # terminal: its position does not change
    while page["nextPageToken"]:
        page = await server.result("ListTasks", {"pageSize": 2, "pageToken": page["nextPageToken"]})
        seen += ids_of(page)
    assert len(seen) == len(set(seen))
    assert set(seen) == {*done, *waiting[1:]}
    fresh = await server.result("ListTasks", {"pageSize": 100})
    assert ids_of(fresh)[0] == waiting[0]
    assert fresh["totalSize"] == 6


# -- CancelTask ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "outcome"),
    [
        ("auth", "TASK_STATE_CANCELED"),
        ("ask", "TASK_STATE_CANCELED"),
        ("reject", -32002),
        ("fail", -32002),
        ("echo x", -32002),
        ("message", -32001),  # a direct answer makes no task
    ],
)
async def test_cancel_in_each_state(server: Served, text: str, outcome: object) -> None:
    result = await server.result("SendMessage", message(text))
    task_id = task_of(result)["id"] if "task" in result else "m-message-0"
    answer = await server.call("CancelTask", {"id": task_id})
    if isinstance(outcome, str):
        assert state_of(answer["result"]) == outcome
        again = await server.call("CancelTask", {"id": task_id})
        assert state_of(again["result"]) == outcome
        stored = await server.result("GetTask", {"id": task_id})
        assert state_of(stored) == outcome
        follow = await server.call("SendMessage", message("late", taskId=str(task_id)))
        assert error_of(follow)[0] == -32004
    else:
        assert error_of(answer)[0] == outcome


async def test_cancel_ends_every_stream_of_the_task(server: Served, agent: Agent) -> None:
    params = {**message("slow"), "configuration": {"returnImmediately": True}}
    task = task_of(await server.result("SendMessage", params))
    await agent.started.wait()
    stream = asyncio.create_task(server.stream("SubscribeToTask", {"id": task["id"]}))
    await attached(server, task["id"], 1)
    canceled = await server.result("CancelTask", {"id": task["id"]})
    assert state_of(canceled) == "TASK_STATE_CANCELED"
    async with asyncio.timeout(5):
        events = await stream
    last = events[-1][1]["result"]["statusUpdate"]["status"]["state"]  # type: ignore[index]
    assert last == "TASK_STATE_CANCELED"


# -- push configs -------------------------------------------------------------------------


async def test_push_config_id_rules(server: Served) -> None:
    task = task_of(await server.result("SendMessage", message("ask")))
    other = task_of(await server.result("SendMessage", message("ask")))
    url = "https://example.invalid/hook"
    mine = await server.result(
        "CreateTaskPushNotificationConfig", {"taskId": task["id"], "id": "c1", "url": url}
    )
    assert mine["id"] == "c1"
    # the same id on another task is another config
    theirs = await server.result(
        "CreateTaskPushNotificationConfig", {"taskId": other["id"], "id": "c1", "url": url + "2"}
    )
    assert theirs["taskId"] == other["id"]
    got = await server.result("GetTaskPushNotificationConfig", {"taskId": task["id"], "id": "c1"})
    assert got["url"] == url
    missing = await server.call("GetTaskPushNotificationConfig", {"taskId": task["id"], "id": ""})
    assert error_of(missing)[0] == -32001
    gone = await server.call("DeleteTaskPushNotificationConfig", {"taskId": "nope", "id": "c1"})
    assert error_of(gone)[0] == -32001
    no_url = await server.call("CreateTaskPushNotificationConfig", {"taskId": task["id"]})
    assert error_of(no_url)[0] == -32602
    listed = await server.result("ListTaskPushNotificationConfigs", {"taskId": other["id"]})
    assert [c["url"] for c in listed["configs"]] == [url + "2"]  # type: ignore[attr-defined]


async def test_an_inline_push_config_is_listed_with_its_task(server: Served) -> None:
    hook = {"url": "https://example.invalid/hook", "token": "tok"}
    params = {**message("ask"), "configuration": {"taskPushNotificationConfig": hook}}
    task = task_of(await server.result("SendMessage", params))
    listed = await server.result("ListTaskPushNotificationConfigs", {"taskId": task["id"]})
    configs = listed["configs"]
    assert isinstance(configs, list)
    [config] = configs
    assert config["taskId"] == task["id"]
    assert config["url"] == hook["url"]
    assert config["id"]
    follow = {
        **message("more", taskId=str(task["id"])),
        "configuration": {"taskPushNotificationConfig": {**hook, "id": "second"}},
    }
    await server.result("SendMessage", follow)
    listed = await server.result("ListTaskPushNotificationConfigs", {"taskId": task["id"]})
    assert len(listed["configs"]) == 2  # type: ignore[arg-type]


# -- SubscribeToTask and Last-Event-ID ----------------------------------------------------


@pytest.mark.parametrize(
    ("last_event_id", "ids"),
    [
        ("abc", ["2", "3"]),  # not a number: a fresh subscription
        ("-1", ["2", "3"]),
        ("99999999999999999999", ["2", "3"]),  # too long for a sequence number
        ("0", [None, "1", "2", "3"]),  # everything from the start
        ("2", [None, "3"]),  # saw everything so far
        ("50", [None, "3"]),  # from the future: only what comes
    ],
)
async def test_subscribe_with_odd_last_event_ids(
    server: Served, agent: Agent, last_event_id: str, ids: list[str | None]
) -> None:
    params = {**message("slow"), "configuration": {"returnImmediately": True}}
    task = task_of(await server.result("SendMessage", params))
    await agent.started.wait()  # the log holds 1 (the task) and 2 (working)
    stream = asyncio.create_task(
        server.stream("SubscribeToTask", {"id": task["id"]}, {"Last-Event-ID": last_event_id})
    )
    await attached(server, task["id"], 1)
    agent.release.set()
    async with asyncio.timeout(5):
        events = await stream
    assert [event_id for event_id, _ in events] == ids
    assert next(iter(events[0][1]["result"])) == "task"  # type: ignore[call-overload]


async def test_resume_of_an_ended_task_on_the_wire(server: Served, agent: Agent) -> None:
    events = await server.stream("SendStreamingMessage", message("chunks 3"))
    task_id = events[0][1]["result"]["task"]["id"]  # type: ignore[index]
    last = events[-1][0]
    assert last is not None
    replay = await server.stream("SubscribeToTask", {"id": task_id}, {"Last-Event-ID": "2"})
    assert [i for i, _ in replay] == [None, *[i for i, _ in events if i and int(i) > 2]]
    assert state_of(replay[0][1]["result"]["task"]) == "TASK_STATE_COMPLETED"  # type: ignore[index]
    up_to_date = await server.call("SubscribeToTask", {"id": task_id}, **{"Last-Event-ID": last})
    assert error_of(up_to_date)[0] == -32004
    ahead = await server.call("SubscribeToTask", {"id": task_id}, **{"Last-Event-ID": "999"})
    assert error_of(ahead)[0] == -32004


async def test_subscribe_to_an_interrupted_task_follows_the_next_turn(
    server: Served, agent: Agent
) -> None:
    task = task_of(await server.result("SendMessage", message("ask")))
    stream = asyncio.create_task(server.stream("SubscribeToTask", {"id": task["id"]}))
    await attached(server, task["id"], 1)
    follow = task_of(await server.result("SendMessage", message("details", taskId=str(task["id"]))))
    assert state_of(follow) == "TASK_STATE_COMPLETED"
    async with asyncio.timeout(5):
        events = await stream
    kinds = [next(iter(e["result"])) for _, e in events]  # type: ignore[call-overload]
    assert kinds == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    assert state_of(events[0][1]["result"]["task"]) == "TASK_STATE_INPUT_REQUIRED"  # type: ignore[index]


# -- races with a store that suspends (as SQLite and PostgreSQL do) ------------------------


class GatedStore(MemoryTaskStore):
    """A memory store whose `get` can be held at a gate, like a store whose reads run in
    a thread or over a socket (other requests go on meanwhile)."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.arrived = asyncio.Event()
        self.open_gate = asyncio.Event()

    async def get(self, tenant: str, task_id: str) -> TaskRow | None:
        row = await super().get(tenant, task_id)
        if self.armed:
            self.armed = False
            self.arrived.set()
            await self.open_gate.wait()
        return row


async def settled(server: Served, task_id: object) -> None:
    """Until the task's executor returned and the task left memory."""
    live = server.app.server.live.get(("", str(task_id)))
    if live is not None and live.runner is not None:
        await live.runner
    await asyncio.sleep(0)  # its done-callback runs on the next loop turn
    assert ("", str(task_id)) not in server.app.server.live


@pytest.fixture
async def gated(serve: Serve, agent: Agent) -> tuple[Served, GatedStore]:
    store = GatedStore()
    return await serve(create_app(agent, card(), store=store)), store


async def test_subscribe_racing_the_end_of_the_task(
    gated: tuple[Served, GatedStore], agent: Agent
) -> None:
    server, store = gated
    params = {**message("slow"), "configuration": {"returnImmediately": True}}
    task = task_of(await server.result("SendMessage", params))
    await agent.started.wait()
    store.armed = True
    body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task["id"]}}

    async def subscribe() -> bytes:
        async with server.client.stream("POST", server.url, json=body, headers=VERSION) as r:
            return await r.aread()

    stream = asyncio.create_task(subscribe())
    await store.arrived.wait()  # it read the task while WORKING
    agent.release.set()
    await settled(server, task["id"])
    store.open_gate.set()
    try:
        async with asyncio.timeout(3):
            received = await stream
    finally:
        stream.cancel()
    # the end of the task, streamed, or -32004 for a task that is over
    assert b"TASK_STATE_COMPLETED" in received or b"-32004" in received


async def test_two_follow_ups_racing(gated: tuple[Served, GatedStore]) -> None:
    server, store = gated
    task = task_of(await server.result("SendMessage", message("ask")))
    store.armed = True
    late = asyncio.create_task(server.call("SendMessage", message("late", taskId=str(task["id"]))))
    await store.arrived.wait()  # the late follow-up read the task while INPUT_REQUIRED
    first = task_of(await server.result("SendMessage", message("first", taskId=str(task["id"]))))
    assert state_of(first) == "TASK_STATE_COMPLETED"
    await settled(server, task["id"])
    store.open_gate.set()
    async with asyncio.timeout(5):
        answer = await late
    stored = await server.result("GetTask", {"id": task["id"]})
    texts = [m["parts"][0]["text"] for m in stored["history"]]  # type: ignore[attr-defined]
    assert "late" not in texts
    assert error_of(answer)[0] == -32004


async def test_deeply_nested_json_gets_a_json_rpc_error(server: Served) -> None:
    # Deeper than the decoder goes on any Python: its limit is CPython's C recursion
    # limit, about 1000 levels on 3.11, 1500 on 3.12 and 10000 on 3.13.
    depth = 100_000
    body = (
        b'{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"x","x":'
        + b"[" * depth
        + b"]" * depth
        + b"}}"
    )
    response = await server.client.post(server.url, content=body, headers=VERSION)
    assert "result" in await server.call("ListTasks", {})  # the server goes on serving
    assert response.status_code == 200, response.text
    assert response.json()["error"]["code"] in (-32700, -32600, -32602)


async def test_a_direct_answer_streams_as_one_message(server: Served) -> None:
    events = await server.stream("SendStreamingMessage", message("message"))
    assert len(events) == 1
    event_id, event = events[0]
    assert event_id is None  # not a task event: no sequence number
    reply = event["result"]["message"]  # type: ignore[index]
    assert reply["parts"] == [{"text": "direct"}]
    assert "taskId" not in reply
    assert (await server.result("ListTasks", {}))["totalSize"] == 0


# -- the SSE parser (client side) ---------------------------------------------------------


def test_an_empty_chunk_between_cr_and_lf() -> None:
    parser = SSEParser()
    events = [e for chunk in (b"data: a\r", b"", b"\ndata: b\n\n") for e in parser.feed(chunk)]
    assert events + parser.close() == [SSEEvent("a\nb")]
