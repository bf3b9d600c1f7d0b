"""The generated A2A types and their codec: ProtoJSON in and out, checked against the spec.

The proto and the specification's JSON examples are read where they lie
(`$INTERLINK_SPEC_DIR` or `../shared/spec`), as the generator reads them; without them
those tests are skipped (failed under CI=true), see `tests/spec.py`.
"""

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import typing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from interlink.a2a._codec import FieldViolation, ValidationError, decode, encode, to_builtins
from interlink.a2a._methods import METHODS, SEND_MESSAGE
from interlink.a2a._types import (
    AgentCapabilities,
    AgentCard,
    Artifact,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SecurityScheme,
    SendMessageConfiguration,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from interlink.a2a.server._handler import A2AServer, Call
from interlink.a2a.server._stream import TaskStream
from tests.spec import have_spec, spec_dir

REPO = Path(__file__).resolve().parents[2]

JSON = bytes | str


def as_bytes(data: JSON) -> bytes:
    return data.encode() if isinstance(data, str) else data


def violations(type_: type[msgspec.Struct], data: JSON) -> tuple[FieldViolation, ...]:
    with pytest.raises(ValidationError) as info:
        decode(type_, as_bytes(data))
    return info.value.violations


def covers(written: object, original: object) -> bool:
    """`written` (our encoding) keeps everything of `original` except zero values."""
    if isinstance(written, dict) and isinstance(original, dict):
        dropped = {k: v for k, v in original.items() if k not in written}
        return all(k in original and covers(v, original[k]) for k, v in written.items()) and all(
            v in (False, 0, "", [], {}) for v in dropped.values()
        )
    if isinstance(written, list) and isinstance(original, list):
        return len(written) == len(original) and all(map(covers, written, original))
    if isinstance(written, str) and isinstance(original, str) and written != original:
        try:  # timestamps are written with 0 or 6 fraction digits, whatever they were read with
            return datetime.fromisoformat(written) == datetime.fromisoformat(original)
        except ValueError:
            return False
    return written == original


def round_trip(type_: type[msgspec.Struct], data: JSON) -> msgspec.Struct:
    obj = decode(type_, as_bytes(data))
    again = decode(type_, encode(obj))
    assert again == obj
    assert covers(json.loads(encode(obj)), json.loads(data)), encode(obj)
    assert to_builtins(obj) == json.loads(encode(obj))
    return obj


# ---------------------------------------------------------------------------- spec examples


def spec_blocks() -> list[tuple[int, str]]:
    """(line, JSON text) for every JSON body in the specification's json and http blocks."""
    text = spec_dir("a2a", "specification.md").read_text(encoding="utf-8")
    found = []
    for m in re.finditer(r"```(json|http)\n(.*?)```", text, re.S):
        line = text.count("\n", 0, m.start()) + 1
        body = m.group(2)
        if m.group(1) == "http":
            if "\n\n" not in body:
                continue
            body = body.split("\n\n", 1)[1]
            for event in re.findall(r"^data: (.*)$", body, re.M):
                found.append((line, event))
        found.append((line, body))
    return found


def spec_type(doc: dict[str, object]) -> type[msgspec.Struct] | None:
    """The message a spec example shows, recognised by its keys."""
    keys = set(doc)
    message = doc.get("message")
    if keys & {"statusUpdate", "artifactUpdate"}:
        return StreamResponse
    if "configuration" in keys or (
        isinstance(message, dict) and message.get("role") == "ROLE_USER"
    ):
        return SendMessageRequest
    if keys in ({"task"}, {"message"}):
        return SendMessageResponse
    if "tasks" in keys:
        return ListTasksResponse
    if "capabilities" in keys and "name" in keys:
        return AgentCard
    if "artifactId" in keys:
        return Artifact
    if "role" in keys and "parts" in keys:
        return Message
    return None


def spec_examples() -> list[tuple[str, type[msgspec.Struct], str]]:
    out = []
    for line, body in spec_blocks():
        try:
            doc = json.loads(body)
        except json.JSONDecodeError:
            continue  # the spec has a few examples with comments or trailing commas
        if not isinstance(doc, dict):
            continue
        if "method" in doc:  # a JSON-RPC request: its params are the method's params type
            method = METHODS.get(str(doc["method"]))
            if method is not None:
                params = json.dumps(doc.get("params", {}))
                out.append((f"line {line} {method.name}", method.params, params))
            continue
        type_ = spec_type(doc)
        if type_ is not None:
            out.append((f"line {line} {type_.__name__}", type_, body))
    return out


SPEC_EXAMPLES = spec_examples() if have_spec() else []


def test_spec_examples_cover_the_main_messages() -> None:
    spec_dir("a2a")
    seen = {type_ for _, type_, _ in SPEC_EXAMPLES}
    wanted = {SendMessageRequest, SendMessageResponse, StreamResponse, ListTasksResponse}
    assert wanted | {AgentCard, GetTaskRequest, ListTasksRequest} <= seen
    assert len(SPEC_EXAMPLES) >= 20


@pytest.mark.parametrize(
    ("type_", "body"),
    [pytest.param(t, b, id=name) for name, t, b in SPEC_EXAMPLES]
    or [pytest.param(Message, "{}", id="no-spec")],
)
def test_spec_example_round_trips(type_: type[msgspec.Struct], body: str) -> None:
    spec_dir("a2a")
    round_trip(type_, body)


# ---------------------------------------------------------------------------- hand-written

SEND = """{"tenant": "acme", "message": {"messageId": "m1", "contextId": "c1", "taskId": "t1",
  "role": "ROLE_USER", "parts": [{"text": "hi", "mediaType": "text/plain"},
  {"raw": "AAEC/w==", "filename": "a.bin"}, {"url": "https://x/y"},
  {"data": {"k": [1, 2.5, null]}}],
  "metadata": {"snake_key": 1}, "extensions": ["urn:x"], "referenceTaskIds": ["t0"]},
  "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 0,
  "returnImmediately": true, "taskPushNotificationConfig": {"url": "https://hook",
  "token": "tok", "authentication": {"scheme": "Bearer", "credentials": "c"}}},
  "metadata": {"a": {"b": true}}}"""

STATUS = """{"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-01-02T03:04:05.123Z",
  "message": {"messageId": "m2", "role": "ROLE_AGENT", "parts": [{"text": "more?"}]}}"""

TASK = f"""{{"id": "t1", "contextId": "c1", "status": {STATUS},
  "artifacts": [{{"artifactId": "a1", "name": "n", "description": "d",
    "parts": [{{"text": "out"}}], "metadata": {{}}, "extensions": ["urn:e"]}}],
  "history": [{{"messageId": "m1", "role": "ROLE_USER", "parts": [{{"text": "hi"}}]}}],
  "metadata": {{"x": 1}}}}"""

HAND_WRITTEN: dict[str, tuple[type[msgspec.Struct], str]] = {
    "send": (SendMessageRequest, SEND),
    "task": (Task, TASK),
    "response-task": (SendMessageResponse, f'{{"task": {TASK}}}'),
    "response-message": (SendMessageResponse, '{"message": {"messageId": "m", "parts": []}}'),
    "stream-task": (StreamResponse, f'{{"task": {TASK}}}'),
    "stream-status": (
        StreamResponse,
        f'{{"statusUpdate": {{"taskId": "t1", "contextId": "c1", "status": {STATUS}}}}}',
    ),
    "stream-artifact": (
        StreamResponse,
        '{"artifactUpdate": {"taskId": "t1", "contextId": "c1", "append": true,'
        ' "lastChunk": true, "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}}}',
    ),
    "get-task": (GetTaskRequest, '{"tenant": "t", "id": "t1", "historyLength": 3}'),
    "list-tasks": (
        ListTasksRequest,
        '{"contextId": "c", "status": "TASK_STATE_WORKING", "pageSize": 10, "pageToken": "p",'
        ' "historyLength": 0, "statusTimestampAfter": "2026-01-01T00:00:00Z",'
        ' "includeArtifacts": false}',
    ),
    "list-tasks-response": (
        ListTasksResponse,
        f'{{"tasks": [{TASK}], "nextPageToken": "", "pageSize": 50, "totalSize": 1}}',
    ),
    "cancel": (METHODS["CancelTask"].params, '{"id": "t1", "metadata": {"why": "x"}}'),
    "subscribe": (METHODS["SubscribeToTask"].params, '{"id": "t1"}'),
    "push-create": (
        METHODS["CreateTaskPushNotificationConfig"].params,
        '{"tenant": "t", "id": "p1", "taskId": "t1", "url": "https://h", "token": "k",'
        ' "authentication": {"scheme": "Basic"}}',
    ),
    "push-get": (METHODS["GetTaskPushNotificationConfig"].params, '{"taskId": "t1", "id": "p1"}'),
    "push-list": (
        METHODS["ListTaskPushNotificationConfigs"].params,
        '{"taskId": "t1", "pageSize": 5, "pageToken": "x"}',
    ),
    "push-list-response": (
        METHODS["ListTaskPushNotificationConfigs"].result,
        '{"configs": [{"url": "https://h", "taskId": "t1"}], "nextPageToken": "n"}',
    ),
    "push-delete": (
        METHODS["DeleteTaskPushNotificationConfig"].params,
        '{"taskId": "t", "id": "p"}',
    ),
    "delete-result": (METHODS["DeleteTaskPushNotificationConfig"].result, "{}"),
    "extended-card": (METHODS["GetExtendedAgentCard"].params, '{"tenant": "t"}'),
    "card": (
        AgentCard,
        """{"name": "A", "description": "d", "version": "1", "iconUrl": "",
        "supportedInterfaces": [{"url": "https://a", "protocolBinding": "JSONRPC",
          "protocolVersion": "1.0", "tenant": "t"}],
        "provider": {"url": "https://p", "organization": "o"},
        "capabilities": {"streaming": true, "pushNotifications": false,
          "extensions": [{"uri": "urn:x", "required": true, "params": {"a": 1}}]},
        "securitySchemes": {
          "key": {"apiKeySecurityScheme": {"location": "header", "name": "X"}},
          "http": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}},
          "oauth": {"oauth2SecurityScheme": {"oauth2MetadataUrl": "https://m", "flows": {
            "deviceCode": {"deviceAuthorizationUrl": "https://d", "tokenUrl": "https://t",
              "scopes": {"read": "Read"}}}}},
          "mtls": {"mtlsSecurityScheme": {}}},
        "securityRequirements": [{"schemes": {"oauth": {"list": ["read"]}}}],
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"],
          "examples": ["e"], "inputModes": ["a"], "outputModes": ["b"],
          "securityRequirements": [{"schemes": {"key": {}}}]}],
        "signatures": [{"protected": "p", "signature": "s", "header": {"kid": "1"}}]}""",
    ),
}


@pytest.mark.parametrize(("type_", "body"), HAND_WRITTEN.values(), ids=HAND_WRITTEN.keys())
def test_hand_written_round_trips(type_: type[msgspec.Struct], body: str) -> None:
    round_trip(type_, json.dumps(json.loads(body)))


def test_every_message_of_the_service_is_exercised() -> None:
    """Round trips above reach each type the service's requests and responses contain."""
    reached: set[type] = set()

    def walk(obj: object) -> None:
        if isinstance(obj, msgspec.Struct):
            reached.add(type(obj))
            for name in obj.__struct_fields__:
                walk(getattr(obj, name))
        elif isinstance(obj, list | tuple):
            for item in obj:
                walk(item)
        elif isinstance(obj, dict):
            for item in obj.values():
                walk(item)

    for type_, body in HAND_WRITTEN.values():
        walk(decode(type_, body.encode()))
    contained: set[type] = set()

    def reach(tp: type[msgspec.Struct]) -> None:
        if tp in contained:
            return
        contained.add(tp)
        for info in msgspec.structs.fields(tp):
            for inner in re.findall(r"\b([A-Z]\w+)\b", str(info.type)):
                found = getattr(sys.modules[tp.__module__], inner, None)
                if isinstance(found, type) and issubclass(found, msgspec.Struct):
                    reach(found)

    for method in METHODS.values():
        reach(method.params)
        reach(method.result)
    unreached = {t.__name__ for t in contained - reached}
    # Deprecated OAuth flows and the two other schemes are alternatives of reached oneofs.
    assert unreached <= {
        "AuthorizationCodeOAuthFlow",
        "ClientCredentialsOAuthFlow",
        "ImplicitOAuthFlow",
        "PasswordOAuthFlow",
        "OpenIdConnectSecurityScheme",
    }


# ---------------------------------------------------------------------------- wire rules


def test_camel_case_out_and_defaults_omitted() -> None:
    msg = Message(message_id="m", role=Role.ROLE_USER, parts=[Part(text="x")], context_id="")
    assert encode(msg) == b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}'
    config = SendMessageConfiguration(return_immediately=False, accepted_output_modes=[])
    assert encode(config) == b"{}"


