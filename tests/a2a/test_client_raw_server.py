"""The A2A client and its command line on the wire: odd but valid streams, drops and
resumes, error answers, leaks, and what `interlink a2a ...` says when things go wrong.

Most tests talk to `RawServer`, a hand-written HTTP/1.1 server on 127.0.0.1 whose
handlers write the bytes themselves (chunked event streams that end cleanly or are cut,
silent streams, HTML where JSON belongs).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from interlink.a2a import (
    A2AHttpError,
    ContentTypeNotSupported,
    ExtendedAgentCardNotConfigured,
    ExtensionSupportRequired,
    InvalidAgentResponse,
    PushNotificationNotSupported,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
    VersionNotSupported,
    _card,
    create_app,
)
from interlink.a2a import types as t
from interlink.a2a.client._client import (
    A2AClient,
    A2AInvalidParams,
    A2ATransportError,
    Reconnect,
    StreamEvent,
    StreamInterrupted,
)
from interlink.a2a.client._sse import SSEParser
from interlink.cli import main as cli_main
from interlink.jsonrpc import InternalError, RpcError
from tests.a2a.agents import card
from tests.a2a.conftest import Served
from tests.a2a.test_client import Stepper, start, text

pytestmark = [pytest.mark.timeout(10), pytest.mark.any_loop]
Serve = Callable[[Any], Awaitable[Served]]
Json = dict[str, Any]
S = t.TaskState
ENDED = {
    S.TASK_STATE_COMPLETED,
    S.TASK_STATE_FAILED,
    S.TASK_STATE_CANCELED,
    S.TASK_STATE_REJECTED,
    S.TASK_STATE_INPUT_REQUIRED,
    S.TASK_STATE_AUTH_REQUIRED,
}
FAST = Reconnect(attempts=3, initial=0.01, maximum=0.05)


# -- a hand-written HTTP/1.1 server -------------------------------------------------------


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Json:
        value = json.loads(self.body)
        assert isinstance(value, dict)
        return value


@dataclass
class Conn:
    """One accepted connection, as a handler sees it."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    dropped: bool = False

    async def respond(
        self, status: int, body: bytes, content_type: str = "application/json", **headers: str
    ) -> None:
        head = f"HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\n"
        head += f"content-length: {len(body)}\r\n"
        head += "".join(f"{k.replace('_', '-')}: {v}\r\n" for k, v in headers.items())
        self.writer.write(head.encode() + b"\r\n" + body)
        await self.writer.drain()

    async def start_sse(self) -> None:
        self.writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n"
        )
        await self.writer.drain()

    async def send(self, data: bytes) -> None:
        """One HTTP chunk of the event stream."""
        self.writer.write(b"%x\r\n" % len(data) + data + b"\r\n")
        await self.writer.drain()

    async def end(self) -> None:
        """The clean end of a chunked body."""
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()

    def drop(self) -> None:
        """Cut the connection in the middle of the body."""
        self.dropped = True
        self.writer.transport.abort()

    async def wait_gone(self) -> None:
        """Until the client closes the connection."""
        while await self.reader.read(65536):
            pass


Handler = Callable[[Request, Conn], Awaitable[None]]


