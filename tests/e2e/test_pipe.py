"""End to end over real OS pipes between two processes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from interlink.aio import Connection
from interlink.jsonrpc import Profile, RequestCancelled
from tests.e2e.echo_peer import (
    ASK,
    CHATTY,
    ECHO,
    PARENT_ANSWER,
    SLEEP,
    TICK,
    WAS_CANCELLED,
    Count,
    Empty,
    Text,
)

PEER = str(Path(__file__).with_name("echo_peer.py"))
pytestmark = [pytest.mark.e2e, pytest.mark.any_loop]


async def spawn(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        PEER,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=16 * 1024 * 1024,
    )


async def finish(proc: asyncio.subprocess.Process) -> int:
    try:
        return await asyncio.wait_for(proc.wait(), 10)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise


@pytest.fixture
async def peer() -> AsyncIterator[Connection]:
    proc = await spawn()
    assert proc.stdout is not None
    assert proc.stdin is not None
    conn = Connection(proc.stdout, proc.stdin, profile=Profile(cancel_method="$/cancel_request"))
    async with conn:
        yield conn
    assert await finish(proc) == 0


async def test_requests_both_ways_and_ordered_notifications(peer: Connection) -> None:
    ticks: list[int] = []

    async def tick(params: Count) -> None:
        await asyncio.sleep(0)
        ticks.append(params.n)

    async def answer(params: Text) -> str:
        return params.text.upper()

    peer.on_notification(TICK, tick)
    peer.on_request(PARENT_ANSWER, answer)
    async with asyncio.timeout(20):
        assert await peer.request(ECHO, Text("hi\nthere")) == Text("hi\nthere")
        assert await peer.request(ASK, Text("shout")) == "SHOUT"
        assert await peer.request(CHATTY, Count(200)) == 200
        assert ticks == list(range(200))


async def test_pipelined_and_large_messages(peer: Connection) -> None:
    async with asyncio.timeout(30):
        results = await asyncio.gather(*(peer.request(ECHO, Text(str(i))) for i in range(1000)))
        assert [r.text for r in results] == [str(i) for i in range(1000)]
        big = "x" * (8 * 1024 * 1024)
        assert (await peer.request(ECHO, Text(big))).text == big


async def test_cancellation_crosses_the_pipe(peer: Connection) -> None:
    started = asyncio.Event()

    async def tick(params: Count) -> None:
        started.set()

    peer.on_notification(TICK, tick)
    async with asyncio.timeout(10):
        call = asyncio.create_task(peer.request(SLEEP, Empty()))
        await started.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        # the child answers in order: the cancel was read before this request
        assert await peer.request(WAS_CANCELLED, Empty())


async def test_peer_cancelled_request_answers_32800() -> None:
    proc = await spawn()
    assert proc.stdin is not None
    assert proc.stdout is not None
    async with asyncio.timeout(10):
        proc.stdin.write(b'{"jsonrpc":"2.0","id":5,"method":"sleep"}\n')
        proc.stdin.write(
            b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":5}}\n'
        )
        # (the handler took its first step as the request was read: its `tick` may
        # come first; the answer to 5 is -32800 all the same)
        answer = json.loads(await proc.stdout.readline())
        while "id" not in answer:
            assert answer["method"] == "tick"
            answer = json.loads(await proc.stdout.readline())
        assert answer["id"] == 5
        assert answer["error"]["code"] == RequestCancelled.CODE
        proc.stdin.close()
        assert await finish(proc) == 0


async def test_bad_input_over_the_pipe_keeps_the_peer_serving() -> None:
    proc = await spawn("--max-size", str(1024 * 1024))
    assert proc.stdin is not None
    assert proc.stdout is not None
    async with asyncio.timeout(20):
        lines = [
            b"{oops",
            b'[{"jsonrpc":"2.0","id":1,"method":"echo"}]',
            b"12",
            b'{"id":2,"method":"echo","params":{"text":"a"}}',
            b'{"jsonrpc":"2.0","id":3,"method":4}',
            b'{"jsonrpc":"2.0","id":4,"method":"echo","params":{"text":5}}',
            b'{"jsonrpc":"2.0","id":5,"method":"nope"}',
            b'{"jsonrpc":"2.0","id":6,"method":"echo","params":{"text":"'
            + b"z" * 5_000_000
            + b'"}}',
            b'{"jsonrpc":"2.0","id":7,"method":"echo","params":{"text":"still here"}}',
        ]
        for line in lines:
            proc.stdin.write(line + b"\n")
        answers = [json.loads(await proc.stdout.readline()) for _ in lines]
        expected = [
            (None, -32700),
            (None, -32600),
            (None, -32600),
            (2, -32600),
            (3, -32600),
            (4, -32602),
            (5, -32601),
            (None, -32600),
        ]
        got = [(a["id"], a["error"]["code"]) for a in answers[:-1]]
        assert got == expected
        assert answers[-1] == {"jsonrpc": "2.0", "id": 7, "result": {"text": "still here"}}
        proc.stdin.close()
        assert await finish(proc) == 0


async def test_stdin_eof_ends_the_peer_after_answering() -> None:
    proc = await spawn()
    assert proc.stdin is not None
    assert proc.stdout is not None
    async with asyncio.timeout(20):
        for i in range(100):
            line = {"jsonrpc": "2.0", "id": i, "method": "echo", "params": {"text": str(i)}}
            proc.stdin.write(json.dumps(line).encode() + b"\n")
        proc.stdin.close()
        out = await proc.stdout.read()
        assert await finish(proc) == 0
    ids = sorted(json.loads(line)["id"] for line in out.splitlines())
    assert ids == list(range(100))


def test_stdio_that_are_regular_files(tmp_path: Path) -> None:
    requests = tmp_path / "in.jsonl"
    requests.write_bytes(
        b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"file"}}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"chatty","params":{"n":2}}'  # no final newline
    )
    output = tmp_path / "out.jsonl"
    with requests.open("rb") as stdin, output.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, PEER], stdin=stdin, stdout=stdout, timeout=20, check=False
        )
    assert done.returncode == 0
    answers = [json.loads(line) for line in output.read_bytes().splitlines()]
    assert {"jsonrpc": "2.0", "id": 1, "result": {"text": "file"}} in answers
    assert {"jsonrpc": "2.0", "id": 2, "result": 2} in answers
    assert [a["params"]["n"] for a in answers if a.get("method") == "tick"] == [0, 1]
