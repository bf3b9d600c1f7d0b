"""Test-side drivers of the A2A bindings: one method called by name, the same way.

A driver calls a method with ProtoJSON params (a dict) and returns its ProtoJSON
result, or raises `Failure` with the binding-neutral error: the A2A reason of the
`ErrorInfo`, the gRPC status name (§5.4) and the details. `events` opens a stream and
yields `(id, StreamResponse)` pairs. The drivers speak raw HTTP (httpx), so they test
the server, not our client. A driver for another binding (gRPC) implements the same
three methods and joins `DRIVERS`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Protocol

import httpx

from interlink.a2a._codec import to_query
from interlink.a2a._errors import REASON_CODES, status_of
from interlink.a2a._methods import METHODS
from interlink.a2a._routes import route_of

Json = dict[str, object]
VERSION = {"A2A-Version": "1.0"}


class Failure(Exception):
    """An error answer, as every binding can tell it."""

    def __init__(self, reason: str, status: str, details: list[object], message: str) -> None:
        super().__init__(f"{reason} ({status}): {message}")
        self.reason = reason
        self.status = status
        self.details = details
        self.message = message

    def violations(self) -> list[str]:
        """The fields of a `google.rpc.BadRequest` among the details."""
        return [
            str(v["field"])
            for d in self.details
            if isinstance(d, dict) and d.get("@type", "").endswith("google.rpc.BadRequest")
            for v in d.get("fieldViolations", [])
        ]


class Unauthenticated(Exception):
    """HTTP 401 (before any binding's envelope), with its `WWW-Authenticate`."""

    def __init__(self, challenge: str) -> None:
        super().__init__(f"HTTP 401: {challenge}")
        self.challenge = challenge


def _checked(response: httpx.Response) -> None:
    if response.status_code == 401:
        raise Unauthenticated(response.headers.get("www-authenticate", ""))


def _reason(details: object) -> str:
    for item in details if isinstance(details, list) else []:
        if isinstance(item, dict) and item.get("@type", "").endswith("google.rpc.ErrorInfo"):
            return str(item.get("reason", ""))
    return ""


class Driver(Protocol):
    name: str

    async def call(
        self, method: str, params: Mapping[str, object], headers: Mapping[str, str] | None = None
    ) -> Json: ...

    def events(
        self, method: str, params: Mapping[str, object], headers: Mapping[str, str] | None = None
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[tuple[str | None, Json]]]: ...

    async def last_headers(self) -> Mapping[str, str]: ...


async def _sse(response: httpx.Response) -> AsyncIterator[tuple[str, str | None, str]]:
    """(event type, id, data) of each SSE event."""
    kind, event_id, data = "message", None, list[str]()
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield kind, event_id, "\n".join(data)
            kind, event_id, data = "message", None, []
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


class JsonRpc:
    name = "jsonrpc"

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self.client, self.url, self.next_id = client, url, 0
        self.headers: Mapping[str, str] = {}

    def _body(self, method: str, params: Mapping[str, object]) -> Json:
        self.next_id += 1
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    @staticmethod
    def _failure(answer: Json) -> Failure:
        error = answer["error"]
        assert isinstance(error, dict), answer
        details = error.get("data")
        details = details if isinstance(details, list) else []
        return Failure(_reason(details), status_of(error["code"])[0], details, error["message"])

    async def call(
        self, method: str, params: Mapping[str, object], headers: Mapping[str, str] | None = None
    ) -> Json:
        response = await self.client.post(
            self.url, json=self._body(method, params), headers={**VERSION, **(headers or {})}
        )
        self.headers = response.headers
        _checked(response)
        assert response.status_code == 200, response.text
        answer = response.json()
        if "error" in answer:
            raise self._failure(answer)
        result = answer["result"]
        return {} if result is None else result

    @contextlib.asynccontextmanager
    async def events(
        self, method: str, params: Mapping[str, object], headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[AsyncIterator[tuple[str | None, Json]]]:
        body = self._body(method, params)
        async with self.client.stream(
            "POST", self.url, json=body, headers={**VERSION, **(headers or {})}
        ) as response:
            self.headers = response.headers
            if not response.headers["content-type"].startswith("text/event-stream"):
                raise self._failure(json.loads(await response.aread()))

            async def each() -> AsyncIterator[tuple[str | None, Json]]:
                async for _kind, event_id, data in _sse(response):
                    answer = json.loads(data)
                    if "error" in answer:
                        raise self._failure(answer)
                    yield event_id, answer["result"]

            yield each()

    async def last_headers(self) -> Mapping[str, str]:
        return self.headers


class Rest:
    name = "rest"

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self.client, self.base = client, url.rstrip("/")
        self.headers: Mapping[str, str] = {}

    def _request(
        self, method: str, params: Mapping[str, object], headers: Mapping[str, str] | None
    ) -> httpx.Request:
        route = route_of(METHODS[method], tenant=bool(params.get("tenant")))
        values = {f: str(params[f]) for f in route.fields if f in params}
        path = route.expand(values)
        rest = {k: v for k, v in params.items() if k not in route.fields}
        all_headers = {**VERSION, **(headers or {})}
        url = self.base + path
        if route.rule.body == "*":
            all_headers.setdefault("Content-Type", "application/a2a+json")
            return self.client.build_request(
                route.rule.verb, url, content=json.dumps(rest), headers=all_headers
            )
        query: list[tuple[str, str | int | float | bool | None]] = list(to_query(rest))
        return self.client.build_request(route.rule.verb, url, params=query, headers=all_headers)

    @staticmethod
    def _failure(http: int, body: bytes) -> Failure:
        """The `{"error": google.rpc.Status}` of an answer, checked against §5.4."""
        error = json.loads(body)["error"]
        reason = _reason(error.get("details"))
        assert error["code"] == http, error
        if http not in (405, 413, 415):  # (statuses more precise than the table's)
            assert (error["status"], http) == status_of(REASON_CODES[reason]), error
        return Failure(reason, error["status"], error.get("details", []), error["message"])

    async def call(
        self, method: str, params: Mapping[str, object], headers: Mapping[str, str] | None = None
    ) -> Json:
        response = await self.client.send(self._request(method, params, headers))
        self.headers = response.headers
        _checked(response)
        if response.status_code != 200:
            raise self._failure(response.status_code, response.content)
        assert response.headers["content-type"] == "application/a2a+json"
        result = response.json()
        assert isinstance(result, dict)
        return result

    @contextlib.asynccontextmanager
    async def events(
        self, method: str, params: Mapping[str, object], headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[AsyncIterator[tuple[str | None, Json]]]:
        request = self._request(method, params, headers)
        response = await self.client.send(request, stream=True)
        try:
            self.headers = response.headers
            if response.status_code != 200:
                raise self._failure(response.status_code, await response.aread())
            assert response.headers["content-type"].startswith("text/event-stream")

            async def each() -> AsyncIterator[tuple[str | None, Json]]:
                async for kind, event_id, data in _sse(response):
                    if kind == "error":
                        raise self._failure(json.loads(data)["error"]["code"], data.encode())
                    yield event_id, json.loads(data)

            yield each()
        finally:
            await response.aclose()

    async def last_headers(self) -> Mapping[str, str]:
        return self.headers


DRIVERS: dict[str, Callable[[httpx.AsyncClient, str], Driver]] = {
    "jsonrpc": JsonRpc,
    "rest": Rest,
}
"""Each binding's driver, made from an HTTP client and the app's URL."""
