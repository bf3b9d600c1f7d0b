"""A2A 0.3 <-> 1.0 at the edge: one translation each way for every object on the wire.

`*_to_v03` takes a 1.0 object of `interlink.a2a.types` and returns its 0.3 form (the
generated `_v03_types`); `*_from_v03` goes back. The request side is `request_from_v03`
(a 0.3 method and its params to the 1.0 method and request) with `result_to_v03`, and
for a client `request_to_v03` with `result_from_v03`; errors go through `error_to_v03`
and `error_from_v03`.

One rule for a field without a counterpart, everywhere: it is dropped, and the side that
needs a value gets the protocol's default (the zero value in 1.0, absent in 0.3). The
exceptions, each for a reason given where it is made:

- 0.3 `final` is computed (true for terminal and interrupted states, where the 1.0
  stream ends) and dropped on the way in;
- 0.3 `blocking` absent means blocking (the 1.0 default, and what the 0.3 SDKs do);
- 1.0 `data` parts that are not objects travel as `{"value": ...}` (0.3 data is an
  object) and a 0.3 object whose only key is `value` is unwrapped, as the official SDK
  does;
- 0.3 free-form error `data` travels in a `google.protobuf.Value` detail beside the
  `ErrorInfo` the code names, and a 1.0 `ErrorInfo` becomes `{"reason", "domain",
  "metadata"}` (other details in `"details"`), which comes back exactly;
- a 0.3 push config without `pushNotificationConfigId` names the config whose id is the
  task id (the 0.3 default for a config set without an id).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, cast

import msgspec
from msgspec import UNSET, UnsetType

from interlink.a2a import _errors, _methods
from interlink.a2a import _types as t
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

PROTOCOL_VERSION: Final = "0.3.0"
VALUE: Final = "type.googleapis.com/google.protobuf.Value"

StreamEventV03 = v.Task | v.Message | v.TaskStatusUpdateEvent | v.TaskArtifactUpdateEvent


def _opt(value: str) -> str | UnsetType:
    return value if value else UNSET


def _list(value: Sequence[Any]) -> list[Any] | UnsetType:
    return list(value) if value else UNSET


def _meta(value: dict[str, object] | None) -> dict[str, object] | UnsetType:
    return UNSET if value is None else value


def _meta10(value: dict[str, object] | UnsetType) -> dict[str, object] | None:
    return None if value is UNSET else value


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
FINAL_STATES: Final = frozenset(
    {
        t.TaskState.TASK_STATE_COMPLETED,
        t.TaskState.TASK_STATE_FAILED,
        t.TaskState.TASK_STATE_CANCELED,
        t.TaskState.TASK_STATE_REJECTED,
        t.TaskState.TASK_STATE_INPUT_REQUIRED,
        t.TaskState.TASK_STATE_AUTH_REQUIRED,
    }
)
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
    meta = _meta(part.metadata)
    if part.text is not UNSET:
        return v.TextPart(text=part.text, metadata=meta)
    if part.data is not UNSET:
        data = part.data if isinstance(part.data, dict) else {"value": part.data}
        return v.DataPart(data=data, metadata=meta)
    mime, name = _opt(part.media_type), _opt(part.filename)
    if part.raw is not UNSET:
        raw = base64.b64encode(part.raw).decode("ascii")
        return v.FilePart(file=v.FilePartFile(bytes=raw, mime_type=mime, name=name), metadata=meta)
    if part.url is not UNSET:
        file = v.FilePartFile(uri=part.url, mime_type=mime, name=name)
        return v.FilePart(file=file, metadata=meta)
    raise ValueError("a part without content (text, raw, url or data) has no 0.3 form")


def part_from_v03(part: v.Part) -> t.Part:
    """The inverse of `part_to_v03`; base64 that does not decode is a ValueError."""
    meta = _meta10(part.metadata)
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
    return v.Message(
        message_id=message.message_id,
        context_id=_opt(message.context_id),
        task_id=_opt(message.task_id),
        role=_ROLES[message.role],
        parts=[part_to_v03(p) for p in message.parts],
        metadata=_meta(message.metadata),
        extensions=_list(message.extensions),
        reference_task_ids=_list(message.reference_task_ids),
    )


def message_from_v03(message: v.Message) -> t.Message:
    return t.Message(
        message_id=message.message_id,
        context_id=_or(message.context_id, ""),
        task_id=_or(message.task_id, ""),
        role=_ROLES_BACK[message.role],
        parts=[part_from_v03(p) for p in message.parts],
        metadata=_meta10(message.metadata),
        extensions=_or(message.extensions, []),
        reference_task_ids=_or(message.reference_task_ids, []),
    )


def artifact_to_v03(artifact: t.Artifact) -> v.Artifact:
    return v.Artifact(
        artifact_id=artifact.artifact_id,
        name=_opt(artifact.name),
        description=_opt(artifact.description),
        parts=[part_to_v03(p) for p in artifact.parts],
        metadata=_meta(artifact.metadata),
        extensions=_list(artifact.extensions),
    )


def artifact_from_v03(artifact: v.Artifact) -> t.Artifact:
    return t.Artifact(
        artifact_id=artifact.artifact_id,
        name=_or(artifact.name, ""),
        description=_or(artifact.description, ""),
        parts=[part_from_v03(p) for p in artifact.parts],
        metadata=_meta10(artifact.metadata),
        extensions=_or(artifact.extensions, []),
    )


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
    return v.Task(
        id=task.id,
        context_id=task.context_id,
        status=status_to_v03(task.status),
        artifacts=_list([artifact_to_v03(a) for a in task.artifacts]),
        history=_list([message_to_v03(m) for m in task.history]),
        metadata=_meta(task.metadata),
    )


def task_from_v03(task: v.Task) -> t.Task:
    return t.Task(
        id=task.id,
        context_id=task.context_id,
        status=status_from_v03(task.status),
        artifacts=[artifact_from_v03(a) for a in _or(task.artifacts, [])],
        history=[message_from_v03(m) for m in _or(task.history, [])],
        metadata=_meta10(task.metadata),
    )


def status_update_to_v03(
    event: t.TaskStatusUpdateEvent, *, final: bool | None = None
) -> v.TaskStatusUpdateEvent:
    """`final` is true for the states after which a 1.0 stream ends (`FINAL_STATES`:
    terminal and interrupted), unless the caller says otherwise."""
    return v.TaskStatusUpdateEvent(
        task_id=event.task_id,
        context_id=event.context_id,
        status=status_to_v03(event.status),
        final=event.status.state in FINAL_STATES if final is None else final,
        metadata=_meta(event.metadata),
    )


def status_update_from_v03(event: v.TaskStatusUpdateEvent) -> t.TaskStatusUpdateEvent:
    """`final` is dropped: in 1.0 the end of the stream says it."""
    return t.TaskStatusUpdateEvent(
        task_id=event.task_id,
        context_id=event.context_id,
        status=status_from_v03(event.status),
        metadata=_meta10(event.metadata),
    )


def artifact_update_to_v03(event: t.TaskArtifactUpdateEvent) -> v.TaskArtifactUpdateEvent:
    """`append` and `lastChunk` are always written (1.0 always has a value)."""
    return v.TaskArtifactUpdateEvent(
        task_id=event.task_id,
        context_id=event.context_id,
        artifact=artifact_to_v03(event.artifact),
        append=event.append,
        last_chunk=event.last_chunk,
        metadata=_meta(event.metadata),
    )


def artifact_update_from_v03(event: v.TaskArtifactUpdateEvent) -> t.TaskArtifactUpdateEvent:
    return t.TaskArtifactUpdateEvent(
        task_id=event.task_id,
        context_id=event.context_id,
        artifact=artifact_from_v03(event.artifact),
        append=_or(event.append, False),
        last_chunk=_or(event.last_chunk, False),
        metadata=_meta10(event.metadata),
    )


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
    return v.PushNotificationConfig(
        id=_opt(config.id),
        url=config.url,
        token=_opt(config.token),
        authentication=UNSET
        if auth is None
        else v.PushNotificationAuthenticationInfo(
            schemes=[auth.scheme] if auth.scheme else [], credentials=_opt(auth.credentials)
        ),
    )


def _push_from_v03(config: v.PushNotificationConfig, task_id: str) -> t.TaskPushNotificationConfig:
    """0.3 `schemes` beyond the first are dropped (1.0 has one `scheme`)."""
    auth = config.authentication
    return t.TaskPushNotificationConfig(
        id=_or(config.id, ""),
        task_id=task_id,
        url=config.url,
        token=_or(config.token, ""),
        authentication=None
        if auth is UNSET
        else t.AuthenticationInfo(
            scheme=auth.schemes[0] if auth.schemes else "", credentials=_or(auth.credentials, "")
        ),
    )


def push_config_to_v03(config: t.TaskPushNotificationConfig) -> v.TaskPushNotificationConfig:
    """The flat 1.0 config nested under `pushNotificationConfig`; `tenant` is dropped."""
    return v.TaskPushNotificationConfig(
        task_id=config.task_id, push_notification_config=_push_to_v03(config)
    )


def push_config_from_v03(config: v.TaskPushNotificationConfig) -> t.TaskPushNotificationConfig:
    return _push_from_v03(config.push_notification_config, config.task_id)


# ---------------------------------------------------------------------------- requests


def send_params_to_v03(request: t.SendMessageRequest) -> v.MessageSendParams:
    """`returnImmediately` -> `blocking` (always written); `tenant` is dropped."""
    config = request.configuration
    push = None if config is None else config.task_push_notification_config
    return v.MessageSendParams(
        message=message_to_v03(request.message),
        configuration=UNSET
        if config is None
        else v.MessageSendConfiguration(
            accepted_output_modes=_list(config.accepted_output_modes),
            blocking=not config.return_immediately,
            history_length=config.history_length,
            push_notification_config=UNSET if push is None else _push_to_v03(push),
        ),
        metadata=_meta(request.metadata),
    )


def send_params_from_v03(params: v.MessageSendParams) -> t.SendMessageRequest:
    """Absent `blocking` is blocking; a push config gets the message's `taskId`."""
    config = params.configuration
    message = message_from_v03(params.message)
    push = UNSET if config is UNSET else config.push_notification_config
    return t.SendMessageRequest(
        message=message,
        configuration=None
        if config is UNSET
        else t.SendMessageConfiguration(
            accepted_output_modes=_or(config.accepted_output_modes, []),
            task_push_notification_config=None
            if push is UNSET
            else _push_from_v03(push, message.task_id),
            history_length=config.history_length,
            return_immediately=not _or(config.blocking, True),
        ),
        metadata=_meta10(params.metadata),
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
        lambda p: t.GetTaskRequest(id=p.id, history_length=p.history_length),
        lambda r: v.TaskQueryParams(id=r.id, history_length=r.history_length),
    ),
    "tasks/cancel": (
        "CancelTask",
        lambda p: t.CancelTaskRequest(id=p.id, metadata=_meta10(p.metadata)),
        lambda r: v.TaskIdParams(id=r.id, metadata=_meta(r.metadata)),
    ),
    "tasks/resubscribe": (
        "SubscribeToTask",
        lambda p: t.SubscribeToTaskRequest(id=p.id),
        lambda r: v.TaskIdParams(id=r.id),
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
    """One 1.0 scheme; OAuth `deviceCode` and `pkceRequired` are dropped, a scheme with
    only a device-code flow keeps empty `flows`."""
    s = scheme.scheme
    if isinstance(s, t.APIKeySecurityScheme):
        return v.APIKeySecurityScheme(
            description=_opt(s.description), in_=v.In(s.location), name=s.name
        )
    if isinstance(s, t.HTTPAuthSecurityScheme):
        return v.HTTPAuthSecurityScheme(
            description=_opt(s.description), scheme=s.scheme, bearer_format=_opt(s.bearer_format)
        )
    if isinstance(s, t.OAuth2SecurityScheme):
        flows = s.flows
        return v.OAuth2SecurityScheme(
            description=_opt(s.description),
            oauth2_metadata_url=_opt(s.oauth2_metadata_url),
            flows=v.OAuthFlows(
                authorization_code=_flow(flows.authorization_code, v.AuthorizationCodeOAuthFlow),
                client_credentials=_flow(flows.client_credentials, v.ClientCredentialsOAuthFlow),
                implicit=_flow(flows.implicit, v.ImplicitOAuthFlow),
                password=_flow(flows.password, v.PasswordOAuthFlow),
            ),
        )
    if isinstance(s, t.OpenIdConnectSecurityScheme):
        return v.OpenIdConnectSecurityScheme(
            description=_opt(s.description), open_id_connect_url=s.open_id_connect_url
        )
    if isinstance(s, t.MutualTlsSecurityScheme):
        return v.MutualTLSSecurityScheme(description=_opt(s.description))
    return None


def _flow(flow: msgspec.Struct | UnsetType, kind: type[Any]) -> Any:
    """An OAuth flow in the other version: the fields both have (1.0 `pkceRequired` is
    dropped); an empty 1.0 `refreshUrl` is an absent 0.3 one and back."""
    if flow is UNSET:
        return UNSET
    names = set(kind.__struct_fields__)
    values = {n: getattr(flow, n) for n in flow.__struct_fields__ if n in names}
    if kind.__module__ == v.__name__:
        return kind(**{**values, "refresh_url": _opt(values["refresh_url"])})
    return kind(**{**values, "refresh_url": _or(values["refresh_url"], "")})


def _first_flow(flows: v.OAuthFlows) -> t.OAuthFlows:
    """1.0 allows one flow: the first of authorizationCode, clientCredentials, implicit,
    password that is set is kept, the others are dropped."""
    pairs = (
        ("authorization_code", t.AuthorizationCodeOAuthFlow),
        ("client_credentials", t.ClientCredentialsOAuthFlow),
        ("implicit", t.ImplicitOAuthFlow),
        ("password", t.PasswordOAuthFlow),
    )
    for name, kind in pairs:
        flow = getattr(flows, name)
        if flow is not UNSET:
            return t.OAuthFlows(**{name: _flow(flow, kind)})
    return t.OAuthFlows()


def _scheme_from_v03(scheme: v.SecurityScheme) -> t.SecurityScheme:
    """`oauth2MetadataUrl` carries over; implicit and password flows are kept (deprecated
    in 1.0, still there)."""
    desc = _or(scheme.description, "")
    if isinstance(scheme, v.APIKeySecurityScheme):
        key = t.APIKeySecurityScheme(description=desc, location=scheme.in_.value, name=scheme.name)
        return t.SecurityScheme(api_key_security_scheme=key)
    if isinstance(scheme, v.HTTPAuthSecurityScheme):
        http = t.HTTPAuthSecurityScheme(
            description=desc, scheme=scheme.scheme, bearer_format=_or(scheme.bearer_format, "")
        )
        return t.SecurityScheme(http_auth_security_scheme=http)
    if isinstance(scheme, v.OAuth2SecurityScheme):
        oauth = t.OAuth2SecurityScheme(
            description=desc,
            flows=_first_flow(scheme.flows),
            oauth2_metadata_url=_or(scheme.oauth2_metadata_url, ""),
        )
        return t.SecurityScheme(oauth2_security_scheme=oauth)
    if isinstance(scheme, v.OpenIdConnectSecurityScheme):
        oidc = t.OpenIdConnectSecurityScheme(
            description=desc, open_id_connect_url=scheme.open_id_connect_url
        )
        return t.SecurityScheme(open_id_connect_security_scheme=oidc)
    return t.SecurityScheme(mtls_security_scheme=t.MutualTlsSecurityScheme(description=desc))


def _requirements_to_v03(reqs: Sequence[t.SecurityRequirement]) -> list[dict[str, list[str]]]:
    return [{name: list(scopes.list) for name, scopes in r.schemes.items()} for r in reqs]


def _requirements_from_v03(
    reqs: list[dict[str, list[str]]] | UnsetType,
) -> list[t.SecurityRequirement]:
    return [
        t.SecurityRequirement(schemes={n: t.StringList(list=s) for n, s in r.items()})
        for r in _or(reqs, [])
    ]


def _skill_to_v03(skill: t.AgentSkill) -> v.AgentSkill:
    return v.AgentSkill(
        id=skill.id,
        name=skill.name,
        description=skill.description,
        tags=list(skill.tags),
        examples=_list(skill.examples),
        input_modes=_list(skill.input_modes),
        output_modes=_list(skill.output_modes),
        security=_list(_requirements_to_v03(skill.security_requirements)),
    )


def _skill_from_v03(skill: v.AgentSkill) -> t.AgentSkill:
    return t.AgentSkill(
        id=skill.id,
        name=skill.name,
        description=skill.description,
        tags=skill.tags,
        examples=_or(skill.examples, []),
        input_modes=_or(skill.input_modes, []),
        output_modes=_or(skill.output_modes, []),
        security_requirements=_requirements_from_v03(skill.security),
    )


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
    return v.AgentCard(
        name=card.name,
        description=card.description,
        url=interfaces[0].url,
        preferred_transport=interfaces[0].protocol_binding,
        additional_interfaces=UNSET
        if len(interfaces) == 1
        else [v.AgentInterface(url=i.url, transport=i.protocol_binding) for i in interfaces],
        protocol_version=PROTOCOL_VERSION,
        version=card.version,
        provider=UNSET
        if card.provider is None
        else v.AgentProvider(organization=card.provider.organization, url=card.provider.url),
        documentation_url=card.documentation_url,
        icon_url=card.icon_url,
        capabilities=v.AgentCapabilities(
            streaming=caps.streaming,
            push_notifications=caps.push_notifications,
            extensions=_list(
                [
                    v.AgentExtension(
                        uri=e.uri,
                        description=_opt(e.description),
                        required=e.required or UNSET,
                        params=_meta(e.params),
                    )
                    for e in caps.extensions
                ]
            ),
        ),
        security_schemes={n: s for n, s in schemes.items() if s is not None} or UNSET,
        security=_list(_requirements_to_v03(card.security_requirements)),
        default_input_modes=list(card.default_input_modes),
        default_output_modes=list(card.default_output_modes),
        skills=[_skill_to_v03(s) for s in card.skills],
        supports_authenticated_extended_card=caps.extended_agent_card,
        signatures=_list(
            [
                v.AgentCardSignature(
                    protected=s.protected, signature=s.signature, header=_meta(s.header)
                )
                for s in card.signatures
            ]
        ),
    )


def card_from_v03(card: v.AgentCard) -> t.AgentCard:
    """`url`/`preferredTransport` (JSONRPC when absent) then each other entry of
    `additionalInterfaces` become `supportedInterfaces`, all with the card's
    `protocolVersion`; `stateTransitionHistory` is dropped."""
    version = card.protocol_version
    first = (card.url, _or(card.preferred_transport, v.TransportProtocol.JSONRPC.value))
    pairs = [first] + [
        (i.url, i.transport)
        for i in _or(card.additional_interfaces, [])
        if (i.url, i.transport) != first
    ]
    caps = card.capabilities
    return t.AgentCard(
        name=card.name,
        description=card.description,
        supported_interfaces=[
            t.AgentInterface(url=url, protocol_binding=binding, protocol_version=version)
            for url, binding in pairs
        ],
        provider=None
        if card.provider is UNSET
        else t.AgentProvider(organization=card.provider.organization, url=card.provider.url),
        version=card.version,
        documentation_url=card.documentation_url,
        icon_url=card.icon_url,
        capabilities=t.AgentCapabilities(
            streaming=caps.streaming,
            push_notifications=caps.push_notifications,
            extended_agent_card=card.supports_authenticated_extended_card,
            extensions=[
                t.AgentExtension(
                    uri=e.uri,
                    description=_or(e.description, ""),
                    required=_or(e.required, False),
                    params=_meta10(e.params),
                )
                for e in _or(caps.extensions, [])
            ],
        ),
        security_schemes={
            n: _scheme_from_v03(s) for n, s in _or(card.security_schemes, {}).items()
        },
        security_requirements=_requirements_from_v03(card.security),
        default_input_modes=card.default_input_modes,
        default_output_modes=card.default_output_modes,
        skills=[_skill_from_v03(s) for s in card.skills],
        signatures=[
            t.AgentCardSignature(
                protected=s.protected, signature=s.signature, header=_meta10(s.header)
            )
            for s in _or(card.signatures, [])
        ],
    )
