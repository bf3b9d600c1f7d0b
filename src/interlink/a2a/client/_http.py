"""What the two HTTP bindings of the client share (JSON-RPC and HTTP+JSON): the HTTP
client, the service parameters as headers, the answer's status, and event streams.

The HTTP client is the client's own (`_h1pool.Pool`: HTTP/1.1, keep-alive, no proxies)
unless an `httpx.AsyncClient` is passed in, which is then used as it always was; a
`Pool` passed in is shared (as `A2AClient.connect` shares the one it read the card
with), one made here is closed with the transport.

An answer other than 200 raises the A2A error its body holds (the binding's `error`
reads it: servers put JSON-RPC errors behind a 4xx too), else 401 is
`AuthenticationRequired` and any other status `A2AHttpError`. An HTTP failure (httpx's
or the pool's) is `A2ATransportError`. A stream gets its head within `idle_timeout`
(else `TimeoutError`) and has no read timeout after that: `read_events` counts silence
instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Generic, Protocol, TypeVar

import httpx

from interlink.a2a._errors import A2AHttpError, A2ATransportError, AuthenticationRequired
from interlink.a2a.client._h1 import HttpError
from interlink.a2a.client._h1pool import KEEPALIVE_EXPIRY, Pool, Response
from interlink.a2a.client._sse import Answer, SSEEvent, SSEParser, read_events
from interlink.a2a.client._transport import StreamHints, TransportConfig
from interlink.jsonrpc import RpcError

__all__ = [
    "KEEPALIVE_EXPIRY",
    "HttpClient",
    "HttpDialect",
    "HttpTransport",
    "PoolRequest",
    "RestRequest",
    "header_bytes",
    "http_client",
    "http_pool",
]

HttpClient = httpx.AsyncClient | Pool
"""What the HTTP bindings send with: an httpx client, or the client's own pool."""


def http_client(timeout: float, connect_timeout: float) -> httpx.AsyncClient:
    """The httpx client the A2A client opens when it is given none: `timeout` for every
    step (`connect_timeout` for the connect), idle connections dropped after
    `KEEPALIVE_EXPIRY`."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout, connect=connect_timeout),
        limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY),
    )


_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


def http_pool(timeout: float, connect_timeout: float) -> HttpClient:
    """The HTTP client the A2A client opens when it is given none: its own pool (the
    same timeouts and keep-alive as `http_client`'s), or, where the environment names a
    proxy (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, in either case), `http_client`,
    whose httpx goes through it and honours `NO_PROXY` (the pool speaks no proxy)."""
    environ = os.environ
    if any(environ.get(name) or environ.get(name.lower()) for name in _PROXY_VARIABLES):
        return http_client(timeout, connect_timeout)
    return Pool(timeout, connect_timeout, keepalive_expiry=KEEPALIVE_EXPIRY)


@dataclass(frozen=True, slots=True)
class PoolRequest:
    """A request for the pool (what `httpx.Request` is for an httpx client)."""

    verb: str
    url: str
    headers: list[tuple[bytes, bytes]]
    query: list[tuple[str, str]]
    body: bytes | None
    streaming: bool


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
    (one per A2A version) and the `headers` of its requests. An HTTP client passed in
    (httpx's or a `Pool`) is left open."""

    binding: str
    dialects: Mapping[str, D]
    headers: Mapping[str, str] = MappingProxyType({})

    def __init__(self, config: TransportConfig, http: HttpClient | None = None) -> None:
        dialect = self.dialects.get(config.version.strip())
        if dialect is None:
            raise ValueError(f"{self.binding}: A2A version {config.version} is not spoken here")
        self.dialect: D = dialect
        self.config = config
        self.activated_extensions: frozenset[str] = frozenset()
        self._headers = {**self.headers, **config.service_params()}
        self._own = http is None
        self._http: HttpClient = http or http_pool(config.timeout, config.connect_timeout)
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
    ) -> httpx.Request | PoolRequest:
        if isinstance(self._http, Pool):
            return PoolRequest(
                verb,
                url,
                header_bytes({**self._headers, **headers}),
                [*self.config.query.items(), *query],
                body,
                streaming,
            )
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

    def _check(self, response: Answer, body: bytes, name: str = "") -> None:
        echoed = response.headers.get("a2a-extensions", "")
        self.activated_extensions = frozenset(u.strip() for u in echoed.split(",") if u.strip())
        status = response.status_code
        if status == 200:
            return
        error = self._status_error(status, body, name) if status != 401 else None
        if error is not None:
            raise error
        url = _url(response)  # (without the query: an API key may be in it)
        if status == 401:
            challenge = response.headers.get("www-authenticate", "")
            raise AuthenticationRequired(url, challenge, body)
        raise A2AHttpError(f"{url} answered HTTP {status}: {body[:200]!r}", status, body)

    async def _exchange(
        self, request: httpx.Request | PoolRequest, *, stream: bool = False
    ) -> httpx.Response | Response:
        http = self._http
        if isinstance(request, PoolRequest):
            assert isinstance(http, Pool)
            return await http.request(
                request.verb,
                request.url,
                request.headers,
                request.body,
                request.query,
                stream=stream,
            )
        assert isinstance(http, httpx.AsyncClient)
        return await http.send(request, stream=stream)

    async def _send(self, name: str, request: httpx.Request | PoolRequest) -> bytes:
        """The body of the 200 answer to `request` (`name` is the method's)."""
        try:
            response = await self._exchange(request)
        except (httpx.HTTPError, HttpError) as exc:
            raise A2ATransportError(f"{name} failed: {exc!r}", self.config.url) from exc
        self._check(response, response.content, name)
        return response.content

    @contextlib.asynccontextmanager
    async def _streaming(
        self, name: str, request: httpx.Request | PoolRequest
    ) -> AsyncIterator[httpx.Response | Response]:
        """The response to `request`, its body not read yet; an HTTP failure while it
        is read is an `A2ATransportError` too."""
        idle = self.config.idle_timeout
        try:
            try:  # the answer's head, within `idle_timeout` too
                async with asyncio.timeout(idle):
                    response = await self._exchange(request, stream=True)
            except TimeoutError:
                raise TimeoutError(f"no answer for {idle} s") from None
            try:
                yield response
            finally:
                await response.aclose()
        except (httpx.HTTPError, HttpError) as exc:
            raise A2ATransportError(f"{name} failed: {exc!r}", self.config.url) from exc

    async def _events(
        self, response: Answer, hints: StreamHints | None
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


def _url(response: Answer) -> str:
    """The URL an answer came from, without its query."""
    if isinstance(response, Response):
        return response.url
    assert isinstance(response, httpx.Response)
    return str(response.request.url.copy_with(query=None))