class RawServer:
    """Calls `handler` for each request (keep-alive); counts the connections the client
    closed in `gone`."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[Request] = []
        self.gone: asyncio.Queue[None] = asyncio.Queue()
        self.url = ""
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        await self._server.wait_closed()

    def posts(self) -> list[Request]:
        return [r for r in self.requests if r.method == "POST"]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        me = asyncio.current_task()
        assert me is not None
        self._tasks.add(me)
        me.add_done_callback(self._tasks.discard)
        conn = Conn(reader, writer)
        try:
            while not conn.dropped:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    self.gone.put_nowait(None)
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                request = Request(method, path, headers, body)
                self.requests.append(request)
                await self.handler(request, conn)
        except asyncio.CancelledError:
            pass  # the server closes: end quietly
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


@contextlib.contextmanager
def raw_server_in_a_thread(handler: Handler) -> Iterator[str]:
    """A `RawServer` on its own loop in a thread, for code that runs `asyncio.run`."""
    ready = threading.Event()
    url: list[str] = []
    stop: list[Callable[[], object]] = []

    async def serve() -> None:
        stopped = asyncio.Event()
        async with RawServer(handler) as server:
            url.append(server.url)
            loop = asyncio.get_running_loop()
            stop.append(lambda: loop.call_soon_threadsafe(stopped.set))
            ready.set()
            await stopped.wait()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(5)
    try:
        yield url[0]
    finally:
        stop[0]()
        thread.join(5)
        assert not thread.is_alive()


# -- what the server says -----------------------------------------------------------------


def card_json(url: str, *, streaming: bool = True) -> bytes:
    return json.dumps(
        {
            "name": "raw agent",
            "description": "hand-written",
            "version": "1",
            "capabilities": {"streaming": streaming},
            "supportedInterfaces": [
                {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [],
        }
    ).encode()


def status(state: str, words: str = "") -> Json:
    value: Json = {"state": f"TASK_STATE_{state}"}
    if words:
        value["message"] = {
            "messageId": f"m-{words}",
            "role": "ROLE_AGENT",
            "parts": [{"text": words}],
        }
    return value


def task_json(state: str, words: str = "", task_id: str = "t1") -> Json:
    return {"task": {"id": task_id, "contextId": "c1", "status": status(state, words)}}


def update_json(state: str, words: str = "", task_id: str = "t1") -> Json:
    return {"statusUpdate": {"taskId": task_id, "contextId": "c1", "status": status(state, words)}}


def event(rpc_id: object, result: Json, event_id: str | None = None) -> bytes:
    head = b"" if event_id is None else f"id: {event_id}\n".encode()
    body = json.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": result})
    return head + b"data: " + body.encode() + b"\n\n"


def error_body(rpc_id: object, code: int, message: str, data: object = None) -> bytes:
    error: Json = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return json.dumps({"jsonrpc": "2.0", "id": rpc_id, "error": error}).encode()


def rpc_server(rpc: Handler, *, streaming: bool = True) -> Handler:
    """GET: the card (pointing back at this server); POST: `rpc`."""

    async def handler(request: Request, conn: Conn) -> None:
        if request.method == "GET":
            host = request.headers["host"]
            await conn.respond(200, card_json(f"http://{host}/", streaming=streaming))
        else:
            await rpc(request, conn)

    return handler


@contextlib.asynccontextmanager
async def agent(
    rpc: Handler, *, streaming: bool = True, **client_options: Any
) -> AsyncIterator[tuple[RawServer, A2AClient]]:
    _card.clear_card_cache()
    async with RawServer(rpc_server(rpc, streaming=streaming)) as server:
        client = await A2AClient.connect(server.url, **client_options)
        async with client:
            yield server, client


async def collect(stream: AsyncIterator[StreamEvent], into: list[StreamEvent]) -> None:
    async for item in stream:
        into.append(item)


def words(events: list[StreamEvent]) -> list[str]:
    return [text(e.payload) for e in events]


# -- stream_message: a stream that ends before the task does ----------------------------


async def test_stream_message_that_ends_early_is_not_silently_complete(serve: Serve) -> None:
    """DECISIONS: "`SendStreamingMessage` closes at a terminal state or at
    INPUT_REQUIRED/AUTH_REQUIRED"; our server (`_http.py`): "A client that stops reading
    ... its bounded queue overflows and its stream ends (it resumes with
    `Last-Event-ID`)"; `stream_message`: "a broken stream raises `StreamInterrupted`,
    which says how to `subscribe` to the rest"."""
    executor = Stepper()
    served = await start(serve, create_app(executor, card(), stream_queue_limit=2))
    _card.clear_card_cache()
    for step in ("1", "2", "3", "4", "5", "6", "7", "done"):
        executor.steps.put_nowait(step)  # a burst of events: more than the stream's queue
    async with await A2AClient.connect(served.url) as client:
        got: list[StreamEvent] = []
        broke: StreamInterrupted | None = None
        try:
            async for item in client.stream_message("go"):
                got.append(item)
        except StreamInterrupted as exc:
            broke = exc
        await executor.ended.wait()
        last = got[-1].payload
        assert isinstance(last, t.Task | t.TaskStatusUpdateEvent)
        assert broke is not None or last.status.state in ENDED, (
            f"the stream ended at {last.status.state} after {words(got)}; "
            "the task went on to COMPLETED and nobody was told"
        )


async def test_subscribe_resumes_when_the_server_ends_a_lagging_stream(serve: Serve) -> None:
    """The same clean end on `subscribe` is a drop: it resumes by `Last-Event-ID` and
    delivers every event once, in order."""
    executor = Stepper()
    served = await start(serve, create_app(executor, card(), stream_queue_limit=2))
    _card.clear_card_cache()
    async with await A2AClient.connect(served.url, reconnect=FAST) as client:
        task = await client.send_message("go", return_immediately=True)
        assert isinstance(task, t.Task)
        await executor.started.wait()
        got: list[StreamEvent] = []
        async for item in client.subscribe(task.id):
            got.append(item)
            if len(got) == 1:
                for step in ("1", "2", "3", "4", "5", "6", "7", "done"):
                    executor.steps.put_nowait(step)
    assert words(got) == ["0", "1", "2", "3", "4", "5", "6", "7", "done"]
    assert not any(e.resync for e in got)


