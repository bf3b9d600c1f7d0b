"""Negotiation with gRPC in the card: picked after the HTTP interfaces that do not
answer, and passed over when its port refuses (interlink's gRPC server on loopback)."""

from __future__ import annotations

import pytest

from interlink.a2a import Outcome, create_app
from interlink.a2a import types as t
from interlink.a2a.client._client import A2AClient
from tests.a2a.agents import Scripted, card
from tests.a2a.test_client_negotiate import Serve, closed_port, iface, with_interfaces
from tests.spec import unavailable

try:
    from interlink.a2a.server.bindings._grpc import create_grpc_server
except ImportError:  # pragma: no cover - the dev extra has them
    unavailable("grpcio and protobuf are not installed (pip install -e '.[dev]')")

pytestmark = pytest.mark.timeout(30)


async def test_grpc_answers_after_the_http_interfaces_fail() -> None:
    agent = Scripted()
    async with create_grpc_server(agent, card()) as server:
        card_ = with_interfaces(
            iface(f"http://127.0.0.1:{closed_port()}/"),
            iface(f"http://127.0.0.1:{closed_port()}/", "HTTP+JSON"),
            iface(f"127.0.0.1:{server.port}", "GRPC"),
        )
        async with await A2AClient.from_card(card_) as client:
            assert client.binding == "GRPC"
            task = await client.send_message("echo over grpc")
            assert isinstance(task, t.Task)
            assert task.artifacts[0].parts[0].text == "over grpc"
    outcomes = [c.outcome for c in client.negotiation.candidates]
    assert outcomes == [Outcome.FAILED, Outcome.FAILED, Outcome.PICKED]


async def test_a_grpc_port_that_refuses_is_passed_over(serve: Serve) -> None:
    served = await serve(create_app(Scripted(), card()))
    card_ = with_interfaces(iface(f"127.0.0.1:{closed_port()}", "GRPC"), iface(served.url))
    async with await A2AClient.from_card(card_, binding=["grpc", "jsonrpc"]) as client:
        assert client.binding == "JSONRPC"
        grpc = client.negotiation.candidates[0]
        assert grpc.outcome is Outcome.FAILED
        assert grpc.reason.startswith("did not answer"), grpc.reason
