"""A2A 0.3 <-> 1.0 at the edge: one translation each way for every object on the wire.

`*_to_v03` takes a 1.0 object of `interlink.a2a.types` and returns its 0.3 form (the
generated `_v03_types`); `*_from_v03` goes back. The request side is `request_from_v03`
(a 0.3 method and its params to the 1.0 method and request) with `result_to_v03`, and
for a client `request_to_v03` with `result_from_v03`; errors go through `error_to_v03`
and `error_from_v03`.

A field both versions have is copied by name; a 1.0 zero value (`""`, `[]`, none, false)
of a field 0.3 may leave out is written as absent. One rule for a field without a
counterpart, everywhere: it is dropped, and the side that needs a value gets the
protocol's default (the zero value in 1.0, absent in 0.3). The exceptions, each for a
reason given where it is made:

- 0.3 `final` is computed (true for terminal and interrupted states, where the 1.0
  stream ends) and dropped on the way in;
- 0.3 `blocking` absent means blocking (the 1.0 default, and what the 0.3 SDKs do); we
  always write it;
- a 0.3 timestamp without an offset is taken as UTC (1.0 requires one);
- 1.0 `data` parts that are not objects travel as `{"value": ...}` (0.3 data is an
  object) and a 0.3 object whose only key is `value` is unwrapped, as the official SDK
  does;
- 0.3 free-form error `data` travels in a `google.protobuf.Value` detail beside the
  `ErrorInfo` the code names, and a 1.0 `ErrorInfo` becomes `{"reason", "domain",
  "metadata"}` (other details in `"details"`), which comes back exactly;
- a 0.3 push config set without an `id` gets the task id, and a get without
  `pushNotificationConfigId` asks for that one (the 0.3 default).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, TypeVar, cast

import msgspec
from msgspec import UNSET, UnsetType

from interlink.a2a import _errors, _methods
from interlink.a2a import _types as t
from interlink.a2a._lifecycle import INTERRUPTED, TERMINAL
from interlink.a2a.compat import _v03_types as v
from interlink.jsonrpc import ErrorObject

__all__ = [
    "METHOD_FROM_V03",
    "METHOD_TO_V03",
    "artifact_from_v03",
    "artifact_to_v03",
    "artifact_update_from_v03",
    "artifact_update_to_v03",
    "card_from_v03",
    "card_to_v03",
    "error_from_v03",
    "error_to_v03",
    "message_from_v03",
    "message_to_v03",
    "part_from_v03",
    "part_to_v03",
    "push_config_from_v03",
    "push_config_to_v03",
    "request_from_v03",
    "request_to_v03",
    "result_from_v03",
    "result_to_v03",
    "send_params_from_v03",
    "send_params_to_v03",
    "state_from_v03",
    "state_to_v03",
    "status_from_v03",
    "status_to_v03",
    "status_update_from_v03",
    "status_update_to_v03",
    "stream_event_from_v03",
    "stream_event_to_v03",
    "task_from_v03",
    "task_to_v03",
]

VERSION: Final = "0.3"
"""A2A 0.3, as a request names it (Major.Minor)."""
PROTOCOL_VERSION: Final = "0.3.0"
VALUE: Final = "type.googleapis.com/google.protobuf.Value"

StreamEventV03 = v.Task | v.Message | v.TaskStatusUpdateEvent | v.TaskArtifactUpdateEvent


S = TypeVar("S", bound=msgspec.Struct)


def _same(src: msgspec.Struct, kind: type[S], **given: Any) -> S:
    """A `kind` with every field of `src` of the same Python name (the versions share
    them), `given` ones as they are. Into 0.3, a 1.0 zero value (`""`, `[]`, None, False)
    of an optional field is absent; into 1.0, an absent 0.3 field takes the 1.0 default."""
    into_v03 = kind.__module__ == v.__name__
    values = dict(given)
    for f in msgspec.structs.fields(kind):
        if f.name in given or not hasattr(src, f.name):
            continue
        value = getattr(src, f.name)
        if into_v03 and not f.required and _is_zero(value):
            continue
        if value is not UNSET or into_v03:
            values[f.name] = value
    return kind(**values)


def _is_zero(value: object) -> bool:
    return value is None or value is False or (isinstance(value, str | list) and not value)


def _list(value: Sequence[Any]) -> list[Any] | UnsetType:
    return list(value) if value else UNSET


def _or(value: Any, default: Any) -> Any:
    return default if value is UNSET else value


# ---------------------------------------------------------------------------- enums

_STATES: Final = {
    t.TaskState.TASK_STATE_UNSPECIFIED: v.TaskState.UNKNOWN,
    t.TaskState.TASK_STATE_SUBMITTED: v.TaskState.SUBMITTED,
    t.TaskState.TASK_STATE_WORKING: v.TaskState.WORKING,
    t.TaskState.TASK_STATE_COMPLETED: v.TaskState.COMPLETED,
    t.TaskState.TASK_STATE_FAILED: v.TaskState.FAILED,
    t.TaskState.TASK_STATE_CANCELED: v.TaskState.CANCELED,
    t.TaskState.TASK_STATE_INPUT_REQUIRED: v.TaskState.INPUT_REQUIRED,
    t.TaskState.TASK_STATE_REJECTED: v.TaskState.REJECTED,
    t.TaskState.TASK_STATE_AUTH_REQUIRED: v.TaskState.AUTH_REQUIRED,
}
_STATES_BACK: Final = {old: new for new, old in _STATES.items()}
#: The states after which a 1.0 stream ends: 0.3 marks their event `final`.
FINAL_STATES: Final = TERMINAL | INTERRUPTED
_ROLES: Final = {t.Role.ROLE_USER: v.Role.USER, t.Role.ROLE_AGENT: v.Role.AGENT}
_ROLES_BACK: Final = {old: new for new, old in _ROLES.items()}


def state_to_v03(state: t.TaskState) -> v.TaskState:
    """`TASK_STATE_UNSPECIFIED` is 0.3 `unknown`; the others keep their name."""
    return _STATES[state]


def state_from_v03(state: v.TaskState) -> t.TaskState:
    return _STATES_BACK[state]


# ---------------------------------------------------------------------------- content


def part_to_v03(part: t.Part) -> v.Part:
    """`text` -> TextPart, `raw`/`url` -> FilePart (bytes as base64, `mediaType` ->
    `mimeType`, `filename` -> `name`), `data` -> DataPart (a non-object as
    `{"value": ...}`). `mediaType`/`filename` of text and data parts are dropped."""
    meta = UNSET if part.metadata is None else part.metadata
    if part.text is not UNSET:
        return v.TextPart(text=part.text, metadata=meta)
    if part.data is not UNSET:
        data = part.data if isinstance(part.data, dict) else {"value": part.data}
        return v.DataPart(data=data, metadata=meta)
    mime, name = part.media_type or UNSET, part.filename or UNSET
    if part.raw is not UNSET:
        raw = base64.b64encode(part.raw).decode("ascii")
        return v.FilePart(file=v.FilePartFile(bytes=raw, mime_type=mime, name=name), metadata=meta)
    if part.url is not UNSET:
        file = v.FilePartFile(uri=part.url, mime_type=mime, name=name)
        return v.FilePart(file=file, metadata=meta)
    raise ValueError("a part without content (text, raw, url or data) has no 0.3 form")


def part_from_v03(part: v.Part) -> t.Part:
    """The inverse of `part_to_v03`; base64 that does not decode is a ValueError."""
    meta = _or(part.metadata, None)
    if isinstance(part, v.TextPart):
        return t.Part(text=part.text, metadata=meta)
    if isinstance(part, v.DataPart):
        data = part.data
        return t.Part(data=data["value"] if data.keys() == {"value"} else data, metadata=meta)
    file = part.file
    mime, name = _or(file.mime_type, ""), _or(file.name, "")
    if file.uri is not UNSET:
        return t.Part(url=file.uri, media_type=mime, filename=name, metadata=meta)
    try:
        raw = base64.b64decode(_or(file.bytes, ""), validate=True)
    except binascii.Error as exc:
        raise ValueError(f"file.bytes is not base64: {exc}") from None
    return t.Part(raw=raw, media_type=mime, filename=name, metadata=meta)


def message_to_v03(message: t.Message) -> v.Message:
    """A message needs a role in 0.3: `ROLE_UNSPECIFIED` is a ValueError."""
    if message.role not in _ROLES:
        raise ValueError("a message without a role has no 0.3 form")
    parts = [part_to_v03(p) for p in message.parts]
    return _same(message, v.Message, role=_ROLES[message.role], parts=parts)


def message_from_v03(message: v.Message) -> t.Message:
    parts = [part_from_v03(p) for p in message.parts]
    return _same(message, t.Message, role=_ROLES_BACK[message.role], parts=parts)


def artifact_to_v03(artifact: t.Artifact) -> v.Artifact:
    return _same(artifact, v.Artifact, parts=[part_to_v03(p) for p in artifact.parts])


def artifact_from_v03(artifact: v.Artifact) -> t.Artifact:
    return _same(artifact, t.Artifact, parts=[part_from_v03(p) for p in artifact.parts])


# ---------------------------------------------------------------------------- tasks


def _timestamp_to_v03(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _timestamp_from_v03(value: str) -> datetime:
    """ISO 8601; a timestamp without an offset is taken as UTC (0.3 does not require one)."""
    parsed = datetime.fromisoformat(value)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def status_to_v03(status: t.TaskStatus) -> v.TaskStatus:
    return v.TaskStatus(
        state=state_to_v03(status.state),
        message=UNSET if status.message is None else message_to_v03(status.message),
        timestamp=UNSET if status.timestamp is None else _timestamp_to_v03(status.timestamp),
    )


def status_from_v03(status: v.TaskStatus) -> t.TaskStatus:
    return t.TaskStatus(
        state=state_from_v03(status.state),
        message=None if status.message is UNSET else message_from_v03(status.message),
        timestamp=None if status.timestamp is UNSET else _timestamp_from_v03(status.timestamp),
    )


def task_to_v03(task: t.Task) -> v.Task:
    return _same(
        task,
        v.Task,
        status=status_to_v03(task.status),
        artifacts=_list([artifact_to_v03(a) for a in task.artifacts]),
        history=_list([message_to_v03(m) for m in task.history]),
    )


def task_from_v03(task: v.Task) -> t.Task:
    return _same(
        task,
        t.Task,
        status=status_from_v03(task.status),
        artifacts=[artifact_from_v03(a) for a in _or(task.artifacts, [])],
        history=[message_from_v03(m) for m in _or(task.history, [])],
    )


def status_update_to_v03(
    event: t.TaskStatusUpdateEvent, *, final: bool | None = None
) -> v.TaskStatusUpdateEvent:
    """`final` is true for the states after which a 1.0 stream ends (`FINAL_STATES`:
    terminal and interrupted), unless the caller says otherwise."""
    final = event.status.state in FINAL_STATES if final is None else final
    return _same(event, v.TaskStatusUpdateEvent, status=status_to_v03(event.status), final=final)


def status_update_from_v03(event: v.TaskStatusUpdateEvent) -> t.TaskStatusUpdateEvent:
    """`final` is dropped: in 1.0 the end of the stream says it."""
    return _same(event, t.TaskStatusUpdateEvent, status=status_from_v03(event.status))


def artifact_update_to_v03(event: t.TaskArtifactUpdateEvent) -> v.TaskArtifactUpdateEvent:
    """`append` and `lastChunk` are written when true (absent is false in 0.3)."""
    return _same(event, v.TaskArtifactUpdateEvent, artifact=artifact_to_v03(event.artifact))


def artifact_update_from_v03(event: v.TaskArtifactUpdateEvent) -> t.TaskArtifactUpdateEvent:
    return _same(event, t.TaskArtifactUpdateEvent, artifact=artifact_from_v03(event.artifact))


def stream_event_to_v03(event: t.StreamResponse | t.SendMessageResponse) -> StreamEventV03:
    """A `StreamResponse` (or `SendMessageResponse`) member as the 0.3 `kind`-tagged object."""
    if event.task is not UNSET:
        return task_to_v03(event.task)
    if event.message is not UNSET:
        return message_to_v03(event.message)
    if isinstance(event, t.StreamResponse):
        if event.status_update is not UNSET:
            return status_update_to_v03(event.status_update)
        if event.artifact_update is not UNSET:
            return artifact_update_to_v03(event.artifact_update)
    raise ValueError("an empty stream response has no 0.3 form")


def stream_event_from_v03(event: StreamEventV03) -> t.StreamResponse:
    if isinstance(event, v.Task):
        return t.StreamResponse(task=task_from_v03(event))
    if isinstance(event, v.Message):
        return t.StreamResponse(message=message_from_v03(event))
    if isinstance(event, v.TaskStatusUpdateEvent):
        return t.StreamResponse(status_update=status_update_from_v03(event))
    return t.StreamResponse(artifact_update=artifact_update_from_v03(event))


def _send_result_from_v03(result: v.Task | v.Message) -> t.SendMessageResponse:
    if isinstance(result, v.Task):
        return t.SendMessageResponse(task=task_from_v03(result))
    return t.SendMessageResponse(message=message_from_v03(result))


# ---------------------------------------------------------------------------- push configs


def _push_to_v03(config: t.TaskPushNotificationConfig) -> v.PushNotificationConfig:
    auth = config.authentication
    return _same(
        config,
        v.PushNotificationConfig,
        authentication=UNSET
        if auth is None
        else _same(
            auth, v.PushNotificationAuthenticationInfo, schemes=[auth.scheme][: bool(auth.scheme)]
        ),
    )


def _push_from_v03(config: v.PushNotificationConfig, task_id: str) -> t.TaskPushNotificationConfig:
    """0.3 `schemes` beyond the first are dropped (1.0 has one `scheme`)."""
    auth = config.authentication
    scheme = "" if auth is UNSET or not auth.schemes else auth.schemes[0]
    return _same(
        config,
        t.TaskPushNotificationConfig,
        task_id=task_id,
        authentication=None if auth is UNSET else _same(auth, t.AuthenticationInfo, scheme=scheme),
    )


def push_config_to_v03(config: t.TaskPushNotificationConfig) -> v.TaskPushNotificationConfig:
    """The flat 1.0 config nested under `pushNotificationConfig`; `tenant` is dropped."""
    return v.TaskPushNotificationConfig(
        task_id=config.task_id, push_notification_config=_push_to_v03(config)
    )


def push_config_from_v03(config: v.TaskPushNotificationConfig) -> t.TaskPushNotificationConfig:
    """A config without an `id` gets the task id (0.3's default, which `get` without a
    `pushNotificationConfigId` then finds)."""
    new = _push_from_v03(config.push_notification_config, config.task_id)
    return new if new.id else msgspec.structs.replace(new, id=config.task_id)


# ---------------------------------------------------------------------------- requests


def send_params_to_v03(request: t.SendMessageRequest) -> v.MessageSendParams:
    """`returnImmediately` -> `blocking` (always written); `tenant` is dropped."""
    config = request.configuration
    push = None if config is None else config.task_push_notification_config
    return _same(
        request,
        v.MessageSendParams,
        message=message_to_v03(request.message),
        configuration=UNSET
        if config is None
        else _same(
            config,
            v.MessageSendConfiguration,
            blocking=not config.return_immediately,
            push_notification_config=UNSET if push is None else _push_to_v03(push),
        ),
    )


def send_params_from_v03(params: v.MessageSendParams) -> t.SendMessageRequest:
    """Absent `blocking` is blocking; a push config gets the message's `taskId`."""
    config = params.configuration
    message = message_from_v03(params.message)
    push = UNSET if config is UNSET else config.push_notification_config
    return _same(
        params,
        t.SendMessageRequest,
        message=message,
        configuration=None
        if config is UNSET
        else _same(
            config,
            t.SendMessageConfiguration,
            task_push_notification_config=None
            if push is UNSET
            else _push_from_v03(push, message.task_id),
            return_immediately=not _or(config.blocking, True),
        ),
    )