# -- stream_message: drops, idle streams, cancellation ------------------------------------


async def dropped_after_working(request: Request, conn: Conn) -> None:
    """A stream cut after event 2 (WORKING); the re-subscription gets the snapshot, then
    event 3 (COMPLETED)."""
    body = request.json()
    await conn.start_sse()
    if body["method"] == "SendStreamingMessage":
        await conn.send(event(body["id"], task_json("SUBMITTED"), "1"))
        await conn.send(event(body["id"], update_json("WORKING", "a"), "2"))
        conn.drop()
    else:
        await conn.send(event(body["id"], task_json("WORKING", "a")))
        await conn.send(event(body["id"], update_json("COMPLETED", "b"), "3"))
        await conn.end()


async def test_stream_interrupted_says_how_to_resume_and_subscribe_resumes() -> None:
    async with agent(dropped_after_working) as (server, client):
        got: list[StreamEvent] = []
        with pytest.raises(StreamInterrupted) as broke:
            await collect(client.stream_message("hi"), got)
        assert [e.id for e in got] == ["1", "2"]
        assert (broke.value.task_id, broke.value.last_event_id) == ("t1", "2")
        assert isinstance(broke.value.__cause__, Exception)
        rest = [
            e
            async for e in client.subscribe(
                broke.value.task_id, last_event_id=broke.value.last_event_id
            )
        ]
    assert [(e.id, text(e.payload)) for e in rest] == [("3", "b")]
    resume = server.posts()[-1]
    assert resume.headers["last-event-id"] == "2"
    assert resume.json()["method"] == "SubscribeToTask"
    assert resume.json()["params"] == {"id": "t1"}
    assert resume.headers["accept"] == "text/event-stream"


async def test_a_silent_stream_times_out_and_its_connection_is_closed() -> None:
    async def rpc(request: Request, conn: Conn) -> None:
        await conn.start_sse()
        await conn.send(event(request.json()["id"], task_json("WORKING", "a"), "1"))
        await conn.wait_gone()

    async with agent(rpc, idle_timeout=0.3) as (server, client):
        with pytest.raises(StreamInterrupted) as broke:
            async for _ in client.stream_message("hi"):
                pass
        assert isinstance(broke.value.__cause__, TimeoutError)
        assert (broke.value.task_id, broke.value.last_event_id) == ("t1", "1")
        await asyncio.wait_for(server.gone.get(), 5)


@pytest.mark.parametrize("method", ["stream_message", "subscribe"])
async def test_a_server_that_never_answers_a_stream_counts_as_silent(method: str) -> None:
    """Module docstring: streams have "no read timeout, but a stream silent (not even a
    keep-alive comment) for `idle_timeout` seconds counts as dropped"; here nothing at
    all comes, not even the HTTP status line (our own server, too, sends no header and
    no keep-alive before the executor's first event)."""

    async def rpc(request: Request, conn: Conn) -> None:
        await conn.wait_gone()

    once = Reconnect(attempts=1, initial=0.01, maximum=0.01)
    async with agent(rpc, idle_timeout=0.3, timeout=1.0, reconnect=once) as (_, client):
        stream = (
            client.stream_message("hi") if method == "stream_message" else client.subscribe("t1")
        )
        with pytest.raises(A2ATransportError):  # StreamInterrupted is one
            await asyncio.wait_for(collect(stream, []), 3)


@pytest.mark.parametrize("how", ["cancel", "aclose"])
async def test_leaving_a_stream_closes_its_connection(how: str) -> None:
    async def rpc(request: Request, conn: Conn) -> None:
        await conn.start_sse()
        await conn.send(event(request.json()["id"], task_json("WORKING", "a"), "1"))
        await conn.wait_gone()

    async with agent(rpc) as (server, client):
        if how == "cancel":
            first = asyncio.Event()

            async def consume() -> None:
                async for _ in client.stream_message("hi"):
                    first.set()

            consumer = asyncio.create_task(consume())
            await first.wait()
            consumer.cancel()
            with pytest.raises(asyncio.CancelledError):
                await consumer
        else:
            async with contextlib.aclosing(client.stream_message("hi")) as stream:
                async for _ in stream:
                    break
        await asyncio.wait_for(server.gone.get(), 5)


