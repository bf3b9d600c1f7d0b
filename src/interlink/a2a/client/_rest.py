"""The HTTP+JSON binding of the A2A client (§11): a route per method, ProtoJSON bodies.

Each call goes to the route of its method in the generated table (`Method.http`, from
the proto's `google.api.http` rules, compiled by `_routes`), under the interface's URL:
the rule, or its `/{tenant}/...` binding when the interface has a tenant. Path fields
are filled in (percent-encoded, one segment each); a route with a
body sends the rest of the request as ProtoJSON (`Content-Type: application/a2a+json`),
one without sends it as query parameters (camelCase names, §11.5: a repeated field is
one parameter per item). The service parameters are headers (§11.2).

An answer other than 200 is an error: a `google.rpc.Status` body (`{"error": {...}}`)
is raised as the class its `ErrorInfo` reason names, as JSON-RPC's would be (§11.6);
401 is `AuthenticationRequired`; anything else `A2AHttpError`. A stream is SSE whose
data is a bare `StreamResponse` (§11.7); an `event: error` carries a `Status`.

The version is spoken through a `RestDialect` (`DIALECTS`): `V10`, and 0.3's
(`client._v03.V03_REST`: the `/v1/...` routes and ProtoJSON of the 0.3 proto,
`application/json`, translated with `interlink.a2a.compat`), whose servers may say an
error by the HTTP status alone (`RestDialect.status_error`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Final, Protocol, TypeVar

import httpx
import msgspec

from interlink.a2a import _codec, _routes
from interlink.a2a._errors import InvalidAgentResponse, error_from_status
from interlink.a2a._methods import Method
from interlink.a2a._types import StreamResponse
from interlink.a2a.client._http import (
    HttpClient,
    HttpDialect,
    HttpTransport,
    PoolRequest,
    RestRequest,
)
from interlink.a2a.client._transport import (
    HTTP_JSON,
    StreamEvent,
    StreamHints,
    StreamMethod,
    TransportConfig,
)
from interlink.a2a.client._v03 import V03_REST
from interlink.jsonrpc import RpcError

__all__ = ["CONTENT_TYPE", "DIALECTS", "V10", "RestDialect", "RestRequest", "RestTransport"]

R = TypeVar("R", bound=msgspec.Struct)
CONTENT_TYPE: Final = "application/a2a+json"


class RestDialect(HttpDialect, Protocol):
    """How one A2A version is written in HTTP+JSON."""

    @property
    def content_type(self) -> str:
        """The media type of its bodies (`Content-Type`, `Accept`)."""
        ...

    def status_error(self, method: str, status: int, body: bytes) -> RpcError | None:
        """The error an answer to `method` (1.0 name) with HTTP `status` stands for when
        its body holds none (`error`); None: none."""
        ...

    def request(
        self, method: Method[msgspec.Struct, msgspec.Struct], params: msgspec.Struct
    ) -> RestRequest:
        """The route, query and body of `method` with `params`."""
        ...

    def decode_result(self, method: Method[msgspec.Struct, R], body: bytes) -> R:
        """The typed result (or one event of a stream: a `StreamResponse`) from its
        JSON; `InvalidAgentResponse` when it is not one."""
        ...


class _V10:
    """A2A 1.0: the proto's routes, ProtoJSON, `google.rpc.Status` errors."""

    version: Final = "1.0"
    content_type: Final = CONTENT_TYPE

    def status_error(self, method: str, status: int, body: bytes) -> RpcError | None:
        return None

    def request(
        self, method: Method[msgspec.Struct, msgspec.Struct], params: msgspec.Struct
    ) -> RestRequest:
        route = _routes.route_of(method, tenant=bool(getattr(params, "tenant", "")))
        rest = _codec.to_builtins(params)
        try:
            path = route.expand({name: str(rest.get(name, "")) for name in route.fields})
        except KeyError as exc:
            raise ValueError(f"{method.name} over HTTP+JSON needs {exc.args[0]}") from None
        for name in route.fields:
            del rest[name]
        rule = route.rule
        if rule.body:
            return RestRequest(rule.verb, path, body=msgspec.json.encode(rest))
        try:
            query = _codec.to_query(rest)
        except ValueError as exc:
            raise ValueError(f"{method.name}: {exc}") from None
        return RestRequest(rule.verb, path, tuple(query))

    def decode_result(self, method: Method[msgspec.Struct, R], body: bytes) -> R:
        try:
            return _codec.decode(method.result, body.strip() or b"{}")
        except (_codec.ValidationError, msgspec.DecodeError) as exc:
            raise InvalidAgentResponse(f"{method.name}: invalid result: {exc}") from None

    def error(self, body: bytes) -> RpcError | None:
        return status_error(body)