def test_explicit_defaults_are_accepted() -> None:
    body = b"""{"messageId": "m", "contextId": "", "taskId": "", "role": "ROLE_UNSPECIFIED",
      "parts": [], "extensions": [], "referenceTaskIds": [], "metadata": null}"""
    assert decode(Message, body) == Message(message_id="m")


def test_list_tasks_response_always_writes_every_field() -> None:
    empty = encode(ListTasksResponse())
    assert json.loads(empty) == {"tasks": [], "nextPageToken": "", "pageSize": 0, "totalSize": 0}
    assert decode(ListTasksResponse, b"{}") == ListTasksResponse()


def test_snake_case_keys_are_accepted_at_every_depth() -> None:
    body = b"""{"message": {"message_id": "m", "context_id": "c", "role": "ROLE_USER",
      "parts": [{"text": "t", "media_type": "text/plain", "metadata": {"keep_me": 1}}],
      "reference_task_ids": ["x"]},
      "configuration": {"history_length": 2, "return_immediately": true,
        "task_push_notification_config": {"url": "u", "task_id": "t"}}}"""
    camel = decode(SendMessageRequest, body.replace(b"message_id", b"messageId"))
    snake = decode(SendMessageRequest, body)
    assert snake == camel
    assert snake.message.parts[0].metadata == {"keep_me": 1}  # user data is not renamed
    assert snake.configuration is not None
    assert snake.configuration.history_length == 2


