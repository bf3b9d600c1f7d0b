"""The HTTP+JSON binding of the A2A client (§11): a route per method, ProtoJSON bodies.

Each call goes to the route of its method in the generated table (`Method.http`, from
the proto's `google.api.http` rules), under the interface's URL: the route whose path
fields the request all sets, the `/{tenant}/...` one first when the interface has a
tenant. Path fields are filled in (percent-encoded, one segment each); a route with a
body sends the rest of the request as ProtoJSON (`Content-Type: application/a2a+json`),
one without sends it as query parameters (camelCase names, §11.5: a repeated field is
one parameter per item). The service parameters are headers (§11.2).

An answer other than 200 is an error: a `google.rpc.Status` body (`{"error": {...}}`)
is raised as the class its `ErrorInfo` reason names, as JSON-RPC's would be (§11.6);
401 is `AuthenticationRequired`; anything else `A2AHttpError`. A stream is SSE whose
data is a bare `StreamResponse` (§11.7); an `event: error` carries a `Status`.

The version is spoken through a `RestDialect` (`V10`; a 0.3 dialect, with 0.3's routes
and bodies, is added to `DIALECTS` under "0.3").
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from interlink.a2a import _codec
from interlink.a2a._errors import A2ATransportError, InvalidAgentResponse, error_from_status
from interlink.a2a._methods import HttpRule, Method
from interlink.a2a._types import StreamResponse
from interlink.a2a.client._jsonrpc import activated, check_status, header_bytes
from interlink.a2a.client._sse import SSEParser, read_events
from interlink.a2a.client._transport import HTTP_JSON, StreamEvent, StreamHints, TransportConfig
from interlink.jsonrpc import RpcError

__all__ = ["CONTENT_TYPE", "DIALECTS", "V10", "RestDialect", "RestRequest", "RestTransport"]

R = TypeVar("R", bound=msgspec.Struct)
CONTENT_TYPE: Final = "application/a2a+json"


@dataclass(frozen=True)
class RestRequest:
    """One HTTP request of the binding, before the interface's URL and headers."""

    verb: str
    path: str
    """Absolute path under the interface's URL, path fields filled in."""
    query: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None


class RestDialect(Protocol):
    """How one A2A version is written in HTTP+JSON."""

    @property
    def version(self) -> str: ...

    def request(
        self, method: Method[msgspec.Struct, msgspec.Struct], params: msgspec.Struct
    ) -> RestRequest:
        """The route, query and body of `method` with `params`."""
        ...

    def decode_result(self, method: Method[msgspec.Struct, R], body: bytes) -> R:
        """The typed result (or one event of a stream: a `StreamResponse`) from its
        JSON; `InvalidAgentResponse` when it is not one."""
        ...

    def error(self, body: bytes) -> RpcError | None:
        """The typed error an error body stands for; None for anything else."""
        ...


def _fields(rule: HttpRule) -> list[str]:
    """The request fields in a route's path (`{task_id=*}` -> `task_id`)."""
    return [part.split("}")[0].split("=")[0] for part in rule.path.split("{")[1:]]


def route(method: Method[msgspec.Struct, msgspec.Struct], params: msgspec.Struct) -> HttpRule:
    """The route of `method` for `params`: of those whose path fields `params` all sets,
    the one with the most (`/{tenant}/...` when there is a tenant)."""
    usable = [r for r in method.http if all(getattr(params, f, "") for f in _fields(r))]
    if not usable:
        names = " or ".join(", ".join(_fields(r)) for r in method.http)
        raise ValueError(f"{method.name} over HTTP+JSON needs {names}")
    return max(usable, key=lambda r: len(_fields(r)))


