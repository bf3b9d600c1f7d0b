"""The JSON-RPC binding of the A2A client (§9): one POST per call, SSE for streams.

Every request is a JSON-RPC 2.0 request to the interface's URL with the service
parameters as headers; the answer must carry the request's id. An A2A error answer is
raised as its typed class (also when a server puts it behind a 4xx/5xx), HTTP 401 as
`AuthenticationRequired`, any other non-200 as `A2AHttpError`. A stream is SSE with one
JSON-RPC response per event; an error before the first event comes as plain JSON, an
error after it as an `event: error` (both raised typed, by `read_events`).

What is spoken on the wire is the `Dialect` of the version: `V10` sends the 1.0 method
names and ProtoJSON params; the 0.3 dialect (`client._v03`: method `message/send`,
`kind`-tagged objects) translates with `interlink.a2a.compat._v03`. The transport picks
it from `config.version` in `DIALECTS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncGenerator, Mapping
from typing import Final, Protocol, TypeVar

import httpx
import msgspec

from interlink.a2a import _codec
from interlink.a2a._errors import (
    A2AHttpError,
    A2ATransportError,
    AuthenticationRequired,
    InvalidAgentResponse,
)
from interlink.a2a._methods import Method
from interlink.a2a._types import StreamResponse
from interlink.a2a.client._sse import SSEParser, error_of, read_events
from interlink.a2a.client._transport import (
    JSONRPC,
    StreamEvent,
    StreamHints,
    TransportConfig,
)
from interlink.a2a.client._v03 import V03
from interlink.jsonrpc import ErrorResponse, RpcError, SuccessResponse, decode_message

__all__ = ["DIALECTS", "V10", "Dialect", "JsonRpcTransport", "activated", "check_status"]

R = TypeVar("R", bound=msgspec.Struct)


class Dialect(Protocol):
    """How one A2A version is written in JSON-RPC."""

    @property
    def version(self) -> str:
        """The A2A version (Major.Minor)."""
        ...

    def method_name(self, method: Method[msgspec.Struct, msgspec.Struct]) -> str:
        """The JSON-RPC method name of `method`."""
        ...

    def encode_params(
        self, method: Method[msgspec.Struct, msgspec.Struct], params: msgspec.Struct
    ) -> bytes:
        """The JSON of the params of `method`."""
        ...

    def decode_result(self, method: Method[msgspec.Struct, R], result: msgspec.Raw) -> R:
        """The typed result (or one event of a stream) from the JSON of `result`;
        `InvalidAgentResponse` when it is not one."""
        ...

    def error(self, body: bytes) -> RpcError | None:
        """The typed error a JSON-RPC error response stands for; `None` for anything
        else."""
        ...


class _V10:
    """A2A 1.0: the proto's method names, ProtoJSON, `ErrorInfo` errors."""

    version: Final = "1.0"

    def method_name(self, method: Method[msgspec.Struct, msgspec.Struct]) -> str:
        return method.name

    def encode_params(
        self, method: Method[msgspec.Struct, msgspec.Struct], params: msgspec.Struct
    ) -> bytes:
        return _codec.encode(params)

    def decode_result(self, method: Method[msgspec.Struct, R], result: msgspec.Raw) -> R:
        try:
            return _codec.decode(method.result, result)
        except _codec.ValidationError as exc:
            raise InvalidAgentResponse(f"{method.name}: invalid result: {exc}") from None

    def error(self, body: bytes) -> RpcError | None:
        return error_of(body)


V10: Final[Dialect] = _V10()
#: the dialect of each A2A version this binding speaks
DIALECTS: dict[str, Dialect] = {V10.version: V10, V03.version: V03}


def activated(response: httpx.Response) -> frozenset[str]:
    """The extensions the agent says it activated (`A2A-Extensions` of the answer)."""
    echoed = response.headers.get("a2a-extensions", "")
    return frozenset(u.strip() for u in echoed.split(",") if u.strip())


def check_status(response: httpx.Response, body: bytes, url: str) -> None:
    """401 as `AuthenticationRequired`, any other non-200 as `A2AHttpError`."""
    if response.status_code == 401:
        challenge = response.headers.get("www-authenticate", "")
        raise AuthenticationRequired(url, challenge, body)
    if response.status_code != 200:
        raise A2AHttpError(
            f"{url} answered HTTP {response.status_code}: {body[:200]!r}",
            response.status_code,
            body,
        )


def header_bytes(headers: Mapping[str, str | bytes]) -> list[tuple[bytes, bytes]]:
    """Headers as bytes (a value may be UTF-8: `Last-Event-ID`)."""
    return [
        (name.encode(), value if isinstance(value, bytes) else value.encode())
        for name, value in headers.items()
    ]