# Each entry: 1.0 method, the 0.3 params -> 1.0 request, the 1.0 request -> 0.3 params.
# `metadata` of 0.3 params the 1.0 request lacks (get, resubscribe, push configs) and the
# 1.0 `tenant`, list paging and `pageSize` are dropped.
_Conv = tuple[str, Callable[[Any], msgspec.Struct], Callable[[Any], Any]]
_REQUESTS: Final[dict[str, _Conv]] = {
    "message/send": ("SendMessage", send_params_from_v03, send_params_to_v03),
    "message/stream": ("SendStreamingMessage", send_params_from_v03, send_params_to_v03),
    "tasks/get": (
        "GetTask",
        lambda p: _same(p, t.GetTaskRequest),
        lambda r: _same(r, v.TaskQueryParams),
    ),
    "tasks/cancel": (
        "CancelTask",
        lambda p: _same(p, t.CancelTaskRequest),
        lambda r: _same(r, v.TaskIdParams),
    ),
    "tasks/resubscribe": (
        "SubscribeToTask",
        lambda p: _same(p, t.SubscribeToTaskRequest),
        lambda r: _same(r, v.TaskIdParams),
    ),
    "tasks/pushNotificationConfig/set": (
        "CreateTaskPushNotificationConfig",
        push_config_from_v03,
        push_config_to_v03,
    ),
    "tasks/pushNotificationConfig/get": (
        "GetTaskPushNotificationConfig",
        lambda p: t.GetTaskPushNotificationConfigRequest(
            task_id=p.id, id=_or(p.push_notification_config_id, p.id)
        ),
        lambda r: v.GetTaskPushNotificationConfigParams(
            id=r.task_id, push_notification_config_id=r.id
        ),
    ),
    "tasks/pushNotificationConfig/list": (
        "ListTaskPushNotificationConfigs",
        lambda p: t.ListTaskPushNotificationConfigsRequest(task_id=p.id),
        lambda r: v.ListTaskPushNotificationConfigParams(id=r.task_id),
    ),
    "tasks/pushNotificationConfig/delete": (
        "DeleteTaskPushNotificationConfig",
        lambda p: t.DeleteTaskPushNotificationConfigRequest(
            task_id=p.id, id=p.push_notification_config_id
        ),
        lambda r: v.DeleteTaskPushNotificationConfigParams(
            id=r.task_id, push_notification_config_id=r.id
        ),
    ),
    "agent/getAuthenticatedExtendedCard": (
        "GetExtendedAgentCard",
        lambda _p: t.GetExtendedAgentCardRequest(),
        lambda _r: None,
    ),
}
METHOD_FROM_V03: Final = {old: conv[0] for old, conv in _REQUESTS.items()}
"""0.3 JSON-RPC method -> 1.0 method. `ListTasks` has no 0.3 counterpart."""
METHOD_TO_V03: Final = {new: old for old, new in METHOD_FROM_V03.items()}
"""1.0 method -> 0.3 JSON-RPC method."""