def _query_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _V10:
    """A2A 1.0: the proto's routes, ProtoJSON, `google.rpc.Status` errors."""

    version: Final = "1.0"

    def request(
        self, method: Method[msgspec.Struct, msgspec.Struct], params: msgspec.Struct
    ) -> RestRequest:
        rule = route(method, params)
        path = rule.path
        in_path = _fields(rule)
        for name in in_path:
            segment = quote(str(getattr(params, name)), safe="")
            path = path.replace(f"{{{name}=*}}", segment).replace(f"{{{name}}}", segment)
        json_names = {f.name: f.encode_name for f in msgspec.structs.fields(params)}
        rest = _codec.to_builtins(params)
        for name in in_path:
            rest.pop(json_names.get(name, name), None)
        if rule.body:
            return RestRequest(rule.verb, path, body=msgspec.json.encode(rest))
        query: list[tuple[str, str]] = []
        for key, value in rest.items():
            items = value if isinstance(value, list) else [value]
            if any(isinstance(item, dict | list) for item in items):
                raise ValueError(f"{method.name}: {key} cannot be a query parameter")
            query += [(key, _query_value(item)) for item in items]
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
DIALECTS: dict[str, RestDialect] = {V10.version: V10}


class RestTransport:
    """The HTTP+JSON transport of one interface. An httpx client passed in is left open."""

    binding: Final = HTTP_JSON

    def __init__(self, config: TransportConfig, http: httpx.AsyncClient | None = None) -> None:
        dialect = DIALECTS.get(config.version.strip())
        if dialect is None:
            raise ValueError(f"HTTP+JSON: A2A version {config.version} is not spoken here")
        self.config = config
        self.dialect = dialect
        self.activated_extensions: frozenset[str] = frozenset()
        self._base = config.url.rstrip("/")
        self._headers = {"Accept": CONTENT_TYPE, **config.service_params()}
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

    def _build(
        self,
        method: Method[msgspec.Struct, msgspec.Struct],
        params: msgspec.Struct,
        extra: dict[str, str | bytes],
        timeout: httpx.Timeout | None = None,
    ) -> httpx.Request:
        request = self.dialect.request(method, params)
        headers: dict[str, str | bytes] = {**self._headers, **extra}
        if request.body is not None:
            headers["Content-Type"] = CONTENT_TYPE
        return self._http.build_request(
            request.verb,
            self._base + request.path,
            content=request.body,
            headers=header_bytes(headers),
            params=[*self.config.query.items(), *request.query],
            timeout=timeout or self._http.timeout,
        )

    def _check(self, response: httpx.Response, body: bytes) -> None:
        self.activated_extensions = activated(response)
        if response.status_code not in (200, 401):
            error = self.dialect.error(body)
            if error is not None:
                raise error
        check_status(response, body, str(response.request.url))

    async def call(self, method: Method[msgspec.Struct, R], params: msgspec.Struct) -> R:
        request = self._build(method, params, {})
        try:
            response = await self._http.send(request)
        except httpx.HTTPError as exc:
            raise A2ATransportError(f"{method.name} failed: {exc!r}", self.config.url) from exc
        self._check(response, response.content)
        return self.dialect.decode_result(method, response.content)

    async def stream(
        self,
        method: Method[msgspec.Struct, StreamResponse],
        params: msgspec.Struct,
        *,
        last_event_id: str | None = None,
        hints: StreamHints | None = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        extra: dict[str, str | bytes] = {"Accept": f"text/event-stream, {CONTENT_TYPE}"}
        if last_event_id:  # (UTF-8, as EventSource sends it; none for an empty id)
            extra["Last-Event-ID"] = last_event_id.encode()
        request = self._build(method, params, extra, self._stream_timeout)
        parser = SSEParser()
        idle = self.config.idle_timeout
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:  # the answer's head, within `idle_timeout` too
                    async with asyncio.timeout(idle):
                        response = await self._http.send(request, stream=True)
                except TimeoutError:
                    raise TimeoutError(f"no answer for {idle} s") from None
                stack.push_async_callback(response.aclose)
                kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if response.status_code != 200 or kind != "text/event-stream":
                    body = await response.aread()
                    self._check(response, body)
                    yield self._event(method, body, None)  # one answer instead of a stream
                    return
                self._check(response, b"")
                events = read_events(
                    response, idle_timeout=idle, parser=parser, errors=self.dialect.error
                )
                async for sse in events:
                    yield self._event(method, sse.data.encode(), sse.id)
        except httpx.HTTPError as exc:
            raise A2ATransportError(f"{method.name} failed: {exc!r}", self.config.url) from exc
        finally:
            if hints is not None and parser.retry is not None:
                hints.retry_ms = parser.retry

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
