"""Just enough of the protobuf wire format for the bench's gRPC load and its floor: the
few `a2a.proto` messages it sends, encoded by hand, and a reader of the fields its checks
look at, into the dicts the JSON bindings' answers decode to (camelCase names, enums by
name). Hand-written so that the load generator costs the same whichever server it
drives, and needs neither server's generated code.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "SCHEMAS",
    "SERVICE",
    "decode",
    "get_task",
    "send_message",
    "send_message_response",
    "stream_response",
    "task",
]

SERVICE = "/lf.a2a.v1.A2AService/"

_STATES = [
    "TASK_STATE_UNSPECIFIED",
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_REJECTED",
    "TASK_STATE_AUTH_REQUIRED",
]


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _bytes(field: int, value: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(value)) + value


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _str(field: int, value: str) -> bytes:
    return _bytes(field, value.encode())


def _part(text: str) -> bytes:
    return _str(1, text)


def send_message(message_id: str, text: str) -> bytes:
    """A `SendMessageRequest` of one user message holding `text`."""
    message = _str(1, message_id) + _int(4, 1) + _bytes(5, _part(text))  # ROLE_USER
    return _bytes(2, message)


def get_task(task_id: str) -> bytes:
    """A `GetTaskRequest` for `task_id`."""
    return _str(2, task_id)


def task(task_id: str, text: str) -> bytes:
    """A completed `Task` with one artifact holding `text` (the floor's answers)."""
    artifact = _str(1, "echo") + _str(2, "echo") + _bytes(4, _part(text))
    return _str(1, task_id) + _str(2, "ctx") + _bytes(3, _int(1, 3)) + _bytes(4, artifact)


def send_message_response(task: bytes) -> bytes:
    """A `SendMessageResponse` holding the serialized `task`."""
    return _bytes(1, task)


def stream_response(kind: str, task_id: str, text: str) -> bytes:
    """A `StreamResponse` for the floor: `task`, `artifact` (an update holding `text`) or
    `status` (completed)."""
    if kind == "task":
        return _bytes(1, task(task_id, text))
    head = _str(1, task_id) + _str(2, "ctx")
    if kind == "artifact":
        artifact = _str(1, "echo") + _str(2, "echo") + _bytes(4, _part(text))
        return _bytes(4, head + _bytes(3, artifact) + _int(4, 1))
    return _bytes(3, head + _bytes(3, _int(1, 3)))


# ---- reading -------------------------------------------------------------------------

# a message's schema: field number -> (JSON name, kind); a kind is "str", "state", or a
# nested schema; a list of one schema is a repeated message
_Schema = dict[int, tuple[str, Any]]
_PART: _Schema = {1: ("text", "str")}
_ARTIFACT: _Schema = {1: ("artifactId", "str"), 4: ("parts", [_PART])}
_STATUS: _Schema = {1: ("state", "state")}
_TASK: _Schema = {
    1: ("id", "str"),
    2: ("contextId", "str"),
    3: ("status", _STATUS),
    4: ("artifacts", [_ARTIFACT]),
}
_MESSAGE: _Schema = {1: ("messageId", "str")}
_STATUS_UPDATE: _Schema = {1: ("taskId", "str"), 3: ("status", _STATUS)}
_ARTIFACT_UPDATE: _Schema = {1: ("taskId", "str"), 3: ("artifact", _ARTIFACT)}
SCHEMAS: dict[str, _Schema] = {
    "Task": _TASK,
    "SendMessageResponse": {1: ("task", _TASK), 2: ("message", _MESSAGE)},
    "StreamResponse": {
        1: ("task", _TASK),
        2: ("message", _MESSAGE),
        3: ("statusUpdate", _STATUS_UPDATE),
        4: ("artifactUpdate", _ARTIFACT_UPDATE),
    },
}


def decode(data: bytes, schema: _Schema) -> dict[str, Any]:
    """The fields of `schema` in the message `data`; the others are skipped."""
    out: dict[str, Any] = {}
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _read_varint(data, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
            spec = schema.get(field)
            if spec is not None and spec[1] == "state":
                out[spec[0]] = _STATES[value] if value < len(_STATES) else value
            continue
        if wire == 1:
            pos += 8
            continue
        if wire == 5:
            pos += 4
            continue
        if wire != 2:
            raise ValueError(f"wire type {wire} at byte {pos}")
        size, pos = _read_varint(data, pos)
        chunk, pos = data[pos : pos + size], pos + size
        spec = schema.get(field)
        if spec is None:
            continue
        name, kind = spec
        if kind == "str":
            out[name] = chunk.decode()
        elif isinstance(kind, list):
            out.setdefault(name, []).append(decode(chunk, kind[0]))
        else:
            out[name] = decode(chunk, kind)
    return out


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