@pytest.mark.parametrize("state", ["COMPLETED", "INPUT_REQUIRED"])
async def test_leaving_a_stream_once_its_task_ended_keeps_its_connection(state: str) -> None:
    """The end the server sends after the last event is read (for at most
    `DRAIN_TIMEOUT`), so the next call goes over the same connection, not a new one."""
    conns: list[Conn] = []

    async def rpc(request: Request, conn: Conn) -> None:
        conns.append(conn)
        await conn.start_sse()
        rpc_id = request.json()["id"]
        await conn.send(event(rpc_id, task_json("WORKING"), "1"))
        await conn.send(event(rpc_id, update_json(state, "over"), "2"))
        await conn.end()

    async with agent(rpc) as (server, client):
        for _ in range(2):
            async with contextlib.aclosing(client.stream_message("hi")) as stream:
                async for item in stream:
                    if text(item.payload) == "over":
                        break
        assert len(conns) == 2
        assert conns[0] is conns[1]
        assert server.gone.empty()


# -- subscribe: resuming against odd servers ---------------------------------------------


async def test_subscribe_waits_as_the_servers_retry_hint_says() -> None:
    """`Reconnect`: waiting "`initial` seconds (or the server's `retry:`)". The client's
    own delay is a minute here: only the hint gets it back within the test's time."""

    async def rpc(request: Request, conn: Conn) -> None:
        rpc_id = request.json()["id"]
        await conn.start_sse()
        if "last-event-id" not in request.headers:
            await conn.send(b"retry: 10\n" + event(rpc_id, task_json("WORKING", "a")))
            await conn.send(event(rpc_id, update_json("WORKING", "b"), "5"))
            conn.drop()
        else:
            await conn.send(event(rpc_id, task_json("WORKING", "b")))
            await conn.send(event(rpc_id, update_json("WORKING", "b"), "5"))  # replayed
            await conn.send(event(rpc_id, update_json("COMPLETED", "c"), "6"))
            await conn.end()

    slow = Reconnect(attempts=2, initial=60.0, maximum=60.0)
    async with agent(rpc, reconnect=slow) as (server, client):
        async with asyncio.timeout(5):
            got = [e async for e in client.subscribe("t1")]
    assert [(e.id, text(e.payload), e.resync) for e in got] == [
        (None, "a", False),
        ("5", "b", False),
        ("6", "c", False),
    ]
    assert server.posts()[-1].headers["last-event-id"] == "5"


async def test_subscribe_takes_a_502_to_504_on_reconnect_as_a_failed_attempt() -> None:
    """A proxy or a restarting server answers 503 for a moment: the re-subscription
    tries again; an empty `id:` sends no `Last-Event-ID` (as EventSource)."""
    calls = 0

    async def rpc(request: Request, conn: Conn) -> None:
        nonlocal calls
        calls += 1
        rpc_id = request.json()["id"]
        if calls == 2:
            await conn.respond(503, b"busy", "text/plain")
            return
        await conn.start_sse()
        if calls == 1:
            await conn.send(event(rpc_id, task_json("WORKING", "a"), ""))
            conn.drop()
        else:
            await conn.send(event(rpc_id, update_json("COMPLETED", "c"), "7"))
            await conn.end()

    async with agent(rpc, reconnect=FAST) as (server, client):
        async with asyncio.timeout(5):
            got = [e async for e in client.subscribe("t1")]
    assert [text(e.payload) for e in got] == ["a", "c"]
    assert calls == 3
    assert all("last-event-id" not in post.headers for post in server.posts())


async def test_iter_tasks_stops_when_the_server_goes_round_in_circles() -> None:
    pages = {"": "a", "a": "b", "b": "a"}  # a server bug: b leads back to a

    async def rpc(request: Request, conn: Conn) -> None:
        call = request.json()
        token = call["params"].get("pageToken", "")
        task = task_json("COMPLETED", token or "first")["task"]
        result = {"tasks": [task], "pageSize": 1}
        result |= {"totalSize": 9, "nextPageToken": pages[token]}
        body = json.dumps({"jsonrpc": "2.0", "id": call["id"], "result": result})
        await conn.respond(200, body.encode())

    async with agent(rpc) as (_, client):
        async with asyncio.timeout(5):
            got = [text(task) async for task in client.iter_tasks(page_size=1)]
    assert got == ["first", "a", "b"]