def test_snake_case_in_maps_of_messages() -> None:
    body = b"""{"name": "A", "capabilities": {"push_notifications": true},
      "security_schemes": {"g": {"open_id_connect_security_scheme":
        {"open_id_connect_url": "https://o"}}}}"""
    card = decode(AgentCard, body)
    assert card.capabilities.push_notifications is True
    scheme = card.security_schemes["g"]
    assert scheme.which_scheme == "open_id_connect_security_scheme"
    assert json.loads(encode(scheme)) == {
        "openIdConnectSecurityScheme": {"openIdConnectUrl": "https://o"}
    }


def test_escaped_underscore_in_a_key_is_still_snake_case() -> None:
    assert decode(Message, rb'{"message\u005fid": "m"}').message_id == "m"


def test_field_given_under_both_names_is_rejected() -> None:
    found = violations(Message, '{"messageId": "a", "message_id": "b"}')
    assert found == (FieldViolation("messageId", "given twice, as 'messageId' and 'message_id'"),)


def test_unknown_fields_are_ignored() -> None:
    assert decode(Task, b'{"id": "t", "status": {}, "kind": "task", "new_thing": 1}').id == "t"


@pytest.mark.parametrize(
    ("type_", "body", "field", "enum_values"),
    [
        (ListTasksRequest, '{"status": "TASK_STATE_RUNNING"}', "status", TaskState),
        (Message, '{"role": "user"}', "role", Role),
        (Task, '{"status": {"state": "completed"}}', "status.state", TaskState),
        (
            SendMessageResponse,
            '{"task": {"status": {}, "history": [{"role": "ROLE_USER"}, {"role": "ROLE_BOT"}]}}',
            "task.history[1].role",
            Role,
        ),
        (Message, '{"role_x": 1, "role": "agent"}', "role", Role),  # via the snake path
    ],
)
def test_unknown_enum_value_names_field_and_allowed_values(
    type_: type[msgspec.Struct], body: str, field: str, enum_values: type[TaskState | Role]
) -> None:
    [violation] = violations(type_, body)
    assert violation.field == field
    assert enum_values.__name__ in violation.description
    for member in enum_values:
        assert member.value in violation.description


