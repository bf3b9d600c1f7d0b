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

import itertools
from collections.abc import AsyncGenerator, Mapping
from types import MappingProxyType
from typing import Final, Literal, Protocol, TypeVar

import httpx
import msgspec

from interlink.a2a import _codec
from interlink.a2a._errors import (
    InvalidAgentResponse,
)
from interlink.a2a._methods import Method
from interlink.a2a.client._http import HttpClient, HttpDialect, HttpTransport, PoolRequest
from interlink.a2a.client._sse import error_of
from interlink.a2a.client._transport import (
    JSONRPC,
    StreamEvent,
    StreamHints,
    StreamMethod,
    TransportConfig,
)
from interlink.a2a.client._v03 import V03
from interlink.jsonrpc import ErrorResponse, RpcError, SuccessResponse, decode_message

__all__ = ["DIALECTS", "V10", "Dialect", "JsonRpcTransport"]

R = TypeVar("R", bound=msgspec.Struct)


class Dialect(HttpDialect, Protocol):
    """How one A2A version is written in JSON-RPC."""

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

    def null_result_may_be_absent(self, method: Method[msgspec.Struct, msgspec.Struct]) -> bool:
        """Whether an answer to `method` with neither `result` nor `error` means a null
        result (JSON-RPC wants `"result": null`; some servers drop null members)."""
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

    def null_result_may_be_absent(self, method: Method[msgspec.Struct, msgspec.Struct]) -> bool:
        return False  # (no 1.0 result is null: an empty one is `{}`)


V10: Final[Dialect] = _V10()
#: the dialect of each A2A version this binding speaks
DIALECTS: dict[str, Dialect] = {V10.version: V10, V03.version: V03}


class JsonRpcTransport(HttpTransport[Dialect]):
    """The JSON-RPC transport of one interface. An HTTP client passed in is left open."""

    binding = JSONRPC
    dialects = DIALECTS
    headers = MappingProxyType({"Content-Type": "application/json"})

    def __init__(self, config: TransportConfig, http: HttpClient | None = None) -> None:
        super().__init__(config, http)
        self._ids = itertools.count(1)

    def _post(
        self,
        method: Method[msgspec.Struct, msgspec.Struct],
        params: msgspec.Struct,
        headers: Mapping[str, str | bytes] = {},
        *,
        streaming: bool = False,
    ) -> tuple[int, httpx.Request | PoolRequest]:
        id_ = next(self._ids)
        name = self.dialect.method_name(method)
        head = b'{"jsonrpc":"2.0","id":%d,"method":%s,"params":' % (id_, msgspec.json.encode(name))
        body = head + self.dialect.encode_params(method, params) + b"}"
        return id_, self._request("POST", self.config.url, body, headers, streaming=streaming)

    async def call(self, method: Method[msgspec.Struct, R], params: msgspec.Struct) -> R:
        id_, request = self._post(method, params)
        return self._result(method, await self._send(method.name, request), id_)

    async def stream(
        self, method: StreamMethod, params: msgspec.Struct, hints: StreamHints | None = None
    ) -> AsyncGenerator[StreamEvent, None]:
        extra = self._stream_headers("text/event-stream", hints)
        id_, request = self._post(method, params, extra, streaming=True)
        async with self._streaming(method.name, request) as response:
            if response.status_code != 200:
                self._check(response, await response.aread())
            self._check(response, b"")
            async for sse in self._events(response, hints):
                payload = self._result(method, sse.data.encode(), id_).payload
                if payload is None:
                    raise InvalidAgentResponse(f"{method.name} sent an empty event")
                yield StreamEvent(payload, sse.id)

    def _result(self, method: Method[msgspec.Struct, R], body: bytes, id_: int) -> R:
        message = decode_message(body)
        if isinstance(message, ErrorResponse):
            error = self.dialect.error(body)
            assert error is not None
            raise error
        if not isinstance(message, SuccessResponse):
            if self.dialect.null_result_may_be_absent(method) and _bare_answer(body) == id_:
                return self.dialect.decode_result(method, msgspec.Raw(b"null"))
            raise InvalidAgentResponse(f"{method.name}: not a JSON-RPC response: {body[:200]!r}")
        if message.id != id_:
            raise InvalidAgentResponse(f"{method.name}: answer to id {message.id!r}, not {id_}")
        return self.dialect.decode_result(method, message.result)


class _Bare(msgspec.Struct, forbid_unknown_fields=True):
    jsonrpc: Literal["2.0"]
    id: int | str | None


def _bare_answer(body: bytes) -> int | str | None:
    """The id of an answer holding nothing but `jsonrpc` and `id` (None: not one)."""
    try:
        return msgspec.json.decode(body, type=_Bare).id
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
