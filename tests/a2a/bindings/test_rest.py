"""Edges of the HTTP+JSON binding itself (§11): the literal routes, query parameters,
media types, verbs, bounded bodies, percent-encoded ids, the card's interfaces."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from interlink.a2a import A2AApp, create_app
from tests.a2a.agents import Scripted, card, message
from tests.a2a.conftest import VERSION, Json, Served

pytestmark = pytest.mark.timeout(60)

Serve = Callable[[A2AApp], Awaitable[Served]]
A2A_JSON = {**VERSION, "Content-Type": "application/a2a+json"}


def error(answer: Json) -> tuple[object, object, str]:
    """(code, status, reason) of a `{"error": google.rpc.Status}`."""
    status = answer["error"]
    assert isinstance(status, dict), answer
    details = status.get("details") or [{}]
    return status["code"], status["status"], str(details[0].get("reason", ""))


@pytest.fixture
async def server(serve: Serve) -> Served:
    return await serve(create_app(Scripted(), card(), max_body=4096, push_allow=["127.0.0.1"]))


async def send(server: Served, text: str) -> Json:
    response = await server.client.post(
        server.url + "message:send", json=message(text), headers=A2A_JSON
    )
    assert response.status_code == 200, response.text
    task = response.json()["task"]
    assert isinstance(task, dict)
    return task


async def test_the_literal_routes_of_section_11_3(server: Served) -> None:
    url, http = server.url, server.client
    task = await send(server, "ask")
    tid = task["id"]
    got = await http.get(f"{url}tasks/{tid}?historyLength=0", headers=VERSION)
    assert (got.status_code, "history" in got.json()) == (200, False)
    assert (await http.get(f"{url}tasks", headers=VERSION)).json()["tasks"][0]["id"] == tid
    hook = {"url": "http://127.0.0.1:9/hook", "id": "c1"}
    made = await http.post(f"{url}tasks/{tid}/pushNotificationConfigs", json=hook, headers=VERSION)
    assert made.json()["taskId"] == tid
    one = await http.get(f"{url}tasks/{tid}/pushNotificationConfigs/c1", headers=VERSION)
    assert one.json()["id"] == "c1"
    listed = await http.get(f"{url}tasks/{tid}/pushNotificationConfigs", headers=VERSION)
    assert [c["id"] for c in listed.json()["configs"]] == ["c1"]
    gone = await http.delete(f"{url}tasks/{tid}/pushNotificationConfigs/c1", headers=VERSION)
    assert (gone.status_code, gone.json()) == (200, {})
    canceled = await http.post(f"{url}tasks/{tid}:cancel", headers=VERSION)  # (no body)
    assert canceled.json()["status"]["state"] == "TASK_STATE_CANCELED"
    for verb in ("GET", "POST"):  # the proto's rule and §11.3.2's text
        over = await http.request(verb, f"{url}tasks/{tid}:subscribe", headers=VERSION)
        assert (over.status_code, error(over.json())[2]) == (400, "UNSUPPORTED_OPERATION")
    card_ = await http.get(f"{url}extendedAgentCard", headers=VERSION)
    assert error(card_.json()) == (400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION")


async def test_query_parameters_take_repeated_and_comma_values(server: Served) -> None:
    # ListTaskPushNotificationConfigs and ListTasks have no repeated field: GetTask's
    # unknown parameters are ignored, a bad value of a known one is a BadRequest
    task = await send(server, "echo q")
    base = f"{server.url}tasks/{task['id']}"
    ok = await server.client.get(base + "?historyLength=1&unknown=1&unknown=2", headers=VERSION)
    assert len(ok.json()["history"]) == 1
    twice = await server.client.get(base + "?historyLength=1&historyLength=2", headers=VERSION)
    assert error(twice.json())[2] == "INVALID_PARAMS"
    listed = await server.client.get(f"{server.url}tasks?includeArtifacts=yes", headers=VERSION)
    status = listed.json()["error"]
    assert status["details"][1]["fieldViolations"][0]["field"] == "includeArtifacts"
    stamp = await server.client.get(
        f"{server.url}tasks?statusTimestampAfter=2000-01-01T00:00:00Z&status=TASK_STATE_COMPLETED",
        headers=VERSION,
    )
    assert [t["id"] for t in stamp.json()["tasks"]] == [task["id"]]


async def test_an_id_with_a_slash_travels_percent_encoded(server: Served) -> None:
    answer = await server.client.get(f"{server.url}tasks/a%2Fb", headers=VERSION)
    assert answer.status_code == 404
    assert answer.json()["error"]["details"][0]["metadata"]["taskId"] == "a/b"


async def test_bad_input_gets_a_precise_4xx_and_the_server_keeps_serving(server: Served) -> None:
    url, http = server.url, server.client
    cases: list[tuple[str, str, bytes, dict[str, str], int]] = [
        ("POST", "message:send", b"{nope", A2A_JSON, 400),
        ("POST", "message:send", b"[]", A2A_JSON, 400),
        ("POST", "message:send", b"{}", {**VERSION, "Content-Type": "text/plain"}, 415),
        ("POST", "message:send", b" " * 8192, A2A_JSON, 413),
        ("DELETE", "tasks", b"", VERSION, 405),
        ("PUT", "message:send", b"{}", A2A_JSON, 405),
        ("POST", "tasks/x:cancel", b'{"id": "y"}', A2A_JSON, 400),
        ("GET", "tasks/x?id=y", b"", VERSION, 400),
    ]
    for verb, path, body, headers, status in cases:
        answer = await http.request(verb, url + path, content=body, headers=headers)
        assert answer.status_code == status, (verb, path, answer.text)
        assert answer.json()["error"]["code"] == status
    not_allowed = await http.delete(url + "tasks", headers=VERSION)
    assert not_allowed.headers["allow"] == "GET"
    still = (await send(server, "echo still here"))["status"]
    assert isinstance(still, dict)
    assert still["state"] == "TASK_STATE_COMPLETED"


async def test_a_body_field_that_agrees_with_the_path_is_fine(server: Served) -> None:
    task = await send(server, "ask")
    tid = task["id"]
    answer = await server.client.post(
        f"{server.url}tasks/{tid}:cancel", json={"id": tid}, headers=A2A_JSON
    )
    assert answer.json()["status"]["state"] == "TASK_STATE_CANCELED"


async def test_the_card_lists_the_interfaces_in_the_order_chosen(serve: Serve) -> None:
    app = create_app(
        Scripted(), card(), bindings=("HTTP+JSON", "GRPC", "JSONRPC"), grpc_url="grpc://h:50051"
    )
    server = await serve(app)
    listed = (await server.client.get(server.url + ".well-known/agent-card.json")).json()
    assert [(i["protocolBinding"], i["url"]) for i in listed["supportedInterfaces"]] == [
        ("HTTP+JSON", server.url.rstrip("/")),
        ("GRPC", "grpc://h:50051"),
        ("JSONRPC", server.url),
    ]


async def test_only_json_rpc_when_told(serve: Serve) -> None:
    server = await serve(create_app(Scripted(), card(), bindings=("JSONRPC",)))
    listed = (await server.client.get(server.url + ".well-known/agent-card.json")).json()
    assert [i["protocolBinding"] for i in listed["supportedInterfaces"]] == ["JSONRPC"]
    answer = await server.client.post(server.url + "message:send", json=message("x"))
    assert answer.status_code == 404
    assert "result" in await server.call("SendMessage", message("echo x"))


def test_bindings_are_checked() -> None:
    with pytest.raises(ValueError, match="grpc_url"):
        create_app(Scripted(), card(), bindings=("GRPC", "JSONRPC"))
    with pytest.raises(ValueError, match="unknown"):
        create_app(Scripted(), card(), bindings=("SOAP",))
