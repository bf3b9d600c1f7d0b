"""The asyncio loop around the peer: answers at EOF, cancels, batches, duplicate ids."""

from __future__ import annotations

import asyncio
import contextlib
import json

import msgspec

from interlink.aio import Connection
from interlink.jsonrpc import NotificationType, Profile
from tests.aio.conftest import RawPeer, stream_pair

PROFILE = Profile(cancel_method="$/cancel_request")
BATCHES = Profile(cancel_method="$/cancel_request", batches=True)


class Note(msgspec.Struct, frozen=True):
    text: str


NOTE = NotificationType("note", Note)


async def _raw(profile: Profile) -> tuple[Connection, RawPeer]:
    (r1, w1), (r2, w2) = await stream_pair()
    return Connection(r1, w1, profile=profile, name="under-test"), RawPeer(r2, w2)


async def test_an_answer_that_arrived_before_eof_reaches_its_caller() -> None:
    """DECISIONS Ordering + 'Nothing is ever dropped silently': a response that arrived
    behind a notification still being handled is delivered once that notification is
    handled, even when the peer's EOF follows right behind it."""
    conn, peer = await _raw(PROFILE)
    gate = asyncio.Event()
    seen: list[str] = []

    async def note(params: Note) -> None:
        await gate.wait()
        seen.append(params.text)

    conn.on_notification(NOTE, note)
    async with conn, asyncio.timeout(5):
        call = asyncio.create_task(conn.request_raw("work", {}))
        request = json.loads(await peer.recv())
        peer.writer.write(
            b'{"jsonrpc":"2.0","method":"note","params":{"text":"before"}}\n'
            + b'{"jsonrpc":"2.0","id":'
            + json.dumps(request["id"]).encode()
            + b',"result":42}\n'
        )
        await peer.writer.drain()
        peer.writer.write_eof()
        # the reader saw both lines and the EOF; the notification is still running
        await conn._tasks[0]  # the reader ended: it read both lines and the EOF
        gate.set()
        assert bytes(await call) == b"42"
        assert seen == ["before"]
    await peer.close()


async def _serving_batches() -> tuple[Connection, RawPeer]:
    conn, peer = await _raw(BATCHES)

    async def fallback(method: str, params: object) -> object:
        if method == "hang":
            await asyncio.Event().wait()
        return method

    conn.on_unknown_request(fallback)
    return conn, peer


async def test_a_batch_of_notifications_only_gets_no_answer() -> None:
    conn, peer = await _serving_batches()
    async with conn, asyncio.timeout(5):
        await peer.send(b'[{"jsonrpc":"2.0","method":"n1"},{"jsonrpc":"2.0","method":"n2"}]')
        await peer.send(b'{"jsonrpc":"2.0","id":7,"method":"ping"}')
        assert json.loads(await peer.recv()) == {"jsonrpc": "2.0", "id": 7, "result": "ping"}
    await peer.close()


async def test_a_batch_with_a_duplicate_id_answers_every_entry() -> None:
    conn, peer = await _serving_batches()
    async with conn, asyncio.timeout(5):
        await peer.send(
            b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":1,"method":"b"}]'
        )
        answer = json.loads(await peer.recv())
        assert isinstance(answer, list)
        assert len(answer) == 2
        assert sorted(json.dumps(a, sort_keys=True) for a in answer) == sorted(
            json.dumps(a, sort_keys=True)
            for a in (
                {"jsonrpc": "2.0", "id": 1, "result": "a"},
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "error": answer[0].get("error") or answer[1].get("error"),
                },
            )
        )
    await peer.close()


async def test_a_cancel_inside_a_batch_answers_its_entry_32800() -> None:
    conn, peer = await _serving_batches()
    async with conn, asyncio.timeout(5):
        await peer.send(
            b'[{"jsonrpc":"2.0","id":1,"method":"hang"},{"jsonrpc":"2.0","id":2,"method":"b"},'
            b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}]'
        )
        answer = json.loads(await peer.recv())
        by_id = {a["id"]: a for a in answer}
        assert by_id[1]["error"]["code"] == -32800
        assert by_id[2]["result"] == "b"
    await peer.close()


async def test_a_batch_refused_by_the_admit_hook_is_answered_in_the_batch() -> None:
    conn, peer = await _serving_batches()
    from interlink.jsonrpc import InvalidRequest

    def admit(method: str) -> None:
        if method == "no":
            raise InvalidRequest(data={"detail": "refused"})

    conn.admit_requests(admit)
    async with conn, asyncio.timeout(5):
        await peer.send(
            b'[{"jsonrpc":"2.0","id":1,"method":"no"},{"jsonrpc":"2.0","id":2,"method":"b"}]'
        )
        answer = json.loads(await peer.recv())
        by_id = {a["id"]: a for a in answer}
        assert by_id[1]["error"]["code"] == -32600
        assert by_id[2]["result"] == "b"
    await peer.close()


async def test_an_empty_batch_is_one_32600_with_id_null() -> None:
    conn, peer = await _serving_batches()
    async with conn, asyncio.timeout(5):
        await peer.send(b"[]")
        answer = json.loads(await peer.recv())
        assert answer["id"] is None
        assert answer["error"]["code"] == -32600
    await peer.close()


async def test_a_duplicate_of_a_request_in_flight_is_32600_and_the_first_still_answers() -> None:
    conn, peer = await _raw(PROFILE)
    release = asyncio.Event()

    async def fallback(method: str, params: object) -> object:
        await release.wait()
        return method

    conn.on_unknown_request(fallback)
    async with conn, asyncio.timeout(5):
        await peer.send(b'{"jsonrpc":"2.0","id":"x","method":"first"}')
        await peer.send(b'{"jsonrpc":"2.0","id":"x","method":"second"}')
        dup = json.loads(await peer.recv())
        assert dup["id"] == "x"
        assert dup["error"]["code"] == -32600
        release.set()
        assert json.loads(await peer.recv()) == {"jsonrpc": "2.0", "id": "x", "result": "first"}
    await peer.close()


async def test_handlers_that_swallow_a_peer_cancel_leave_nothing_behind() -> None:
    """A peer that sends request + `$/cancel_request` over and over to a handler that
    swallows the cancellation must not grow our memory: the old loop forgot each task
    once it answered (`_cancelled_by_peer.discard` in `_serve`'s finally)."""
    conn, peer = await _raw(PROFILE)
    started = asyncio.Event()

    async def stubborn(method: str, params: object) -> object:
        started.set()
        with contextlib.suppress(asyncio.CancelledError):  # swallowed: answers normally
            await asyncio.Event().wait()
        return "done"

    conn.on_unknown_request(stubborn)
    async with conn, asyncio.timeout(5):
        for i in range(20):
            started.clear()
            await peer.send(b'{"jsonrpc":"2.0","id":%d,"method":"s"}' % i)
            await started.wait()
            await peer.send(
                b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":%d}}' % i
            )
            assert json.loads(await peer.recv()) == {"jsonrpc": "2.0", "id": i, "result": "done"}
        assert conn._cancelled_by_peer == set()  # (the leak itself)
    await peer.close()
