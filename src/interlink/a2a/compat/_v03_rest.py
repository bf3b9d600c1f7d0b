"""A2A 0.3 over HTTP+JSON: its bodies (ProtoJSON of the 0.3 proto) as the 0.3 JSON that
`compat._v03` translates to and from 1.0 (`from_rest`, `to_rest`); its calls, both ways,
are `_v03_rest_calls`.

0.3's HTTP+JSON speaks the 0.3 proto (`legacy-v0.3.0/a2a.proto`) in ProtoJSON; its
JSON-RPC speaks the 0.3 JSON schema. Same objects, other shapes: camelCase both, but
enums by proto name (`ROLE_USER`, `TASK_STATE_CANCELLED`), parts without `kind`
(`{"text"}`, `{"file": {"fileWithUri" | "fileWithBytes", "mimeType", "name"}}`,
`{"data": {"data": {...}}}`), a message's parts in `content`, a status's message in
`message` (proto field `update`), a send's message in `message` (proto field
`request`), its push config in `pushNotification`, results wrapped by kind
(`{"task"}`, `{"message"}`, `{"statusUpdate"}`, `{"artifactUpdate"}`), a push config
named `tasks/{id}/pushNotificationConfigs/{configId}`, a list of them in `configs`.
Here is only the reshaping, by the tables `_SHAPES` and `_ENUMS`, so that one
translation to 1.0 (`compat._v03`) serves both 0.3 bindings.

Rules, each where the two forms differ:

- in: a field at its proto3 default (`""`, `0`, `false`, `[]`, `{}`) is absent, as
  ProtoJSON writers leave it out (`historyLength: 0` is "all", as in 0.3 JSON-RPC),
  except a oneof's member (a part's `text: ""` is set) and a message given as `{}`
  (proto3 gives message fields presence: a send's `message: {}` is there, and empty,
  so the 0.3 message it becomes says what it lacks), and fields 0.3 JSON requires
  (`contextId`, `final`, ...) or reads their absence otherwise: `blocking` absent is
  false in the proto (the official SDK's server reads it so) and true in 0.3 JSON-RPC;
  each is written at its zero value (`_Object.defaults`). snake_case names are read as
  their camelCase ones; other unknown fields are ignored (as the official SDK 1.x does).
- enums: by name, or by number; a 0.3 role must be given (`ROLE_UNSPECIFIED` is invalid).
- `fileWithBytes` carries the 0.3 `bytes` text (base64) as its bytes, base64 again on
  the wire: what the official SDKs (0.3.x, and 1.x's 0.3 compat) write and read.
- a part's `metadata` and a file's `name` are read and written: the official SDKs' 0.3
  proto has them (the spec's proto file does not); a message's `referenceTaskIds` is
  in neither, and dropped.
- the extended card (`GET /v1/card`) is the 0.3 JSON card, as the official SDKs serve
  and read it.

Every function raises `ValueError` for input that is not of its shape (the caller
answers -32602).
"""

from __future__ import annotations

import base64
import binascii
import copy
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, NamedTuple

__all__ = ["from_rest", "object_of", "to_rest"]


class _F(NamedTuple):
    """One field: its ProtoJSON name, its 0.3 JSON name, and the shape of its value
    (a name in `_SHAPES` or `_ENUMS`, or "" for a value as it is); a list is mapped item
    by item. `also`: another name read in (a proto field named unlike its JSON name).
    `member`: a member of a oneof, set (and read) even at its default."""

    proto: str
    json: str
    shape: str = ""
    also: str = ""
    member: bool = False


class _Object(NamedTuple):
    """A message: its fields, the 0.3 `kind` its JSON form carries ("" for none), and
    the 0.3 values of fields it may leave out that 0.3 JSON requires, or takes to mean
    otherwise (a proto3 `bool` absent is false)."""

    fields: tuple[_F, ...]
    kind: str = ""
    defaults: Mapping[str, object] = MappingProxyType({})
    """(Copied before use.)"""


class _OneOf(NamedTuple):
    """A message that is one of `members` (each a field naming the 0.3 `kind` of what
    it holds), beside `fields`. `inline`: the 0.3 object is the member's own (a stream
    event), else the member is the 0.3 object's field of the same name (a part)."""

    members: tuple[tuple[_F, str], ...]
    inline: bool
    fields: tuple[_F, ...] = ()


class _Wrapped(NamedTuple):
    """A message of one field whose 0.3 form is that field's value (`DataPart`)."""

    field: str


def _f(name: str, shape: str = "", *, json: str = "", also: str = "", member: bool = False) -> _F:
    return _F(name, json or name, shape, also, member)


def _zero(**values: object) -> Mapping[str, object]:
    return MappingProxyType(values)