def request_from_v03(
    method: str, params: object
) -> tuple[_methods.Method[msgspec.Struct, msgspec.Struct], msgspec.Struct]:
    """A 0.3 call as the 1.0 method and its request. `params` is the decoded JSON
    (`msgspec.json.decode(raw)`) or None; KeyError for a method 0.3 does not have,
    `msgspec.ValidationError` (a ValueError) for params that are not its 0.3 shape."""
    new, from_v03, _ = _REQUESTS[method]
    spec = v.METHODS[method]
    decoded = None if spec.params is None else msgspec.convert(params, spec.params)
    return _methods.METHODS[new], from_v03(decoded)


def request_to_v03(method: str, request: msgspec.Struct) -> tuple[str, object]:
    """A 1.0 request as the 0.3 method and its params (a 0.3 Struct, or None); KeyError
    for `ListTasks`, which 0.3 does not have."""
    old = METHOD_TO_V03[method]
    return old, _REQUESTS[old][2](request)


def result_to_v03(method: str, result: object) -> object:
    """The result of 1.0 `method` (or one event of a stream) as the 0.3 result: send and
    stream results become `kind`-tagged objects, a push-config page its list of configs
    (`nextPageToken` is dropped: a server answering 0.3 gathers every page), delete None."""
    if isinstance(result, t.SendMessageResponse | t.StreamResponse):
        return stream_event_to_v03(result)
    if isinstance(result, t.Task):
        return task_to_v03(result)
    if isinstance(result, t.TaskPushNotificationConfig):
        return push_config_to_v03(result)
    if isinstance(result, t.ListTaskPushNotificationConfigsResponse):
        return [push_config_to_v03(c) for c in result.configs]
    if isinstance(result, t.AgentCard):
        return card_to_v03(result)
    if result is None or isinstance(result, t.Empty):
        return None
    raise TypeError(f"{method}: no 0.3 form for a {type(result).__name__} result")


