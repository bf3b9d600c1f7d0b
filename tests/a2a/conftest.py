"""A2A servers for tests: the real ASGI app on uvicorn on 127.0.0.1, in the test's loop."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import httpx
import pytest
import uvicorn

from interlink.a2a import A2AApp

Json = dict[str, object]
VERSION = {"A2A-Version": "1.0"}


@dataclass
class Served:
    url: str
    client: httpx.AsyncClient
    app: A2AApp
    next_id: int = 0

    async def call(self, method: str, params: object = None, **headers: str) -> Json:
        self.next_id += 1
        body: Json = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            body["params"] = params
        response = await self.client.post(self.url, json=body, headers={**VERSION, **headers})
        assert response.status_code == 200, response.text
        answer = response.json()
        assert isinstance(answer, dict)
        return answer

    async def result(self, method: str, params: object = None) -> Json:
        answer = await self.call(method, params)
        assert "result" in answer, answer
        result = answer["result"]
        assert isinstance(result, dict)
        return result

    async def stream(
        self, method: str, params: object, headers: dict[str, str] | None = None
    ) -> list[tuple[str | None, Json]]:
        """Every SSE event of a stream: (id, JSON-RPC response)."""
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        events: list[tuple[str | None, Json]] = []
        async with self.client.stream(
            "POST", self.url, json=body, headers={**VERSION, **(headers or {})}
        ) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            event_id: str | None = None
            async for line in response.aiter_lines():
                if line.startswith("id: "):
                    event_id = line[4:]
                elif line.startswith("data: "):
                    events.append((event_id, json.loads(line[6:])))
                    event_id = None
        return events


def free_socket() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[A2AApp], Awaitable[Served]]]:
    """`await serve(app)`: the app on a real uvicorn server; stopped after the test."""
    stops: list[tuple[uvicorn.Server, asyncio.Task[None], httpx.AsyncClient]] = []

    async def start(app: A2AApp) -> Served:
        sock = free_socket()
        port = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        task = asyncio.create_task(server.serve(sockets=[sock]))
        async with asyncio.timeout(10):
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
                await asyncio.sleep(0.01)
        client = httpx.AsyncClient(timeout=30)
        stops.append((server, task, client))
        return Served(f"http://127.0.0.1:{port}/", client, app)

    yield start
    for server, task, client in stops:
        await client.aclose()
        server.should_exit = True
        async with asyncio.timeout(20):
            await task
