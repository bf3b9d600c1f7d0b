"""The gRPC transport of the client against interlink's gRPC server on loopback: every
call and stream typed, each error the same class as over JSON-RPC."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import msgspec
import pytest

from interlink.a2a import (
    A2AApp,
    A2AClient,
    A2AInvalidParams,
    A2ATransportError,
    ApiKeyAuth,
    AuthenticationRequired,
    TaskNotFound,
    UnsupportedOperation,
    VersionNotSupported,
    create_app,
    with_interface,
)
from interlink.a2a import types as t
from interlink.a2a._methods import (
    CANCEL_TASK,
    GET_TASK,
    SEND_MESSAGE,
    SEND_STREAMING_MESSAGE,
    SUBSCRIBE_TO_TASK,
)
from interlink.a2a.client._transport import TransportConfig
from tests.a2a.agents import Scripted, card, message
from tests.a2a.conftest import Served
from tests.spec import unavailable

try:
    from interlink.a2a.client._grpc import GrpcTransport, target_of
    from interlink.a2a.server.bindings._grpc import GrpcServer, create_grpc_server
except ImportError:  # pragma: no cover - the dev extra has them
    unavailable("grpcio and protobuf are not installed (pip install -e '.[dev]')")

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(30)]
COMPLETED = t.TaskState.TASK_STATE_COMPLETED


def send(text: str, task_id: str = "", immediately: bool = False) -> t.SendMessageRequest:
    message = t.Message(
        message_id=f"m-{text}-{task_id}",
        role=t.Role.ROLE_USER,
        parts=[t.Part(text=text)],
        task_id=task_id,
    )
    configuration = t.SendMessageConfiguration(return_immediately=True) if immediately else None
    return t.SendMessageRequest(message=message, configuration=configuration)


@pytest.fixture
async def served() -> AsyncIterator[tuple[GrpcServer, Scripted]]:
    agent = Scripted()
    async with create_grpc_server(agent, card()) as server:
        try:
            yield server, agent
        finally:
            agent.release.set()


@pytest.fixture
async def transport(served: tuple[GrpcServer, Scripted]) -> AsyncIterator[GrpcTransport]:
    wire = GrpcTransport(TransportConfig(url=f"127.0.0.1:{served[0].port}", timeout=10))
    try:
        yield wire
    finally:
        await wire.aclose()


async def test_calls_and_streams(
    transport: GrpcTransport, served: tuple[GrpcServer, Scripted]
) -> None:
    answer = await transport.call(SEND_MESSAGE, send("echo hi"))
    assert isinstance(answer.task, t.Task)
    assert answer.task.status.state == COMPLETED
    got = await transport.call(GET_TASK, t.GetTaskRequest(id=answer.task.id))
    assert got.artifacts[0].parts[0].text == "hi"
    events = [e async for e in transport.stream(SEND_STREAMING_MESSAGE, send("chunks 2"))]
    assert isinstance(events[0].payload, t.Task)
    assert all(e.id is None for e in events)
    last = events[-1].payload
    assert isinstance(last, t.TaskStatusUpdateEvent)
    assert last.status.state == COMPLETED

    started = await transport.call(SEND_MESSAGE, send("slow", immediately=True))
    assert isinstance(started.task, t.Task)
    await served[1].started.wait()
    subscription = transport.stream(SUBSCRIBE_TO_TASK, t.SubscribeToTaskRequest(id=started.task.id))
    first = await anext(subscription)
    assert isinstance(first.payload, t.Task)
    canceled = await transport.call(CANCEL_TASK, t.CancelTaskRequest(id=started.task.id))
    assert canceled.status.state == t.TaskState.TASK_STATE_CANCELED
    rest = [e.payload async for e in subscription]
    assert isinstance(rest[-1], t.TaskStatusUpdateEvent)
    assert rest[-1].status.state == t.TaskState.TASK_STATE_CANCELED


async def test_errors_are_the_json_rpc_classes(transport: GrpcTransport) -> None:
    with pytest.raises(TaskNotFound) as not_found:
        await transport.call(GET_TASK, t.GetTaskRequest(id="nope"))
    assert not_found.value.data[0]["metadata"] == {"taskId": "nope"}  # type: ignore[index]
    empty = t.SendMessageRequest(message=t.Message(message_id="m", role=t.Role.ROLE_USER))
    with pytest.raises(A2AInvalidParams) as invalid:
        await transport.call(SEND_MESSAGE, empty)
    assert [v.field for v in invalid.value.violations] == ["message.parts"]
    done = await transport.call(SEND_MESSAGE, send("echo x"))
    assert isinstance(done.task, t.Task)
    stream = transport.stream(SUBSCRIBE_TO_TASK, t.SubscribeToTaskRequest(id=done.task.id))
    with pytest.raises(UnsupportedOperation):
        await anext(stream)


async def test_version_and_transport_errors(served: tuple[GrpcServer, Scripted]) -> None:
    old = GrpcTransport(TransportConfig(url=f"127.0.0.1:{served[0].port}", timeout=10))
    old._metadata = (("a2a-version", "0.3"),)
    try:
        with pytest.raises(VersionNotSupported):
            await old.call(GET_TASK, t.GetTaskRequest(id="x"))
    finally:
        await old.aclose()
    with pytest.raises(ValueError, match="not spoken"):
        GrpcTransport(TransportConfig(url="127.0.0.1:1", version="0.3"))
    nobody = GrpcTransport(TransportConfig(url="127.0.0.1:1", timeout=5))
    try:
        with pytest.raises(A2ATransportError):
            await nobody.call(GET_TASK, t.GetTaskRequest(id="x"))
    finally:
        await nobody.aclose()


async def test_credentials_and_extensions_go_as_metadata() -> None:
    extension = t.AgentExtension(uri="urn:x")
    agent_card = msgspec.structs.replace(
        card(), capabilities=t.AgentCapabilities(streaming=True, extensions=[extension])
    )
    auth = [ApiKeyAuth({"k1": "alice"})]
    async with create_grpc_server(Scripted(), agent_card, auth=auth) as server:
        url = f"127.0.0.1:{server.port}"
        anonymous = GrpcTransport(TransportConfig(url=url, timeout=10))
        keyed = GrpcTransport(
            TransportConfig(url=url, timeout=10, headers={"X-API-Key": "k1"}, extensions=("urn:x",))
        )
        try:
            with pytest.raises(AuthenticationRequired) as refused:
                await anonymous.call(GET_TASK, t.GetTaskRequest(id="x"))
            assert refused.value.challenge == 'ApiKey header="X-API-Key"'
            answer = await keyed.call(SEND_MESSAGE, send("echo x"))
            assert isinstance(answer.task, t.Task)
            assert keyed.activated_extensions == {"urn:x"}
        finally:
            await anonymous.aclose()
            await keyed.aclose()


def test_targets() -> None:
    assert target_of("127.0.0.1:50051") == ("127.0.0.1:50051", False)
    assert target_of("grpc://agent:50051/a2a") == ("agent:50051", False)
    assert target_of("https://agent.example.com/a2a/grpc") == ("agent.example.com:443", True)
    assert target_of("grpcs://agent:8443") == ("agent:8443", True)


async def test_grpc_beside_http_shares_one_server(
    serve: Callable[[A2AApp], Awaitable[Served]],
) -> None:
    """`GrpcServer.for_app`: a task sent over JSON-RPC is read, streamed and cancelled
    over gRPC (one store, one runtime), and `A2AClient` picks gRPC when asked."""
    agent = Scripted()
    app = create_app(agent, card())
    served = await serve(app)
    side = GrpcServer.for_app(app)
    port = await side.start()
    grpc_card = msgspec.structs.replace(
        with_interface(app.server.card, served.url),
        supported_interfaces=[
            t.AgentInterface(url=served.url, protocol_binding="JSONRPC", protocol_version="1.0"),
            t.AgentInterface(
                url=f"127.0.0.1:{port}", protocol_binding="GRPC", protocol_version="1.0"
            ),
        ],
    )
    app.use_card(grpc_card)
    try:
        slow = {**message("slow"), "configuration": {"returnImmediately": True}}
        sent = await served.result("SendMessage", slow)
        task_id = str(sent["task"]["id"])  # type: ignore[index]
        await agent.started.wait()
        async with await A2AClient.connect(served.url, binding="grpc") as client:
            assert client.binding == "GRPC"
            subscription = client.subscribe(task_id)
            first = await anext(subscription)
            assert isinstance(first.payload, t.Task)
            assert first.payload.id == task_id
            canceled = await client.cancel_task(task_id)
            assert canceled.status.state == t.TaskState.TASK_STATE_CANCELED
            rest = [e.payload async for e in subscription]
            assert isinstance(rest[-1], t.TaskStatusUpdateEvent | t.Task)
            assert rest[-1].status.state == t.TaskState.TASK_STATE_CANCELED
        got = await served.result("GetTask", {"id": task_id})
        assert got["status"]["state"] == "TASK_STATE_CANCELED"  # type: ignore[index]
    finally:
        agent.release.set()
        await side.stop(grace=1)