def result_from_v03(method: str, result: object) -> object:
    """The result of 0.3 `method` (decoded JSON) as the 1.0 result type of its method."""
    typed = msgspec.convert(result, v.METHODS[method].result)
    if method == "message/send":
        return _send_result_from_v03(typed)
    if v.METHODS[method].streaming:
        return stream_event_from_v03(typed)
    if isinstance(typed, v.Task):
        return task_from_v03(typed)
    if isinstance(typed, v.TaskPushNotificationConfig):
        return push_config_from_v03(typed)
    if isinstance(typed, list):
        configs = [push_config_from_v03(c) for c in typed]
        return t.ListTaskPushNotificationConfigsResponse(configs=configs)
    if isinstance(typed, v.AgentCard):
        return card_from_v03(typed)
    return t.Empty()


# ---------------------------------------------------------------------------- errors

#: ErrorInfo reasons by code: the A2A errors and invalid params.
_REASONS: Final = {
    **{cls.CODE: cls.REASON for cls in _errors.A2AError.__subclasses__()},
    _errors.A2AInvalidParams.CODE: "INVALID_PARAMS",
}


def error_to_v03(error: ErrorObject) -> v.JSONRPCError:
    """Same code and message (-32008 and -32009, new in 1.0, keep theirs). `data` that is
    a list of details: a `Value` detail after at most an `ErrorInfo` (what
    `error_from_v03` makes of free-form data) is unwrapped; one that starts with an
    `ErrorInfo` becomes `{"reason", "domain", "metadata"}` plus `"details"` for the rest.
    Other data passes as it is."""
    data, kinds = error.data, _detail_types(error.data)
    details = cast("list[dict[str, object]]", error.data)
    if kinds and kinds[-1] == VALUE and kinds[:-1] in ([], [_errors.ERROR_INFO]):
        data = details[-1].get("value")
    elif kinds and kinds[0] == _errors.ERROR_INFO:
        first, *rest = details
        info: dict[str, object] = {k: first[k] for k in _INFO_KEYS if k in first}
        data = {**info, "details": rest} if rest else info
    return v.JSONRPCError(code=error.code, message=error.message, data=data)