async def test_subscribe_without_event_ids_resyncs_from_the_snapshot() -> None:
    """Module docstring: "a server that gives no event ids cannot resume, so there the
    snapshot is always delivered"."""
    calls = 0

    async def rpc(request: Request, conn: Conn) -> None:
        nonlocal calls
        calls += 1
        rpc_id = request.json()["id"]
        await conn.start_sse()
        if calls == 1:
            await conn.send(event(rpc_id, task_json("WORKING", "a")))
            await conn.send(event(rpc_id, update_json("WORKING", "b")))
            conn.drop()
        else:
            await conn.send(event(rpc_id, task_json("WORKING", "c")))
            await conn.send(event(rpc_id, update_json("COMPLETED", "d")))
            await conn.end()

    async with agent(rpc, reconnect=FAST) as (server, client):
        got = [e async for e in client.subscribe("t1")]
    assert [(text(e.payload), e.resync) for e in got] == [
        ("a", False),
        ("b", False),
        ("c", True),
        ("d", False),
    ]
    assert "last-event-id" not in server.posts()[-1].headers


async def test_subscribe_drops_what_a_server_replays_twice_with_opaque_ids() -> None:
    calls = 0

    async def rpc(request: Request, conn: Conn) -> None:
        nonlocal calls
        calls += 1
        rpc_id = request.json()["id"]
        await conn.start_sse()
        await conn.send(event(rpc_id, task_json("WORKING", "a")))
        await conn.send(event(rpc_id, update_json("WORKING", "b"), "ev-b"))
        await conn.send(event(rpc_id, update_json("WORKING", "c"), "ev-c"))
        if calls == 1:
            conn.drop()
        else:  # a server that ignores Last-Event-ID and sends everything again
            await conn.send(event(rpc_id, update_json("COMPLETED", "d"), "ev-d"))
            await conn.end()

    async with agent(rpc, reconnect=FAST) as (server, client):
        got = [e async for e in client.subscribe("t1")]
    assert [(e.id, text(e.payload)) for e in got] == [
        (None, "a"),
        ("ev-b", "b"),
        ("ev-c", "c"),
        ("ev-d", "d"),
    ]
    assert server.posts()[-1].headers["last-event-id"] == "ev-c"


async def test_subscribe_resumes_after_an_event_id_that_is_not_ascii() -> None:
    """The parser follows "the WHATWG EventSource rules" (`_sse.py`), where an id is any
    text without NUL and the reconnection sends "the last event ID string, encoded as
    UTF-8" in `Last-Event-ID`."""
    calls = 0

    async def rpc(request: Request, conn: Conn) -> None:
        nonlocal calls
        calls += 1
        rpc_id = request.json()["id"]
        await conn.start_sse()
        if calls == 1:
            await conn.send(event(rpc_id, task_json("WORKING", "a")))
            await conn.send(event(rpc_id, update_json("WORKING", "b"), "é-1"))
            conn.drop()
        else:
            await conn.send(event(rpc_id, update_json("COMPLETED", "c"), "é-2"))
            await conn.end()

    async with agent(rpc, reconnect=FAST) as (server, client):
        got = [e async for e in client.subscribe("t1")]
    assert [(e.id, text(e.payload)) for e in got] == [(None, "a"), ("é-1", "b"), ("é-2", "c")]
    assert server.posts()[-1].headers["last-event-id"].encode("latin-1") == "é-1".encode()


async def test_resumed_subscribe_refused_for_another_reason_does_not_end_quietly() -> None:
    """Module docstring: "A task that ended while disconnected answers the
    re-subscription with -32004: the client then delivers the final task from `GetTask`
    ... and ends". The spec's -32004 also means streaming is not supported ("If
    `AgentCard.capabilities.streaming` is `false` ... `SubscribeToTask` operations
    **MUST** return `UnsupportedOperationError`", 3.3.4); here GetTask
    shows the task is not over, so ending as if it were loses the rest of it."""

    async def rpc(request: Request, conn: Conn) -> None:
        body = request.json()
        if body["method"] == "SubscribeToTask":
            refusal = error_body(body["id"], -32004, "Streaming is not supported")
            await conn.respond(200, refusal)
        else:
            answer = {"jsonrpc": "2.0", "id": body["id"], "result": task_json("WORKING")["task"]}
            await conn.respond(200, json.dumps(answer).encode())

    async with agent(rpc, streaming=False) as (_, client):  # spec 3.3.4: then -32004
        got: list[StreamEvent] = []
        try:
            await collect(client.subscribe("t1", last_event_id="3"), got)
        except UnsupportedOperation:
            return  # the refusal, raised: fine
    last = got[-1].payload
    assert isinstance(last, t.Task)
    assert last.status.state in ENDED, f"subscribe ended quietly at {last.status.state}"