def test_enum_numbers_are_not_enum_names() -> None:
    [violation] = violations(Message, '{"role": 1}')
    assert violation.field == "role"


def test_missing_required_message_field() -> None:
    assert violations(Task, '{"id": "t"}') == (
        FieldViolation("status", "required field is missing"),
    )
    assert violations(SendMessageRequest, "{}")[0].field == "message"


def test_wrong_type_and_bad_json() -> None:
    assert violations(Message, '{"parts": [{"text": 1}]}')[0].field == "parts[0].text"
    assert violations(Message, "{")[0].field == ""
    assert violations(GetTaskRequest, '{"historyLength": 2147483648}')[0].field == "historyLength"


def test_empty_result_accepts_null() -> None:
    result = METHODS["DeleteTaskPushNotificationConfig"].result
    assert decode(result, b"null") == decode(result, b"{}") == result()
    assert encode(result()) == b"{}"


def test_decode_accepts_raw() -> None:
    params = msgspec.json.decode(b'{"params": {"id": "t"}}', type=dict[str, msgspec.Raw])
    assert decode(GetTaskRequest, params["params"]).id == "t"


def test_check_required_lists_every_empty_required_field() -> None:
    body = b"""{"message": {"parts": [{"text": ""}]},
      "configuration": {"taskPushNotificationConfig": {}}}"""
    decode(SendMessageRequest, body)  # lenient by default, as ProtoJSON is
    with pytest.raises(ValidationError) as info:
        decode(SendMessageRequest, body, check_required=True)
    assert {v.field for v in info.value.violations} == {
        "message.messageId",
        "message.role",
        "configuration.taskPushNotificationConfig.url",
    }
    ok = b'{"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": ""}]}}'
    assert decode(SendMessageRequest, ok, check_required=True).message.message_id == "m"
    assert "message.parts" in {
        v.field
        for v in violations_required(b'{"message": {"messageId": "m", "role": "ROLE_USER"}}')
    }


