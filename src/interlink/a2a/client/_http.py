"""What the two HTTP bindings of the client share (JSON-RPC and HTTP+JSON): the httpx
client, the service parameters as headers, the answer's status, and event streams.

An answer other than 200 raises the A2A error its body holds (the binding's `error`
reads it: servers put JSON-RPC errors behind a 4xx too), else 401 is
`AuthenticationRequired` and any other status `A2AHttpError`. An httpx failure is
`A2ATransportError`. A stream gets its head within `idle_timeout` (else `TimeoutError`)
and has no read timeout after that: `read_events` counts silence instead.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Generic, Protocol, TypeVar

import httpx

from interlink.a2a._errors import A2AHttpError, A2ATransportError, AuthenticationRequired
from interlink.a2a.client._sse import SSEEvent, SSEParser, read_events
from interlink.a2a.client._transport import StreamHints, TransportConfig
from interlink.jsonrpc import RpcError

__all__ = [
    "KEEPALIVE_EXPIRY",
    "HttpDialect",
    "HttpTransport",
    "RestRequest",
    "header_bytes",
    "http_client",
]

KEEPALIVE_EXPIRY = 2.0
"""Seconds an idle pooled connection is kept for reuse. Below the idle close of the
servers agents run on (uvicorn and Node's http both close after 5 s, httpx's own default):
at 5 against 5, a request sent as the server closes its end fails with a `ReadError`."""


def http_client(timeout: float, connect_timeout: float) -> httpx.AsyncClient:
    """The httpx client the A2A client opens when it is given none: `timeout` for every
    step (`connect_timeout` for the connect), idle connections dropped after
    `KEEPALIVE_EXPIRY`."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout, connect=connect_timeout),
        limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY),
    )


@dataclass(frozen=True)
class RestRequest:
    """One HTTP request of the HTTP+JSON binding, before the interface's URL and headers
    (what each version's dialect makes of a call)."""

    verb: str
    path: str
    """Absolute path under the interface's URL, path fields filled in."""
    query: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None


class HttpDialect(Protocol):
    """What every binding's dialect (one A2A version in it) has."""

    @property
    def version(self) -> str:
        """The A2A version (Major.Minor)."""
        ...

    def error(self, body: bytes) -> RpcError | None:
        """The typed error an error body stands for; None for anything else."""
        ...


D = TypeVar("D", bound=HttpDialect)


def header_bytes(headers: Mapping[str, str | bytes]) -> list[tuple[bytes, bytes]]:
    """Headers as bytes (a value may be UTF-8: `Last-Event-ID`)."""
    return [
        (name.encode(), value if isinstance(value, bytes) else value.encode())
        for name, value in headers.items()
    ]


class HttpTransport(Generic[D]):
    """The base of the HTTP transports: a subclass names its `binding`, its `dialects`
    (one per A2A version) and the `headers` of its requests. An httpx client passed in
    is left open."""

    binding: str
    dialects: Mapping[str, D]
    headers: Mapping[str, str] = MappingProxyType({})

    def __init__(self, config: TransportConfig, http: httpx.AsyncClient | None = None) -> None:
        dialect = self.dialects.get(config.version.strip())
        if dialect is None:
            raise ValueError(f"{self.binding}: A2A version {config.version} is not spoken here")
        self.dialect: D = dialect
        self.config = config
        self.activated_extensions: frozenset[str] = frozenset()
        self._headers = {**self.headers, **config.service_params()}
        self._own = http is None
        self._http = http or http_client(config.timeout, config.connect_timeout)
        self._stream_timeout = httpx.Timeout(
            config.timeout, connect=config.connect_timeout, read=None
        )

    async def aclose(self) -> None:
        if self._own:
            await self._http.aclose()

    def error(self, body: bytes) -> RpcError | None:
        """The A2A error an answer's body holds, in the binding's form (None: none)."""
        return self.dialect.error(body)

    def _request(
        self,
        verb: str,
        url: str,
        body: bytes | None,
        headers: Mapping[str, str | bytes],
        query: Sequence[tuple[str, str]] = (),
        *,
        streaming: bool = False,
    ) -> httpx.Request:
        return self._http.build_request(
            verb,
            url,
            content=body,
            headers=header_bytes({**self._headers, **headers}),
            params=[*self.config.query.items(), *query],
            timeout=self._stream_timeout if streaming else self._http.timeout,
        )

    @staticmethod
    def _stream_headers(accept: str, hints: StreamHints | None) -> dict[str, str | bytes]:
        headers: dict[str, str | bytes] = {"Accept": accept}
        last = hints.last_event_id if hints is not None else None
        if last:  # (UTF-8, as EventSource sends it; none for an empty id)
            headers["Last-Event-ID"] = last.encode()
        return headers

    def _status_error(self, status: int, body: bytes, name: str) -> RpcError | None:
        """The A2A error of an answer with HTTP `status` to method `name`: the one its
        body holds (`error`); a binding whose servers say it by the status alone reads
        that too."""
        return self.error(body)

    def _check(self, response: httpx.Response, body: bytes, name: str = "") -> None:
        echoed = response.headers.get("a2a-extensions", "")
        self.activated_extensions = frozenset(u.strip() for u in echoed.split(",") if u.strip())
        status = response.status_code
        if status == 200:
            return
        error = self._status_error(status, body, name) if status != 401 else None
        if error is not None:
            raise error
        url = str(response.request.url.copy_with(query=None))  # (an API key may be in it)
        if status == 401:
            challenge = response.headers.get("www-authenticate", "")
            raise AuthenticationRequired(url, challenge, body)
        raise A2AHttpError(f"{url} answered HTTP {status}: {body[:200]!r}", status, body)

    async def _send(self, name: str, request: httpx.Request) -> bytes:
        """The body of the 200 answer to `request` (`name` is the method's)."""
        try:
            response = await self._http.send(request)
        except httpx.HTTPError as exc:
            raise A2ATransportError(f"{name} failed: {exc!r}", self.config.url) from exc
        self._check(response, response.content, name)
        return response.content

    @contextlib.asynccontextmanager
    async def _streaming(self, name: str, request: httpx.Request) -> AsyncIterator[httpx.Response]:
        """The response to `request`, its body not read yet; an httpx failure while it
        is read is an `A2ATransportError` too."""
        idle = self.config.idle_timeout
        try:
            try:  # the answer's head, within `idle_timeout` too
                async with asyncio.timeout(idle):
                    response = await self._http.send(request, stream=True)
            except TimeoutError:
                raise TimeoutError(f"no answer for {idle} s") from None
            try:
                yield response
            finally:
                await response.aclose()
        except httpx.HTTPError as exc:
            raise A2ATransportError(f"{name} failed: {exc!r}", self.config.url) from exc

    async def _events(
        self, response: httpx.Response, hints: StreamHints | None
    ) -> AsyncGenerator[SSEEvent, None]:
        """The SSE events of `response`, the server's `retry:` kept in `hints`."""
        parser = SSEParser()
        try:
            events = read_events(
                response, idle_timeout=self.config.idle_timeout, parser=parser, errors=self.error
            )
            async with contextlib.aclosing(events):
                async for event in events:
                    yield event
        finally:
            if hints is not None and parser.retry is not None:
                hints.retry_ms = parser.retry
