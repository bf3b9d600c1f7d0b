"""A2A 0.3 over HTTP+JSON: its routes, and its bodies (ProtoJSON of the 0.3 proto) as
the 0.3 JSON that `compat._v03` translates to and from 1.0.

0.3's HTTP+JSON speaks the 0.3 proto (`legacy-v0.3.0/a2a.proto`) in ProtoJSON; its
JSON-RPC speaks the 0.3 JSON schema. Same objects, other shapes: camelCase both, but
enums by proto name (`ROLE_USER`, `TASK_STATE_CANCELLED`), parts without `kind`
(`{"text"}`, `{"file": {"fileWithUri" | "fileWithBytes", "mimeType", "name"}}`,
`{"data": {"data": {...}}}`), a message's parts in `content`, a status's message in
`message` (proto field `update`), a send's message in `message` (proto field
`request`), its push config in `pushNotification`, results wrapped by kind
(`{"task"}`, `{"message"}`, `{"statusUpdate"}`, `{"artifactUpdate"}`), a push config
named `tasks/{id}/pushNotificationConfigs/{configId}`, a list of them in `configs`. A
REST call is carried out as the 0.3 JSON-RPC call it is (`ROUTES`: the 0.3 method, its
params from the path, query and body; `result_to_rest`), so one translation to 1.0
serves both; here is only the reshaping, by the tables `_SHAPES` and `_ENUMS`.

A client goes the other way on the same tables: `request_to_rest` makes the request of
a 0.3 call (as the official SDKs' clients send it), `result_from_rest` reads its answer
back as the 0.3 JSON-RPC result, and `error_from_rest` / `error_from_status` its error
(`{"code", "message", "data"}` as ours answers; the official SDK's server answers
`{"message"}` and the status of `HTTP_STATUS`, read back by the call it answers).

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
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, NamedTuple

import msgspec

from interlink.a2a import _routes
from interlink.a2a._methods import METHODS, HttpRule
from interlink.a2a.compat._v03 import METHOD_FROM_V03
from interlink.a2a.compat._v03_types import JSONRPCError

__all__ = [
    "HTTP_STATUS",
    "ROUTES",
    "RestCall",
    "RestRoute",
    "error_from_rest",
    "error_from_status",
    "find",
    "from_rest",
    "request_to_rest",
    "result_from_rest",
    "result_to_rest",
    "to_rest",
]


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
        return _object(value, shape).get(spec.field, {})
    given = _object(value, shape)
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


def _object(value: object, shape: str) -> dict[str, object]:
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
    given = _object(value, shape)
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


# ---------------------------------------------------------------------------- calls

Params = Callable[[dict[str, str], Mapping[str, list[str]], dict[str, object]], object]
"""The 0.3 JSON-RPC params of a call: from its path fields, query and body (decoded)."""


def _ids(fields: dict[str, str], query: Mapping[str, list[str]], body: object) -> object:
    return fields


def _get_task(fields: dict[str, str], query: Mapping[str, list[str]], body: object) -> object:
    """`historyLength` of the query; 0 (proto3's default) is "all", as absent."""
    length = (query.get("historyLength") or query.get("history_length") or [""])[-1]
    if not length:
        return fields
    try:
        number = int(length)
    except ValueError:
        raise ValueError(f"historyLength is not an integer: {length!r}") from None
    return {**fields, "historyLength": number} if number else fields


def _send(fields: dict[str, str], query: Mapping[str, list[str]], body: object) -> object:
    """The message and its configuration; `blocking` as the proto has it (absent: false)."""
    params = from_rest(body, "SendMessageRequest")
    assert isinstance(params, dict)
    if "configuration" not in params:
        params["configuration"] = from_rest({}, "SendMessageConfiguration")
    return params


def _set_config(fields: dict[str, str], query: Mapping[str, list[str]], body: object) -> object:
    """`CreateTaskPushNotificationConfigRequest`: the config of `config` (a
    `TaskPushNotificationConfig`), its `id` from `configId` when it names none; the task
    is the path's (`parent` is not read)."""
    given = _object(body, "CreateTaskPushNotificationConfigRequest")
    outer = _object(given.get("config") or {}, "TaskPushNotificationConfig")
    inner = outer.get("pushNotificationConfig") or outer.get("push_notification_config") or {}
    config = from_rest(inner, "PushNotificationConfig")
    assert isinstance(config, dict)
    config_id = given.get("configId") or given.get("config_id")
    if "id" not in config and isinstance(config_id, str) and config_id:
        config["id"] = config_id
    return {"taskId": fields["id"], "pushNotificationConfig": config}


Request = Callable[[dict[str, Any]], tuple[dict[str, str], list[tuple[str, str]], object]]
"""A call's path fields, query and body (None: none) from its 0.3 params: the inverse of
its `Params`, for a client."""


def _path_ids(params: dict[str, Any]) -> dict[str, str]:
    return {k: str(params[k]) for k in ("id", "pushNotificationConfigId") if k in params}


def _ids_out(params: dict[str, Any]) -> tuple[dict[str, str], list[tuple[str, str]], object]:
    return _path_ids(params), [], None


def _get_task_out(params: dict[str, Any]) -> tuple[dict[str, str], list[tuple[str, str]], object]:
    length = params.get("historyLength")
    return _path_ids(params), [] if length is None else [("historyLength", str(length))], None


def _cancel_out(params: dict[str, Any]) -> tuple[dict[str, str], list[tuple[str, str]], object]:
    """The proto's `CancelTaskRequest` names the task; `metadata` has no place in it."""
    return _path_ids(params), [], {"name": f"tasks/{params['id']}"}


def _send_out(params: dict[str, Any]) -> tuple[dict[str, str], list[tuple[str, str]], object]:
    """`blocking` always written: absent is true in 0.3 JSON, false in the proto."""
    config = {"blocking": True, **params.get("configuration", {})}
    return {}, [], to_rest({**params, "configuration": config}, "SendMessageRequest")


def _set_config_out(
    params: dict[str, Any],
) -> tuple[dict[str, str], list[tuple[str, str]], object]:
    """A `CreateTaskPushNotificationConfigRequest`: the task as `parent` (the official
    SDK's server reads it there), the config's id as `configId` and in its `name`."""
    task, config = str(params["taskId"]), params["pushNotificationConfig"]
    inner: dict[str, object] = {"pushNotificationConfig": to_rest(config, "PushNotificationConfig")}
    body: dict[str, object] = {"parent": f"tasks/{task}", "config": inner}
    if config.get("id"):
        body["configId"] = config["id"]
        inner["name"] = f"tasks/{task}/pushNotificationConfigs/{config['id']}"
    return {"id": task}, [], body


class RestRoute(NamedTuple):
    """A 0.3 route: the compiled route (its `method` the 1.0 method the call becomes),
    the 0.3 method it is, how its params are made, and how a client makes its request
    from them (None: a route the client does not use)."""

    route: _routes.Route
    method: str
    params: Params
    request: Request | None


_TASK = "/v1/tasks/{id}"
_CONFIGS = _TASK + "/pushNotificationConfigs"
_TABLE: Final[tuple[tuple[str, str, str, str, Params, Request | None], ...]] = (
    ("POST", "/v1/message:send", "*", "message/send", _send, _send_out),
    ("POST", "/v1/message:stream", "*", "message/stream", _send, _send_out),
    ("GET", _TASK, "", "tasks/get", _get_task, _get_task_out),
    ("POST", _TASK + ":cancel", "*", "tasks/cancel", _ids, _cancel_out),
    ("GET", _TASK + ":subscribe", "", "tasks/resubscribe", _ids, _ids_out),
    ("POST", _TASK + ":subscribe", "*", "tasks/resubscribe", _ids, None),  # (as 0.3's table has it)
    ("POST", _CONFIGS, "*", "tasks/pushNotificationConfig/set", _set_config, _set_config_out),
    ("GET", _CONFIGS, "", "tasks/pushNotificationConfig/list", _ids, _ids_out),
    ("GET", _CONFIGS + "/{push_notification_config_id}", "", "tasks/pushNotificationConfig/get",
     _ids, _ids_out),
    ("DELETE", _CONFIGS + "/{push_notification_config_id}", "",
     "tasks/pushNotificationConfig/delete", _ids, _ids_out),
    ("GET", "/v1/card", "", "agent/getAuthenticatedExtendedCard", _ids, _ids_out),
)  # fmt: skip
ROUTES: Final = tuple(
    RestRoute(
        _routes.Route.compile(
            METHODS[METHOD_FROM_V03[method]], HttpRule(verb, path, body), additional=False
        ),
        method,
        params,
        request,
    )
    for verb, path, body, method, params, request in _TABLE
)
"""Every 0.3 route."""
#: the route a client sends each 0.3 method to
_CLIENT_ROUTES: Final = {entry.method: entry for entry in ROUTES if entry.request is not None}
_ORDER: Final = sorted(ROUTES, key=lambda r: -r.route.literals)
#: the first segment of every 0.3 path (`v1`): a path under another is none of them, told
#: without matching each route (every HTTP+JSON request of 1.0 asks here first)
_FIRST: Final = frozenset(entry.route.segments[0] for entry in ROUTES)
"""The order `find` tries them in: the most literal first (`:cancel` before a task id)."""


def find(verb: str, path: str) -> tuple[RestRoute, dict[str, str]] | list[str] | None:
    """The 0.3 route of `verb path` and its path fields (named as the 0.3 params: `id`,
    `pushNotificationConfigId`); for a path of 0.3 routes of other verbs, those verbs;
    else None."""
    if None not in _FIRST and path[1:].partition("/")[0].partition(":")[0] not in _FIRST:
        return None
    verbs: set[str] = set()
    for entry in _ORDER:
        fields = entry.route.match(path)
        if fields is not None:
            if entry.route.rule.verb == verb:
                return entry, fields
            verbs.add(entry.route.rule.verb)
    return sorted(verbs) or None


#: the ProtoJSON shape of each 0.3 method's result ("" for one sent as it is)
_RESULTS: Final[Mapping[str, str]] = {
    "message/send": "StreamResponse",
    "message/stream": "StreamResponse",
    "tasks/resubscribe": "StreamResponse",
    "tasks/get": "Task",
    "tasks/cancel": "Task",
    "agent/getAuthenticatedExtendedCard": "",
}


def result_to_rest(method: str, result: object) -> object:
    """The 0.3 JSON-RPC result of `method` (builtins; one event of a stream) as the
    body of its REST answer: a push config named by its task and id, a list of them in
    `configs`, a delete's `{}`."""
    if method in _RESULTS:
        return to_rest(result, _RESULTS[method])
    if isinstance(result, list):
        return {"configs": [result_to_rest(method, config) for config in result]}
    if result is None:
        return {}
    given = _object(result, "TaskPushNotificationConfig")
    config = _object(given["pushNotificationConfig"], "PushNotificationConfig")
    name = f"tasks/{given['taskId']}/pushNotificationConfigs/{config.get('id', '')}"
    return {"name": name, "pushNotificationConfig": to_rest(config, "PushNotificationConfig")}


# ---------------------------------------------------------------------------- the client


class RestCall(NamedTuple):
    """The REST request of a 0.3 call: its verb, path (fields filled in, percent-encoded),
    query and body (decoded JSON; None for none)."""

    verb: str
    path: str
    query: tuple[tuple[str, str], ...]
    body: object


def request_to_rest(method: str, params: object) -> RestCall:
    """The 0.3 JSON-RPC call `method` with `params` (0.3 JSON as builtins; None for
    none) as the REST request of its route; a route with a body gets one (`{}` at
    least). KeyError for a method 0.3 does not have; ValueError for params without the
    fields its path needs."""
    entry = _CLIENT_ROUTES[method]
    assert entry.request is not None
    fields, query, body = entry.request({} if params is None else _object(params, method))
    try:
        path = entry.route.expand(fields)
    except KeyError as exc:
        raise ValueError(f"{method} over HTTP+JSON needs {exc.args[0]}") from None
    rule = entry.route.rule
    return RestCall(rule.verb, path, tuple(query), {} if body is None and rule.body else body)


#: a push config's name (a task id may hold a `/`, which the name does not escape; the
#: config's id is the last segment)
_CONFIG_NAME: Final = re.compile(
    r"tasks/(?P<task>.+)/pushNotificationConfigs/(?P<id>[^/]*)", re.DOTALL
)


def result_from_rest(method: str, body: object) -> object:
    """The body (decoded) of the REST answer to 0.3 `method` as its 0.3 JSON-RPC result
    (one event of a stream): the inverse of `result_to_rest`. A push config's task and
    id are read from its `name` (the id kept when the config gives none)."""
    if method in _RESULTS:
        shape = _RESULTS[method]
        return from_rest(body, shape) if shape else body
    given = _object(body, method)
    if method == "tasks/pushNotificationConfig/delete":
        return None
    if method == "tasks/pushNotificationConfig/list":
        configs = given.get("configs") or []
        if not isinstance(configs, list):
            raise ValueError(f"configs is a list, not {type(configs).__name__}")
        return [_config_in(config) for config in configs]
    return _config_in(given)


def _config_in(value: object) -> dict[str, object]:
    given = _object(value, "TaskPushNotificationConfig")
    name = given.get("name")
    named = _CONFIG_NAME.fullmatch(name) if isinstance(name, str) else None
    if named is None:
        raise ValueError(f"a push config is named tasks/ID/pushNotificationConfigs/ID: {name!r}")
    inner = given.get("pushNotificationConfig") or given.get("push_notification_config") or {}
    config = from_rest(inner, "PushNotificationConfig")
    assert isinstance(config, dict)
    if "id" not in config and named["id"]:
        config["id"] = named["id"]
    return {"taskId": named["task"], "pushNotificationConfig": config}


HTTP_STATUS: Final = {
    -32700: 400,
    -32600: 400,
    -32601: 404,
    -32602: 422,
    -32603: 500,
    -32001: 404,
    -32002: 409,
    -32003: 501,
    -32004: 501,
    -32005: 415,
    -32006: 502,
    -32007: 404,
    -32008: 400,  # (1.0's ExtensionSupportRequired and VersionNotSupported: the
    -32009: 400,  # request is refused as it is)
}
"""The HTTP status of each error code (the official 0.3 SDK's; 500 for another)."""
#: the code a status stands for (the first of `HTTP_STATUS` where several share it), and
#: where it stands for another code on one call's route
_CODES: Final = {
    400: -32600,
    404: -32001,
    409: -32002,
    415: -32005,
    422: -32602,
    500: -32603,
    501: -32004,
    502: -32006,
}
_CODES_OF_CALL: Final = {
    ("agent/getAuthenticatedExtendedCard", 404): -32007,
    **{
        (f"tasks/pushNotificationConfig/{call}", 501): -32003
        for call in ("set", "get", "list", "delete")
    },
}
_error = msgspec.json.Decoder(JSONRPCError)


class _Message(msgspec.Struct, forbid_unknown_fields=True):
    message: str


_message = msgspec.json.Decoder(_Message)


def error_from_rest(body: bytes) -> JSONRPCError | None:
    """The 0.3 error object `body` is (`{"code", "message", "data"}`, as our server answers
    and an `event: error` carries it); None for another body."""
    try:
        return _error.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def error_from_status(method: str, status: int, body: bytes) -> JSONRPCError | None:
    """The 0.3 error the official SDK's server means by `status` with a body of only
    `{"message"}` (`HTTP_STATUS` read back: 404 is TaskNotFound, but on `/v1/card`
    ExtendedAgentCardNotConfigured; 501 is UnsupportedOperation, but on the push
    config routes PushNotificationNotSupported), its message kept. None for another
    body (a 404 of a server without the route says `{"detail"}`, or is not JSON)."""
    code = _CODES_OF_CALL.get((method, status), _CODES.get(status))
    if code is None:
        return None
    try:
        message = _message.decode(body).message
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return JSONRPCError(code=code, message=message)
