"""The A2A client against interlink's own server on uvicorn (and a proxy that cuts)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import msgspec
import pytest

from interlink.a2a import (
    AgentExecutor,
    ApiKeyAuth,
    Authenticator,
    BearerAuth,
    EventSink,
    ExtendedAgentCardNotConfigured,
    ExtensionSupportRequired,
    RequestContext,
    TaskNotCancelable,
    TaskNotFound,
    TaskUpdater,
    UnsupportedOperation,
    _card,
    create_app,
    with_interface,
)
from interlink.a2a import types as t
from interlink.a2a.client._client import (
    A2AClient,
    A2AInvalidParams,
    A2ATransportError,
    AuthenticationRequired,
    Reconnect,
    StreamEvent,
)
from interlink.a2a.server._http import A2AApp
from tests.a2a.agents import Scripted, card
from tests.a2a.conftest import Served

pytestmark = pytest.mark.timeout(30)
Serve = Callable[[A2AApp], Awaitable[Served]]
FAST = Reconnect(attempts=3, initial=0.01, maximum=0.05)


class Stepper(AgentExecutor):
    """Works until told: each item of `steps` is one WORKING status (its text), `done`
    completes the task."""

    def __init__(self) -> None:
        self.steps: asyncio.Queue[str] = asyncio.Queue()
        self.started = asyncio.Event()
        self.ended = asyncio.Event()

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        await task.working("0")
        self.started.set()
        while (step := await self.steps.get()) != "done":
            await task.working(step)
        await task.complete("done")
        self.ended.set()


async def start(serve: Serve, app: A2AApp) -> Served:
    served = await serve(app)
    app.use_card(with_interface(app.server.card, served.url))
    return served


@pytest.fixture(params=["jsonrpc", "rest"])
async def scripted(
    serve: Serve, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[Served, A2AClient, Scripted]]:
    """Our server, its card listing both its bindings; the client on the one asked for."""
    executor = Scripted()
    app = create_app(executor, card(), push_allow=["127.0.0.1"])
    served = await serve(app)
    app.use_card(with_interface(app.server.card, served.url, app.interfaces))
    _card.clear_card_cache()
    async with await A2AClient.connect(served.url, reconnect=FAST, binding=request.param) as client:
        assert client.binding == {"jsonrpc": "JSONRPC", "rest": "HTTP+JSON"}[request.param]
        yield served, client, executor


def text(payload: object) -> str:
    if isinstance(payload, t.Task | t.TaskStatusUpdateEvent):
        message = payload.status.message
        return "".join(str(p.text) for p in message.parts) if message else ""
    return ""


# -- the methods ------------------------------------------------------------------------


async def test_send_get_list_cancel(scripted: tuple[Served, A2AClient, Scripted]) -> None:
    _, client, executor = scripted
    task = await client.send_message("echo hi")
    assert isinstance(task, t.Task)
    assert task.status.state == t.TaskState.TASK_STATE_COMPLETED
    assert task.artifacts[0].parts[0].text == "hi"
    reply = await client.send_message("message")
    assert isinstance(reply, t.Message)
    assert reply.parts[0].text == "direct"

    slow = await client.send_message("slow", return_immediately=True)
    assert isinstance(slow, t.Task)
    assert (await client.get_task(slow.id, history_length=0)).history == []
    page = await client.list_tasks(page_size=1)
    assert len(page.tasks) == 1
    assert page.next_page_token
    ids = [task.id async for task in client.iter_tasks(page_size=1)]
    assert sorted(ids) == sorted([task.id, slow.id])
    await executor.started.wait()
    canceled = await client.cancel_task(slow.id)
    assert canceled.status.state == t.TaskState.TASK_STATE_CANCELED
    with pytest.raises(TaskNotCancelable):
        await client.cancel_task(task.id)

    asked = await client.send_message("ask")
    assert isinstance(asked, t.Task)
    assert asked.status.state == t.TaskState.TASK_STATE_INPUT_REQUIRED
    done = await client.send_message("more", task_id=asked.id)
    assert isinstance(done, t.Task)
    assert done.context_id == asked.context_id
    assert done.artifacts[-1].parts[0].text == "got more"


async def test_stream_order(scripted: tuple[Served, A2AClient, Scripted]) -> None:
    _, client, _ = scripted
    events = [e async for e in client.stream_message("chunks 3")]
    kinds = [type(e.payload).__name__ for e in events]
    assert kinds == ["Task", "TaskStatusUpdateEvent", *["TaskArtifactUpdateEvent"] * 3, kinds[-1]]
    assert isinstance(events[-1].payload, t.TaskStatusUpdateEvent)
    assert events[-1].payload.status.state == t.TaskState.TASK_STATE_COMPLETED
    ids = [int(e.id or 0) for e in events]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


async def test_push_configs(scripted: tuple[Served, A2AClient, Scripted]) -> None:
    _, client, _ = scripted
    task = await client.send_message("ask")
    assert isinstance(task, t.Task)
    hook = "http://127.0.0.1:9/hook"
    config = await client.create_push_config(task.id, hook, token="tok")
    assert config.id
    assert config.url == hook
    assert (await client.get_push_config(task.id, config.id)).token == "tok"
    listed = await client.list_push_configs(task.id)
    assert [c.id for c in listed.configs] == [config.id]
    await client.delete_push_config(task.id, config.id)
    await client.delete_push_config(task.id, config.id)  # idempotent
    assert (await client.list_push_configs(task.id)).configs == []


async def test_errors_are_typed(scripted: tuple[Served, A2AClient, Scripted]) -> None:
    _, client, _ = scripted
    with pytest.raises(TaskNotFound) as missing:
        await client.get_task("nope")
    assert missing.value.from_peer
    with pytest.raises(A2AInvalidParams) as invalid:
        await client.get_task("nope", history_length=-1)
    assert [v.field for v in invalid.value.violations] == ["historyLength"]
    done = await client.send_message("echo x")
    assert isinstance(done, t.Task)
    with pytest.raises(UnsupportedOperation):
        await client.send_message("again", task_id=done.id)
    with pytest.raises(UnsupportedOperation):  # before the stream: a plain JSON answer
        async for _ in client.subscribe(done.id):
            pass
    with pytest.raises(TaskNotFound):
        async for _ in client.stream_message("x", task_id="nope"):
            pass
    with pytest.raises(UnsupportedOperation):
        await client.get_extended_card()


async def test_extended_card(serve: Serve) -> None:
    extended = t.AgentCard(name="extended", capabilities=t.AgentCapabilities())
    base = card(extended_agent_card=True)
    served = await start(serve, create_app(Scripted(), base, extended_card=extended))
    async with await A2AClient.connect(served.url) as client:
        assert (await client.get_extended_card()).name == "extended"
    served = await start(serve, create_app(Scripted(), base))
    async with await A2AClient.connect(served.url) as client:
        with pytest.raises(ExtendedAgentCardNotConfigured):
            await client.get_extended_card()


async def test_transport_error() -> None:
    dead = t.AgentCard(name="x", capabilities=t.AgentCapabilities())
    async with A2AClient(with_interface(dead, "http://127.0.0.1:9/"), connect_timeout=2) as client:
        with pytest.raises(A2ATransportError, match="GetTask failed"):
            await client.get_task("x")


# -- headers: auth, extensions, version -------------------------------------------------


def recorder() -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        seen.append(request)

    return httpx.AsyncClient(event_hooks={"request": [record]}), seen


async def test_auth(serve: Serve) -> None:
    auth: list[Authenticator] = [
        BearerAuth({"secret-token": "alice"}),
        ApiKeyAuth({"secret-key": "bob"}, parameter="key", location="query"),
    ]
    served = await start(serve, create_app(Scripted(), card(), auth=auth))
    http, seen = recorder()
    async with http:
        anonymous = await A2AClient.connect(served.url, client=http)
        with pytest.raises(AuthenticationRequired) as denied:
            await anonymous.get_task("x")
        assert 'Bearer realm="a2a"' in denied.value.challenge
        assert denied.value.status == 401
        bearer = await A2AClient.connect(served.url, client=http, bearer="secret-token")
        with pytest.raises(TaskNotFound):
            await bearer.get_task("x")
        assert seen[-1].headers["authorization"] == "Bearer secret-token"
        keyed = await A2AClient.connect(served.url, client=http, api_key="secret-key")
        with pytest.raises(TaskNotFound):
            await keyed.get_task("x")
        assert seen[-1].url.params["key"] == "secret-key"
        assert "authorization" not in seen[-1].headers
        assert all(r.headers["a2a-version"] == "1.0" for r in seen)


async def test_api_key_header_and_extensions(serve: Serve) -> None:
    required = t.AgentExtension(uri="urn:test:ext", required=True)
    base = card(extensions=[required])
    auth: list[Authenticator] = [ApiKeyAuth({"k": "bob"})]
    served = await start(serve, create_app(Scripted(), base, auth=auth))
    http, seen = recorder()
    async with http:
        plain = await A2AClient.connect(served.url, client=http, api_key="k")
        with pytest.raises(ExtensionSupportRequired):
            await plain.send_message("echo x")
        assert seen[-1].headers["x-api-key"] == "k"
        client = await A2AClient.connect(
            served.url, client=http, api_key="k", extensions=["urn:test:ext", "urn:other"]
        )
        assert isinstance(await client.send_message("echo x"), t.Task)
        assert seen[-1].headers["a2a-extensions"] == "urn:test:ext, urn:other"
        assert client.activated_extensions == {"urn:test:ext"}


# -- the card ---------------------------------------------------------------------------


async def test_card_cache_revalidates_with_etag(serve: Serve) -> None:
    served = await start(serve, create_app(Scripted(), card()))
    _card.clear_card_cache()
    http, seen = recorder()
    responses: list[int] = []

    async def status(response: httpx.Response) -> None:
        responses.append(response.status_code)

    http.event_hooks["response"] = [status]
    async with http:
        first = await _card.resolve_card(served.url, client=http)
        assert first.url == served.url
        assert first.interface.protocol_binding == "JSONRPC"
        await _card.resolve_card(served.url + ".well-known/agent-card.json", client=http)
        assert len(seen) == 1  # fresh for max-age
        _card._CACHE[(first.card_url, False)].expires = 0.0
        again = await _card.resolve_card(served.url, client=http)
        assert again.card == first.card
        assert responses == [200, 304]
        assert seen[-1].headers["if-none-match"].startswith('"')


def _card_server(body: bytes, headers: dict[str, str] | None = None) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers=headers or {})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def test_card_choice_and_errors() -> None:
    _card.clear_card_cache()
    interfaces = [
        {"url": "http://a/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
        {"url": "http://a/old", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        {"url": "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0.3", "tenant": "t1"},
        {"url": "http://a/second", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
    ]
    good = msgspec.json.encode({"name": "a", "capabilities": {}, "supportedInterfaces": interfaces})
    async with _card_server(good, {"cache-control": "no-store"}) as http:
        resolved = await _card.resolve_card("http://a/", client=http)
    assert (resolved.url, resolved.tenant) == ("http://a/rpc", "t1")
    assert not _card._CACHE
    none = msgspec.json.encode(
        {"name": "a", "capabilities": {}, "supportedInterfaces": interfaces[:2]}
    )
    async with _card_server(none) as http:
        with pytest.raises(
            _card.NoCompatibleInterface, match=re.escape("GRPC 1.0 at http://a/grpc")
        ):
            await _card.resolve_card("http://b/", client=http)
    async with _card_server(b'{"name": 5}') as http:
        with pytest.raises(_card.CardError, match="name"):
            await _card.resolve_card("http://c/", client=http)


# -- subscribe: resuming ----------------------------------------------------------------


class CuttingProxy:
    """A TCP proxy on 127.0.0.1 that cuts the connection of the i-th event stream right
    after `cuts[i]` events (keep-alive comments do not count)."""

    def __init__(self, upstream: int, cuts: list[int]) -> None:
        self.upstream = upstream
        self.cuts = list(cuts)
        self.requests: list[bytearray] = []
        self.streams = 0
        self.server: asyncio.Server | None = None
        self.handlers: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/"

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()
        for handler in list(self.handlers):
            handler.cancel()
            with contextlib.suppress(BaseException):
                await handler
        await self.server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        me = asyncio.current_task()
        assert me is not None
        self.handlers.add(me)
        me.add_done_callback(self.handlers.discard)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        log = bytearray()
        self.requests.append(log)

        async def upstream() -> None:
            while data := await reader.read(65536):
                log.extend(data)
                up_writer.write(data)
                await up_writer.drain()

        pump = asyncio.create_task(upstream())
        budget: int | None = None
        seen = bytearray()
        try:
            while data := await up_reader.read(65536):
                if budget is None and b"text/event-stream" in data:
                    self.streams += 1
                    budget = self.cuts.pop(0) if self.cuts else -1
                    seen.clear()
                if budget is not None and budget > 0:
                    start = len(seen)
                    seen.extend(data)
                    end = _end_of_event(seen, budget)
                    if end is not None:
                        writer.write(data[: end - start])
                        await writer.drain()
                        return  # the cut
                writer.write(data)
                await writer.drain()
        finally:
            pump.cancel()
            with contextlib.suppress(BaseException):
                await pump
            for w in (writer, up_writer):
                w.close()
                with contextlib.suppress(OSError):
                    await w.wait_closed()


def _end_of_event(stream: bytes | bytearray, n: int) -> int | None:
    """The offset just after the n-th event holding `data:`, if the stream has it."""
    count, pos = 0, 0
    while (end := stream.find(b"\n\n", pos)) >= 0:
        if b"data:" in stream[pos:end]:
            count += 1
            if count == n:
                return end + 2
        pos = end + 2
    return None


@pytest.mark.parametrize("resync", [False, True])
async def test_subscribe_resumes_after_a_cut(serve: Serve, resync: bool) -> None:
    executor = Stepper()
    served = await start(serve, create_app(executor, card()))
    port = int(served.url.rsplit(":", 1)[1].strip("/"))
    proxy = CuttingProxy(port, cuts=[3])
    proxy_url = await proxy.start()
    _card.clear_card_cache()
    direct = await A2AClient.connect(served.url)
    resolved = dataclasses.replace(direct.resolved, url=proxy_url)
    cut = A2AClient(resolved, reconnect=FAST)
    try:
        task = await direct.send_message("go", return_immediately=True)
        assert isinstance(task, t.Task)
        await executor.started.wait()
        got: list[StreamEvent] = []
        arrived = {1: asyncio.Event(), 4: asyncio.Event()}

        async def consume() -> None:
            async for event in cut.subscribe(task.id, resync=resync):
                got.append(event)
                live = len([e for e in got if not e.resync])
                if live in arrived:
                    arrived[live].set()

        consumer = asyncio.create_task(consume())
        await arrived[1].wait()  # the snapshot: the subscription is live
        for step in ("1", "2", "3"):
            executor.steps.put_nowait(step)
        await arrived[4].wait()  # "3" arrived over the second connection
        executor.steps.put_nowait("4")
        executor.steps.put_nowait("done")
        await consumer
    finally:
        await cut.aclose()
        await direct.aclose()
        await proxy.close()
    assert proxy.streams == 2
    assert b"last-event-id: " in proxy.requests[-1].lower()
    live = [e for e in got if not e.resync]
    assert [text(e.payload) for e in live] == ["0", "1", "2", "3", "4", "done"]
    assert isinstance(live[0].payload, t.Task)
    ids = [int(e.id or 0) for e in live]
    assert ids == sorted(set(ids))
    resyncs = [e for e in got if e.resync]
    assert len(resyncs) == (1 if resync else 0)
    if resync:
        assert isinstance(resyncs[0].payload, t.Task)
        assert got.index(resyncs[0]) == 3  # where the second connection began


async def test_subscribe_with_last_event_id(serve: Serve) -> None:
    executor = Stepper()
    served = await start(serve, create_app(executor, card()))
    async with await A2AClient.connect(served.url) as client:
        task = await client.send_message("go", return_immediately=True)
        assert isinstance(task, t.Task)
        await executor.started.wait()
        first = await _first_two(client, executor, task.id)
        executor.steps.put_nowait("2")
        rest: list[StreamEvent] = []
        async for event in client.subscribe(task.id, last_event_id=first[-1].id):
            rest.append(event)
            if text(event.payload) == "2":
                executor.steps.put_nowait("done")
    assert [text(e.payload) for e in first + rest] == ["0", "1", "2", "done"]
    assert not any(e.resync for e in rest)


async def test_resume_after_the_task_ended_replays_what_was_missed(serve: Serve) -> None:
    executor = Stepper()
    served = await start(serve, create_app(executor, card()))
    async with await A2AClient.connect(served.url) as client:
        task = await client.send_message("go", return_immediately=True)
        assert isinstance(task, t.Task)
        await executor.started.wait()
        first = await _first_two(client, executor, task.id)
        executor.steps.put_nowait("2")
        executor.steps.put_nowait("done")
        await executor.ended.wait()
        rest = [e async for e in client.subscribe(task.id, last_event_id=first[-1].id)]
    # the server replays the events after the last id the client saw, then ends
    assert [text(e.payload) for e in rest] == ["2", "done"]
    assert [e.id for e in rest] == [
        str(int(str(first[-1].id)) + 1),
        str(int(str(first[-1].id)) + 2),
    ]
    final = rest[-1].payload
    assert isinstance(final, t.TaskStatusUpdateEvent)
    assert final.status.state == t.TaskState.TASK_STATE_COMPLETED


async def _first_two(client: A2AClient, executor: Stepper, task_id: str) -> list[StreamEvent]:
    """The snapshot and "1", then the subscription is dropped."""
    first: list[StreamEvent] = []
    async with contextlib.aclosing(client.subscribe(task_id)) as stream:
        async for event in stream:
            first.append(event)
            if len(first) == 1:
                executor.steps.put_nowait("1")
            else:
                break
    assert [text(e.payload) for e in first] == ["0", "1"]
    return first


async def test_subscribe_gives_up_after_the_attempts(serve: Serve) -> None:
    executor = Stepper()
    served = await start(serve, create_app(executor, card()))
    port = int(served.url.rsplit(":", 1)[1].strip("/"))
    proxy = CuttingProxy(port, cuts=[1, 1, 1, 1])
    proxy_url = await proxy.start()
    async with await A2AClient.connect(served.url) as direct:
        client = A2AClient(dataclasses.replace(direct.resolved, url=proxy_url), reconnect=FAST)
        try:
            task = await direct.send_message("go", return_immediately=True)
            assert isinstance(task, t.Task)
            with pytest.raises(A2ATransportError, match="3 reconnects failed"):
                async for _ in client.subscribe(task.id):
                    pass
        finally:
            executor.steps.put_nowait("done")
            await client.aclose()
            await proxy.close()
    assert proxy.streams == 4
