"""Authentication, authorisation and tenants on a real HTTP server."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

import httpx
import uvicorn

from interlink.a2a import A2AApp, ApiKeyAuth, Authenticator, BearerAuth, TenantRouter, create_app
from interlink.a2a.stores._memory import MemoryTaskStore
from tests.a2a.agents import Scripted, card, message
from tests.a2a.conftest import VERSION, Served

Serve = Callable[[A2AApp], Awaitable[Served]]


def rpc(method: str, params: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


async def test_unauthenticated_calls_get_401_with_a_challenge(serve: Serve) -> None:
    auth: list[Authenticator] = [BearerAuth({"t-alice": "alice"}), ApiKeyAuth({"k-bob": "bob"})]
    server = await serve(create_app(Scripted(), card(), auth=auth))
    anonymous = await server.client.post(
        server.url, json=rpc("SendMessage", message("hi")), headers=VERSION
    )
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"] == 'Bearer realm="a2a", ApiKey header="X-API-Key"'
    wrong = await server.client.post(
        server.url,
        json=rpc("SendMessage", message("hi")),
        headers={**VERSION, "Authorization": "Bearer nope"},
    )
    assert wrong.status_code == 401
    # the card is public and lists the schemes
    public = (await server.client.get(server.url + ".well-known/agent-card.json")).json()
    assert set(public["securitySchemes"]) == {"bearer", "apiKey"}
    assert public["securitySchemes"]["apiKey"]["apiKeySecurityScheme"]["name"] == "X-API-Key"


async def test_tasks_belong_to_their_creator(serve: Serve) -> None:
    auth: list[Authenticator] = [BearerAuth({"t-alice": "alice"}), ApiKeyAuth({"k-bob": "bob"})]
    server = await serve(create_app(Scripted(), card(), auth=auth))
    alice = {**VERSION, "Authorization": "Bearer t-alice"}
    bob = {**VERSION, "X-API-Key": "k-bob"}

    async def call(headers: dict[str, str], method: str, params: object) -> dict[str, object]:
        answer = (
            await server.client.post(server.url, json=rpc(method, params), headers=headers)
        ).json()
        assert isinstance(answer, dict)
        return answer

    created = await call(alice, "SendMessage", message("ask"))
    task_id = created["result"]["task"]["id"]  # type: ignore[index]
    assert (await call(alice, "GetTask", {"id": task_id}))["result"]
    for method, params in [
        ("GetTask", {"id": task_id}),
        ("CancelTask", {"id": task_id}),
        ("SubscribeToTask", {"id": task_id}),
        ("SendMessage", message("hijack", taskId=task_id)),
        ("ListTaskPushNotificationConfigs", {"taskId": task_id}),
    ]:
        answer = await call(bob, method, params)
        assert answer["error"]["code"] == -32001, (method, answer)  # type: ignore[index]
    assert (await call(bob, "ListTasks", {}))["result"]["tasks"] == []  # type: ignore[index]
    mine = (await call(alice, "ListTasks", {}))["result"]["tasks"]  # type: ignore[index]
    assert [task["id"] for task in mine] == [task_id]


async def test_tenants_never_see_each_other() -> None:
    store = MemoryTaskStore()  # shared: rows are keyed by tenant
    router = TenantRouter(
        {
            "acme": create_app(Scripted(), card(), store=store),
            "globex": create_app(Scripted(), card(), store=store),
        }
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    server = uvicorn.Server(uvicorn.Config(router, log_level="warning", lifespan="on"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(20), httpx.AsyncClient() as client:
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
                await asyncio.sleep(0.01)
            card_response = await client.get(base + "acme/.well-known/agent-card.json")
            assert card_response.status_code == 200
            assert (
                await client.get(base + "initech/.well-known/agent-card.json")
            ).status_code == 404

            async def call(url: str, method: str, params: object) -> dict[str, object]:
                answer = (await client.post(url, json=rpc(method, params), headers=VERSION)).json()
                assert isinstance(answer, dict)
                return answer

            made = await call(base + "acme/", "SendMessage", message("ask"))
            task_id = made["result"]["task"]["id"]  # type: ignore[index]
            assert "result" in await call(base + "acme/", "GetTask", {"id": task_id})
            other = await call(base + "globex/", "GetTask", {"id": task_id})
            assert other["error"]["code"] == -32001  # type: ignore[index]
            # the tenant field routes a request to / as well
            by_field = await call(base, "GetTask", {"id": task_id, "tenant": "acme"})
            assert "result" in by_field
            wrong_field = await call(base, "GetTask", {"id": task_id, "tenant": "globex"})
            assert wrong_field["error"]["code"] == -32001  # type: ignore[index]
            unknown = await client.post(
                base, json=rpc("GetTask", {"id": "x", "tenant": "initech"}), headers=VERSION
            )
            assert unknown.status_code == 404
            clash = await call(base + "acme/", "GetTask", {"id": task_id, "tenant": "globex"})
            assert clash["error"]["code"] == -32602  # type: ignore[index]
            listed = await call(base + "globex/", "ListTasks", {})
            assert listed["result"]["tasks"] == []  # type: ignore[index]
    finally:
        server.should_exit = True
        async with asyncio.timeout(20):
            await serving
