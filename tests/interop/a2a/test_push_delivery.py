"""Push delivery to a webhook on 127.0.0.1, through both official clients, over JSON-RPC
and gRPC: the configs are created by the client (``push-delivery``), the server
(``--push-allow 127.0.0.1``) POSTs the task's events to the webhook."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.interop.a2a.conftest import (
    A2AServer,
    Delivery,
    PeerKind,
    WebhookReceiver,
    run_peer,
    serve,
)
from tests.interop.a2a.test_official_clients import check_requests

pytestmark = pytest.mark.interop

MEMBERS = {"task", "message", "statusUpdate", "artifactUpdate"}


@pytest.fixture(scope="module")
def a2a_push_server() -> Iterator[A2AServer]:
    with serve(["--push-allow", "127.0.0.1"], grpc=True) as server:
        yield server


@pytest.fixture(
    params=[("py", "JSONRPC"), ("js", "JSONRPC"), ("py", "GRPC"), ("js", "GRPC")],
    ids=["py-sdk", "js-sdk", "py-sdk-grpc", "js-sdk-grpc"],
)
def sdk(request: pytest.FixtureRequest) -> tuple[PeerKind, str]:
    """The client peer and the binding it speaks."""
    kind: PeerKind = request.getfixturevalue(f"a2a_{request.param[0]}_sdk")
    return kind, request.param[1]


def task_id_of(body: Any) -> str | None:
    if not isinstance(body, dict) or len(body) != 1:
        return None
    ((member, value),) = body.items()
    if member == "task":
        return str(value["id"])
    if member in {"statusUpdate", "artifactUpdate"}:
        return str(value["taskId"])
    return None


def completed(deliveries: list[Delivery], task_id: str) -> bool:
    return any(
        task_id_of(d.body) == task_id
        and d.body.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED"
        for d in deliveries
    )


def test_push_delivery(
    sdk: tuple[PeerKind, str], a2a_push_server: A2AServer, webhook: WebhookReceiver
) -> None:
    kind, binding = sdk
    args = ["--webhook", webhook.url, "--binding", binding]
    out = run_peer(kind, a2a_push_server, "push-delivery", args)
    check_requests(out, a2a_push_server, binding)
    created_id = out["started"]["id"]
    inline_id = out["inline"]["task"]["id"]
    assert out["created"]["result"]["taskId"] == created_id
    deliveries = webhook.wait_for(
        lambda ds: completed(ds, created_id) and completed(ds, inline_id), timeout=20
    )
    for task_id, token, authorization in [
        (created_id, "tok-created", "Bearer secret-created"),
        (inline_id, "tok-inline", None),
    ]:
        mine = [d for d in deliveries if task_id_of(d.body) == task_id]
        assert mine, f"no delivery for task {task_id}: {deliveries}"
        for d in mine:
            assert d.path == "/hook"
            assert set(d.body) <= MEMBERS
            assert d.headers["content-type"].split(";")[0] in {
                "application/json",
                "application/a2a+json",
            }
            assert d.headers.get("x-a2a-notification-token") == token
            assert d.headers.get("authorization") == authorization
        last = mine[-1].body
        assert last["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED", mine
