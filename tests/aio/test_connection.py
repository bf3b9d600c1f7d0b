"""The asyncio driver between two real sockets: typed calls, errors, ordering,
concurrency, cancellation, bad input, batches and closing."""

from __future__ import annotations

import asyncio
import json
import logging

import msgspec
import pytest

from interlink.aio import Connection
from interlink.jsonrpc import (
    ConnectionClosed,
    InvalidParams,
    MethodNotFound,
    NotificationType,
    Profile,
    ProtocolMisuse,
    RequestType,
    ResourceNotFound,
    RpcError,
)
from tests.aio.conftest import Forever, RawPeer, stream_pair

pytestmark = pytest.mark.any_loop


class Add(msgspec.Struct, frozen=True):
    a: int
    b: int


class Note(msgspec.Struct, frozen=True):
    text: str


class Empty(msgspec.Struct, frozen=True):
    pass


ADD = RequestType("add", Add, int)
WAIT = RequestType("wait", Note, str)
FAIL = RequestType("fail", Empty, int)
NOTE = NotificationType("note", Note)


def as_json(line: bytes) -> dict[str, object]:
    value = json.loads(line)
    assert isinstance(value, dict)
    return value


async def test_typed_request_and_notification(pair: tuple[Connection, Connection]) -> None:
    a, b = pair
    notes: list[str] = []

    async def add(params: Add) -> int:
        await b.notify(NOTE, Note(f"{params.a}+{params.b}"))
        return params.a + params.b

    async def note(params: Note) -> None:
        notes.append(params.text)

    b.on_request(ADD, add)
    a.on_notification(NOTE, note)
    async with a, b, asyncio.timeout(5):
        assert await a.request(ADD, Add(2, 3)) == 5
        # the notification sent before the response was handled before it
        assert notes == ["2+3"]


async def test_errors_come_back_as_their_classes(pair: tuple[Connection, Connection]) -> None:
    a, b = pair

    async def fail(params: Empty) -> int:
        raise RpcError.resource_not_found("file:///nope")

    b.on_request(FAIL, fail)
    async with a, b, asyncio.timeout(5):
        with pytest.raises(ResourceNotFound) as info:
            await a.request(FAIL, Empty())
        assert info.value.data == {"uri": "file:///nope"}
        with pytest.raises(MethodNotFound) as missing:
            await a.request(ADD, Add(1, 1))
        assert missing.value.data == {"method": "add"}


async def test_bad_params_are_32602_with_a_readable_path(
    raw_pair: tuple[Connection, RawPeer],
) -> None:
    conn, peer = raw_pair

    async def add(params: Add) -> int:
        return params.a + params.b

    conn.on_request(ADD, add)
    async with conn, asyncio.timeout(5):
        await peer.send(b'{"jsonrpc":"2.0","id":"q","method":"add","params":{"a":1,"b":"x"}}')
        answer = as_json(await peer.recv())
        assert answer["id"] == "q"
        assert answer["error"] == {
            "code": -32602,
            "message": "Invalid params",
            "data": {"detail": "Expected `int`, got `str` - at `$.b`"},
        }


async def test_handler_crash_is_32603_and_does_not_leak(
    raw_pair: tuple[Connection, RawPeer], caplog: pytest.LogCaptureFixture
) -> None:
    conn, peer = raw_pair

    async def fail(params: Empty) -> int:
        raise ValueError("secret internals")

    conn.on_request(FAIL, fail)
    async with conn, asyncio.timeout(5):
        with caplog.at_level(logging.ERROR, logger="interlink.aio"):
            await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"fail"}')
            answer = await peer.recv()
        assert as_json(answer)["error"] == {"code": -32603, "message": "Internal error"}
        assert b"secret" not in answer
        assert "secret internals" in caplog.text  # logged on our side with the traceback


async def test_bad_input_is_answered_and_the_connection_keeps_serving(
    raw_pair: tuple[Connection, RawPeer],
) -> None:
    """(The rules for each kind of bad input: tests/jsonrpc/test_peer.py.)"""
    conn, peer = raw_pair
    seen: list[tuple[bytes, int, int]] = []
    conn.on_invalid_input(lambda head, size, error: seen.append((head, size, error.code)))

    async def add(params: Add) -> int:
        return params.a + params.b

    conn.on_request(ADD, add)
    async with conn, asyncio.timeout(5):
        await peer.send(b"{not json")
        error = as_json(await peer.recv())
        assert (error["id"], error["error"]["code"]) == (None, -32700)  # type: ignore[index]
        await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":1,"b":2}}')
        assert as_json(await peer.recv()) == {"jsonrpc": "2.0", "id": 1, "result": 3}
        assert seen == [(b"{not json", 9, -32700)]