class _Status(msgspec.Struct):
    code: int = 0
    status: str = ""
    message: str = ""
    details: list[object] = msgspec.field(default_factory=list)


class _ErrorBody(msgspec.Struct):
    error: _Status


_error_body = msgspec.json.Decoder(_ErrorBody)


def status_error(body: bytes) -> RpcError | None:
    """The typed error of a `google.rpc.Status` body (§11.6); None when `body` is not
    one, or names no A2A error."""
    try:
        status = _error_body.decode(body).error
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return error_from_status(status.message, status.details, status.status)


V10: Final[RestDialect] = _V10()
#: the dialect of each A2A version this binding speaks
DIALECTS: dict[str, RestDialect] = {V10.version: V10, V03_REST.version: V03_REST}


class RestTransport(HttpTransport[RestDialect]):
    """The HTTP+JSON transport of one interface. An HTTP client passed in is left open."""

    binding = HTTP_JSON
    dialects = DIALECTS

    def __init__(self, config: TransportConfig, http: HttpClient | None = None) -> None:
        super().__init__(config, http)
        self._base = config.url.rstrip("/")
        self._headers.setdefault("Accept", self.dialect.content_type)

    def _status_error(self, status: int, body: bytes, name: str) -> RpcError | None:
        return self.error(body) or self.dialect.status_error(name, status, body)

    def _route(
        self,
        method: Method[msgspec.Struct, msgspec.Struct],
        params: msgspec.Struct,
        headers: Mapping[str, str | bytes] = {},
        *,
        streaming: bool = False,
    ) -> httpx.Request | PoolRequest:
        rest = self.dialect.request(method, params)
        if rest.body is not None:
            headers = {**headers, "Content-Type": self.dialect.content_type}
        url = self._base + rest.path
        return self._request(rest.verb, url, rest.body, headers, rest.query, streaming=streaming)

    async def call(self, method: Method[msgspec.Struct, R], params: msgspec.Struct) -> R:
        body = await self._send(method.name, self._route(method, params))
        return self.dialect.decode_result(method, body)

    async def stream(
        self, method: StreamMethod, params: msgspec.Struct, hints: StreamHints | None = None
    ) -> AsyncGenerator[StreamEvent, None]:
        extra = self._stream_headers(f"text/event-stream, {self.dialect.content_type}", hints)
        request = self._route(method, params, extra, streaming=True)
        async with self._streaming(method.name, request) as response:
            kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if response.status_code != 200 or kind != "text/event-stream":
                body = await response.aread()
                self._check(response, body, method.name)
                yield self._event(method, body, None)  # one answer instead of a stream
                return
            self._check(response, b"", method.name)
            async for sse in self._events(response, hints):
                yield self._event(method, sse.data.encode(), sse.id)

    def _event(
        self, method: Method[msgspec.Struct, StreamResponse], data: bytes, id_: str | None
    ) -> StreamEvent:
        error = self.dialect.error(data)
        if error is not None:
            raise error
        payload = self.dialect.decode_result(method, data).payload
        if payload is None:
            raise InvalidAgentResponse(f"{method.name} sent an empty event")
        return StreamEvent(payload, id_)
