"""The server to A2A 0.3 clients: the card they read and the 0.3 JSON-RPC calls they make
(without `A2A-Version`), answered by the 1.0 handler through `interlink.a2a.compat`.

The 0.3 shapes are checked against the official SDK's 0.3 models (`a2a.compat.v0_3.types`,
shipped with `a2a-sdk` 1.x); the interop with a real 0.3 client is in
`tests/interop/a2a/test_v03.py`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from interlink.a2a import A2AApp, create_app
from interlink.a2a import types as t
from interlink.a2a._codec import decode, encode
from interlink.a2a.server._card_serve import PublishedCard
from tests.a2a.agents import Scripted, card
from tests.a2a.conftest import Served

Serve = Callable[[A2AApp], Awaitable[Served]]
CARD = ".well-known/agent-card.json"


def sdk_v03() -> Any:
    return pytest.importorskip("a2a.compat.v0_3.types", reason="a2a-sdk 1.x (pip install a2a-sdk)")


def request(version: str | None) -> tuple[dict[str, object], dict[str, str]]:
    headers = {"host": "agent.example"} | ({} if version is None else {"a2a-version": version})
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    scope: dict[str, object] = {"type": "http", "scheme": "https", "headers": raw}
    return scope, headers


# -- the card ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, "0.3", "0.3.0"])
def test_a_0_3_reader_gets_the_0_3_fields_beside_the_1_0_card(version: str | None) -> None:
    published = PublishedCard(card(extended_agent_card=True))
    status, headers, body = published.response(*request(version))
    assert status == 200
    assert dict(headers)[b"vary"] == b"Host, A2A-Version"
    served = msgspec.json.decode(body)
    assert served["url"] == "https://agent.example/"
    assert served["preferredTransport"] == "JSONRPC"
    assert served["protocolVersion"] == "0.3.0"
    assert served["supportsAuthenticatedExtendedCard"] is True
    assert "additionalInterfaces" not in served  # (one interface: `url` says it)
    # what a 1.0 reader parses is the 1.0 card, field for field
    _, _, alone = published.response(*request("1.0"))
    assert encode(decode(t.AgentCard, body)) == alone
    assert "url" not in msgspec.json.decode(alone)
    v03 = sdk_v03()
    parsed = v03.AgentCard.model_validate(served)
    assert parsed.url == "https://agent.example/"
    assert parsed.capabilities.streaming is True


def test_each_version_of_the_card_has_its_own_etag() -> None:
    published = PublishedCard(card())
    tags = {dict(published.response(*request(v))[1])[b"etag"] for v in (None, "0.3", "1.0")}
    assert len(tags) == 2
    old_tag = dict(published.response(*request(None))[1])[b"etag"]
    scope, headers = request("1.0")
    assert published.response(scope, {**headers, "if-none-match": old_tag.decode()})[0] == 200
    scope, headers = request(None)
    assert published.response(scope, {**headers, "if-none-match": old_tag.decode()})[0] == 304


def test_security_schemes_are_readable_in_both_versions() -> None:
    bearer = t.SecurityScheme(
        http_auth_security_scheme=t.HTTPAuthSecurityScheme(scheme="Bearer", bearer_format="JWT")
    )
    secured = msgspec.structs.replace(
        card(),
        security_schemes={"bearer": bearer},
        security_requirements=[t.SecurityRequirement(schemes={"bearer": t.StringList(list=[])})],
    )
    _, _, body = PublishedCard(secured).response(*request(None))
    served = msgspec.json.decode(body)
    assert served["securitySchemes"]["bearer"]["type"] == "http"
    assert served["security"] == [{"bearer": []}]
    assert decode(t.AgentCard, body).security_schemes == {"bearer": bearer}
    v03 = sdk_v03()
    parsed = v03.AgentCard.model_validate(served)
    assert parsed.security_schemes["bearer"].root.scheme == "Bearer"


async def test_a_signed_card_verifies_for_1_0_readers_in_both_versions(
    serve: Serve, tmp_path: Path
) -> None:
    pytest.importorskip("joserfc")
    from interlink.a2a._card_sign import verify_card
    from tests.a2a.test_card_sign import pem_pair

    private, public = pem_pair(tmp_path, "ES256")
    served = await serve(create_app(Scripted(), card(), signing_key=private))
    for headers in ({}, {"A2A-Version": "1.0"}):
        answer = await served.client.get(served.url + CARD, headers=headers)
        assert answer.headers["vary"] == "Host, A2A-Version"
        verify_card(decode(t.AgentCard, answer.content), public)  # a reader that parses
        verify_card(answer.json(), public)  # one that has the JSON as received


# -- JSON-RPC in 0.3 --------------------------------------------------------------------------


def v03_message(text: str, **ids: str) -> dict[str, object]:
    parts = [{"kind": "text", "text": text}]
    return {"kind": "message", "messageId": f"m-{text}", "role": "user", "parts": parts, **ids}


Json = dict[str, Any]


async def call_v03(served: Served, method: str, params: object, **headers: str) -> Json:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    answer = (await served.client.post(served.url, json=body, headers=headers)).json()
    assert isinstance(answer, dict)
    assert answer["id"] == 7
    return answer


async def sse_v03(served: Served, method: str, params: object) -> list[Json]:
    """Every `data:` of a 0.3 stream (no `A2A-Version`), as JSON-RPC responses."""
    body = {"jsonrpc": "2.0", "id": 8, "method": method, "params": params}
    async with served.client.stream("POST", served.url, json=body) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line async for line in response.aiter_lines()]
    assert not any(line.startswith("event:") for line in lines)  # (0.3 names no events)
    return [msgspec.json.decode(line[6:]) for line in lines if line.startswith("data: ")]


async def test_a_request_without_a_version_is_served_in_0_3(serve: Serve) -> None:
    served = await serve(create_app(Scripted(), card()))
    sent = await call_v03(served, "message/send", {"message": v03_message("echo hi")})
    task = sent["result"]
    assert isinstance(task, dict)
    assert task["kind"] == "task"
    assert task["status"] == {"state": "completed", "timestamp": task["status"]["timestamp"]}
    v03 = sdk_v03()
    v03.Task.model_validate(task)
    got = await call_v03(served, "tasks/get", {"id": task["id"], "historyLength": 0})
    assert got["result"] == {k: v for k, v in task.items() if k != "history"}
    # a patch version is not negotiated: 0.3.0 is 0.3 too
    again = await call_v03(served, "tasks/get", {"id": task["id"]}, **{"A2A-Version": "0.3.0"})
    assert again["result"] == task


#: the 0.3 error of `tasks/get` of the task "nope", on every binding
NOPE_NOT_FOUND: Json = {
    "code": -32001,
    "message": "Task 'nope' not found",
    "data": {
        "reason": "TASK_NOT_FOUND",
        "domain": "a2a-protocol.org",
        "metadata": {"taskId": "nope"},
    },
}


async def test_0_3_errors_carry_free_form_data(serve: Serve) -> None:
    served = await serve(create_app(Scripted(), card()))
    unknown = await call_v03(served, "tasks/get", {"id": "nope"})
    assert unknown["error"] == NOPE_NOT_FOUND
    bad = await call_v03(served, "tasks/get", {"id": 5})
    assert bad["error"]["code"] == -32602
    violation = bad["error"]["data"]["details"][0]["fieldViolations"][0]
    assert violation == {"field": "id", "description": "Expected `str`, got `int`"}
    missing = await call_v03(served, "tasks/list", {})
    assert missing["error"] == {
        "code": -32601,
        "message": "Method not found",
        "data": {"method": "tasks/list"},
    }


async def test_methods_of_the_other_version_are_refused(serve: Serve) -> None:
    served = await serve(create_app(Scripted(), card()))
    old_in_new = await call_v03(served, "tasks/get", {"id": "x"}, **{"A2A-Version": "1.0"})
    assert old_in_new["error"]["code"] == -32601
    new_in_old = await call_v03(served, "GetTask", {"id": "x"})
    assert new_in_old["error"]["code"] == -32009
    assert new_in_old["error"]["data"][0]["reason"] == "VERSION_NOT_SUPPORTED"
    future = await call_v03(served, "tasks/get", {"id": "x"}, **{"A2A-Version": "0.4"})
    assert future["error"]["code"] == -32009


async def test_a_0_3_stream_ends_final_and_its_errors_are_events(serve: Serve) -> None:
    served = await serve(create_app(Scripted(), card()))
    events = await sse_v03(served, "message/stream", {"message": v03_message("ask")})
    results = [e["result"] for e in events]
    assert [r["kind"] for r in results] == ["task", "status-update"]
    assert results[-1]["final"] is True
    assert results[-1]["status"]["state"] == "input-required"
    task_id = results[0]["id"]
    follow = {"message": v03_message("more", taskId=task_id)}
    events = await sse_v03(served, "message/stream", follow)
    updates = [e["result"] for e in events if e["result"]["kind"] == "status-update"]
    assert [u["final"] for u in updates] == [False] * (len(updates) - 1) + [True]
    # an error before the first event is still an event of an SSE stream (0.3 clients
    # read nothing else), after which it ends
    (refused,) = await sse_v03(served, "tasks/resubscribe", {"id": task_id})
    assert refused["error"]["code"] == -32004
    (unknown,) = await sse_v03(served, "tasks/resubscribe", {"id": "nope"})
    assert unknown["error"]["code"] == -32001


async def test_the_extended_card_in_0_3_has_the_url_of_the_public_card(serve: Serve) -> None:
    extended = msgspec.structs.replace(card(), name="test agent (extended)")
    app = create_app(Scripted(), card(extended_agent_card=True), extended_card=extended)
    served = await serve(app)
    answer = await call_v03(served, "agent/getAuthenticatedExtendedCard", {})
    got = answer["result"]
    assert got["name"] == "test agent (extended)"
    assert got["url"] == served.url  # (configured without interfaces: the public card's)
    assert got["protocolVersion"] == "0.3.0"
    sdk_v03().AgentCard.model_validate(got)
    # in 1.0 it is the card as configured
    new = await call_v03(served, "GetExtendedAgentCard", {}, **{"A2A-Version": "1.0"})
    assert "supportedInterfaces" not in new["result"]


def test_the_0_3_fields_name_only_the_interfaces_that_serve_0_3() -> None:
    interfaces = [("JSONRPC", "/"), ("HTTP+JSON", ""), ("GRPC", "agent.example:50051")]
    published = PublishedCard(card(), interfaces=interfaces)
    _, _, body = published.response(*request(None))
    served = msgspec.json.decode(body)
    assert [i["protocolBinding"] for i in served["supportedInterfaces"]] == [
        "JSONRPC",
        "HTTP+JSON",
        "GRPC",
    ]
    assert served["url"] == "https://agent.example/"
    assert served["preferredTransport"] == "JSONRPC"
    # gRPC serves 1.0 alone; HTTP+JSON serves 0.3 at its /v1/... routes below the URL
    assert served["additionalInterfaces"] == [
        {"url": "https://agent.example/", "transport": "JSONRPC"},
        {"url": "https://agent.example", "transport": "HTTP+JSON"},
    ]
    sdk_v03().AgentCard.model_validate(served)
    rest_only = PublishedCard(card(), interfaces=[("HTTP+JSON", "")])
    _, _, alone = rest_only.response(*request(None))
    assert msgspec.json.decode(alone)["preferredTransport"] == "HTTP+JSON"
    grpc_only = PublishedCard(card(), interfaces=[("GRPC", "agent.example:50051")])
    _, _, alone = grpc_only.response(*request(None))
    assert "url" not in msgspec.json.decode(alone)  # no 0.3 form: the 1.0 card
