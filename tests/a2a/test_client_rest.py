"""The HTTP+JSON transport: routes and bodies from the method table, errors from
`google.rpc.Status`, SSE with bare `StreamResponse`s; mock HTTP for the shapes, a
hand-written loopback server for a stream that is cut and resumed."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import msgspec
import pytest

from interlink.a2a import (
    A2AHttpError,
    AuthenticationRequired,
    InvalidAgentResponse,
    TaskNotFound,
    UnsupportedOperation,
    VersionNotSupported,
)
from interlink.a2a import types as t
from interlink.a2a.client._client import (
    A2AClient,
    A2AInvalidParams,
    Reconnect,
    StreamInterrupted,
)
from interlink.a2a.client._rest import status_error
from tests.a2a.test_client_raw_server import Conn, RawServer, Request

pytestmark = pytest.mark.timeout(10)
Json = dict[str, Any]
INFO = "type.googleapis.com/google.rpc.ErrorInfo"
FAST = Reconnect(attempts=3, initial=0.01, maximum=0.05)
TASK = {"id": "t/1", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}


def rest_card(url: str, tenant: str = "", version: str = "1.0") -> t.AgentCard:
    interface = t.AgentInterface(
        url=url, protocol_binding="HTTP+JSON", protocol_version=version, tenant=tenant
    )
    return t.AgentCard(
        name="rest",
        capabilities=t.AgentCapabilities(streaming=True),
        supported_interfaces=[interface],
    )


def status_body(http: int, status: str, reason: str, message: str = "m", **more: Any) -> bytes:
    details: list[Json] = [{"@type": INFO, "reason": reason, "domain": "a2a-protocol.org"}]
    details += more.get("details", [])
    error = {"code": http, "status": status, "message": message, "details": details}
    return json.dumps({"error": error}).encode()


@contextlib.asynccontextmanager
async def mock_rest(
    answer: Callable[[httpx.Request], httpx.Response],
    tenant: str = "",
    version: str = "1.0",
    **options: Any,
) -> AsyncIterator[tuple[A2AClient, list[httpx.Request]]]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer(request)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        card = rest_card("http://agent.test/a2a/", tenant, version)
        yield A2AClient(card, client=http, **options), seen


def ok(body: object) -> Callable[[httpx.Request], httpx.Response]:
    return lambda request: httpx.Response(200, json=body)


def always(response: httpx.Response) -> Callable[[httpx.Request], httpx.Response]:
    return lambda request: response


def update(state: str, task: str = "t/1") -> Json:
    status = {"state": f"TASK_STATE_{state}"}
    return {"statusUpdate": {"taskId": task, "contextId": "c", "status": status}}


BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"


async def test_routes_bodies_and_service_parameters() -> None:
    async with mock_rest(ok({"task": TASK}), extensions=["urn:x"], bearer="b") as (client, seen):
        assert client.binding == "HTTP+JSON"
        task = await client.send_message("hi", context_id="c")
        assert isinstance(task, t.Task)
        sent = seen[-1]
        assert (sent.method, sent.url.path) == ("POST", "/a2a/message:send")
        assert sent.headers["content-type"] == "application/a2a+json"
        assert sent.headers["a2a-version"] == "1.0"
        assert sent.headers["a2a-extensions"] == "urn:x"
        assert sent.headers["authorization"] == "Bearer b"
        body = json.loads(sent.content)
        assert body["message"]["parts"] == [{"text": "hi"}]
        assert "tenant" not in body
    async with mock_rest(ok(TASK)) as (client, seen):
        await client.get_task("t/1", history_length=2)
        assert seen[-1].method == "GET"
        assert seen[-1].url.raw_path == b"/a2a/tasks/t%2F1?historyLength=2"
        assert seen[-1].content == b""
        await client.cancel_task("t/1", metadata={"why": "x"})
        assert (seen[-1].method, seen[-1].url.raw_path) == ("POST", b"/a2a/tasks/t%2F1:cancel")
        assert json.loads(seen[-1].content) == {"metadata": {"why": "x"}}  # (id is in the path)


async def test_list_tasks_query_parameters() -> None:
    async with mock_rest(ok({"tasks": [TASK], "nextPageToken": ""})) as (client, seen):
        page = await client.list_tasks(
            context_id="c 1",
            status=t.TaskState.TASK_STATE_WORKING,
            page_size=5,
            page_token="p&q",
            history_length=0,
            status_timestamp_after=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
            include_artifacts=False,
        )
        assert page.tasks[0].id == "t/1"
        params = seen[-1].url.params
        assert seen[-1].url.path == "/a2a/tasks"
        assert dict(params) == {
            "contextId": "c 1",
            "status": "TASK_STATE_WORKING",
            "pageSize": "5",
            "pageToken": "p&q",
            "historyLength": "0",
            "statusTimestampAfter": "2026-01-02T03:04:05Z",
            "includeArtifacts": "false",
        }


async def test_tenant_paths_and_push_config_routes() -> None:
    config = {"id": "p", "taskId": "t", "url": "http://hook/"}
    card = msgspec.json.decode(msgspec.json.encode(rest_card("http://agent.test/")))

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=card if "Card" in request.url.path else config)

    async with mock_rest(answer, tenant="acme") as (client, seen):
        await client.create_push_config("t", "http://hook/", config_id="p")
        assert (seen[-1].method, seen[-1].url.path) == (
            "POST",
            "/a2a/acme/tasks/t/pushNotificationConfigs",
        )
        assert json.loads(seen[-1].content) == {"id": "p", "url": "http://hook/"}
        await client.get_push_config("t", "p")
        assert seen[-1].url.path == "/a2a/acme/tasks/t/pushNotificationConfigs/p"
        await client.get_extended_card()
        assert seen[-1].url.path == "/a2a/acme/extendedAgentCard"
    for empty in (b"", b"{}", b"null"):
        async with mock_rest(always(httpx.Response(200, content=empty))) as (client, seen):
            await client.delete_push_config("t", "p")
            assert (seen[-1].method, seen[-1].url.path) == (
                "DELETE",
                "/a2a/tasks/t/pushNotificationConfigs/p",
            )


async def test_errors_from_google_rpc_status() -> None:
    missing = status_body(404, "NOT_FOUND", "TASK_NOT_FOUND")
    version = status_body(400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED")
    cases: list[tuple[httpx.Response, type[Exception]]] = [
        (httpx.Response(404, content=missing), TaskNotFound),
        (httpx.Response(400, content=version), VersionNotSupported),
        (httpx.Response(401, headers={"www-authenticate": "Bearer"}), AuthenticationRequired),
        (httpx.Response(404, text="Not Found"), A2AHttpError),
        (httpx.Response(200, text="<html>"), InvalidAgentResponse),
    ]
    for response, expected in cases:
        async with mock_rest(always(response)) as (client, _):
            with pytest.raises(expected):
                await client.get_task("x")
    violation = {"field": "message.parts", "description": "required"}
    bad = status_body(
        400,
        "INVALID_ARGUMENT",
        "INVALID_PARAMS",
        details=[{"@type": BAD_REQUEST, "fieldViolations": [violation]}],
    )
    async with mock_rest(always(httpx.Response(400, content=bad))) as (client, _):
        with pytest.raises(A2AInvalidParams) as invalid:
            await client.send_message("x")
    assert [(v.field, v.description) for v in invalid.value.violations] == [
        ("message.parts", "required")
    ]
    # no ErrorInfo: the status name, when only one error has it
    plain = json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "no"}})
    assert isinstance(status_error(plain.encode()), A2AInvalidParams)
    unsure = json.dumps({"error": {"code": 400, "status": "FAILED_PRECONDITION"}})
    assert status_error(unsure.encode()) is None
    assert status_error(b"[1]") is None


def sse(*events: Json | tuple[str, Json], ids: bool = True) -> bytes:
    out = b""
    for n, event in enumerate(events, 1):
        name, data = event if isinstance(event, tuple) else ("", event)
        out += f"event: {name}\n".encode() if name else b""
        out += f"id: {n}\n".encode() if ids else b""
        out += b"data: " + json.dumps(data).encode() + b"\n\n"
    return out


async def test_streams_are_bare_stream_responses() -> None:
    body = sse({"task": TASK}, update("COMPLETED"))

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    async with mock_rest(answer) as (client, seen):
        events = [e async for e in client.stream_message("go")]
        assert [type(e.payload) for e in events] == [t.Task, t.TaskStatusUpdateEvent]
        assert [e.id for e in events] == ["1", "2"]
        assert (seen[-1].method, seen[-1].url.path) == ("POST", "/a2a/message:stream")
        assert "text/event-stream" in seen[-1].headers["accept"]
    refused = status_body(400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION")
    async with mock_rest(always(httpx.Response(400, content=refused))) as (client, seen):
        with pytest.raises(UnsupportedOperation):
            async for _ in client.subscribe("t/1"):
                pass
        assert (seen[-1].method, seen[-1].url.raw_path) == ("GET", b"/a2a/tasks/t%2F1:subscribe")
    gone = json.loads(status_body(404, "NOT_FOUND", "TASK_NOT_FOUND"))
    failing = sse({"task": TASK}, ("error", gone))

    def broken(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=failing, headers={"content-type": "text/event-stream"})

    async with mock_rest(broken) as (client, _):
        got: list[object] = []

        async def read() -> None:
            async for event in client.stream_message("go"):
                got.append(event.payload)

        with pytest.raises(TaskNotFound):
            await read()
        assert len(got) == 1


async def test_subscription_resumes_over_rest_after_a_cut() -> None:
    """The first stream is cut after two events; the client comes back with
    `Last-Event-ID: 2` on the same route and gets the rest."""
    working, done = update("WORKING", "t"), update("COMPLETED", "t")
    task = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}

    async def handler(request: Request, conn: Conn) -> None:
        assert (request.method, request.path) == ("GET", "/tasks/t:subscribe")
        assert request.headers["a2a-version"] == "1.0"
        await conn.start_sse()
        if "last-event-id" not in request.headers:
            await conn.send(b"retry: 10\n\n" + sse({"task": task}, working))
            conn.drop()
            return
        assert request.headers["last-event-id"] == "2"
        await conn.send(b"data: " + json.dumps({"task": task}).encode() + b"\n\n")  # snapshot
        await conn.send(b"id: 3\ndata: " + json.dumps(done).encode() + b"\n\n")
        await conn.end()

    async with RawServer(handler) as server, A2AClient(rest_card(server.url), reconnect=FAST) as c:
        events = [e async for e in c.subscribe("t")]
    assert [e.id for e in events] == ["1", "2", "3"]
    assert events[-1].payload == msgspec.convert(done["statusUpdate"], t.TaskStatusUpdateEvent)
    assert len(server.requests) == 2


async def test_a_silent_stream_is_dropped_and_a_plain_answer_is_one_event() -> None:
    async def silent(request: Request, conn: Conn) -> None:
        await conn.start_sse()
        await conn.wait_gone()

    async with RawServer(silent) as server:
        client = A2AClient(rest_card(server.url), idle_timeout=0.2)
        async with client:
            with pytest.raises(StreamInterrupted, match="no event or keep-alive"):
                await anext(aiter(client.stream_message("hi")))
    done = {"task": {**TASK, "status": {"state": "TASK_STATE_COMPLETED"}}}
    async with mock_rest(ok(done)) as (client, _):
        events = [e async for e in client.stream_message("hi")]
    assert [type(e.payload) for e in events] == [t.Task]
