"""Picking a card's interface: the order, what is skipped and why, and falling back over
real loopback sockets when an interface does not answer."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import msgspec
import pytest

from interlink.a2a import (
    A2AHttpError,
    AuthenticationRequired,
    NoInterfaceAnswered,
    NoUsableInterface,
    Outcome,
    TaskNotFound,
    _card,
    create_app,
)
from interlink.a2a import types as t
from interlink.a2a.client._client import A2AClient
from interlink.a2a.client._negotiate import binding_name, failure, plan
from interlink.a2a.client._transport import Transport, TransportConfig, TransportFactory
from interlink.a2a.server._http import A2AApp
from tests.a2a.agents import Scripted, card
from tests.a2a.conftest import Served

pytestmark = pytest.mark.timeout(30)
Serve = Callable[[A2AApp], Awaitable[Served]]


def iface(
    url: str, binding: str = "JSONRPC", version: str = "1.0", **more: str
) -> t.AgentInterface:
    return t.AgentInterface(url=url, protocol_binding=binding, protocol_version=version, **more)


def with_interfaces(*interfaces: t.AgentInterface) -> t.AgentCard:
    return t.AgentCard(
        name="n", capabilities=t.AgentCapabilities(), supported_interfaces=list(interfaces)
    )


def _never(config: TransportConfig, http: object) -> Transport:
    raise AssertionError("plan opens nothing")


Found = tuple[TransportFactory, frozenset[str]] | str


def everything(binding: str) -> Found:
    if binding in ("JSONRPC", "HTTP+JSON", "GRPC"):
        return _never, frozenset({"1.0", "0.3"})
    return f"this client has no {binding} binding"


def test_plan_order_newest_version_then_preference_then_card_order() -> None:
    card_ = with_interfaces(
        iface("http://a/old", version="0.3"),
        iface("http://a/grpc", "GRPC"),
        iface("/rest", "HTTP+JSON", "1.0.2"),
        iface("http://a/rpc"),
        iface("http://a/rpc2", "jsonrpc", "1.0"),
        iface("http://a/x", "WEBSOCKET"),
        iface("http://a/v", version="one"),
        iface("http://a/future", version="2.0"),
        iface("", "HTTP+JSON"),
        iface("ftp://a/", "HTTP+JSON"),
    )
    only = ["1.0", "0.3"]

    def speaks(binding: str) -> Found:
        found = everything(binding)
        return found if isinstance(found, str) else (found[0], frozenset(only))

    negotiation, steps = plan(card_, "http://a/.well-known/agent-card.json", factories=speaks)
    assert [s.url for s in steps] == [
        "http://a/rpc", "http://a/rpc2", "http://a/rest", "http://a/grpc", "http://a/old",
    ]  # fmt: skip
    assert [s.version for s in steps] == ["1.0", "1.0", "1.0", "1.0", "0.3"]
    outcomes = {c.index: (c.outcome, c.reason) for c in negotiation.candidates}
    assert outcomes[3] == (Outcome.NOT_TRIED, "choice 1 of 5")
    assert outcomes[0] == (Outcome.NOT_TRIED, "choice 5 of 5")
    assert outcomes[5] == (Outcome.SKIPPED, "this client has no WEBSOCKET binding")
    assert "'one'" in outcomes[6][1]
    assert outcomes[7] == (Outcome.SKIPPED, "this client speaks JSONRPC in A2A 0.3, 1.0, not 2.0")
    assert outcomes[8] == (Outcome.SKIPPED, "the interface has no url")
    assert "not an http:// or https:// URL" in outcomes[9][1]
    assert len(negotiation.lines()) == 10
    assert negotiation.picked is None


def test_plan_binding_and_version_pins() -> None:
    card_ = with_interfaces(
        iface("http://a/rpc"),
        iface("http://a/rest", "HTTP+JSON"),
        iface("http://a/old-rest", "HTTP+JSON", "0.3"),
        iface("a:50051", "GRPC"),
    )
    _, steps = plan(card_, binding=["rest", "grpc"], factories=everything)
    assert [s.url for s in steps] == ["http://a/rest", "a:50051", "http://a/old-rest"]
    negotiation, steps = plan(card_, binding="rest", version="0.3", factories=everything)
    assert [s.url for s in steps] == ["http://a/old-rest"]
    reasons = [c.reason for c in negotiation.candidates]
    assert reasons[0] == "JSONRPC was not asked for (only HTTP+JSON)"
    assert reasons[1] == "version 1.0, not the 0.3 asked for"
    with pytest.raises(ValueError, match=r"Major\.Minor"):
        plan(card_, version="latest", factories=everything)
    assert binding_name("REST") == binding_name("http+json") == "HTTP+JSON"


def test_grpc_is_skipped_without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "interlink.a2a.client._grpc", None)  # import fails
    card_ = with_interfaces(iface("127.0.0.1:1", "GRPC"), iface("http://a/rpc"))
    client = A2AClient(card_)
    assert client.binding == "JSONRPC"
    grpc = client.negotiation.candidates[0]
    assert grpc.outcome is Outcome.SKIPPED
    assert "grpc extra" in grpc.reason
    with pytest.raises(NoUsableInterface, match="grpc extra") as refused:
        A2AClient(card_, binding="grpc")
    assert refused.value.negotiation.candidates[1].reason.startswith("JSONRPC was not asked")


def test_failure_reasons() -> None:
    assert failure(TaskNotFound()) is None
    assert failure(A2AHttpError("x", 401, b"")) is None
    assert failure(A2AHttpError("x", 404, b"")) == "HTTP 404: nothing serves this binding there"
    assert failure(A2AHttpError("x", 503, b"")) == "HTTP 503 without an A2A error"
    assert failure(A2AHttpError("x", 307, b"")) == "HTTP 307: redirected elsewhere (not followed)"


# -- falling back over sockets ----------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def silent_server() -> AsyncIterator[str]:
    """Accepts connections and reads, but never answers."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        await reader.read()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    finally:
        server.close()
        for writer in held:
            writer.close()
        await server.wait_closed()


