"""The load generator's gRPC client: one raw `grpc.aio` channel (one HTTP/2 connection,
the workers' calls multiplexed on it, as gRPC clients do), generic unary and
server-streaming calls on prebuilt request bytes, the answers' bytes handed back
unparsed. No generated code and no (de)serializers: the client costs the same whichever
server it drives. (A channel per worker, like the HTTP/1.1 workers' connection each,
costs the client about a third more CPU per call here, which on two cores the server
pays for.)"""

from __future__ import annotations

import grpc
import grpc.aio

from bench.a2a_peers.load import Answer, Call, Caller

__all__ = ["GrpcCaller", "open_callers"]


class GrpcCaller:
    """A worker's calls on the shared `channel`; the first worker owns it."""

    def __init__(
        self, channel: grpc.aio.Channel, metadata: tuple[tuple[str, str], ...], owner: bool
    ) -> None:
        self._channel = channel
        self._owner = owner
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
        if self._owner:
            await self._channel.close()


def open_callers(
    host: str, port: int, metadata: tuple[tuple[str, str], ...], workers: int
) -> list[Caller]:
    """`workers` callers on one channel to host:port."""
    channel = grpc.aio.insecure_channel(f"{host}:{port}")
    return [GrpcCaller(channel, metadata, owner=i == 0) for i in range(workers)]
