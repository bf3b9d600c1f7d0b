"""The gRPC binding of the server over a real socket on loopback, driven by a bare grpc
channel: rpcs, streams, the status of each error with its `google.rpc.Status` details,
service parameters as metadata, authentication, bad input (the server keeps serving),
and a clean stop with open streams."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import msgspec
import pytest

from interlink.a2a import A2AApp, ApiKeyAuth, TenantRouter, create_app
from interlink.a2a import types as t
from interlink.a2a._codec import decode
from interlink.a2a._methods import METHODS
from tests.a2a.agents import Scripted, card, message
from tests.a2a.conftest import Served
from tests.spec import unavailable

try:
    import grpc

    from interlink.a2a._grpc import _convert, _status
    from interlink.a2a.server.bindings._grpc import GrpcServer, create_grpc_server
except ImportError:  # pragma: no cover - the dev extra has them
    unavailable("grpcio and protobuf are not installed (pip install -e '.[dev]')")

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(30)]

VERSION = (("a2a-version", "1.0"),)
COMPLETED = t.TaskState.TASK_STATE_COMPLETED


@dataclass
class Raw:
    """A bare grpc channel to the server: requests and answers as interlink types."""

    channel: grpc.aio.Channel
    server: GrpcServer
    agent: Scripted

    async def unary(
        self,
        name: str,
        params: msgspec.Struct | bytes,
        metadata: tuple[tuple[str, str], ...] = VERSION,
    ) -> msgspec.Struct:
        method = METHODS[name]
        call = unary(self.channel, name)
        data = params if isinstance(params, bytes) else _convert.encode(params)
        answer = await call(data, metadata=metadata, timeout=10)
        assert isinstance(answer, bytes)
        return _convert.decode(method.result, answer)

    async def stream(
        self, name: str, params: msgspec.Struct, metadata: tuple[tuple[str, str], ...] = VERSION
    ) -> list[t.StreamResponse]:
        call = streaming(self.channel, name)
        events = []
        async for data in call(_convert.encode(params), metadata=metadata, timeout=10):
            assert isinstance(data, bytes)
            events.append(_convert.decode(t.StreamResponse, data))
        return events


def unary(channel: grpc.aio.Channel, name: str) -> grpc.aio.UnaryUnaryMultiCallable[bytes, bytes]:
    return channel.unary_unary(f"/lf.a2a.v1.A2AService/{name}")


def streaming(
    channel: grpc.aio.Channel, name: str
) -> grpc.aio.UnaryStreamMultiCallable[bytes, bytes]:
    return channel.unary_stream(f"/lf.a2a.v1.A2AService/{name}")


def send(text: str, **ids: str) -> t.SendMessageRequest:
    return decode(t.SendMessageRequest, msgspec.json.encode(message(text, **ids)))


def details(error: grpc.aio.AioRpcError) -> tuple[str, list[object]]:
    """The status's message and details (as ProtoJSON), from grpc-status-details-bin."""
    for key, value in error.trailing_metadata() or ():
        if key == _status.KEY:
            assert isinstance(value, bytes)
            decoded = _status.decode(value)
            assert decoded is not None
            code, text, found = decoded
            assert code == error.code().value[0]
            return text, found
    raise AssertionError(f"no {_status.KEY} in {error.trailing_metadata()}")


def reason(error: grpc.aio.AioRpcError) -> str:
    info = details(error)[1][0]
    assert isinstance(info, dict)
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert info["domain"] == "a2a-protocol.org"
    return str(info["reason"])


@pytest.fixture
async def raw() -> AsyncIterator[Raw]:
    agent = Scripted()
    server = create_grpc_server(agent, card())
    port = await server.start("127.0.0.1:0")
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Raw(channel, server, agent)
    finally:
        agent.release.set()
        await channel.close()
        await server.stop(grace=1)


async def test_send_get_and_list(raw: Raw) -> None:
    answer = await raw.unary("SendMessage", send("echo hi"))
    assert isinstance(answer, t.SendMessageResponse)
    task = answer.task
    assert isinstance(task, t.Task)
    assert task.status.state == COMPLETED
    assert task.artifacts[0].parts[0].text == "hi"
    got = await raw.unary("GetTask", t.GetTaskRequest(id=task.id, history_length=0))
    assert isinstance(got, t.Task)
    assert (got.id, got.history) == (task.id, [])
    listed = await raw.unary("ListTasks", t.ListTasksRequest())
    assert isinstance(listed, t.ListTasksResponse)
    assert [x.id for x in listed.tasks] == [task.id]
    reply = await raw.unary("SendMessage", send("message"))
    assert isinstance(reply, t.SendMessageResponse)
    assert isinstance(reply.message, t.Message)