async def test_notifications_are_never_answered(raw_pair: tuple[Connection, RawPeer]) -> None:
    conn, peer = raw_pair
    async with conn, asyncio.timeout(5):
        await peer.send(b'{"jsonrpc":"2.0","method":"unknown/notification"}')
        await peer.send(b'{"jsonrpc":"2.0","method":"note","params":{"text":5}}')
        await peer.send(b'{"jsonrpc":"2.0","id":2,"method":"nope"}')
        # the first thing back is the answer to the request
        assert as_json(await peer.recv())["id"] == 2


async def test_an_answer_over_the_limit_fails_its_request_and_is_not_answered() -> None:
    (r1, w1), (r2, w2) = await stream_pair()
    conn = Connection(r1, w1, profile=Profile(max_message_size=1000))
    peer = RawPeer(r2, w2)
    async with conn, asyncio.timeout(10):
        call = asyncio.create_task(conn.request_raw("big", {}))
        request = as_json(await peer.recv())
        answer_id = json.dumps(request["id"]).encode()
        huge = b'{"jsonrpc":"2.0","id":' + answer_id + b',"result":"' + b"y" * 5000 + b'"}'
        await peer.send(huge)
        with pytest.raises(RpcError) as info:
            await call
        assert info.value.code == -32600
        assert info.value.data["limit"] == 1000  # type: ignore[index]
        # nothing went back for the answer: the next line the peer gets is a new request
        follow = asyncio.create_task(conn.request_raw("small", {}))
        assert as_json(await peer.recv())["method"] == "small"
        follow.cancel()
    await peer.close()


async def test_notifications_run_one_at_a_time_in_order(
    pair: tuple[Connection, Connection],
) -> None:
    a, b = pair
    seen: list[str] = []
    running = 0
    most = 0

    async def note(params: Note) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        for _ in range(3):
            await asyncio.sleep(0)
        seen.append(params.text)
        running -= 1

    async def add(params: Add) -> int:
        for i in range(50):
            await b.notify(NOTE, Note(str(i)))
        return 0

    a.on_notification(NOTE, note)
    b.on_request(ADD, add)
    async with a, b, asyncio.timeout(5):
        await a.request(ADD, Add(0, 0))
        assert seen == [str(i) for i in range(50)]
        assert most == 1


async def test_a_notification_handler_left_waiting_is_cancelled_by_aclose(
    pair: tuple[Connection, Connection],
) -> None:
    a, b = pair
    waiting = Forever()
    seen: list[str] = []

    async def note(params: Note) -> None:
        if params.text == "wait":
            await waiting(params)
        seen.append(params.text)

    a.on_notification(NOTE, note)
    async with asyncio.timeout(5):
        async with a, b:
            await b.notify(NOTE, Note("wait"))
            await b.notify(NOTE, Note("next"))
            await waiting.started.wait()
        assert waiting.cancelled.is_set()
        assert seen == []  # "next" waits behind the handler before it, which never ended


async def test_requests_run_concurrently(pair: tuple[Connection, Connection]) -> None:
    a, b = pair
    gate = asyncio.Event()

    async def wait(params: Note) -> str:
        if params.text == "first":
            await gate.wait()  # only the second request can open it
        else:
            gate.set()
        return params.text

    b.on_request(WAIT, wait)
    async with a, b, asyncio.timeout(5):
        results = await asyncio.gather(a.request(WAIT, Note("first")), a.request(WAIT, Note("2")))
        assert list(results) == ["first", "2"]


async def test_many_pipelined_requests_keep_their_ids(pair: tuple[Connection, Connection]) -> None:
    a, b = pair

    async def add(params: Add) -> int:
        return params.a + params.b

    b.on_request(ADD, add)
    async with a, b, asyncio.timeout(20):
        results = await asyncio.gather(*(a.request(ADD, Add(i, i)) for i in range(1000)))
        assert results == [2 * i for i in range(1000)]


async def test_cancelling_an_awaited_request_sends_cancel_and_the_peer_answers_32800(
    raw_pair: tuple[Connection, RawPeer],
) -> None:
    conn, peer = raw_pair
    async with conn, asyncio.timeout(5):
        call = asyncio.create_task(conn.request(WAIT, Note("x")))
        request = as_json(await peer.recv())
        assert request["method"] == "wait"
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        cancel = as_json(await peer.recv())
        assert cancel == {
            "jsonrpc": "2.0",
            "method": "$/cancel_request",
            "params": {"requestId": request["id"]},
        }
        # a late answer to the forgotten id is reported, not raised
        await peer.send(b'{"jsonrpc":"2.0","id":%d,"result":"late"}' % int(str(request["id"])))
        await peer.send(b'{"jsonrpc":"2.0","id":"ping","method":"nope"}')
        assert as_json(await peer.recv())["id"] == "ping"


