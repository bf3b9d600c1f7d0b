"""The server side of the JSON-RPC round-trip benchmark, run as a child process.

`python -m bench._jsonrpc_peer interlink|floor` serves echo requests on stdin/stdout.
"""

from __future__ import annotations

import asyncio
import sys

import msgspec

from bench import _floor
from interlink.aio import Connection, open_stdio
from interlink.jsonrpc import Profile, RequestType


class EchoParams(msgspec.Struct, frozen=True):
    text: str
    n: int


ECHO = RequestType("echo", EchoParams, EchoParams)


async def _interlink() -> None:
    reader, writer = await open_stdio()
    conn = Connection(reader, writer, profile=Profile(cancel_method="$/cancel_request"))

    async def echo(params: EchoParams) -> EchoParams:
        return params

    conn.on_request(ECHO, echo)
    async with conn:
        await conn.wait_closed()


async def _floor_server() -> None:
    reader, writer = await open_stdio()
    assert isinstance(writer, asyncio.StreamWriter)
    await _floor.serve(reader, writer)


def main() -> None:
    impl = sys.argv[1]
    asyncio.run(_interlink() if impl == "interlink" else _floor_server())


if __name__ == "__main__":
    main()
