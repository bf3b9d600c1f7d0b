"""A JSON-RPC peer for end-to-end tests, run as a child process on stdin/stdout.

`python tests/e2e/echo_peer.py [--max-size N]`. Methods: `echo` (params back),
`chatty` (n notifications, then the count), `ask` (asks the parent `parent/answer` and
returns what it said), `sleep` (says `tick` -1, then sleeps until cancelled),
`was_cancelled` (did a `sleep` end by cancellation?).
"""

from __future__ import annotations

import argparse
import asyncio

import msgspec

from interlink.aio import Connection, open_stdio
from interlink.jsonrpc import NotificationType, Profile, RequestType


class Text(msgspec.Struct, frozen=True):
    text: str


class Count(msgspec.Struct, frozen=True):
    n: int


class Empty(msgspec.Struct, frozen=True):
    pass


ECHO = RequestType("echo", Text, Text)
CHATTY = RequestType("chatty", Count, int)
ASK = RequestType("ask", Text, str)
SLEEP = RequestType("sleep", Empty, str)
WAS_CANCELLED = RequestType("was_cancelled", Empty, bool)
PARENT_ANSWER = RequestType("parent/answer", Text, str)
TICK = NotificationType("tick", Count)


async def main(max_size: int) -> None:
    reader, writer = await open_stdio()
    conn = Connection(
        reader,
        writer,
        profile=Profile(cancel_method="$/cancel_request", max_message_size=max_size),
        name="echo-peer",
    )
    cancelled = False

    async def echo(params: Text) -> Text:
        return params

    async def chatty(params: Count) -> int:
        for i in range(params.n):
            await conn.notify(TICK, Count(i))
        return params.n

    async def ask(params: Text) -> str:
        return await conn.request(PARENT_ANSWER, params)

    async def sleep(params: Empty) -> str:
        nonlocal cancelled
        await conn.notify(TICK, Count(-1))  # started
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled = True
            raise
        return "never"

    async def was_cancelled(params: Empty) -> bool:
        return cancelled

    conn.on_request(ECHO, echo)
    conn.on_request(CHATTY, chatty)
    conn.on_request(ASK, ask)
    conn.on_request(SLEEP, sleep)
    conn.on_request(WAS_CANCELLED, was_cancelled)
    async with conn:
        await conn.wait_closed()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-size", type=int, default=64 * 1024 * 1024)
    asyncio.run(main(parser.parse_args().max_size))
