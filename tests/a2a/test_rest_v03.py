"""A2A 0.3 over HTTP+JSON: the 0.3 ProtoJSON bodies (`compat._v03_rest`), the calls both
ways (`compat._v03_rest_calls`) and the `/v1/...` routes of the server
(`bindings/_rest_v03`), answered by the 1.0 handler.

What we write is parsed with the official SDK's compiled 0.3 proto
(`a2a.compat.v0_3.a2a_v0_3_pb2`, shipped with `a2a-sdk` 1.x) without leave to skip
unknown fields, and read back as the SDK reads it; the interop with a real 0.3 REST
client is in `tests/interop/a2a/test_v03.py`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import msgspec
import pytest
from hypothesis import assume, given

from interlink.a2a import A2AApp, create_app
from interlink.a2a.compat import _v03 as c
from interlink.a2a.compat import _v03_types as v
from interlink.a2a.compat._v03_rest import from_rest, to_rest
from interlink.a2a.compat._v03_rest_calls import (
    HTTP_STATUS,
    RestCall,
    error_from_rest,
    error_from_status,
    find,
    request_to_rest,
    result_from_rest,
    result_to_rest,
)
from tests.a2a.agents import Scripted, card
from tests.a2a.conftest import Served
from tests.a2a.test_compat_v03 import events, push_configs, send_requests, wire
from tests.a2a.test_compat_v03_serving import NOPE_NOT_FOUND

Serve = Callable[[A2AApp], Awaitable[Served]]
Json = dict[str, Any]


def pb() -> Any:
    return pytest.importorskip("a2a.compat.v0_3.a2a_v0_3_pb2", reason="a2a-sdk 1.x")


def parsed(body: object, message: str) -> Any:
    """`body` parsed strictly as the official 0.3 proto's `message`."""
    from google.protobuf.json_format import Parse

    return Parse(json.dumps(body), getattr(pb(), message)())


def rewritten(body: object, message: str) -> object:
    """`body` as the official SDK writes it again once parsed (defaults left out)."""
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(parsed(body, message))


# -- the bodies -------------------------------------------------------------------------------


@given(events)
def test_stream_events_parse_as_the_0_3_proto_and_read_back(event: Any) -> None:
    old = wire(c.stream_event_to_v03(event))
    body = result_to_rest("message/stream", old)
    again = result_from_rest("message/stream", rewritten(body, "StreamResponse"))
    # the same event once read as 0.3 JSON (as a client reads it), but for what proto3
    # cannot tell from absent (an empty object, list or string, a false flag, the
    # unspecified state)
    back = msgspec.convert(again, c.StreamEventV03)
    assert _without_defaults(wire(back)) == _without_defaults(old)


@given(send_requests)
def test_send_requests_read_as_their_0_3_params(request: Any) -> None:
    params = wire(c.send_params_to_v03(request))
    params.setdefault("configuration", {"blocking": True})  # (absent: blocking, in 0.3 JSON)
    body = to_rest(params, "SendMessageRequest")
    parsed(body, "SendMessageRequest")
    route, fields = _route("POST", "/v1/message:send")
    again = route.params(fields, {}, rewritten(body, "SendMessageRequest"))
    back = msgspec.convert(again, v.MessageSendParams)
    keep = {"blocking"}  # (absent would be true)
    assert _without_defaults(wire(back), keep) == _without_defaults(params, keep)


@given(push_configs)
def test_push_configs_are_named_by_task_and_id(config: Any) -> None:
    old = wire(c.push_config_to_v03(config))
    body = result_to_rest("tasks/pushNotificationConfig/get", old)
    proto = parsed(body, "TaskPushNotificationConfig")
    assert proto.name == f"tasks/{old['taskId']}/pushNotificationConfigs/{config.id}"
    listed = result_to_rest("tasks/pushNotificationConfig/list", [old, old])
    assert len(parsed(listed, "ListTaskPushNotificationConfigResponse").configs) == 2