async def test_incoming_cancel_request_cancels_the_handler(
    raw_pair: tuple[Connection, RawPeer],
) -> None:
    conn, peer = raw_pair
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def wait(params: Note) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    conn.on_request(WAIT, wait)
    async with conn, asyncio.timeout(5):
        await peer.send(b'{"jsonrpc":"2.0","id":"w","method":"wait","params":{"text":"x"}}')
        await started.wait()
        await peer.send(b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"w"}}')
        answer = as_json(await peer.recv())
        assert answer == {
            "jsonrpc": "2.0",
            "id": "w",
            "error": {"code": -32800, "message": "Request cancelled"},
        }
        assert cancelled.is_set()
        # cancelling what is not in flight, or a malformed cancel, changes nothing
        await peer.send(b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}')
        await peer.send(b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{}}')
        await peer.send(b'{"jsonrpc":"2.0","id":3,"method":"nope"}')
        assert as_json(await peer.recv())["id"] == 3


async def test_handlers_that_swallow_cancellation_answer_normally(
    raw_pair: tuple[Connection, RawPeer],
) -> None:
    conn, peer = raw_pair
    started = asyncio.Event()

    async def wait(params: Note) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return "stopped"
        return "never"

    conn.on_request(WAIT, wait)
    async with conn, asyncio.timeout(5):
        await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"wait","params":{"text":"x"}}')
        await started.wait()
        await peer.send(b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}')
        assert as_json(await peer.recv()) == {"jsonrpc": "2.0", "id": 1, "result": "stopped"}


async def test_peer_eof_fails_pending_requests(raw_pair: tuple[Connection, RawPeer]) -> None:
    conn, peer = raw_pair
    async with conn, asyncio.timeout(5):
        call = asyncio.create_task(conn.request(WAIT, Note("x")))
        await peer.recv()
        peer.writer.write_eof()
        with pytest.raises(ConnectionClosed, match="peer closed"):
            await call
        with pytest.raises(ConnectionClosed):
            await conn.request(WAIT, Note("again"))
        await conn.wait_closed()
        assert conn.closed


async def test_after_peer_eof_running_handlers_still_answer(
    raw_pair: tuple[Connection, RawPeer],
) -> None:
    conn, peer = raw_pair
    notes: list[str] = []

    async def add(params: Add) -> int:
        await asyncio.sleep(0.01)
        await conn.notify(NOTE, Note("working"))
        return params.a + params.b

    async def note(params: Note) -> None:
        await asyncio.sleep(0.01)
        notes.append(params.text)

    conn.on_request(ADD, add)
    conn.on_notification(NOTE, note)
    async with conn, asyncio.timeout(5):
        await peer.send(b'{"jsonrpc":"2.0","method":"note","params":{"text":"queued"}}')
        await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":2,"b":2}}')
        peer.writer.write_eof()
        assert as_json(await peer.recv())["method"] == "note"
        assert as_json(await peer.recv()) == {"jsonrpc": "2.0", "id": 1, "result": 4}
        await conn.wait_closed()
        assert await peer.reader.read() == b""  # the writer closed after the answer
        assert notes == ["queued"]


async def test_aclose_fails_pending_and_cancels_handlers(
    pair: tuple[Connection, Connection],
) -> None:
    a, b = pair
    wait = Forever()
    started, cancelled = wait.started, wait.cancelled
    b.on_request(WAIT, wait)
    async with asyncio.timeout(5):
        async with b:
            async with a:
                call = asyncio.create_task(a.request(WAIT, Note("x")))
                await started.wait()
            with pytest.raises(ConnectionClosed, match="closed locally"):
                await call
            # b saw EOF; its handler may still answer a half-closed peer, so it runs on
            assert not cancelled.is_set()
        # until b is closed locally
        assert cancelled.is_set()
        assert b.closed
        with pytest.raises(ConnectionClosed):
            await a.notify(NOTE, Note("closed"))


async def test_start_twice_is_misuse(pair: tuple[Connection, Connection]) -> None:
    a, _ = pair
    a.start()
    with pytest.raises(ProtocolMisuse):
        a.start()


async def test_aclose_before_start_is_fine(pair: tuple[Connection, Connection]) -> None:
    a, _ = pair
    await a.aclose()
    assert a.closed


async def test_unknown_methods_go_to_the_fallbacks(raw_pair: tuple[Connection, RawPeer]) -> None:
    conn, peer = raw_pair
    got: list[tuple[str, object]] = []

    async def on_request(method: str, params: msgspec.Raw | msgspec.UnsetType) -> object:
        return {"method": method}

    async def on_notification(method: str, params: msgspec.Raw | msgspec.UnsetType) -> None:
        got.append((method, None if params is msgspec.UNSET else bytes(params)))

    conn.on_unknown_request(on_request)
    conn.on_unknown_notification(on_notification)
    async with conn, asyncio.timeout(5):
        await peer.send(b'{"jsonrpc":"2.0","method":"_x/n","params":{"k":1}}')
        await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"_x/r"}')
        assert as_json(await peer.recv())["result"] == {"method": "_x/r"}
        assert got == [("_x/n", b'{"k":1}')]