_INFO_KEYS: Final = ("reason", "domain", "metadata")


def _detail_types(data: object) -> list[object]:
    """The `@type` of each detail when `data` is a non-empty list of them, else []."""
    if not isinstance(data, list) or not all(isinstance(d, dict) and "@type" in d for d in data):
        return []
    return [d["@type"] for d in data]


def error_from_v03(error: v.JSONRPCError) -> ErrorObject:
    """The inverse of `error_to_v03`: `{"reason", "domain": "a2a-protocol.org", ...}` is
    rebuilt as the `ErrorInfo` it was; other free-form data is carried in a
    `google.protobuf.Value` detail after the `ErrorInfo` the code names (none for a code
    without a reason, then the `Value` alone)."""
    data = error.data
    if isinstance(data, Mapping) and data.get("domain") == _errors.DOMAIN and "reason" in data:
        info = {"@type": _errors.ERROR_INFO, **{k: data[k] for k in _INFO_KEYS if k in data}}
        return ErrorObject(error.code, error.message, [info, *data.get("details", [])])
    reason = _REASONS.get(error.code)
    head = [] if reason is None else _errors.error_info(reason)
    if data is UNSET:
        return ErrorObject(error.code, error.message, head or UNSET)
    return ErrorObject(error.code, error.message, [*head, {"@type": VALUE, "value": data}])


