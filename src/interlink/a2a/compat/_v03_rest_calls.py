"""A2A 0.3 over HTTP+JSON: its calls, both ways, on the bodies of `_v03_rest`.

A server carries a REST call out as the 0.3 JSON-RPC call it is (`ROUTES` and `find`:
the 0.3 method, its params from the path, query and body; `result_to_rest` for the
answer), so one translation to 1.0 serves both bindings. A client goes the other way on
the same table: `request_to_rest` makes the request of a 0.3 call (as the official SDKs'
clients send it), `result_from_rest` reads its answer back as the 0.3 JSON-RPC result,
and `error_from_rest` / `error_from_status` its error (`{"code", "message", "data"}` as
ours answers; the official SDK's server answers `{"message"}` and the status of
`HTTP_STATUS`, read back by the call it answers).

Every function raises `ValueError` for input that is not of its shape (a server answers
-32602).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final, NamedTuple

import msgspec

from interlink.a2a import _routes
from interlink.a2a._methods import METHODS, HttpRule
from interlink.a2a.compat._v03 import METHOD_FROM_V03
from interlink.a2a.compat._v03_rest import from_rest, object_of, to_rest
from interlink.a2a.compat._v03_types import JSONRPCError

__all__ = [
    "HTTP_STATUS",
    "ROUTES",
    "RestCall",
    "RestRoute",
    "error_from_rest",
    "error_from_status",
    "find",
    "request_to_rest",
    "result_from_rest",
    "result_to_rest",
]


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
    given = object_of(body, "CreateTaskPushNotificationConfigRequest")
    outer = object_of(given.get("config") or {}, "TaskPushNotificationConfig")
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
"""The order `find` tries them in: the most literal first (`:cancel` before a task id)."""
#: the first segment of every 0.3 path (`v1`): a path under another is none of them, told
#: without matching each route (every HTTP+JSON request of 1.0 asks here first)
_FIRST: Final = frozenset(entry.route.segments[0] for entry in ROUTES)
#: what every 0.3 path begins with (`/v1`): one `startswith` tells most 1.0 paths apart
_STARTS: Final = tuple(sorted(f"/{first}" for first in _FIRST)) if None not in _FIRST else ("",)


def find(verb: str, path: str) -> tuple[RestRoute, dict[str, str]] | list[str] | None:
    """The 0.3 route of `verb path` and its path fields (named as the 0.3 params: `id`,
    `pushNotificationConfigId`); for a path of 0.3 routes of other verbs, those verbs;
    else None."""
    if not path.startswith(_STARTS):
        return None
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
    given = object_of(result, "TaskPushNotificationConfig")
    config = object_of(given["pushNotificationConfig"], "PushNotificationConfig")
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
    fields, query, body = entry.request({} if params is None else object_of(params, method))
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
    given = object_of(body, method)
    if method == "tasks/pushNotificationConfig/delete":
        return None
    if method == "tasks/pushNotificationConfig/list":
        configs = given.get("configs") or []
        if not isinstance(configs, list):
            raise ValueError(f"configs is a list, not {type(configs).__name__}")
        return [_config_in(config) for config in configs]
    return _config_in(given)


def _config_in(value: object) -> dict[str, object]:
    given = object_of(value, "TaskPushNotificationConfig")
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