async def test_response_to_unknown_id_is_reported(
    raw_pair: tuple[Connection, RawPeer], caplog: pytest.LogCaptureFixture
) -> None:
    conn, peer = raw_pair
    async with conn, asyncio.timeout(5):
        with caplog.at_level(logging.WARNING, logger="interlink.aio"):
            await peer.send(b'{"jsonrpc":"2.0","id":77,"result":1}')
            await peer.send(b'{"jsonrpc":"2.0","id":78,"error":{"code":1,"message":"x"}}')
            await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"nope"}')
            await peer.recv()
        assert "unknown request id 77" in caplog.text
        assert "unknown request id 78" in caplog.text


async def test_invalid_params_on_a_notification_are_logged(
    raw_pair: tuple[Connection, RawPeer], caplog: pytest.LogCaptureFixture
) -> None:
    conn, peer = raw_pair
    failed = asyncio.Event()

    async def note(params: Note) -> None:
        if params.text == "boom":
            failed.set()
            raise RuntimeError("handler bug")

    conn.on_notification(NOTE, note)
    async with conn, asyncio.timeout(5):
        with caplog.at_level(logging.WARNING, logger="interlink.aio"):
            await peer.send(b'{"jsonrpc":"2.0","method":"note","params":{"text":1}}')
            await peer.send(b'{"jsonrpc":"2.0","method":"note","params":{"text":"boom"}}')
            await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"nope"}')
            await peer.recv()
            await failed.wait()
            await asyncio.sleep(0)
        assert "notification note rejected" in caplog.text
        assert "handler bug" in caplog.text


class StuckWriter:
    """A writer whose drain blocks until released: a peer that does not read."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.written: list[bytes] = []
        self.fail: BaseException | None = None

    def write(self, data: bytes) -> None:
        self.written.append(data)

    async def drain(self) -> None:
        await self.release.wait()
        if self.fail is not None:
            raise self.fail

    def close(self) -> None:
        pass

    async def wait_closed(self) -> None:
        pass


async def test_outgoing_queue_is_bounded() -> None:
    reader = asyncio.StreamReader()
    writer = StuckWriter()
    conn = Connection(reader, writer, max_outgoing=2)
    async with conn, asyncio.timeout(5):
        await conn.notify(NOTE, Note("1"))
        await asyncio.sleep(0)  # the writer takes it and blocks in drain
        await conn.notify(NOTE, Note("2"))
        await conn.notify(NOTE, Note("3"))
        blocked = asyncio.create_task(conn.notify(NOTE, Note("4")))
        for _ in range(5):
            await asyncio.sleep(0)
        assert not blocked.done()
        writer.release.set()
        await blocked
        reader.feed_eof()
        await conn.wait_closed()
    assert b"".join(writer.written).count(b"\n") == 4


async def test_a_write_error_fails_pending_requests() -> None:
    reader = asyncio.StreamReader()
    writer = StuckWriter()
    writer.fail = BrokenPipeError("peer gone")
    writer.release.set()
    conn = Connection(reader, writer)
    async with conn, asyncio.timeout(5):
        with pytest.raises(ConnectionClosed, match="write failed"):
            await conn.request(ADD, Add(1, 2))
        await conn.wait_closed()


async def test_invalid_result_from_the_peer_raises_at_the_caller(
    raw_pair: tuple[Connection, RawPeer],
) -> None:
    conn, peer = raw_pair
    async with conn, asyncio.timeout(5):
        call = asyncio.create_task(conn.request(ADD, Add(1, 2)))
        request = as_json(await peer.recv())
        await peer.send(b'{"jsonrpc":"2.0","id":%d,"result":"three"}' % int(str(request["id"])))
        with pytest.raises(RpcError, match="Invalid result"):
            await call


def test_invalid_params_class_is_exported() -> None:
    assert InvalidParams.CODE == -32602


async def test_an_error_from_a_call_to_the_peer_is_not_passed_on_as_the_answer(
    pair: tuple[Connection, Connection],
) -> None:
    a, b = pair

    async def relay(params: Note) -> str:
        return await b.request(WAIT, params)  # a answers this with -32601 (no handler)

    b.on_request(WAIT, relay)
    async with a, b, asyncio.timeout(5):
        with pytest.raises(RpcError) as info:
            await a.request(WAIT, Note("x"))
        assert info.value.code == -32603  # not the -32601 of the inner call
        assert "Method not found" in str(info.value.data)
        assert info.value.from_peer