async def test_stream_starts_with_the_task_and_ends_with_it(raw: Raw) -> None:
    events = await raw.stream("SendStreamingMessage", send("chunks 3"))
    assert events[0].which_payload == "task"
    assert [e.which_payload for e in events[1:]].count("artifact_update") == 3
    last = events[-1].status_update
    assert isinstance(last, t.TaskStatusUpdateEvent)
    assert last.status.state == COMPLETED


async def test_ask_and_follow_up_then_subscribe_to_a_slow_task_and_cancel_it(raw: Raw) -> None:
    asked = await raw.unary("SendMessage", send("ask"))
    assert isinstance(asked, t.SendMessageResponse)
    assert isinstance(asked.task, t.Task)
    follow = send("more", taskId=asked.task.id)
    events = await raw.stream("SendStreamingMessage", follow)
    assert events[0].which_payload == "task"
    assert isinstance(events[-1].status_update, t.TaskStatusUpdateEvent)
    assert events[-1].status_update.status.state == COMPLETED

    slow = send("slow")
    slow = msgspec.structs.replace(
        slow, configuration=t.SendMessageConfiguration(return_immediately=True)
    )
    started = await raw.unary("SendMessage", slow)
    assert isinstance(started, t.SendMessageResponse)
    assert isinstance(started.task, t.Task)
    task_id = started.task.id
    await raw.agent.started.wait()
    call = streaming(raw.channel, "SubscribeToTask")
    subscription = call(_convert.encode(t.SubscribeToTaskRequest(id=task_id)), metadata=VERSION)
    stream = aiter(subscription)
    first = _convert.decode(t.StreamResponse, await anext(stream))
    assert isinstance(first.task, t.Task)
    assert first.task.id == task_id
    canceled = await raw.unary("CancelTask", t.CancelTaskRequest(id=task_id))
    assert isinstance(canceled, t.Task)
    assert canceled.status.state == t.TaskState.TASK_STATE_CANCELED
    rest = [_convert.decode(t.StreamResponse, e) async for e in stream]
    last = rest[-1].status_update
    assert isinstance(last, t.TaskStatusUpdateEvent)
    assert last.status.state == t.TaskState.TASK_STATE_CANCELED
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await raw.stream("SubscribeToTask", t.SubscribeToTaskRequest(id=task_id))
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert reason(caught.value) == "UNSUPPORTED_OPERATION"


async def test_errors_carry_their_status_and_error_info(raw: Raw) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await raw.unary("GetTask", t.GetTaskRequest(id="nope"))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert reason(caught.value) == "TASK_NOT_FOUND"
    assert details(caught.value)[1][0]["metadata"] == {"taskId": "nope"}  # type: ignore[index]
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await raw.unary("GetTask", t.GetTaskRequest(id="nope", tenant="other"))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND  # (an unknown tenant)


async def test_invalid_params_carry_a_bad_request(raw: Raw) -> None:
    empty = t.SendMessageRequest(message=t.Message(message_id="m", role=t.Role.ROLE_USER))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await raw.unary("SendMessage", empty)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert reason(caught.value) == "INVALID_PARAMS"
    bad = details(caught.value)[1][1]
    assert isinstance(bad, dict)
    assert bad["@type"] == "type.googleapis.com/google.rpc.BadRequest"
    assert bad["fieldViolations"][0]["field"] == "message.parts"


