"""Flow control in the driver: output not yet written is bounded in lines and bytes,
and past the bound the reader stops reading; with `cancel_at_eof`, EOF cancels the
handlers still running (issue #11)."""

from __future__ import annotations

import asyncio
import json

import pytest

from interlink.aio import Connection
from tests.aio.conftest import PROFILE, Forever, RawPeer, stream_pair
from tests.aio.test_connection import ADD, NOTE, WAIT, Add, Note, StuckWriter, as_json


async def turns(n: int = 10) -> None:
    """Let the loop run a few turns (for what must *not* happen)."""
    for _ in range(n):
        await asyncio.sleep(0)


async def test_past_the_byte_bound_senders_wait() -> None:
    writer = StuckWriter()
    conn = Connection(asyncio.StreamReader(), writer, max_outgoing_bytes=200)
    async with conn, asyncio.timeout(5):
        await conn.notify(NOTE, Note("x" * 100))  # the writer takes it and blocks
        await turns()
        blocked = asyncio.create_task(conn.notify(NOTE, Note("y" * 100)))
        await turns()
        assert not blocked.done()  # 2 x ~140 bytes do not fit in 200
        big = asyncio.create_task(conn.notify(NOTE, Note("z" * 1000)))  # after it, in order
        writer.release.set()
        await blocked
        await big  # larger than the bound: it goes alone
        conn._reader.feed_eof()  # type: ignore[attr-defined]
        await conn.wait_closed()
    texts = [json.loads(line)["params"]["text"][0] for line in b"".join(writer.written).split()]
    assert texts == ["x", "y", "z"]


async def test_while_the_peer_does_not_read_we_do_not_read() -> None:
    """A thousand requests from a peer that reads none of the answers: the handlers
    stop being started once the answers waiting are over the bound; when the peer
    reads, every request is answered once."""
    reader = asyncio.StreamReader()
    writer = StuckWriter()
    conn = Connection(reader, writer, max_outgoing_bytes=2000)
    served = 0

    async def add(params: Add) -> int:
        nonlocal served
        served += 1
        return params.a + params.b

    conn.on_request(ADD, add)
    async with conn, asyncio.timeout(5):
        for i in range(1000):
            line = b'{"jsonrpc":"2.0","id":%d,"method":"add","params":{"a":%d,"b":1}}\n'
            reader.feed_data(line % (i, i))
        await turns(50)
        assert 0 < served < 200  # (about 2000 bytes of answers, plus one yield's worth)
        stopped_at = served
        await turns(50)
        assert served == stopped_at  # it stopped reading
        writer.release.set()
        reader.feed_eof()
        await conn.wait_closed()
    answers = [as_json(line) for line in b"".join(writer.written).split()]
    assert sorted(a["id"] for a in answers) == list(range(1000))  # type: ignore[type-var]
    assert all(a["result"] == a["id"] + 1 for a in answers)  # type: ignore[operator]


@pytest.mark.any_loop
async def test_cancel_at_eof_cancels_what_still_runs_and_answers_32800() -> None:
    (r1, w1), (r2, w2) = await stream_pair()
    conn = Connection(r1, w1, profile=PROFILE, cancel_at_eof=True)
    peer = RawPeer(r2, w2)
    wait = Forever()

    async def add(params: Add) -> int:  # answers without waiting: it still answers
        return params.a + params.b

    conn.on_request(WAIT, wait)
    conn.on_request(ADD, add)
    async with conn, asyncio.timeout(5):
        await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"wait","params":{"text":"x"}}')
        await wait.started.wait()
        await peer.send(b'{"jsonrpc":"2.0","id":2,"method":"add","params":{"a":2,"b":2}}')
        peer.writer.write_eof()
        answers = {}
        for _ in range(2):
            answer = as_json(await peer.recv())
            answers[answer["id"]] = answer
        assert answers[2]["result"] == 4
        assert answers[1]["error"]["code"] == -32800  # type: ignore[index]
        assert wait.cancelled.is_set()
        await conn.wait_closed()
    await peer.close()


async def test_the_inbox_is_bounded_in_bytes() -> None:
    """Notifications wait for their handler in a queue bounded in bytes: once it is
    full the reader stops, so a request behind them is not read yet."""
    reader = asyncio.StreamReader()
    writer = StuckWriter()
    writer.release.set()
    conn = Connection(reader, writer, max_inbox_bytes=4000)
    release = asyncio.Event()
    notes: list[str] = []
    served = asyncio.Event()

    async def note(params: Note) -> None:
        await release.wait()
        notes.append(params.text[:1])

    async def add(params: Add) -> int:
        served.set()
        return params.a + params.b

    conn.on_notification(NOTE, note)
    conn.on_request(ADD, add)
    async with conn, asyncio.timeout(5):
        for i in range(10):
            text = str(i) * 1000
            reader.feed_data(
                b'{"jsonrpc":"2.0","method":"note","params":{"text":"%s"}}\n' % text.encode()
            )
        reader.feed_data(b'{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":1,"b":2}}\n')
        await turns(20)
        assert not served.is_set()  # ~10 KB of notifications do not fit in 4000 bytes
        release.set()
        await served.wait()
        reader.feed_eof()
        await conn.wait_closed()
    assert notes == [str(i) for i in range(10)]
    assert as_json(b"".join(writer.written).split()[-1])["result"] == 3