_META = _f("metadata")
_MESSAGE_FIELDS = (_f("messageId"), _f("contextId"), _f("taskId"))
_SHAPES: Final[Mapping[str, _Object | _OneOf | _Wrapped]] = {
    "Message": _Object(
        (
            *_MESSAGE_FIELDS,
            _f("role", "Role"),
            _f("content", "Part", json="parts"),
            _META,
            _f("extensions"),
        ),
        kind="message",
        defaults=_zero(messageId="", parts=[]),
    ),
    "Part": _OneOf(
        (
            (_f("text", member=True), "text"),
            (_f("file", "FilePart", member=True), "file"),
            (_f("data", "DataPart", member=True), "data"),
        ),
        inline=False,
        fields=(_META,),
    ),
    "FilePart": _Object(
        (
            _f("fileWithUri", json="uri", member=True),
            _f("fileWithBytes", "Bytes", json="bytes", member=True),
            _f("mimeType"),
            _f("name"),
        )
    ),
    "DataPart": _Wrapped("data"),
    "Task": _Object(
        (
            _f("id"),
            _f("contextId"),
            _f("status", "TaskStatus"),
            _f("artifacts", "Artifact"),
            _f("history", "Message"),
            _META,
        ),
        kind="task",
        defaults=_zero(id="", contextId="", status={"state": "unknown"}),
    ),
    "TaskStatus": _Object(
        (_f("state", "TaskState"), _f("message", "Message", also="update"), _f("timestamp")),
        defaults=_zero(state="unknown"),
    ),
    "Artifact": _Object(
        (
            _f("artifactId"),
            _f("name"),
            _f("description"),
            _f("parts", "Part"),
            _META,
            _f("extensions"),
        ),
        defaults=_zero(artifactId="", parts=[]),
    ),
    "TaskStatusUpdateEvent": _Object(
        (_f("taskId"), _f("contextId"), _f("status", "TaskStatus"), _f("final"), _META),
        kind="status-update",
        defaults=_zero(taskId="", contextId="", status={"state": "unknown"}, final=False),
    ),
    "TaskArtifactUpdateEvent": _Object(
        (
            _f("taskId"),
            _f("contextId"),
            _f("artifact", "Artifact"),
            _f("append"),
            _f("lastChunk"),
            _META,
        ),
        kind="artifact-update",
        defaults=_zero(taskId="", contextId="", artifact={"artifactId": "", "parts": []}),
    ),
    # StreamResponse, and SendMessageResponse (its task and message members)
    "StreamResponse": _OneOf(
        (
            (_f("task", "Task", member=True), "task"),
            (_f("message", "Message", also="msg", member=True), "message"),
            (_f("statusUpdate", "TaskStatusUpdateEvent", member=True), "status-update"),
            (_f("artifactUpdate", "TaskArtifactUpdateEvent", member=True), "artifact-update"),
        ),
        inline=True,
    ),
    "SendMessageRequest": _Object(
        (
            _f("message", "Message", also="request"),
            _f("configuration", "SendMessageConfiguration"),
            _META,
        )
    ),
    "SendMessageConfiguration": _Object(
        (
            _f("acceptedOutputModes"),
            _f("pushNotification", "PushNotificationConfig", json="pushNotificationConfig"),
            _f("historyLength"),
            _f("blocking"),
        ),
        defaults=_zero(blocking=False),  # (0.3 JSON-RPC: absent is true)
    ),
    "PushNotificationConfig": _Object(
        (_f("id"), _f("url"), _f("token"), _f("authentication", "AuthenticationInfo")),
        defaults=_zero(url=""),
    ),
    "AuthenticationInfo": _Object((_f("schemes"), _f("credentials")), defaults=_zero(schemes=[])),
}
#: each enum's proto names and their 0.3 values, in the order of their numbers
_ENUMS: Final[Mapping[str, tuple[tuple[str, str | None], ...]]] = {
    "Role": (("ROLE_UNSPECIFIED", None), ("ROLE_USER", "user"), ("ROLE_AGENT", "agent")),
    "TaskState": (
        ("TASK_STATE_UNSPECIFIED", "unknown"),
        ("TASK_STATE_SUBMITTED", "submitted"),
        ("TASK_STATE_WORKING", "working"),
        ("TASK_STATE_COMPLETED", "completed"),
        ("TASK_STATE_FAILED", "failed"),
        ("TASK_STATE_CANCELLED", "canceled"),
        ("TASK_STATE_INPUT_REQUIRED", "input-required"),
        ("TASK_STATE_REJECTED", "rejected"),
        ("TASK_STATE_AUTH_REQUIRED", "auth-required"),
    ),
}
_ENUMS_IN: Final = {
    name: {key: old for i, (proto, old) in enumerate(values) for key in (proto, i)}
    for name, values in _ENUMS.items()
}
_ENUMS_OUT: Final = {
    name: {old: proto for proto, old in values if old is not None}
    for name, values in _ENUMS.items()
}
_UPPER: Final = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _names(field: _F) -> tuple[str, ...]:
    """The names a field is read by: its ProtoJSON name, its proto (snake_case) name,
    and `also` (with its snake_case form)."""
    names = [field.proto, _UPPER.sub(r"_\1", field.proto).lower()]
    if field.also:
        names += [field.also, _UPPER.sub(r"_\1", field.also).lower()]
    return tuple(dict.fromkeys(names))