async def test_bad_input_gets_its_status_and_the_server_keeps_serving(raw: Raw) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await raw.unary("SendMessage", b"\xff\xfe garbage \x00")
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert reason(caught.value) == "INVALID_PARAMS"
    unknown = unary(raw.channel, "NoSuchMethod")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await unknown(b"", metadata=VERSION, timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert reason(caught.value) == "METHOD_NOT_FOUND"
    other: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = raw.channel.unary_unary("/x.Y/Z")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await other(b"", timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    answer = await raw.unary("SendMessage", send("echo still here"))
    assert isinstance(answer, t.SendMessageResponse)
    assert isinstance(answer.task, t.Task)
    assert answer.task.status.state == COMPLETED


async def test_version_is_required_from_metadata(raw: Raw) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await raw.unary("SendMessage", send("echo x"), metadata=())
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert reason(caught.value) == "VERSION_NOT_SUPPORTED"
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await raw.stream("SendStreamingMessage", send("echo x"), metadata=(("a2a-version", "2.0"),))
    assert reason(caught.value) == "VERSION_NOT_SUPPORTED"
    ok = await raw.unary("SendMessage", send("echo x"), metadata=(("a2a-version", "1.0.3"),))
    assert isinstance(ok, t.SendMessageResponse)


async def test_required_extensions_and_their_echo() -> None:
    extension = t.AgentExtension(uri="urn:x", required=True)
    agent_card = msgspec.structs.replace(
        card(), capabilities=t.AgentCapabilities(streaming=True, extensions=[extension])
    )
    async with (
        create_grpc_server(Scripted(), agent_card) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        call = unary(channel, "SendMessage")
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call(_convert.encode(send("echo x")), metadata=VERSION, timeout=10)
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert reason(caught.value) == "EXTENSION_SUPPORT_REQUIRED"
        metadata = (*VERSION, ("a2a-extensions", "urn:x, urn:unknown"))
        pending = call(_convert.encode(send("echo x")), metadata=metadata, timeout=10)
        await pending
        assert ("a2a-extensions", "urn:x") in tuple(await pending.initial_metadata())


async def test_authentication_from_metadata() -> None:
    auth = [ApiKeyAuth({"k1": "alice", "k2": "bob"})]
    async with (
        create_grpc_server(Scripted(), card(), auth=auth) as server,
        grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel,
    ):
        send_call = unary(channel, "SendMessage")
        get_call = unary(channel, "GetTask")
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await send_call(_convert.encode(send("echo x")), metadata=VERSION, timeout=10)
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        challenge = dict(caught.value.trailing_metadata() or ())["www-authenticate"]
        assert challenge == 'ApiKey header="X-API-Key"'
        alice = (*VERSION, ("x-api-key", "k1"))
        data = await send_call(_convert.encode(send("echo x")), metadata=alice, timeout=10)
        task = _convert.decode(t.SendMessageResponse, data).task
        assert isinstance(task, t.Task)
        request = _convert.encode(t.GetTaskRequest(id=task.id))
        await get_call(request, metadata=alice, timeout=10)
        with pytest.raises(grpc.aio.AioRpcError) as caught:  # (bob's view: not found)
            await get_call(request, metadata=(*VERSION, ("x-api-key", "k2")), timeout=10)
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND


async def test_stop_ends_open_streams_at_once(raw: Raw) -> None:
    call = streaming(raw.channel, "SendStreamingMessage")
    stream = aiter(call(_convert.encode(send("slow")), metadata=VERSION))
    first = _convert.decode(t.StreamResponse, await anext(stream))
    assert first.which_payload == "task"
    await raw.agent.started.wait()
    async with asyncio.timeout(10):  # (not the grace period, 30 s: the stream ends first)
        stopping = asyncio.create_task(raw.server.stop(grace=30))
        rest = [e async for e in stream]
        await stopping
    assert all(isinstance(e, bytes) for e in rest)


async def test_tenants_of_a_router_are_apart(
    serve: Callable[[A2AApp], Awaitable[Served]],
) -> None:
    router = TenantRouter(
        {"a": create_app(Scripted(), card()), "b": create_app(Scripted(), card())}
    )
    await serve(router)  # type: ignore[arg-type]  # (its lifespan starts the apps)
    side = GrpcServer.for_router(router)
    port = await side.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        raw = Raw(channel, side, Scripted())
        sent = await raw.unary("SendMessage", msgspec.structs.replace(send("echo a"), tenant="a"))
        assert isinstance(sent, t.SendMessageResponse)
        assert isinstance(sent.task, t.Task)
        got = await raw.unary("GetTask", t.GetTaskRequest(id=sent.task.id, tenant="a"))
        assert isinstance(got, t.Task)
        for tenant in ("b", "c", ""):  # another tenant's, an unknown one, none
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await raw.unary("GetTask", t.GetTaskRequest(id=sent.task.id, tenant=tenant))
            assert caught.value.code() == grpc.StatusCode.NOT_FOUND
            assert reason(caught.value) == "TASK_NOT_FOUND"
    finally:
        await channel.close()
        await side.stop(grace=1)