# ---------------------------------------------------------------------------- agent card


def _scheme_to_v03(scheme: t.SecurityScheme) -> v.SecurityScheme | None:
    """One 1.0 scheme, None for one without a member; OAuth `deviceCode` and
    `pkceRequired` are dropped (a scheme with only a device-code flow keeps empty
    `flows`)."""
    s = scheme.scheme
    if isinstance(s, t.APIKeySecurityScheme):
        return _same(s, v.APIKeySecurityScheme, in_=v.In(s.location))
    if isinstance(s, t.OAuth2SecurityScheme):
        f = s.flows
        flows = {n: _same(x, old) for n, old, _ in _FLOWS if (x := getattr(f, n)) is not UNSET}
        return _same(s, v.OAuth2SecurityScheme, flows=v.OAuthFlows(**flows))
    for new, old, _ in _SCHEMES:
        if isinstance(s, new):
            return cast("v.SecurityScheme", _same(s, old))
    return None


def _scheme_from_v03(scheme: v.SecurityScheme) -> t.SecurityScheme:
    """1.0 allows one OAuth flow: the first set of authorizationCode,
    clientCredentials, implicit, password is kept, the others are dropped."""
    if isinstance(scheme, v.APIKeySecurityScheme):
        key = _same(scheme, t.APIKeySecurityScheme, location=scheme.in_.value)
        return t.SecurityScheme(api_key_security_scheme=key)
    if isinstance(scheme, v.OAuth2SecurityScheme):
        f = scheme.flows
        flows = [{n: _same(x, new)} for n, _, new in _FLOWS if (x := getattr(f, n)) is not UNSET]
        oauth = _same(scheme, t.OAuth2SecurityScheme, flows=t.OAuthFlows(**(flows or [{}])[0]))
        return t.SecurityScheme(oauth2_security_scheme=oauth)
    new, _, member = next(entry for entry in _SCHEMES if isinstance(scheme, entry[1]))
    return t.SecurityScheme(**{member: _same(scheme, new)})