# -- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("marked", [True, False], ids=["event-error", "plain-data"])
async def test_an_error_mid_stream_is_raised_typed_after_the_events_before_it(
    marked: bool,
) -> None:
    """DECISIONS: "after it, an SSE event carrying the JSON-RPC error, then close" (the
    spec does not require `event: error`; either form is an error)."""

    async def rpc(request: Request, conn: Conn) -> None:
        rpc_id = request.json()["id"]
        await conn.start_sse()
        await conn.send(event(rpc_id, task_json("WORKING", "a"), "1"))
        head = b"event: error\n" if marked else b""
        await conn.send(head + b"data: " + error_body(rpc_id, -32603, "it broke") + b"\n\n")
        await conn.end()

    async with agent(rpc) as (_, client):
        got: list[StreamEvent] = []
        with pytest.raises(InternalError, match="it broke") as info:
            await collect(client.stream_message("hi"), got)
    assert words(got) == ["a"]
    assert info.value.from_peer


ERRORS: list[tuple[int, type[RpcError]]] = [
    (-32001, TaskNotFound),
    (-32002, TaskNotCancelable),
    (-32003, PushNotificationNotSupported),
    (-32004, UnsupportedOperation),
    (-32005, ContentTypeNotSupported),
    (-32006, InvalidAgentResponse),
    (-32007, ExtendedAgentCardNotConfigured),
    (-32008, ExtensionSupportRequired),
    (-32009, VersionNotSupported),
    (-32602, A2AInvalidParams),
]


@contextlib.asynccontextmanager
async def mock_agent(answer: Callable[[Json], httpx.Response]) -> AsyncIterator[A2AClient]:
    """A client whose every call `answer` answers (no sockets)."""

    def handler(request: httpx.Request) -> httpx.Response:
        return answer(json.loads(request.content))

    resolved = _card.select_interface(
        t.AgentCard(
            name="mock",
            capabilities=t.AgentCapabilities(streaming=True),
            supported_interfaces=[
                t.AgentInterface(
                    url="http://agent.test/rpc", protocol_binding="JSONRPC", protocol_version="1.0"
                )
            ],
        )
    )
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        yield A2AClient(resolved, client=http)


def _error_answer(code: int, message: str, data: object) -> Callable[[Json], httpx.Response]:
    def answer(body: Json) -> httpx.Response:
        return httpx.Response(200, content=error_body(body["id"], code, message, data))

    return answer


async def test_every_a2a_error_code_is_rebuilt_with_its_message_and_data() -> None:
    info = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "R"}]
    for code, cls in ERRORS:
        async with mock_agent(_error_answer(code, f"m{code}", info)) as client:
            with pytest.raises(cls) as raised:
                await client.get_task("x")
            assert (raised.value.code, raised.value.message) == (code, f"m{code}")
            assert raised.value.data == info
            assert raised.value.from_peer
            for stream in (client.stream_message("x"), client.subscribe("x")):
                with pytest.raises(cls):  # a plain JSON answer before the stream
                    async for _ in stream:
                        pass
    async with mock_agent(_error_answer(-32050, "odd", {"k": 1})) as unknown:
        with pytest.raises(RpcError) as raised:
            await unknown.get_task("x")
    assert type(raised.value) is RpcError
    assert (raised.value.code, raised.value.data) == (-32050, {"k": 1})


async def test_odd_http_answers_are_typed() -> None:
    answers: list[Callable[[Json], httpx.Response]] = [
        lambda b: httpx.Response(500, content=error_body(b["id"], -32001, "gone")),
        lambda b: httpx.Response(502, content=b"<html>bad gateway</html>"),
        lambda b: httpx.Response(200, content=b"<html>oops</html>"),
        lambda b: httpx.Response(
            200, content=json.dumps({"jsonrpc": "2.0", "id": 999, "result": {}}).encode()
        ),
        lambda b: httpx.Response(
            200, content=json.dumps({"jsonrpc": "2.0", "id": b["id"], "result": 5}).encode()
        ),
    ]
    expected: list[type[Exception]] = [
        TaskNotFound,
        A2AHttpError,
        InvalidAgentResponse,
        InvalidAgentResponse,
        InvalidAgentResponse,
    ]
    for answer, cls in zip(answers, expected, strict=True):
        async with mock_agent(answer) as client:
            with pytest.raises(cls):
                await client.get_task("x")
    async with mock_agent(answers[1]) as bad_gateway:
        with pytest.raises(A2AHttpError) as raised:
            await bad_gateway.get_task("x")
    assert raised.value.status == 502
    assert b"bad gateway" in raised.value.body


# -- SSE framing through the whole client ------------------------------------------------


