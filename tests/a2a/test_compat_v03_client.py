"""The client's 0.3 dialect: the 1.0 requests it builds as a 0.3 agent reads them, and
the 0.3 answers as the 1.0 objects and typed errors the caller gets (the interop with
a real 0.3 agent is in `tests/interop/a2a/test_v03.py`)."""

from __future__ import annotations

import msgspec
import pytest

from interlink.a2a import A2AInvalidParams, TaskNotFound, UnsupportedOperation
from interlink.a2a import types as t
from interlink.a2a._methods import METHODS
from interlink.a2a.client._v03 import V03


def test_a_request_goes_out_in_its_0_3_form() -> None:
    send = METHODS["SendMessage"]
    request = t.SendMessageRequest(
        message=t.Message(message_id="m", role=t.Role.ROLE_USER, parts=[t.Part(text="hi")]),
        configuration=t.SendMessageConfiguration(return_immediately=True),
    )
    assert V03.method_name(send) == "message/send"
    assert msgspec.json.decode(V03.encode_params(send, request)) == {
        "message": {
            "kind": "message",
            "messageId": "m",
            "role": "user",
            "parts": [{"kind": "text", "text": "hi"}],
        },
        "configuration": {"blocking": False},
    }
    card = METHODS["GetExtendedAgentCard"]
    assert V03.method_name(card) == "agent/getAuthenticatedExtendedCard"
    assert V03.encode_params(card, t.GetExtendedAgentCardRequest()) == b"{}"


def test_list_tasks_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(UnsupportedOperation, match=r"ListTasks has no A2A 0\.3 form"):
        V03.method_name(METHODS["ListTasks"])


def test_results_and_events_come_back_as_1_0_objects() -> None:
    task = {
        "kind": "task",
        "id": "t1",
        "contextId": "c1",
        "status": {"state": "input-required", "timestamp": "2025-01-01T00:00:00"},
    }
    sent = V03.decode_result(METHODS["SendMessage"], msgspec.Raw(msgspec.json.encode(task)))
    assert isinstance(sent, t.SendMessageResponse)
    assert isinstance(sent.task, t.Task)
    assert sent.task.status.state == t.TaskState.TASK_STATE_INPUT_REQUIRED
    update = {
        "kind": "status-update",
        "taskId": "t1",
        "contextId": "c1",
        "status": {"state": "completed"},
        "final": True,
    }
    raw = msgspec.Raw(msgspec.json.encode(update))
    event = V03.decode_result(METHODS["SendStreamingMessage"], raw)
    assert isinstance(event, t.StreamResponse)
    assert isinstance(event.status_update, t.TaskStatusUpdateEvent)
    assert event.status_update.status.state == t.TaskState.TASK_STATE_COMPLETED
    deleted = V03.decode_result(METHODS["DeleteTaskPushNotificationConfig"], msgspec.Raw(b"null"))
    assert deleted == t.Empty()


def test_an_answer_that_is_no_0_3_result_is_an_invalid_agent_response() -> None:
    from interlink.a2a import InvalidAgentResponse

    with pytest.raises(InvalidAgentResponse, match=r"tasks/get: invalid 0\.3 result"):
        V03.decode_result(METHODS["GetTask"], msgspec.Raw(b'{"kind": "task"}'))


def test_errors_are_the_typed_1_0_errors() -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32001, "message": "Task not found", "data": {"taskId": "x"}},
    }
    error = V03.error(msgspec.json.encode(body))
    assert isinstance(error, TaskNotFound)
    assert error.data[0]["reason"] == "TASK_NOT_FOUND"  # type: ignore[index]
    assert error.data[-1]["value"] == {"taskId": "x"}  # type: ignore[index]
    plain = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}}
    assert isinstance(V03.error(msgspec.json.encode(plain)), A2AInvalidParams)
    assert V03.error(b'{"jsonrpc": "2.0", "id": 1, "result": {}}') is None


# -- a 0.3 card -------------------------------------------------------------------------------

V03_CARD = {
    "name": "old agent",
    "description": "speaks 0.3",
    "url": "http://127.0.0.1:9/a2a",
    "version": "1",
    "protocolVersion": "0.3.0",
    "capabilities": {"streaming": True},
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain"],
    "skills": [],
}


def test_a_0_3_card_is_read_as_its_1_0_form_and_picks_0_3() -> None:
    from interlink.a2a._card import _decode_card
    from interlink.a2a.client._negotiate import plan

    card = _decode_card(msgspec.json.encode(V03_CARD), "http://127.0.0.1:9/")
    (interface,) = card.supported_interfaces
    assert (interface.url, interface.protocol_binding) == ("http://127.0.0.1:9/a2a", "JSONRPC")
    assert interface.protocol_version == "0.3.0"
    _, steps = plan(card, "http://127.0.0.1:9/.well-known/agent-card.json")
    assert [step.version for step in steps] == ["0.3"]
    _, pinned = plan(card, version="1.0")
    assert pinned == []  # (a 1.0 pin does not fall back to 0.3: §3.6.3)


def test_a_card_with_1_0_interfaces_is_read_as_it_is() -> None:
    from interlink.a2a._card import _decode_card

    interfaces = [{"url": "http://x/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]
    merged = {**V03_CARD, "supportedInterfaces": interfaces}
    card = _decode_card(msgspec.json.encode(merged), "http://x/")
    assert [i.protocol_version for i in card.supported_interfaces] == ["1.0"]


async def test_a_0_3_delete_answered_without_result_is_its_null_result_and_no_other() -> None:
    """The 0.3 SDK's server drops the null `result` of a delete (`{"id":5,"jsonrpc":"2.0"}`):
    that answer, to that id, is the delete's null result; without a result any other
    method's answer, or an answer to another id, is still an invalid response."""
    from interlink.a2a import InvalidAgentResponse
    from interlink.a2a.client._jsonrpc import JsonRpcTransport
    from interlink.a2a.client._transport import TransportConfig

    transport = JsonRpcTransport(TransportConfig("http://127.0.0.1:9/", version="0.3"))
    try:
        delete, get = METHODS["DeleteTaskPushNotificationConfig"], METHODS["GetTask"]
        bare = b'{"id":5,"jsonrpc":"2.0"}'
        assert isinstance(transport._result(delete, bare, 5), msgspec.Struct)
        with pytest.raises(InvalidAgentResponse, match="not a JSON-RPC response"):
            transport._result(delete, bare, 6)
        with pytest.raises(InvalidAgentResponse, match="not a JSON-RPC response"):
            transport._result(get, bare, 5)
        with pytest.raises(InvalidAgentResponse, match="not a JSON-RPC response"):
            transport._result(delete, b'{"id":5,"jsonrpc":"2.0","extra":1}', 5)
        v10 = JsonRpcTransport(TransportConfig("http://127.0.0.1:9/"))
        try:
            with pytest.raises(InvalidAgentResponse, match="not a JSON-RPC response"):
                v10._result(delete, bare, 5)
        finally:
            await v10.aclose()
    finally:
        await transport.aclose()
