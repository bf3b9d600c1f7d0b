"""The gRPC binding (§10) for `interlink a2a check`: grpcio's generic calls on the messages
of interlink's generated `a2a.proto` (`interlink[grpc]`), read back as the other bindings'
`Reply` and `Events`.

Imported only when the card declares a gRPC interface the checker may contact: grpcio and
protobuf are an extra. Requests are built from the cases' ProtoJSON (`json_format`), and
answers turned back into ProtoJSON; a proto3 scalar at the top of an answer that is unset
is shown with its default (`nextPageToken: ""`), since on the wire an empty string and an
absent one are the same. An error's code is the JSON-RPC code of the `google.rpc.ErrorInfo`
reason in its `grpc-status-details-bin` (interlink's `_grpc._status` reads it), when its
status code is the one §5.4 maps that reason to; otherwise its `code` says what came.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field

import grpc
import grpc.aio
import httpx
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from interlink.a2a import status_of
from interlink.a2a.grpc import POOL, STATUS_KEY, decode_status
from interlink.check._a2a_bindings import GRPC, Events, a2a_code, grpc_target, http_form, one_kind
from interlink.check._a2a_wire import A2A_VERSION, Headers, Json, Refused, Reply, Version, Wire

__all__ = ["Grpc", "GrpcReply"]

SERVICE = POOL.FindServiceByName("lf.a2a.v1.A2AService")


def _metadata(version: str | None, headers: Mapping[str, str] | None) -> list[tuple[str, str]]:
    """§10.2: service parameters as gRPC metadata, keys in lower case."""
    out = [("a2a-version", version)] if version is not None else []
    return out + [(k.lower(), v) for k, v in (headers or {}).items()]


def _to_json(message: Message) -> Json:
    body: Json = json_format.MessageToDict(message, descriptor_pool=POOL)
    for f in message.DESCRIPTOR.fields:
        scalar = f.type not in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP)
        if scalar and not f.has_presence and not f.is_repeated and f.json_name not in body:
            default = f.default_value
            if f.enum_type is not None:
                default = f.enum_type.values_by_number[default].name
            body[f.json_name] = default
    return body


@dataclass
class GrpcReply(Reply):
    """A gRPC answer: `body` is the response as ProtoJSON; `failure` the error, read as a
    JSON-RPC error object (see the module)."""

    failure: Json | None = None
    status_name: str = "OK"

    @property
    def result(self) -> object:
        return self.body if self.failure is None else None

    @property
    def error(self) -> Json | None:
        return self.failure

    def describe(self) -> str:
        if self.failure is not None:
            return f"error {self.failure['code']}: {str(self.failure.get('message'))[:200]}"
        return "gRPC OK" + super().describe().removeprefix("HTTP 200")


def _failure(exc: grpc.aio.AioRpcError) -> GrpcReply:
    name = exc.code().name
    details: list[Json] = []
    for key, value in exc.trailing_metadata() or ():
        if key == STATUS_KEY and isinstance(value, bytes):
            decoded = decode_status(value)
            details = [d for d in decoded[2] if isinstance(d, dict)] if decoded else []
    code = a2a_code(details, name, lambda c: status_of(c)[0], f"gRPC {name}")
    failure: Json = {"code": code, "message": exc.details(), "data": details}
    return GrpcReply(0, httpx.Headers(), b"", None, failure=failure, status_name=name)


@dataclass
class GrpcEvents(Events):
    """A server-streaming call's messages as StreamResponses (no event ids)."""

    timeout: float = 10.0
    _call: grpc.aio.UnaryStreamCall[Message, Message] | None = None
    _pending: list[Message] = field(default_factory=list)

    async def next(self) -> tuple[str, Json] | None:
        if self.closed or self._call is None:
            return None
        if self._pending:
            got: object = self._pending.pop()
        else:
            got = await asyncio.wait_for(self._call.read(), self.timeout)
        if got is grpc.aio.EOF or not isinstance(got, Message):
            self.closed = True
            return None
        self.ids.append(None)
        body = _to_json(got)
        return one_kind(body, str(body))


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()


class Grpc:
    """The gRPC binding at `url`; the channel is closed with the wire."""

    name = GRPC

    def __init__(self, wire: Wire, url: str) -> None:
        if not wire.allowed(http_form(url)):  # (the contact policy, as for HTTP)
            raise Refused(f"not contacted: {url} is neither {wire.origin} nor loopback")
        self.wire, self.url = wire, url
        where, tls = grpc_target(url)
        credentials = grpc.ssl_channel_credentials() if tls else None
        self.channel = (
            grpc.aio.secure_channel(where, credentials)
            if credentials is not None
            else grpc.aio.insecure_channel(where)
        )
        wire.closers.append(self.close)

    def _metadata(
        self, version: str | None, headers: Mapping[str, str] | None
    ) -> list[tuple[str, str]]:
        return _metadata(version, self.wire.with_extensions(dict(headers or {})))

    async def close(self) -> None:
        await self.channel.close()

    def _request(self, method: str, params: Json) -> tuple[Message, type[Message], str]:
        rpc = SERVICE.methods_by_name[method]
        request = message_factory.GetMessageClass(rpc.input_type)()
        json_format.ParseDict(params, request, descriptor_pool=POOL)
        answer = message_factory.GetMessageClass(rpc.output_type)
        return request, answer, f"/{SERVICE.full_name}/{method}"

    async def call(
        self, method: str, params: Json, *, version: Version = A2A_VERSION, headers: Headers = None
    ) -> Reply:
        request, answer, path = self._request(method, params)
        stub = self.channel.unary_unary(
            path, request_serializer=_serialize, response_deserializer=answer.FromString
        )
        try:
            response = await stub(
                request,
                metadata=self._metadata(version, headers),
                timeout=self.wire.timeout,
            )
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise TimeoutError(exc.details()) from None
            return _failure(exc)
        raw = response.SerializeToString()
        return GrpcReply(200, httpx.Headers(), raw, _to_json(response))

    def speaks(self, reply: Reply) -> bool:
        """Any status but UNAVAILABLE came from a gRPC server."""
        return not isinstance(reply, GrpcReply) or reply.status_name != "UNAVAILABLE"

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, params: Json, *, headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[Events]:
        request, answer, path = self._request(method, params)
        stub = self.channel.unary_stream(
            path, request_serializer=_serialize, response_deserializer=answer.FromString
        )
        call = stub(request, metadata=self._metadata(A2A_VERSION, headers))
        events = GrpcEvents("application/grpc", timeout=self.wire.timeout, _call=call)
        try:
            try:  # the first message, or the error that refuses the call
                first = await asyncio.wait_for(call.read(), self.wire.timeout)
            except grpc.aio.AioRpcError as exc:
                events.reply = _failure(exc)
            else:
                if isinstance(first, Message):
                    events._pending.append(first)
                else:
                    events.closed = True
            yield events
        finally:
            call.cancel()