async def test_odd_but_valid_framing_byte_by_byte() -> None:
    """BOM, comments, CR / LF / CRLF line ends, a JSON answer split over several `data:`
    lines (joined with LF, which JSON allows between tokens), `retry:`, unknown fields and
    an explicit `event: message`, every byte in its own HTTP chunk."""

    async def rpc(request: Request, conn: Conn) -> None:
        rpc_id = json.dumps(request.json()["id"]).encode()
        first = json.dumps(task_json("WORKING", "a")).encode()
        second = json.dumps(update_json("WORKING", "b")).encode()
        third = json.dumps(update_json("COMPLETED", "c")).encode()
        stream = (
            b"\xef\xbb\xbf: hello\r\n\r\n"
            b"id: 1\r\nevent: message\r\nretry: 1000\r\nfoo: bar\r\n"
            b'data: {"jsonrpc":"2.0",\r\ndata: "id":' + rpc_id + b",\r\n"
            b'data:"result":' + first + b"}\r\n\r\n"
            b'id: 2\rdata: {"jsonrpc":"2.0","id":' + rpc_id + b',"result":'
            b"\rdata: " + second + b"}\r\r"
            b":\n"
            b'id: 3\ndata: {"jsonrpc":"2.0","id":' + rpc_id + b',"result":' + third + b"}\n\n"
        )
        await conn.start_sse()
        for i in range(len(stream)):
            await conn.send(stream[i : i + 1])
        await conn.end()

    async with agent(rpc) as (_, client):
        got = [e async for e in client.stream_message("hi")]
    assert [(e.id, text(e.payload)) for e in got] == [("1", "a"), ("2", "b"), ("3", "c")]


def test_a_large_event_arriving_in_small_chunks_is_scanned_once() -> None:
    """`DEFAULT_MAX_EVENT_SIZE` is 64 MiB, and a slow link delivers such an event in
    packet-sized reads: the parser must not search what it already searched (counted:
    the bytes its line-end searches cover stay within a small multiple of the input)."""
    size, chunk = 4 * 1024 * 1024, 1024
    lines = b"data: " + b"x" * size + b"\n" + b"data: y\n" * 1000 + b"\n"
    parser = SSEParser()
    scanned = [0]

    class Counting(bytearray):
        def find(self, sub: Any, start: Any = 0, *rest: Any) -> int:
            found = super().find(sub, start, *rest)
            scanned[0] += (len(self) if found < 0 else found + 1) - int(start)
            return found

    parser._buffer = Counting()
    events = []
    for offset in range(0, len(lines), chunk):
        events += parser.feed(lines[offset : offset + chunk])
    assert len(events) == 1
    assert events[0].data == "x" * size + "\ny" * 1000
    assert scanned[0] <= 3 * len(lines), f"{scanned[0]} bytes searched for {len(lines)}"


# -- building a client --------------------------------------------------------------------