async def test_falls_back_past_interfaces_that_do_not_answer(serve: Serve) -> None:
    served = await serve(create_app(Scripted(), card()))
    async with silent_server() as silent:
        card_ = with_interfaces(
            iface(f"http://127.0.0.1:{closed_port()}/"),
            iface(served.url + "no/such/path"),
            iface(silent),
            iface(served.url),
        )
        async with await A2AClient.from_card(card_, probe_timeout=0.5) as client:
            assert client.url == served.url
            assert client.binding == "JSONRPC"
            assert client.interface == card_.supported_interfaces[3]
            task = await client.send_message("echo hi")
            assert isinstance(task, t.Task)
            assert task.artifacts[0].parts[0].text == "hi"
    outcomes = [(c.outcome, c.reason) for c in client.negotiation.candidates]
    assert outcomes[0] == (Outcome.FAILED, "did not answer: connection refused")
    assert outcomes[1] == (Outcome.FAILED, "HTTP 404: nothing serves this binding there")
    assert outcomes[2] == (Outcome.FAILED, "no answer within 0.5 s")
    assert outcomes[3] == (Outcome.PICKED, "it answered")
    assert client.negotiation.picked == client.negotiation.candidates[3]


async def test_none_answers(serve: Serve) -> None:
    served = await serve(create_app(Scripted(), card()))
    card_ = with_interfaces(
        iface(f"http://127.0.0.1:{closed_port()}/"), iface(served.url + "nothing")
    )
    with pytest.raises(NoInterfaceAnswered) as failed:
        await A2AClient.from_card(card_)
    assert [c.outcome for c in failed.value.negotiation.candidates] == [Outcome.FAILED] * 2
    assert "HTTP 404" in str(failed.value)


async def test_one_choice_is_not_probed(serve: Serve) -> None:
    served = await serve(create_app(Scripted(), card()))
    seen: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        seen.append(request)

    async with httpx.AsyncClient(event_hooks={"request": [record]}) as http:
        client = await A2AClient.from_card(with_interfaces(iface(served.url)), client=http)
        assert seen == []
        assert client.negotiation.picked is not None
        assert client.negotiation.picked.reason == "the only choice"


async def test_a_v03_card_is_read_with_its_interfaces_at_0_3() -> None:
    old = msgspec.json.encode(
        {
            "name": "old agent",
            "description": "speaks 0.3",
            "version": "1",
            "url": "http://old.test/rpc",
            "preferredTransport": "JSONRPC",
            "additionalInterfaces": [
                {"url": "http://old.test/rpc", "transport": "JSONRPC"},
                {"url": "http://old.test/rest", "transport": "HTTP+JSON"},
            ],
            "protocolVersion": "0.3.0",
            "capabilities": {"streaming": True},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [],
        }
    )

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=old)

    _card.clear_card_cache()
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        card_, card_url = await _card.fetch_card("http://old.test/", client=http)
    assert card_.name == "old agent"
    _, steps = plan(card_, card_url, factories=everything)
    assert [(s.url, s.version) for s in steps] == [
        ("http://old.test/rpc", "0.3"),
        ("http://old.test/rest", "0.3"),
    ]


async def test_version_refused_falls_back_and_401_is_an_answer() -> None:
    """/old claims 1.0 but answers -32009; /locked wants credentials (an answer: the
    same would hold on every interface); /rest is never asked."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/old":
            error = {"code": -32009, "message": "A2A version not supported"}
            body = json.loads(request.content)
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "error": error})
        assert request.url.path == "/locked", request.url
        return httpx.Response(401, headers={"www-authenticate": 'Bearer realm="a2a"'})

    card_ = with_interfaces(
        iface("http://a.test/old"),
        iface("http://a.test/rest", "HTTP+JSON"),
        iface("http://a.test/locked"),
    )
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        client = await A2AClient.from_card(card_, client=http)
        assert client.url == "http://a.test/locked"
        with pytest.raises(AuthenticationRequired):
            await client.get_task("x")
    outcomes = [(c.outcome, c.reason) for c in client.negotiation.candidates]
    assert outcomes[0][0] is Outcome.FAILED
    assert outcomes[0][1].startswith("the interface does not serve this version")
    assert outcomes[1] == (Outcome.NOT_TRIED, "choice 3 of 3")
    assert outcomes[2] == (Outcome.PICKED, "it answered")


async def test_our_rest_only_server_behind_a_card_listing_json_rpc_first(serve: Serve) -> None:
    app = create_app(Scripted(), card(), bindings=("HTTP+JSON",))
    served = await serve(app)
    listed = [iface(served.url), iface(served.url, "HTTP+JSON")]
    app.use_card(msgspec.structs.replace(card(), supported_interfaces=listed))
    _card.clear_card_cache()
    async with await A2AClient.connect(served.url) as client:
        assert client.binding == "HTTP+JSON"
        failed, picked = client.negotiation.candidates
        assert failed.outcome is Outcome.FAILED
        assert failed.reason == "HTTP 404: nothing serves this binding there"
        assert picked.outcome is Outcome.PICKED
        events = [e async for e in client.stream_message("echo over rest")]
        assert isinstance(events[0].payload, t.Task)
        last = events[-1].payload
        assert isinstance(last, t.TaskStatusUpdateEvent)
        assert last.status.state == t.TaskState.TASK_STATE_COMPLETED