def test_file_bytes_travel_as_the_official_sdks_write_them() -> None:
    proto_utils = pytest.importorskip("a2a.compat.v0_3.proto_utils")
    part = {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain", "name": "f"}}
    message = {"kind": "message", "messageId": "m", "role": "user", "parts": [part]}
    body = to_rest(message, "Message")
    assert isinstance(body, dict)
    assert body["content"][0]["file"]["fileWithBytes"] == "YUdrPQ=="  # (base64 of "aGk=")
    sdk = proto_utils.FromProto.message(parsed(body, "Message"))
    assert sdk.parts[0].root.file.bytes == "aGk="
    assert from_rest(body, "Message") == message


def test_enums_read_by_name_or_number_and_snake_case_names() -> None:
    status = from_rest(
        {"state": 5, "update": {"message_id": "m", "role": "ROLE_AGENT"}}, "TaskStatus"
    )
    assert status == {
        "state": "canceled",
        "message": {"kind": "message", "messageId": "m", "role": "agent", "parts": []},
    }
    with pytest.raises(ValueError, match="Role"):
        from_rest({"messageId": "m", "role": "ROLE_UNSPECIFIED"}, "Message")
    with pytest.raises(ValueError, match="one of text, file, data"):
        from_rest({"metadata": {"a": 1}}, "Part")


# -- the client's side: the inverses -----------------------------------------------------


def served_params(call: RestCall) -> object:
    """The 0.3 params the server makes of a client's REST request."""
    entry, fields = _route(call.verb, call.path)
    query: dict[str, list[str]] = {}
    for name, value in call.query:
        query.setdefault(name, []).append(value)
    body = {} if call.body is None else rewritten(call.body, _BODIES[entry.method])
    return entry.params(fields, query, body)


_BODIES = {
    "message/send": "SendMessageRequest",
    "message/stream": "SendMessageRequest",
    "tasks/cancel": "CancelTaskRequest",
    "tasks/pushNotificationConfig/set": "CreateTaskPushNotificationConfigRequest",
}


@given(send_requests)
def test_a_clients_send_is_read_back_as_its_0_3_params(request: Any) -> None:
    params = wire(c.send_params_to_v03(request))
    call = request_to_rest("message/send", params)
    assert (call.verb, call.path, call.query) == ("POST", "/v1/message:send", ())
    parsed(call.body, "SendMessageRequest")  # (strictly the official proto's)
    params.setdefault("configuration", {"blocking": True})  # (absent: blocking, in 0.3 JSON)
    back = msgspec.convert(served_params(call), v.MessageSendParams)
    keep = {"blocking"}
    assert _without_defaults(wire(back), keep) == _without_defaults(params, keep)


@given(push_configs)
def test_a_clients_push_config_is_read_back_and_its_answer_too(config: Any) -> None:
    assume("/" not in config.id)  # (a name's last segment)
    config = msgspec.structs.replace(config, task_id=config.task_id or "t")
    params = wire(c.push_config_to_v03(config))
    call = request_to_rest("tasks/pushNotificationConfig/set", params)
    assert call.verb == "POST"
    assert _route("POST", call.path)[1] == {"id": config.task_id}
    parsed(call.body, "CreateTaskPushNotificationConfigRequest")
    back = served_params(call)
    if not config.id:  # (the server names it by the task: 0.3's default)
        params["pushNotificationConfig"].pop("id", None)
    assert _without_defaults(back) == _without_defaults(params)
    answer = result_to_rest("tasks/pushNotificationConfig/get", params)
    assert result_from_rest("tasks/pushNotificationConfig/get", answer) == result_from_rest(
        "tasks/pushNotificationConfig/get", rewritten(answer, "TaskPushNotificationConfig")
    )
    listed = result_from_rest("tasks/pushNotificationConfig/list", {"configs": [answer]})
    assert listed == [result_from_rest("tasks/pushNotificationConfig/get", answer)]


def test_the_other_calls_go_where_the_server_finds_them() -> None:
    calls = {
        "tasks/get": {"id": "t/1", "historyLength": 2},
        "tasks/cancel": {"id": "t/1"},
        "tasks/resubscribe": {"id": "t/1"},
        "tasks/pushNotificationConfig/get": {"id": "t/1", "pushNotificationConfigId": "c"},
        "tasks/pushNotificationConfig/list": {"id": "t/1"},
        "tasks/pushNotificationConfig/delete": {"id": "t/1", "pushNotificationConfigId": "c"},
    }
    for method, params in calls.items():
        call = request_to_rest(method, params)
        assert _route(call.verb, call.path)[0].method == method
        assert served_params(call) == params
    assert request_to_rest("tasks/get", {"id": "t/1"}).path == "/v1/tasks/t%2F1"
    assert request_to_rest("tasks/resubscribe", {"id": "t"}).verb == "GET"  # (as the SDKs)
    assert request_to_rest("tasks/cancel", {"id": "t"}).body == {"name": "tasks/t"}
    card = request_to_rest("agent/getAuthenticatedExtendedCard", None)
    assert (card.verb, card.path, card.body) == ("GET", "/v1/card", None)
    with pytest.raises(ValueError, match="needs id"):
        request_to_rest("tasks/get", {"id": ""})
    with pytest.raises(KeyError):
        request_to_rest("tasks/list", {})
    assert result_from_rest("tasks/pushNotificationConfig/delete", {}) is None


def test_a_0_3_servers_errors_are_read_from_the_body_or_the_status() -> None:
    ours = v.JSONRPCError(code=-32001, message="Task not found", data={"taskId": "x"})
    assert error_from_rest(msgspec.json.encode(ours)) == ours
    assert error_from_rest(b'{"message": "no code"}') is None
    assert error_from_rest(b'{"message": {"messageId": "m"}}') is None  # (an event)
    sdk = b'{"message": "Task not found"}'  # (the official SDK's, beside its status)
    for method, status, code in [
        ("tasks/get", 404, -32001),
        ("agent/getAuthenticatedExtendedCard", 404, -32007),
        ("tasks/cancel", 409, -32002),
        ("message/send", 422, -32602),
        ("tasks/resubscribe", 501, -32004),
        ("tasks/pushNotificationConfig/set", 501, -32003),
        ("message/send", 500, -32603),
    ]:
        error = error_from_status(method, status, sdk)
        assert error == v.JSONRPCError(code=code, message="Task not found"), (method, status)
        assert HTTP_STATUS[code] == status
    assert error_from_status("tasks/get", 404, b'{"detail": "Not Found"}') is None  # (no route)
    assert error_from_status("tasks/get", 404, b"Not Found") is None
    assert error_from_status("tasks/get", 405, b'{"message": "x"}') is None


def _route(verb: str, path: str) -> Any:
    found = find(verb, path)
    assert isinstance(found, tuple)
    return found


def test_the_routes_of_0_3() -> None:
    assert _route("GET", "/v1/tasks/t%2F1")[0].method == "tasks/get"
    assert _route("GET", "/v1/tasks/t%2F1")[1] == {"id": "t/1"}
    assert _route("POST", "/v1/tasks/t:cancel")[0].method == "tasks/cancel"
    assert _route("POST", "/v1/tasks/t:subscribe")[0].method == "tasks/resubscribe"
    assert _route("GET", "/v1/tasks/t:subscribe")[0].method == "tasks/resubscribe"
    entry, fields = _route("DELETE", "/v1/tasks/t/pushNotificationConfigs/c")
    assert entry.method == "tasks/pushNotificationConfig/delete"
    assert fields == {"id": "t", "pushNotificationConfigId": "c"}
    assert find("PUT", "/v1/message:send") == ["POST"]
    assert find("GET", "/message:send") is None


def _field(key: str, item: Any, keep: frozenset[str] | set[str]) -> Any:
    if key in ("metadata", "data"):
        return item
    if key == "timestamp":  # (the proto writes as few digits as it can: `.025Z`)
        return datetime.fromisoformat(item)
    return _without_defaults(item, keep)


def _without_defaults(value: Any, keep: frozenset[str] | set[str] = frozenset()) -> Any:
    """`value` (0.3 JSON) without the fields at proto3's defaults, which it cannot tell
    from absent (never inside user data: `metadata`, `data`), and without a message's
    `referenceTaskIds`, which the 0.3 proto does not have."""
    if isinstance(value, list):
        return [_without_defaults(v, keep) for v in value]
    if not isinstance(value, dict):
        return value
    return {
        key: _field(key, item, keep)
        for key, item in value.items()
        if key != "referenceTaskIds"
        and (key in keep or item not in ("", 0, False, [], {}, "unknown"))
    }


# -- the server -------------------------------------------------------------------------------

MESSAGE = {"messageId": "m1", "role": "ROLE_USER", "content": [{"text": "echo hi"}]}


def send_body(text: str, *, blocking: bool = True, **ids: str) -> Json:
    message = {"messageId": f"m-{text}", "role": "ROLE_USER", "content": [{"text": text}], **ids}
    return {"message": message, "configuration": {"blocking": blocking}}


async def rest(
    served: Served, verb: str, path: str, body: object = None, **headers: str
) -> tuple[int, Any]:
    response = await served.client.request(
        verb, served.url.rstrip("/") + path, json=body, headers=headers
    )
    if response.status_code == 200:
        assert response.headers["content-type"] == "application/json"
    return response.status_code, response.json()


async def sse(served: Served, verb: str, path: str, body: object = None) -> list[tuple[str, Json]]:
    """Every event of a 0.3 REST stream: (its `event:` name or "", its data)."""
    url = served.url.rstrip("/") + path
    out: list[tuple[str, Json]] = []
    async with served.client.stream(verb, url, json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        name = ""
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                out.append((name, json.loads(line[6:])))
                name = ""
    return out


async def test_send_get_and_cancel_in_0_3_protojson(serve: Serve) -> None:
    agent = Scripted()
    served = await serve(create_app(agent, card()))
    status, sent = await rest(served, "POST", "/v1/message:send", send_body("echo hi"))
    assert status == 200, sent
    task = parsed(sent, "SendMessageResponse").task
    assert task.status.state == pb().TaskState.TASK_STATE_COMPLETED
    assert [p.text for p in task.artifacts[0].parts] == ["hi"]
    status, got = await rest(served, "GET", f"/v1/tasks/{task.id}?historyLength=1")
    assert status == 200
    assert len(got["history"]) == 1
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"
    # not blocking (the proto's default): the task as it stands, cancelled while it works
    status, slow = await rest(served, "POST", "/v1/message:send", {"message": MESSAGE | {
        "messageId": "m-slow", "content": [{"text": "slow"}]}})  # fmt: skip
    assert status == 200, slow
    task_id = slow["task"]["id"]
    status, cancelled = await rest(served, "POST", f"/v1/tasks/{task_id}:cancel", {})
    assert status == 200, cancelled
    assert cancelled["status"]["state"] == "TASK_STATE_CANCELLED"
    status, again = await rest(served, "POST", f"/v1/tasks/{task.id}:cancel")
    assert status == 409
    assert again["code"] == -32002


async def test_streams_and_subscriptions(serve: Serve) -> None:
    agent = Scripted()
    served = await serve(create_app(agent, card()))
    events = await sse(served, "POST", "/v1/message:stream", send_body("ask"))
    assert [list(data) for _, data in events] == [["task"], ["statusUpdate"]]
    last = events[-1][1]["statusUpdate"]
    assert last["final"] is True
    assert last["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    for _, data in events:
        parsed(data, "StreamResponse")
    status, working = await rest(
        served, "POST", "/v1/message:send", send_body("slow", blocking=False)
    )
    assert status == 200
    task_id = working["task"]["id"]

    url = f"{served.url}v1/tasks/{task_id}:subscribe"
    followed: list[Json] = []
    async with served.client.stream("GET", url) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                followed.append(json.loads(line[6:]))
                agent.release.set()  # (once subscribed: the task completes)
    assert list(followed[0]) == ["task"]
    assert followed[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    # before the first event an error is a plain answer
    status, refused = await rest(served, "GET", f"/v1/tasks/{task_id}:subscribe")
    assert (status, refused["code"]) == (501, -32004)


async def test_push_configs_in_0_3(serve: Serve) -> None:
    served = await serve(create_app(Scripted(), card()))
    _, sent = await rest(served, "POST", "/v1/message:send", send_body("ask"))
    task_id = sent["task"]["id"]
    base = f"/v1/tasks/{task_id}/pushNotificationConfigs"
    config = {"id": "c1", "url": "https://hooks.example/a2a", "token": "tok"}
    body = {  # (what the official 0.3 SDK's client sends)
        "parent": f"tasks/{task_id}",
        "configId": "c1",
        "config": {"name": f"{base[4:]}/c1", "pushNotificationConfig": config},
    }
    named = {
        "name": f"tasks/{task_id}/pushNotificationConfigs/c1",
        "pushNotificationConfig": config,
    }
    assert await rest(served, "POST", base, body) == (200, named)
    assert await rest(served, "GET", f"{base}/c1") == (200, named)
    assert await rest(served, "GET", base) == (200, {"configs": [named]})
    without_id = {"config": {"pushNotificationConfig": {"url": "https://hooks.example/b"}}}
    status, made = await rest(served, "POST", base, without_id)
    assert made["name"] == f"tasks/{task_id}/pushNotificationConfigs/{task_id}"  # (0.3's default)
    assert await rest(served, "DELETE", f"{base}/c1") == (200, {})
    status, gone = await rest(served, "GET", f"{base}/c1")
    assert (status, gone["code"]) == (404, -32001)


async def test_errors_in_0_3(serve: Serve) -> None:
    served = await serve(create_app(Scripted(), card()))
    assert await rest(served, "GET", "/v1/tasks/nope") == (404, NOPE_NOT_FOUND)
    no_role = {"message": {"messageId": "m", "content": [{"text": "x"}]}}
    status, bad = await rest(served, "POST", "/v1/message:send", no_role)
    assert (status, bad["code"]) == (422, -32602)
    # a message given as `{}` is there, and empty (proto3 messages have presence): what
    # it lacks is named, as for any message without a role, not the message
    assert await rest(served, "POST", "/v1/message:send", {"message": {}}) == (status, bad)
    assert "`role`" in bad["message"], bad
    status, missing = await rest(served, "POST", "/v1/message:send", {})
    assert (status, missing["code"]) == (422, -32602)
    assert "missing required field `message`" in missing["message"], missing
    status, bad = await rest(served, "POST", "/v1/message:send", {"message": MESSAGE | {"role": 7}})
    assert (status, bad["code"]) == (422, -32602)
    assert bad["data"]["details"][0]["fieldViolations"][0]["description"] == "not a Role: 7"
    response = await served.client.put(served.url + "v1/message:send", json={})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    response = await served.client.post(
        served.url + "v1/message:send", content=b"x", headers={"content-type": "text/plain"}
    )
    assert (response.status_code, response.json()["code"]) == (415, -32600)
    status, no_card = await rest(served, "GET", "/v1/card")
    assert (status, no_card["code"]) == (501, -32004)


async def test_a_1_0_request_on_a_0_3_path_is_1_0s(serve: Serve) -> None:
    """`/v1/...` is also the 1.0 path of the tenant `v1`: `A2A-Version` decides."""
    served = await serve(create_app(Scripted(), card()))
    version = {"A2A-Version": "1.0"}
    status, answer = await rest(served, "POST", "/v1/message:send", {"message": MESSAGE}, **version)
    assert status == 404
    assert answer["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"  # (no tenant `v1`)
    assert (await served.client.get(served.url + "v1/card", headers=version)).status_code == 404
    status, answer = await rest(served, "POST", "/v1/message:send", send_body("echo x"), **{
        "A2A-Version": "0.3"})  # fmt: skip
    assert status == 200
    assert answer["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_the_extended_card_is_the_0_3_json_card(serve: Serve) -> None:
    extended = msgspec.structs.replace(card(), name="test agent (extended)")
    app = create_app(Scripted(), card(extended_agent_card=True), extended_card=extended)
    served = await serve(app)
    status, got = await rest(served, "GET", "/v1/card")
    assert status == 200
    assert got["name"] == "test agent (extended)"
    assert got["protocolVersion"] == "0.3.0"
    assert got["preferredTransport"] == "JSONRPC"
    transports = [(i["transport"], i["url"]) for i in got["additionalInterfaces"]]
    assert transports == [("JSONRPC", served.url), ("HTTP+JSON", served.url.rstrip("/"))]