def violations_required(body: bytes) -> tuple[FieldViolation, ...]:
    with pytest.raises(ValidationError) as info:
        decode(SendMessageRequest, body, check_required=True)
    return info.value.violations


# ---------------------------------------------------------------------------- oneof


@pytest.mark.parametrize(
    ("type_", "body"),
    [
        (Part, '{"text": "a", "url": "b"}'),
        (Part, '{"raw": "", "data": null}'),
        (StreamResponse, '{"task": {"status": {}}, "message": {}}'),
        (SendMessageResponse, '{"task": {"status": {}}, "message": {}}'),
        (SecurityScheme, '{"mtlsSecurityScheme": {}, "httpAuthSecurityScheme": {}}'),
        (Message, '{"parts": [{"text": "ok"}, {"url": "u", "text": "t"}]}'),
    ],
)
def test_two_oneof_members_are_rejected(type_: type[msgspec.Struct], body: str) -> None:
    [violation] = violations(type_, body)
    assert "may be set" in violation.description


def test_two_oneof_members_in_the_constructor() -> None:
    with pytest.raises(ValueError, match="oneof `content`"):
        Part(text="a", url="b")


def test_oneof_which_and_value() -> None:
    assert Part().which_content is None
    assert Part().content is None
    part = decode(Part, b'{"data": null}')
    assert part.which_content == "data"
    assert part.data is None
    assert encode(part) == b'{"data":null}'
    empty_text = decode(Part, b'{"text": ""}')
    assert empty_text.which_content == "text"
    assert encode(empty_text) == b'{"text":""}'  # a set member is written even when empty
    task = decode(Task, b'{"id": "t", "status": {}}')
    event = StreamResponse(task=task)
    assert event.which_payload == "task"
    assert event.payload is task
    assert encode(event) == b'{"task":{"id":"t","status":{}}}'
    match decode(StreamResponse, b'{"statusUpdate": {"status": {}}}').payload:
        case TaskStatusUpdateEvent(status=TaskStatus(state=state)):
            assert state is TaskState.TASK_STATE_UNSPECIFIED
        case _:
            pytest.fail("statusUpdate not decoded")