async def test_a_client_that_cannot_be_built_closes_what_it_opened(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`A2AClient`: "Close it (`aclose()` or `async with`); an httpx client passed in is
    left open" - one it made itself is its own to close, and `connect` already closes it
    (its own pool's connection) when the card cannot be used."""

    async def card_only(request: Request, conn: Conn) -> None:
        await conn.respond(200, card_json("/rpc"))

    _card.clear_card_cache()
    try:
        async with RawServer(card_only) as server:
            with pytest.raises(ValueError, match="no API key security scheme"):
                await A2AClient.connect(server.url, api_key="k")
            await server.gone.get()  # (the pool's connection, closed)
        made: list[httpx.AsyncClient] = []
        real = httpx.AsyncClient
        body = card_json("http://agent.test/rpc")

        def mocked(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, content=body)

        class Recorded(real):  # type: ignore[valid-type, misc]
            def __init__(self, **options: Any) -> None:
                super().__init__(transport=httpx.MockTransport(mocked), **options)
                made.append(self)

        monkeypatch.setattr(httpx, "AsyncClient", Recorded)
        resolved = await _card.resolve_card("http://agent.test/")
        with pytest.raises(ValueError, match="no API key security scheme"):
            A2AClient(resolved, api_key="k")
        assert len(made) == 1  # resolve_card's own (__init__ refuses first)
        assert [c.is_closed for c in made] == [True]
    finally:
        _card.clear_card_cache()


# -- the card -----------------------------------------------------------------------------


async def test_card_age_counts_against_max_age_and_a_weak_etag_is_revalidated() -> None:
    _card.clear_card_cache()
    body = card_json("/rpc")
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.headers.get("if-none-match") == 'W/"v1"':
            return httpx.Response(304, headers={"cache-control": "max-age=60"})
        headers = {"etag": 'W/"v1"', "cache-control": "public, max-age=100", "age": "100"}
        return httpx.Response(200, content=body, headers=headers)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        first = await _card.resolve_card("http://agent.test/base/", client=http)
        assert first.url == "http://agent.test/rpc"
        again = await _card.resolve_card("http://agent.test/base", client=http)  # stale
        third = await _card.resolve_card("http://agent.test/base/", client=http)  # fresh
    _card.clear_card_cache()
    assert again.card == third.card == first.card
    assert [r.url.path for r in seen] == ["/base/.well-known/agent-card.json"] * 2
    assert seen[1].headers["if-none-match"] == 'W/"v1"'
    assert seen[0].headers["a2a-version"] == "1.0"


# -- the command line ---------------------------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    _card.clear_card_cache()
    code = cli_main(["a2a", *args])
    out, err = capsys.readouterr()
    return code, out, err


def error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    return lines[0]


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INTERLINK_A2A_BEARER", raising=False)
    monkeypatch.delenv("INTERLINK_A2A_API_KEY", raising=False)


@pytest.mark.parametrize("url", ["http://[::1/", "http://127.0.0.1:99999/"])
def test_cli_bad_url_is_one_line_not_a_traceback(
    capsys: pytest.CaptureFixture[str], url: str
) -> None:
    """EXIT_CODES: "2 usage error (bad options ...)", "6 network error: the agent could
    not be reached"; 1 means "the task failed"."""
    code, _, err = run_cli(capsys, "card", url, "--timeout", "3")
    assert code in (2, 6)
    assert "Traceback" not in err
    error_line(err)


async def _html(request: Request, conn: Conn) -> None:
    await conn.respond(200, b"<html>maintenance</html>", "text/html")


def test_cli_send_blocking_to_an_agent_answering_html(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with raw_server_in_a_thread(rpc_server(_html)) as url:
        code, _, err = run_cli(capsys, "send", url, "hi", "--no-stream")
    assert code == 5
    line = error_line(err)
    assert line.startswith("error: SendMessage: not a JSON-RPC response: ")
    assert line.endswith(" (A2A error -32006)")


def test_cli_send_streaming_to_an_agent_answering_html(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with raw_server_in_a_thread(rpc_server(_html)) as url:
        code, _, err = run_cli(capsys, "send", url, "hi")
    assert code == 5
    assert "maintenance" in error_line(err)


def test_cli_error_event_mid_stream_exits_5_with_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def rpc(request: Request, conn: Conn) -> None:
        rpc_id = request.json()["id"]
        await conn.start_sse()
        await conn.send(event(rpc_id, task_json("WORKING", "a"), "1"))
        error = error_body(rpc_id, -32001, "Task 't1' not found")
        await conn.send(b"event: error\ndata: " + error + b"\n\n")
        await conn.end()

    with raw_server_in_a_thread(rpc_server(rpc)) as url:
        code, out, err = run_cli(capsys, "send", url, "hi", "--json")
    assert code == 5
    assert error_line(err) == "error: Task 't1' not found (A2A error -32001)"
    assert [json.loads(line) for line in out.splitlines()] == [task_json("WORKING", "a")]


def test_cli_agent_whose_endpoint_is_unreachable_exits_6(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/rpc"  # bound, never listening

        async def handler(request: Request, conn: Conn) -> None:
            await conn.respond(200, card_json(dead))

        with raw_server_in_a_thread(handler) as url:
            for args in (["send", url, "hi"], ["tasks", url], ["task", url, "t1"]):
                code, _, err = run_cli(capsys, *args, "--timeout", "3")
                assert code == 6, (args, err)
                assert error_line(err) == f"error: cannot reach {dead}: connection refused"


def test_cli_send_resubscribes_from_the_last_event_after_a_drop(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`_a2a_session`: "A stream that breaks off is resumed with `SubscribeToTask` from
    its last event id"."""
    seen: list[Request] = []

    async def rpc(request: Request, conn: Conn) -> None:
        seen.append(request)
        await dropped_after_working(request, conn)

    with raw_server_in_a_thread(rpc_server(rpc)) as url:
        code, out, err = run_cli(capsys, "send", url, "hi", "--json")
    assert (code, err) == (0, "")
    assert [json.loads(line) for line in out.splitlines()] == [
        task_json("SUBMITTED"),
        update_json("WORKING", "a"),
        update_json("COMPLETED", "b"),
    ]
    assert [r.json()["method"] for r in seen] == ["SendStreamingMessage", "SubscribeToTask"]
    assert seen[-1].headers["last-event-id"] == "2"
