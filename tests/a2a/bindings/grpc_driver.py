"""The test-side driver of the gRPC binding (§10), beside `drivers.JsonRpc` and `Rest`.

A raw grpc.aio channel to a `GrpcServer` serving the app's `A2AServer` (`for_app`, or
`for_router` for a `TenantRouter`). Params are turned into protobuf by protobuf's own
ProtoJSON parser (`json_format`, not the server's converter) and answers back into
ProtoJSON by it, so the driver tests the server, not our client. An enum name protobuf
does not know goes as a number the proto does not name (99): how a gRPC client sends an
enum value the server does not know. gRPC streams carry no event ids: `events` yields
`None` for each.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Mapping

import grpc
from google.protobuf import json_format

from interlink.a2a import A2AApp, TenantRouter
from interlink.a2a import types as t
from interlink.a2a._grpc import _convert, _status
from interlink.a2a._methods import METHODS
from interlink.a2a.grpc import GrpcServer
from tests.a2a.bindings.drivers import VERSION, Failure, Json, Unauthenticated, reason_of

__all__ = ["Grpc"]

_PATH = "/lf.a2a.v1.A2AService/"
_UNKNOWN_ENUM = re.compile(r"Invalid enum value (\S+) for enum type")


class Grpc:
    name = "grpc"

    def __init__(self, channel: grpc.aio.Channel, server: GrpcServer) -> None:
        self.channel, self.server = channel, server
        self.headers: Mapping[str, str] = {}

    @classmethod
    async def open(cls, app: A2AApp | TenantRouter) -> Grpc:
        if isinstance(app, TenantRouter):
            server = GrpcServer.for_router(app)
        else:
            server = GrpcServer.for_app(app)
        port = await server.start()
        return cls(grpc.aio.insecure_channel(f"127.0.0.1:{port}"), server)

    async def aclose(self) -> None:
        await self.channel.close()
        await self.server.stop(grace=1)

    async def call(
        self, method: str, params: Mapping[str, object], headers: Mapping[str, str] | None = None
    ) -> Json:
        rpc: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = self.channel.unary_unary(
            _PATH + method
        )
        call = rpc(_request(method, params), metadata=_metadata(headers), timeout=30)
        try:
            data = await call
        except grpc.aio.AioRpcError as exc:
            raise _failure(exc) from None
        self.headers = {k: str(v) for k, v in await call.initial_metadata() or ()}
        return _answer(method, data)

    @contextlib.asynccontextmanager
    async def events(
        self, method: str, params: Mapping[str, object], headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[AsyncIterator[tuple[str | None, Json]]]:
        rpc: grpc.aio.UnaryStreamMultiCallable[bytes, bytes] = self.channel.unary_stream(
            _PATH + method
        )
        call = rpc(_request(method, params), metadata=_metadata(headers), timeout=30)

        async def each() -> AsyncIterator[tuple[str | None, Json]]:
            try:
                async for data in call:
                    yield None, _answer(method, data)
            except grpc.aio.AioRpcError as exc:
                raise _failure(exc) from None

        try:
            yield each()
        finally:
            call.cancel()

    async def last_headers(self) -> Mapping[str, str]:
        return self.headers


def _metadata(headers: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    return tuple((k.lower(), v) for k, v in {**VERSION, **(headers or {})}.items())


def _request(method: str, params: Mapping[str, object]) -> bytes:
    message = _convert.proto_class(METHODS[method].params)()
    values = dict(params)
    while True:
        try:
            json_format.ParseDict(values, message)
            return message.SerializeToString()
        except json_format.ParseError as exc:
            unknown = _UNKNOWN_ENUM.search(str(exc))
            if unknown is None:
                raise
            values = {k: _replaced(v, unknown[1], 99) for k, v in values.items()}
            message.Clear()


def _replaced(value: object, name: str, number: int) -> object:
    """`value` with each string `name` in it replaced by `number`."""
    if value == name:
        return number
    if isinstance(value, dict):
        return {k: _replaced(v, name, number) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, name, number) for v in value]
    return value


def _answer(method: str, data: bytes) -> Json:
    result = METHODS[method].result
    message = _convert.proto_class(result).FromString(data)
    answer: Json = json_format.MessageToDict(message)
    if result is t.ListTasksResponse:  # (protobuf writes no zero value; the JSON bindings
        for field in message.DESCRIPTOR.fields:  # write each field of this one)
            zero: object = [] if field.is_repeated else "" if field.type == field.TYPE_STRING else 0
            answer.setdefault(field.json_name, zero)
    return answer


def _failure(error: grpc.aio.AioRpcError) -> Failure | Unauthenticated:
    if error.code() is grpc.StatusCode.UNAUTHENTICATED:  # (before any A2A error)
        trailing = dict(error.trailing_metadata() or ())
        return Unauthenticated(str(trailing.get("www-authenticate", "")))
    details: list[object] = []
    for key, value in error.trailing_metadata() or ():
        if key == _status.KEY and isinstance(value, bytes):
            decoded = _status.decode(value)
            assert decoded is not None
            code, _, details = decoded
            assert code == error.code().value[0]
    return Failure(reason_of(details), error.code().name, details, error.details() or "")