def _is_default(value: object) -> bool:
    return value is None or value in ("", 0, False, [], {})


def _present(field: _F, value: object) -> bool:
    """Whether `value`, a proto3 default, is set all the same: a oneof's member, or a
    message (`{}`, not a list of them)."""
    return field.member or (field.shape in _SHAPES and isinstance(value, dict))


# ---------------------------------------------------------------------------- in


def from_rest(value: object, shape: str) -> object:
    """ProtoJSON of 0.3 proto message `shape` (decoded) as its 0.3 JSON."""
    if shape in _ENUMS_IN:
        key = value if isinstance(value, str | int) and not isinstance(value, bool) else None
        old = _ENUMS_IN[shape].get(key) if key is not None else None
        if old is None:
            raise ValueError(f"not a {shape}: {value!r}")
        return old
    if shape == "Bytes":
        try:
            return base64.b64decode(str(value), validate=True).decode("ascii")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise ValueError(f"fileWithBytes is not base64 of base64 text: {exc}") from None
    if not shape:
        return value
    spec = _SHAPES[shape]
    if isinstance(spec, _Wrapped):
        return object_of(value, shape).get(spec.field, {})
    given = object_of(value, shape)
    if isinstance(spec, _Object):
        out = {**_copied(spec.defaults), **_fields_in(given, spec.fields)}
        return {"kind": spec.kind, **out} if spec.kind else out
    out = _fields_in(given, spec.fields)
    for member, kind in spec.members:
        found = _fields_in(given, (member,))
        if found:
            inner = found[member.json]
            if spec.inline:
                assert isinstance(inner, dict)
                return {**inner, **out}
            return {"kind": kind, **found, **out}
    names = ", ".join(m.proto for m, _ in spec.members)
    raise ValueError(f"a {shape} holds one of {names}")


def _copied(defaults: Mapping[str, object]) -> dict[str, object]:
    return copy.deepcopy(dict(defaults))


def object_of(value: object, shape: str) -> dict[str, object]:
    """`value` when it is a JSON object; ValueError naming `shape` otherwise."""
    if not isinstance(value, dict):
        raise ValueError(f"a {shape} is a JSON object, not {type(value).__name__}")
    return value


def _fields_in(given: dict[str, object], fields: tuple[_F, ...]) -> dict[str, object]:
    out: dict[str, object] = {}
    for field in fields:
        for name in _names(field):
            value = given.get(name)
            if value is None or (_is_default(value) and not _present(field, value)):
                continue
            if isinstance(value, list):
                out[field.json] = [from_rest(item, field.shape) for item in value]
            else:
                out[field.json] = from_rest(value, field.shape)
            break
    return out


# ---------------------------------------------------------------------------- out


def to_rest(value: object, shape: str) -> object:
    """0.3 JSON of `shape` (builtins) as the ProtoJSON of its 0.3 proto message."""
    if shape in _ENUMS_OUT:
        return _ENUMS_OUT[shape][str(value)]
    if shape == "Bytes":
        return base64.b64encode(str(value).encode("ascii")).decode("ascii")
    if not shape:
        return value
    spec = _SHAPES[shape]
    given = object_of(value, shape)
    if isinstance(spec, _Wrapped):
        return {spec.field: given}
    out = _fields_out(given, spec.fields)
    if isinstance(spec, _OneOf):
        for member, kind in spec.members:
            if given.get("kind") == kind:
                inner = given if spec.inline else given.get(member.json)
                return {**out, member.proto: to_rest(inner, member.shape)}
        raise ValueError(f"no {shape} holds a {given.get('kind')!r}")
    return out


def _fields_out(given: dict[str, object], fields: tuple[_F, ...]) -> dict[str, object]:
    out: dict[str, object] = {}
    for field in fields:
        value = given.get(field.json)
        if value is None:
            continue
        if isinstance(value, list):
            out[field.proto] = [to_rest(item, field.shape) for item in value]
        else:
            out[field.proto] = to_rest(value, field.shape)
    return out