# ---------------------------------------------------------------------------- presence


def test_optional_keeps_unset_zero_and_value_apart() -> None:
    unset, zero, three = (
        decode(GetTaskRequest, b'{"id": "t"}'),
        decode(GetTaskRequest, b'{"id": "t", "historyLength": 0}'),
        decode(GetTaskRequest, b'{"id": "t", "history_length": 3}'),
    )
    assert unset.history_length is msgspec.UNSET
    assert zero.history_length == 0
    assert three.history_length == 3
    assert encode(unset) == b'{"id":"t"}'
    assert encode(zero) == b'{"id":"t","historyLength":0}'
    caps = decode(AgentCapabilities, b'{"streaming": false}')
    assert caps.streaming is False
    assert caps.push_notifications is msgspec.UNSET
    assert encode(caps) == b'{"streaming":false}'


def test_message_fields_are_none_when_absent() -> None:
    status = decode(TaskStatus, b'{"state": "TASK_STATE_WORKING"}')
    assert status.message is None
    assert status.timestamp is None
    assert decode(TaskStatus, b'{"message": null}').message is None


# ---------------------------------------------------------------------------- timestamps, bytes


@pytest.mark.parametrize(
    ("text", "expected", "written"),
    [
        ("2026-01-02T03:04:05Z", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "2026-01-02T03:04:05Z"),
        (
            "2026-01-02T03:04:05.123Z",
            datetime(2026, 1, 2, 3, 4, 5, 123000, tzinfo=UTC),
            "2026-01-02T03:04:05.123000Z",
        ),
        (
            "2026-01-02T05:04:05.000001+02:00",
            datetime(2026, 1, 2, 3, 4, 5, 1, tzinfo=UTC),
            "2026-01-02T03:04:05.000001Z",
        ),
        (
            "2026-01-02T03:04:05.123456789Z",
            datetime(2026, 1, 2, 3, 4, 5, 123457, tzinfo=UTC),
            "2026-01-02T03:04:05.123457Z",
        ),
    ],
)
def test_timestamps_are_utc_datetimes(text: str, expected: datetime, written: str) -> None:
    status = decode(TaskStatus, json.dumps({"timestamp": text}).encode())
    assert status.timestamp == expected
    assert status.timestamp is not None
    assert status.timestamp.tzinfo is UTC
    assert json.loads(encode(status)) == {"timestamp": written}


def test_timestamp_without_offset_is_rejected() -> None:
    [violation] = violations(TaskStatus, '{"timestamp": "2026-01-02T03:04:05"}')
    assert violation.field == "timestamp"
    assert violations(TaskStatus, '{"timestamp": "yesterday"}')[0].field == "timestamp"
    with pytest.raises(ValueError, match="UTC offset"):
        TaskStatus(timestamp=datetime(2026, 1, 1))