class JsonRpcTransport:
    """The JSON-RPC transport of one interface. An httpx client passed in is left open."""

    binding: Final = JSONRPC

    def __init__(self, config: TransportConfig, http: httpx.AsyncClient | None = None) -> None:
        dialect = DIALECTS.get(config.version.strip())
        if dialect is None:
            raise ValueError(f"JSON-RPC: A2A version {config.version} is not spoken here")
        self.config = config
        self.dialect = dialect
        self.activated_extensions: frozenset[str] = frozenset()
        self._ids = itertools.count(1)
        self._headers = {"Content-Type": "application/json", **config.service_params()}
        self._own = http is None
        self._http = http or httpx.AsyncClient(
            timeout=httpx.Timeout(config.timeout, connect=config.connect_timeout)
        )
        self._stream_timeout = httpx.Timeout(
            config.timeout, connect=config.connect_timeout, read=None
        )

    async def aclose(self) -> None:
        if self._own:
            await self._http.aclose()

    def _body(
        self, method: Method[msgspec.Struct, msgspec.Struct], params: msgspec.Struct
    ) -> tuple[int, bytes]:
        id_ = next(self._ids)
        name = self.dialect.method_name(method)
        head = b'{"jsonrpc":"2.0","id":%d,"method":%s,"params":' % (id_, msgspec.json.encode(name))
        return id_, head + self.dialect.encode_params(method, params) + b"}"

    def _check(self, response: httpx.Response, body: bytes) -> None:
        self.activated_extensions = activated(response)
        if response.status_code not in (200, 401):
            error = self.dialect.error(body)  # some servers put an error behind a 4xx/5xx
            if error is not None:
                raise error
        check_status(response, body, self.config.url)

    async def call(self, method: Method[msgspec.Struct, R], params: msgspec.Struct) -> R:
        id_, body = self._body(method, params)
        try:
            response = await self._http.post(
                self.config.url,
                content=body,
                headers=header_bytes(self._headers),
                params=self.config.query,
            )
        except httpx.HTTPError as exc:
            raise A2ATransportError(f"{method.name} failed: {exc!r}", self.config.url) from exc
        self._check(response, response.content)
        return self._result(method, response.content, id_)

    async def stream(
        self,
        method: Method[msgspec.Struct, StreamResponse],
        params: msgspec.Struct,
        *,
        last_event_id: str | None = None,
        hints: StreamHints | None = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        id_, body = self._body(method, params)
        extra: dict[str, str | bytes] = {"Accept": "text/event-stream"}
        if last_event_id:  # (UTF-8, as EventSource sends it; none for an empty id)
            extra["Last-Event-ID"] = last_event_id.encode()
        request = self._http.stream(
            "POST",
            self.config.url,
            content=body,
            headers=header_bytes({**self._headers, **extra}),
            params=self.config.query,
            timeout=self._stream_timeout,
        )
        parser = SSEParser()
        idle = self.config.idle_timeout
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:  # the answer's head, within `idle_timeout` too
                    async with asyncio.timeout(idle):
                        response = await stack.enter_async_context(request)
                except TimeoutError:
                    raise TimeoutError(f"no answer for {idle} s") from None
                if response.status_code != 200:
                    self._check(response, await response.aread())
                self._check(response, b"")
                events = read_events(
                    response, idle_timeout=idle, parser=parser, errors=self.dialect.error
                )
                async for sse in events:
                    result = self._result(method, sse.data.encode(), id_)
                    payload = result.payload
                    if payload is None:
                        raise InvalidAgentResponse(f"{method.name} sent an empty event")
                    yield StreamEvent(payload, sse.id)
        except httpx.HTTPError as exc:
            raise A2ATransportError(f"{method.name} failed: {exc!r}", self.config.url) from exc
        finally:
            if hints is not None and parser.retry is not None:
                hints.retry_ms = parser.retry

    def _result(self, method: Method[msgspec.Struct, R], body: bytes, id_: int) -> R:
        message = decode_message(body)
        if isinstance(message, ErrorResponse):
            error = self.dialect.error(body)
            assert error is not None
            raise error
        if not isinstance(message, SuccessResponse):
            raise InvalidAgentResponse(f"{method.name}: not a JSON-RPC response: {body[:200]!r}")
        if message.id != id_:
            raise InvalidAgentResponse(f"{method.name}: answer to id {message.id!r}, not {id_}")
        return self.dialect.decode_result(method, message.result)
