"""The load generator's gRPC client: a raw `grpc.aio` channel per worker (one HTTP/2
connection, one call in flight on it, as the HTTP bindings' workers hold one connection
each), generic unary and server-streaming calls on prebuilt request bytes, the answers'
bytes handed back unparsed. No generated code and no (de)serializers: the client costs
the same whichever server it drives."""

from __future__ import annotations

import grpc
import grpc.aio

from bench.a2a_peers.load import Answer, Call, Caller

__all__ = ["GrpcCaller", "open_callers"]

# one connection per channel: without it, channels to one target share a subchannel
_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


class GrpcCaller:
    def __init__(self, target: str, metadata: tuple[tuple[str, str], ...]) -> None:
        self._channel = grpc.aio.insecure_channel(target, options=_OPTIONS)
        self._metadata = metadata
        self._unary: dict[str, grpc.aio.UnaryUnaryMultiCallable[bytes, bytes]] = {}
        self._streams: dict[str, grpc.aio.UnaryStreamMultiCallable[bytes, bytes]] = {}

    async def call(self, call: Call) -> Answer:
        if call.stream:
            streaming = self._streams.get(call.path)
            if streaming is None:
                streaming = self._streams[call.path] = self._channel.unary_stream(call.path)
            messages = [m async for m in streaming(call.body, metadata=self._metadata)]
            return 0, messages
        unary = self._unary.get(call.path)
        if unary is None:
            unary = self._unary[call.path] = self._channel.unary_unary(call.path)
        return 0, [await unary(call.body, metadata=self._metadata)]

    async def aclose(self) -> None:
        await self._channel.close()


def open_callers(
    host: str, port: int, metadata: tuple[tuple[str, str], ...], workers: int
) -> list[Caller]:
    return [GrpcCaller(f"{host}:{port}", metadata) for _ in range(workers)]