#: (field of OAuthFlows, its 0.3 type, its 1.0 type)
_FLOWS: Final[tuple[tuple[str, type[Any], type[Any]], ...]] = (
    ("authorization_code", v.AuthorizationCodeOAuthFlow, t.AuthorizationCodeOAuthFlow),
    ("client_credentials", v.ClientCredentialsOAuthFlow, t.ClientCredentialsOAuthFlow),
    ("implicit", v.ImplicitOAuthFlow, t.ImplicitOAuthFlow),
    ("password", v.PasswordOAuthFlow, t.PasswordOAuthFlow),
)
#: (1.0 scheme, 0.3 scheme, member of the 1.0 SecurityScheme) for those that map 1:1
_SCHEMES: Final[tuple[tuple[type[Any], type[Any], str], ...]] = (
    (t.HTTPAuthSecurityScheme, v.HTTPAuthSecurityScheme, "http_auth_security_scheme"),
    (
        t.OpenIdConnectSecurityScheme,
        v.OpenIdConnectSecurityScheme,
        "open_id_connect_security_scheme",
    ),
    (t.MutualTlsSecurityScheme, v.MutualTLSSecurityScheme, "mtls_security_scheme"),
)


def _requirements_to_v03(reqs: Sequence[t.SecurityRequirement]) -> list[dict[str, list[str]]]:
    return [{name: list(scopes.list) for name, scopes in r.schemes.items()} for r in reqs]