def test_constructor_normalises_timestamps_to_utc() -> None:
    paris = timezone(timedelta(hours=1))
    status = TaskStatus(timestamp=datetime(2026, 1, 1, 1, tzinfo=paris))
    assert status.timestamp == datetime(2026, 1, 1, tzinfo=UTC)
    assert encode(status) == b'{"timestamp":"2026-01-01T00:00:00Z"}'


def test_bytes_are_base64() -> None:
    data = bytes(range(256))
    part = Part(raw=data, media_type="application/octet-stream")
    written = json.loads(encode(part))
    assert base64.b64decode(written["raw"]) == data
    assert decode(Part, encode(part)) == part
    assert violations(Part, '{"raw": "not base64!"}')[0].field == "raw"


def test_the_other_protojson_input_forms_are_accepted() -> None:
    """ProtoJSON parsers also take integers as strings, `null` for a field's default,
    `NaN`/`Infinity`, and URL-safe or unpadded base64; snake_case keys mix with them."""
    assert decode(ListTasksRequest, b'{"pageSize": "7", "historyLength": "-1"}') == (
        ListTasksRequest(page_size=7, history_length=-1)
    )
    assert decode(ListTasksRequest, b'{"page_size": "7", "contextId": null}') == (
        ListTasksRequest(page_size=7)
    )
    assert decode(Task, b'{"id": "t", "status": {"state": "TASK_STATE_WORKING"}, "history": null}')
    raw = bytes([0xFB, 0xFF])
    for text in ("+/8=", "-_8=", "-_8", "+/8"):
        assert decode(Part, f'{{"raw": "{text}"}}'.encode()).raw == raw
    assert decode(Part, b'{"raw": "aGk"}').raw == b"hi"
    # a Value may be null: kept, not dropped
    assert decode(Part, b'{"data": null}').data is None
    # what no form makes right is still refused, at its field
    assert violations(ListTasksRequest, '{"pageSize": "seven"}')[0].field == "pageSize"
    assert violations(ListTasksRequest, '{"pageSize": "2.5"}')[0].field == "pageSize"
    assert violations(Part, '{"raw": "not base64!"}')[0].field == "raw"


# ---------------------------------------------------------------------------- method table


def test_method_table_matches_the_proto_service() -> None:
    proto = spec_dir("a2a", "a2a.proto").read_text(encoding="utf-8")
    rpcs = re.findall(r"rpc (\w+)\((\w+)\) returns \((stream )?([\w.]+)\)", proto)
    assert len(rpcs) == 11
    assert list(METHODS) == [name for name, *_ in rpcs]
    for name, request, stream, response in rpcs:
        method = METHODS[name]
        assert method.name == name
        assert method.params.__name__ == request
        assert method.result.__name__ == response.removeprefix("google.protobuf.")
        assert method.streaming == bool(stream)
    assert SEND_MESSAGE.params is SendMessageRequest


def test_every_method_has_its_handler_on_the_server() -> None:
    """Dispatch reads only the table: each handler it names takes the params type and
    a `Call`, and answers with the result type (a stream of it when it streams)."""
    for method in METHODS.values():
        hints = typing.get_type_hints(getattr(A2AServer, method.handler))
        params, call = (hints[name] for name in list(hints)[:2])
        assert (params, call) == (method.params, Call), method.name
        answer = TaskStream if method.streaming else method.result
        assert hints["return"] is answer, method.name


def test_reference_method_names() -> None:
    assert set(METHODS) == {
        "SendMessage",
        "SendStreamingMessage",
        "GetTask",
        "ListTasks",
        "CancelTask",
        "SubscribeToTask",
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
        "GetExtendedAgentCard",
    }
    assert {n for n, m in METHODS.items() if m.streaming} == {
        "SendStreamingMessage",
        "SubscribeToTask",
    }


