"""Protobuf <-> msgspec conversion of the gRPC binding: every message of the hand-written
and spec examples survives the round trip and is the message protobuf's own ProtoJSON
parser makes of the same JSON; what protobuf cannot hold is refused with the field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from interlink.a2a import _codec
from interlink.a2a._codec import ValidationError
from interlink.a2a._methods import METHODS
from interlink.a2a._types import (
    AgentCard,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
)
from tests.a2a.test_types import HAND_WRITTEN, SPEC_EXAMPLES
from tests.spec import REPO, spec_dir, unavailable

try:
    from google.protobuf import json_format

    from interlink.a2a._grpc import _convert
except ImportError:  # pragma: no cover - the dev extra has them
    unavailable("grpcio and protobuf are not installed (pip install -e '.[dev]')")

CASES = [pytest.param(t, b, id=name) for name, (t, b) in HAND_WRITTEN.items()]
SPEC_CASES = [pytest.param(t, b, id=name) for name, t, b in SPEC_EXAMPLES]


def check(type_: type[msgspec.Struct], body: str) -> None:
    obj = _codec.decode(type_, body.encode())
    data = _convert.encode(obj)
    back = _convert.decode(type_, data)
    assert back == obj  # (protobuf keeps no order of a map's keys)
    # what protobuf's own ProtoJSON parser makes of the same JSON
    theirs = json_format.Parse(_codec.encode(obj), _convert.proto_class(type_)())
    assert _convert.proto_class(type_).FromString(data) == theirs


@pytest.mark.parametrize(("type_", "body"), CASES)
def test_hand_written_messages_round_trip(type_: type[msgspec.Struct], body: str) -> None:
    check(type_, json.dumps(json.loads(body)))


@pytest.mark.parametrize(
    ("type_", "body"), SPEC_CASES or [pytest.param(Message, "{}", id="no-spec")]
)
def test_spec_examples_round_trip(type_: type[msgspec.Struct], body: str) -> None:
    spec_dir("a2a")
    check(type_, body)


def test_every_method_type_has_its_message() -> None:
    for method in METHODS.values():
        for type_ in (method.params, method.result):
            assert _convert.proto_class(type_).DESCRIPTOR.name == type_.__name__


def test_oneof_optional_and_zero_values_keep_their_presence() -> None:
    part = Part(text="")  # an empty text is set (oneof member), not absent
    assert _convert.decode(Part, _convert.encode(part)).text == ""
    assert _convert.decode(Part, _convert.encode(Part())).text is msgspec.UNSET
    data = Part(data=None)  # a JSON null is a value
    assert _convert.decode(Part, _convert.encode(data)).data is None
    zero = GetTaskRequest(id="t", history_length=0)
    assert _convert.decode(GetTaskRequest, _convert.encode(zero)).history_length == 0
    unset = _convert.decode(GetTaskRequest, _convert.encode(GetTaskRequest(id="t")))
    assert unset.history_length is msgspec.UNSET


def test_timestamps_and_json_values() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    status = TaskStatus(state=TaskState.TASK_STATE_WORKING, timestamp=when)
    assert _convert.decode(TaskStatus, _convert.encode(status)).timestamp == when
    before = datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC)
    status = TaskStatus(state=TaskState.TASK_STATE_WORKING, timestamp=before)
    assert _convert.decode(TaskStatus, _convert.encode(status)).timestamp == before
    value = {"a": [1, 2.5, "x", None, True, {"b": {}}], "c": -3}
    part = _convert.decode(Part, _convert.encode(Part(data=value, metadata={"k": value})))
    assert (part.data, part.metadata) == (value, {"k": value})


def test_garbage_is_a_violation() -> None:
    with pytest.raises(ValidationError) as caught:
        _convert.decode(SendMessageRequest, b"\xff\xff\xff\xff")
    assert caught.value.violations[0].field == ""
    assert "SendMessageRequest" in caught.value.violations[0].description


def test_unknown_enum_number_names_the_field() -> None:
    message = _convert.to_proto(
        Message(message_id="m", role=Role.ROLE_USER, parts=[Part(text="x")])
    )
    message.role = 7  # type: ignore[attr-defined]  # (proto3 enums are open)
    request = _convert.proto_class(SendMessageRequest)(message=message)
    with pytest.raises(ValidationError) as caught:
        _convert.decode(SendMessageRequest, request.SerializeToString())
    (violation,) = caught.value.violations
    assert violation.field == "message.role"
    assert "unknown enum number 7" in violation.description
    assert "ROLE_USER" in violation.description


def test_violations_inside_lists_name_the_item() -> None:
    task = _convert.to_proto(
        Task(id="t", status=TaskStatus(state=TaskState.TASK_STATE_WORKING), history=[Message()])
    )
    task.history[0].role = 9  # type: ignore[attr-defined]
    with pytest.raises(ValidationError) as caught:
        _convert.decode(Task, task.SerializeToString())
    assert caught.value.violations[0].field == "history[0].role"


def test_missing_required_message_field() -> None:
    with pytest.raises(ValidationError) as caught:
        _convert.decode(Task, _convert.proto_class(Task)(id="t").SerializeToString())
    assert caught.value.violations[0].field == "status"


def test_stream_response_members() -> None:
    for body in (
        '{"statusUpdate": {"taskId": "t", "contextId": "c",'
        ' "status": {"state": "TASK_STATE_WORKING"}}}',
        '{"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x"}]}}',
    ):
        check(StreamResponse, body)


def test_card_maps_of_messages() -> None:
    check(AgentCard, json.dumps(json.loads(HAND_WRITTEN["card"][1])))


def fresh_python(code: str) -> str:
    """What `code` prints, run by a new interpreter (nothing imported yet)."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": ""},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_coexists_with_the_official_sdk_in_one_process() -> None:
    """The SDK registers its own `a2a.proto` (same package) in protobuf's default pool;
    ours lives in a pool of its own, so both import in either order."""
    try:
        import a2a.types.a2a_pb2  # noqa: F401
    except ImportError:
        unavailable("a2a-sdk[grpc] is not installed (pip install -e '.[dev]')")
    code = (
        "import a2a.types.a2a_pb2 as sdk\n"
        "from interlink.a2a._grpc import _convert\n"
        "from interlink.a2a._types import Task, TaskStatus, TaskState\n"
        "t = Task(id='t', status=TaskStatus(state=TaskState.TASK_STATE_WORKING))\n"
        "print(sdk.Task.FromString(_convert.encode(t)).id)\n"
    )
    assert fresh_python(code) == "t"


def test_the_http_side_imports_neither_grpc_nor_protobuf() -> None:
    code = (
        "import sys\n"
        "import interlink.a2a\n"
        "from interlink.a2a import create_app\n"
        "import interlink.a2a.server._http, interlink.cli._a2a_serve\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('grpc', 'google'))\n"
        "print(bad)\n"
    )
    assert fresh_python(code) == "[]"


# ---------------------------------------------------------------------------- generator


def run_generator(*args: str, spec: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "tools" / "gen_a2a_grpc.py"), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "INTERLINK_SPEC_DIR": spec, "CI": ""},
        check=False,
        timeout=120,
    )


def test_generated_file_is_current() -> None:
    done = run_generator("--check", spec=str(spec_dir()))
    assert done.returncode == 0, done.stderr


def test_without_the_spec_the_generator_says_it_skipped(tmp_path: Path) -> None:
    done = run_generator("--check", spec=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("skipped: no spec at ")
    assert len(done.stdout.splitlines()) == 1