def _requirements_from_v03(
    reqs: list[dict[str, list[str]]] | UnsetType,
) -> list[t.SecurityRequirement]:
    return [
        t.SecurityRequirement(schemes={n: t.StringList(list=s) for n, s in r.items()})
        for r in _or(reqs, [])
    ]


def card_to_v03(card: t.AgentCard) -> v.AgentCard:
    """The 0.3 card. Its interfaces are those of `supportedInterfaces` whose
    `protocolVersion` is 0.3 (all of them when none is): the first gives `url` and
    `preferredTransport`, and when there are several, `additionalInterfaces` lists them
    all, the first included (0.3 §5.6); `tenant` is dropped. `protocolVersion` is
    "0.3.0", `supportsAuthenticatedExtendedCard` is `capabilities.extendedAgentCard`;
    schemes with no 0.3 form are dropped (see `_scheme_to_v03`)."""
    old = [i for i in card.supported_interfaces if i.protocol_version.startswith("0.3")]
    interfaces = old or list(card.supported_interfaces)
    if not interfaces:
        raise ValueError("a card without interfaces has no 0.3 form (0.3 requires `url`)")
    caps = card.capabilities
    schemes = {n: _scheme_to_v03(s) for n, s in card.security_schemes.items()}
    return _same(
        card,
        v.AgentCard,
        url=interfaces[0].url,
        preferred_transport=interfaces[0].protocol_binding,
        additional_interfaces=UNSET
        if len(interfaces) == 1
        else [v.AgentInterface(url=i.url, transport=i.protocol_binding) for i in interfaces],
        protocol_version=PROTOCOL_VERSION,
        provider=UNSET if card.provider is None else _same(card.provider, v.AgentProvider),
        capabilities=_same(
            caps,
            v.AgentCapabilities,
            extensions=_list([_same(e, v.AgentExtension) for e in caps.extensions]),
        ),
        security_schemes={n: s for n, s in schemes.items() if s is not None} or UNSET,
        security=_list(_requirements_to_v03(card.security_requirements)),
        skills=[
            _same(s, v.AgentSkill, security=_list(_requirements_to_v03(s.security_requirements)))
            for s in card.skills
        ],
        supports_authenticated_extended_card=caps.extended_agent_card,
        signatures=_list([_same(s, v.AgentCardSignature) for s in card.signatures]),
    )


def card_from_v03(card: v.AgentCard) -> t.AgentCard:
    """`url`/`preferredTransport` (JSONRPC when absent) then each other entry of
    `additionalInterfaces` become `supportedInterfaces`, all with the card's
    `protocolVersion`; `stateTransitionHistory` is dropped."""
    first = (card.url, _or(card.preferred_transport, v.TransportProtocol.JSONRPC.value))
    others = [(i.url, i.transport) for i in _or(card.additional_interfaces, [])]
    caps = card.capabilities
    return _same(
        card,
        t.AgentCard,
        supported_interfaces=[
            t.AgentInterface(url=u, protocol_binding=b, protocol_version=card.protocol_version)
            for u, b in [first, *(pair for pair in others if pair != first)]
        ],
        provider=None if card.provider is UNSET else _same(card.provider, t.AgentProvider),
        capabilities=_same(
            caps,
            t.AgentCapabilities,
            extended_agent_card=card.supports_authenticated_extended_card,
            extensions=[_same(e, t.AgentExtension) for e in _or(caps.extensions, [])],
        ),
        security_schemes={
            n: _scheme_from_v03(s) for n, s in _or(card.security_schemes, {}).items()
        },
        security_requirements=_requirements_from_v03(card.security),
        skills=[
            _same(s, t.AgentSkill, security_requirements=_requirements_from_v03(s.security))
            for s in card.skills
        ],
        signatures=[_same(s, t.AgentCardSignature) for s in _or(card.signatures, [])],
    )