# ---------------------------------------------------------------------------- generator


def run_generator(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(root / "tools" / "gen_a2a.py"), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "INTERLINK_SPEC_DIR": str(spec_dir())},
        check=False,
        timeout=60,
    )


def test_generated_files_are_current() -> None:
    done = run_generator(REPO, "--check")
    assert done.returncode == 0, done.stderr


def test_check_reports_a_stale_file(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    shutil.copy(REPO / "tools" / "gen_a2a.py", tmp_path / "tools")
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    out = tmp_path / "src" / "interlink" / "a2a"
    shutil.copytree(REPO / "src" / "interlink" / "a2a", out)
    assert run_generator(tmp_path, "--check").returncode == 0
    types_file = out / "_types.py"
    types_file.write_text(types_file.read_text() + "# edited by hand\n")
    done = run_generator(tmp_path, "--check")
    assert done.returncode == 1
    assert "_types.py is stale" in done.stderr
    assert run_generator(tmp_path).returncode == 0
    assert run_generator(tmp_path, "--check").returncode == 0


# ---------------------------------------------------------------------------- properties

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
structs = st.none() | st.dictionaries(st.text(max_size=8), json_values, max_size=3)
texts = st.text(max_size=12)
parts = st.one_of(
    st.builds(Part, text=texts, media_type=texts),
    st.builds(Part, raw=st.binary(max_size=16), filename=texts),
    st.builds(Part, url=texts, metadata=structs),
    st.builds(Part, data=json_values),
    st.builds(Part),
)
messages = st.builds(
    Message,
    message_id=texts,
    context_id=texts,
    role=st.sampled_from(Role),
    parts=st.lists(parts, max_size=3),
    metadata=structs,
    reference_task_ids=st.lists(texts, max_size=2),
)
stamps = st.none() | st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(9999, 1, 1), timezones=st.just(UTC)
)
statuses = st.builds(
    TaskStatus, state=st.sampled_from(TaskState), message=st.none() | messages, timestamp=stamps
)
tasks = st.builds(
    Task,
    id=texts,
    context_id=texts,
    status=statuses,
    artifacts=st.lists(
        st.builds(Artifact, artifact_id=texts, parts=st.lists(parts, max_size=2)), max_size=2
    ),
    history=st.lists(messages, max_size=3),
    metadata=structs,
)
events = st.one_of(
    st.builds(StreamResponse, task=tasks),
    st.builds(StreamResponse, message=messages),
    st.builds(
        StreamResponse,
        status_update=st.builds(TaskStatusUpdateEvent, task_id=texts, status=statuses),
    ),
    st.builds(
        StreamResponse,
        artifact_update=st.builds(
            TaskArtifactUpdateEvent,
            artifact=st.builds(Artifact, parts=st.lists(parts, max_size=2)),
            append=st.booleans(),
        ),
    ),
)


def snake_json(obj: object) -> object:
    """`obj` in ProtoJSON with the proto's snake_case names and every default written."""
    if isinstance(obj, msgspec.Struct):
        return {
            name: snake_json(getattr(obj, name))
            for name in obj.__struct_fields__
            if getattr(obj, name) is not msgspec.UNSET
        }
    if isinstance(obj, list):
        return [snake_json(v) for v in obj]
    if isinstance(obj, dict):
        return {k: snake_json(v) for k, v in obj.items()}
    return msgspec.to_builtins(obj)


@given(events)
def test_stream_responses_round_trip(event: StreamResponse) -> None:
    assert decode(StreamResponse, encode(event)) == event
    assert decode(StreamResponse, msgspec.json.encode(snake_json(event))) == event


@given(messages)
def test_send_message_requests_round_trip(message: Message) -> None:
    request = SendMessageRequest(message=message, tenant="t")
    assert decode(SendMessageRequest, encode(request)) == request
    assert decode(SendMessageRequest, msgspec.json.encode(snake_json(request))) == request
