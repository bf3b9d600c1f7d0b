"""The A2A client: every method of the protocol, one API whatever the binding.

`await A2AClient.connect(url)` reads the card and talks to the interface the
negotiation picks (`_negotiate`: the newest version both sides speak, then JSON-RPC,
HTTP+JSON, gRPC; falling back when one does not answer; `binding=` and `version=` pin
it); `client.negotiation` says what became of every interface and why. Requests go
through the picked `Transport` (`_transport`) with the `A2A-Version` of the interface,
the requested `A2A-Extensions`, the interface's `tenant` and the credentials (bearer, or
an API key where the card's scheme puts it). Errors are typed alike on every binding:
an A2A error raises the class the server raised (`TaskNotFound`, ...; -32602 is
`A2AInvalidParams` with its `violations`), HTTP 401 is `AuthenticationRequired` naming
the challenge, a network failure `A2ATransportError`.

Streams: `stream_message` and `subscribe` yield `StreamEvent`s (the payload and its
event id) with no read timeout, but a stream silent (not even a keep-alive comment) for
`idle_timeout` seconds counts as dropped. `subscribe` survives drops: it reconnects up to
`Reconnect.attempts` times in a row, waiting with exponential backoff (from the server's
`retry:` hint when it gave one), resumes with `Last-Event-ID`, and drops events whose id
it already delivered, so the caller sees each event once and in order. The `Task`
snapshot that opens every re-subscription is skipped unless `resync=True` (then it is
delivered with `resync` set); a server that gives no event ids cannot resume, so there
the snapshot is always delivered, as the only account of what was missed. A task that
ended while disconnected answers the re-subscription with -32004: the client then
delivers the final task from `GetTask` (`resync` set) and ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Final, Self, TypedDict, TypeVar, Unpack

import httpx
import msgspec

from interlink.a2a._card import ResolvedCard, fetch_card
from interlink.a2a._card_sign import CardSignatureError, TrustedKeys, verify_card
from interlink.a2a._errors import (
    A2AHttpError,
    A2AInvalidParams,
    A2ATransportError,
    AuthenticationRequired,
    InvalidAgentResponse,
    StreamInterrupted,
    UnsupportedOperation,
)
from interlink.a2a._lifecycle import INTERRUPTED, TERMINAL
from interlink.a2a._methods import (
    CANCEL_TASK,
    CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
    DELETE_TASK_PUSH_NOTIFICATION_CONFIG,
    GET_EXTENDED_AGENT_CARD,
    GET_TASK,
    GET_TASK_PUSH_NOTIFICATION_CONFIG,
    LIST_TASK_PUSH_NOTIFICATION_CONFIGS,
    LIST_TASKS,
    SEND_MESSAGE,
    SEND_STREAMING_MESSAGE,
    SUBSCRIBE_TO_TASK,
    Method,
)
from interlink.a2a._types import (
    AgentCard,
    AgentCardSignature,
    AuthenticationInfo,
    ListTaskPushNotificationConfigsResponse,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)
from interlink.a2a.client._http import HttpClient, http_pool
from interlink.a2a.client._negotiate import (
    Negotiation,
    NoInterfaceAnswered,
    NoUsableInterface,
    Outcome,
    Step,
    plan,
    probe,
)
from interlink.a2a.client._transport import (
    StreamEvent,
    StreamHints,
    StreamPayload,
    Transport,
    TransportConfig,
)

__all__ = [
    "A2AClient",
    "A2AHttpError",
    "A2AInvalidParams",
    "A2ATransportError",
    "AuthenticationRequired",
    "Negotiation",
    "NoInterfaceAnswered",
    "NoUsableInterface",
    "Reconnect",
    "StreamEvent",
    "StreamInterrupted",
    "StreamPayload",
    "TaskQuery",
]

R = TypeVar("R", bound=msgspec.Struct)


# -- values ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reconnect:
    """How `subscribe` reconnects: `attempts` in a row (reset by a new event), waiting
    `initial` seconds (or the server's `retry:`), doubling up to `maximum`."""

    attempts: int = 5
    initial: float = 0.5
    maximum: float = 10.0

    def delay(self, attempt: int, hint_ms: int | None) -> float:
        base = self.initial if hint_ms is None else hint_ms / 1000
        return float(min(base * 2 ** (attempt - 1), max(self.maximum, base)))


@dataclass
class _Subscription:
    """What `subscribe` remembers across connections."""

    last: str | None
    resync: bool
    seen: set[str] = field(default_factory=set)
    state: TaskState = TaskState.TASK_STATE_UNSPECIFIED

    def fresh(self, event_id: str) -> bool:
        if self.last is not None and event_id.isdigit() and self.last.isdigit():
            return int(event_id) > int(self.last)
        return event_id not in self.seen


#: HTTP statuses a re-subscription takes for a passing failure, not an answer
_TRANSIENT: Final = frozenset({502, 503, 504})


DRAIN_TIMEOUT: Final = 0.1
"""Seconds a stream left once its task ended (or asks for input) is still read for the
end the server sends right after (at most): read to its end, its connection is kept for
the next request; left unread, the connection is closed and the next call opens one."""


async def _drain(stream: AsyncGenerator[StreamEvent, None]) -> None:
    """The rest of `stream` read and dropped, for `DRAIN_TIMEOUT` seconds at most."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(DRAIN_TIMEOUT):
            async for _ in stream:
                pass


def _state_of(payload: StreamPayload) -> TaskState | None:
    if isinstance(payload, Task | TaskStatusUpdateEvent):
        return payload.status.state
    return None


# -- the client --------------------------------------------------------------------------

DEFAULT_TIMEOUT = 60.0
"""Seconds for each HTTP step of a call (a stream's reads excepted)."""
DEFAULT_CONNECT = 10.0
"""Seconds to connect."""


class ClientOptions(TypedDict, total=False):
    """The constructor's options, which `connect` and `from_card` pass on."""

    extensions: Sequence[str]
    bearer: str | None
    api_key: str | None
    headers: Mapping[str, str] | None
    timeout: float
    connect_timeout: float
    idle_timeout: float | None
    reconnect: Reconnect
    trusted_keys: TrustedKeys | None
    binding: str | Sequence[str] | None
    version: str | None


class TaskQuery(TypedDict, total=False):
    """Which tasks `list_tasks` and `iter_tasks` ask for (each unset: the server's
    default; `status` unset: any state)."""

    context_id: str
    status: TaskState
    page_size: int | None
    history_length: int | None
    status_timestamp_after: datetime | None
    include_artifacts: bool | None


class A2AClient:
    """An async client for one interface of an agent, whatever its binding. Close it
    (`aclose()` or `async with`); an httpx client passed in is left open.

    `A2AClient(card)` picks the interface without asking the agent (the first of the
    `plan`); `connect(url)` and `from_card(card)` also try it and fall back to the next
    when it does not answer (see `interlink.a2a.client._negotiate`). `binding=` (a
    binding, or several in the order preferred: `"jsonrpc"`, `"rest"`, `"grpc"`) and
    `version=` ("1.0", "0.3") restrict the choice; a `ResolvedCard` pins its interface.
    """

    def __init__(
        self,
        card: ResolvedCard | AgentCard,
        *,
        client: HttpClient | None = None,
        extensions: Sequence[str] = (),
        bearer: str | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT,
        idle_timeout: float | None = 60.0,
        reconnect: Reconnect = Reconnect(),
        trusted_keys: TrustedKeys | None = None,
        binding: str | Sequence[str] | None = None,
        version: str | None = None,
        card_url: str = "",
    ) -> None:
        if isinstance(card, ResolvedCard):
            agent_card, card_url = card.card, card.card_url
            pinned = msgspec.structs.replace(card.interface, url=card.url)  # (as resolved)
            offered = msgspec.structs.replace(agent_card, supported_interfaces=[pinned])
        else:
            agent_card = offered = card
        self.card = agent_card
        #: the keys the cards must be signed with (§8.4), and the signature that verified
        self.trusted_keys = trusted_keys
        self.card_signature = self._verified(self.card, card_url)
        self.idle_timeout = idle_timeout
        self.reconnect = reconnect
        self._params: dict[str, str] = {}
        self._headers: dict[str, str] = dict(headers or {})
        if bearer is not None:
            self._headers["Authorization"] = f"Bearer {bearer}"
        if api_key is not None:
            self._use_api_key(api_key)  # (it may refuse: before anything is opened)
        negotiation, self._steps = plan(offered, card_url, binding=binding, version=version)
        if not self._steps:
            raise NoUsableInterface(agent_card, negotiation)
        self._base = TransportConfig(
            url="",
            extensions=tuple(extensions),
            headers=self._headers,
            query=self._params,
            timeout=timeout,
            connect_timeout=connect_timeout,
            idle_timeout=idle_timeout,
        )
        self._shared = client
        self._http: HttpClient | None = None  # the HTTP client `connect` opened
        first = self._steps[0]
        why = "the only choice" if len(self._steps) == 1 else "the first choice (not tried)"
        self._adopt(first, self._open(first), negotiation, why)

    def _open(self, step: Step) -> Transport:
        return step.factory(replace(self._base, url=step.url, version=step.version), self._shared)

    def _adopt(self, step: Step, transport: Transport, negotiation: Negotiation, why: str) -> None:
        #: every interface of the card and what became of it
        self.negotiation = negotiation.with_outcome(step.index, Outcome.PICKED, why)
        picked = self.negotiation.candidates[step.index]
        #: the wire to the picked interface
        self.transport = transport
        self.interface = picked.interface
        self.binding = picked.binding
        self.version = step.version
        self.url = step.url
        self.tenant = picked.interface.tenant
        self.resolved = ResolvedCard(
            self.card, picked.interface, step.url, self.negotiation.card_url, self.tenant
        )

    async def _negotiate(self, probe_timeout: float) -> None:
        """Try the interfaces in order until one answers (only when there is a choice)."""
        if len(self._steps) == 1:
            return
        negotiation = self.negotiation.with_outcome(
            self._steps[0].index, Outcome.NOT_TRIED, "not tried"
        )
        transport: Transport | None = self.transport
        for step in self._steps:
            transport = transport or self._open(step)
            try:
                tenant = negotiation.candidates[step.index].interface.tenant
                reason = await probe(transport, tenant, probe_timeout)
            except BaseException:
                await transport.aclose()
                raise
            if reason is None:
                self._adopt(step, transport, negotiation, "it answered")
                return
            negotiation = negotiation.with_outcome(step.index, Outcome.FAILED, reason)
            await transport.aclose()
            transport = None
        self.negotiation = negotiation
        raise NoInterfaceAnswered(negotiation, negotiation.card_url or self.url)

    @property
    def activated_extensions(self) -> frozenset[str]:
        """The extensions the agent said it activated on the last answer."""
        return self.transport.activated_extensions

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        client: httpx.AsyncClient | None = None,
        card_headers: Mapping[str, str] | None = None,
        probe_timeout: float | None = None,
        **options: Unpack[ClientOptions],
    ) -> A2AClient:
        """Fetch the card at `url` (see `fetch_card`) and connect to the interface that
        answers first (see `from_card`; `options` are the constructor's). With
        `trusted_keys`, a card (and extended card) that no trusted key signed is refused:
        `CardSignatureError`, saying why."""
        own = client is None
        timeout = options.get("timeout", DEFAULT_TIMEOUT)
        http = client or http_pool(timeout, options.get("connect_timeout", DEFAULT_CONNECT))
        try:
            card, card_url = await fetch_card(
                url, client=http, headers=card_headers, version=options.get("version")
            )
            self = await cls.from_card(
                card, card_url=card_url, client=http, probe_timeout=probe_timeout, **options
            )
        except BaseException:
            if own:
                await http.aclose()
            raise
        self._http = http if own else None
        return self

    @classmethod
    async def from_card(
        cls,
        card: AgentCard,
        *,
        card_url: str = "",
        client: HttpClient | None = None,
        probe_timeout: float | None = None,
        **options: Unpack[ClientOptions],
    ) -> A2AClient:
        """A client for the first interface of `card` that answers, in the order of the
        `plan` (`options` are the constructor's). When there is more than one to choose
        from, each is tried with one `GetTask` (`probe_timeout`, default
        `connect_timeout`, for its answer) and the next is tried when it does not answer;
        `NoInterfaceAnswered` when none does. `client.negotiation` says what became of
        every interface, and why."""
        self = cls(card, card_url=card_url, client=client, **options)
        if probe_timeout is None:
            probe_timeout = options.get("connect_timeout", DEFAULT_CONNECT)
        await self._negotiate(probe_timeout)
        return self

    def _use_api_key(self, key: str) -> None:
        for scheme in self.card.security_schemes.values():
            api = scheme.api_key_security_scheme
            if isinstance(api, msgspec.UnsetType):
                continue
            if api.location == "query":
                self._params[api.name] = key
            elif api.location == "cookie":
                self._headers["Cookie"] = f"{api.name}={key}"
            else:
                self._headers[api.name] = key
            return
        raise ValueError("the agent card declares no API key security scheme")

    async def aclose(self) -> None:
        try:
            await self.transport.aclose()
        finally:
            if self._http is not None:
                await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- the methods ---------------------------------------------------------------------

    async def send_message(
        self,
        message: Message | str,
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        return_immediately: bool = False,
        history_length: int | None = None,
        push_config: TaskPushNotificationConfig | None = None,
        accepted_output_modes: Sequence[str] = (),
        metadata: dict[str, object] | None = None,
    ) -> Task | Message:
        """`SendMessage`: the task (when it is done, interrupted, or at once with
        `return_immediately`), or the agent's direct reply."""
        params = self._send_request(
            message, task_id, context_id, return_immediately, history_length, push_config,
            accepted_output_modes, metadata,
        )  # fmt: skip
        result = await self._call(SEND_MESSAGE, params)
        payload = result.payload
        if payload is None:
            raise InvalidAgentResponse("SendMessage answered with neither a task nor a message")
        return payload

    async def stream_message(
        self,
        message: Message | str,
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        history_length: int | None = None,
        push_config: TaskPushNotificationConfig | None = None,
        accepted_output_modes: Sequence[str] = (),
        metadata: dict[str, object] | None = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """`SendStreamingMessage`: the events in order. Not retried (it would send the
        message twice): a broken stream raises `StreamInterrupted`, which says how to
        `subscribe` to the rest."""
        params = self._send_request(
            message, task_id, context_id, False, history_length, push_config,
            accepted_output_modes, metadata,
        )  # fmt: skip
        known_task, last = task_id or "", None
        state, answered = TaskState.TASK_STATE_UNSPECIFIED, False
        try:
            stream = self.transport.stream(SEND_STREAMING_MESSAGE, params)
            async with contextlib.aclosing(stream):
                async for event in stream:
                    payload = event.payload
                    if isinstance(payload, Task):
                        known_task = payload.id
                    answered = answered or isinstance(payload, Message)
                    state = _state_of(payload) or state
                    last = event.id or last
                    try:
                        yield event
                    except GeneratorExit:
                        if answered or state in TERMINAL | INTERRUPTED:
                            await _drain(stream)
                        raise
        except (A2ATransportError, TimeoutError) as exc:
            raise StreamInterrupted(str(exc), self.url, known_task, last) from exc
        if not answered and state not in TERMINAL | INTERRUPTED:
            # (a server cuts a stream that falls behind; the task goes on without us)
            raise StreamInterrupted(
                f"the stream ended early (the task was {state.name})", self.url, known_task, last
            )

    async def get_task(self, task_id: str, *, history_length: int | None = None) -> Task:
        length = msgspec.UNSET if history_length is None else history_length
        return await self._call(
            GET_TASK, GET_TASK.params(tenant=self.tenant, id=task_id, history_length=length)
        )

    async def list_tasks(
        self, *, page_token: str = "", **query: Unpack[TaskQuery]
    ) -> ListTasksResponse:
        """One page of `ListTasks`; `iter_tasks` walks all of them."""
        if unknown := query.keys() - TaskQuery.__optional_keys__:
            raise TypeError(f"list_tasks() got unexpected keyword arguments {sorted(unknown)}")
        page_size = query.get("page_size")
        history_length = query.get("history_length")
        include_artifacts = query.get("include_artifacts")
        request = LIST_TASKS.params(
            tenant=self.tenant,
            context_id=query.get("context_id", ""),
            status=query.get("status", TaskState.TASK_STATE_UNSPECIFIED),
            page_size=msgspec.UNSET if page_size is None else page_size,
            page_token=page_token,
            history_length=msgspec.UNSET if history_length is None else history_length,
            status_timestamp_after=query.get("status_timestamp_after"),
            include_artifacts=msgspec.UNSET if include_artifacts is None else include_artifacts,
        )
        return await self._call(LIST_TASKS, request)

    async def iter_tasks(self, **query: Unpack[TaskQuery]) -> AsyncGenerator[Task, None]:
        """Every task `ListTasks` gives, page after page."""
        token, seen = "", set[str]()
        while True:
            page = await self.list_tasks(page_token=token, **query)
            for task in page.tasks:
                yield task
            seen.add(token)
            if not page.next_page_token or page.next_page_token in seen:
                return  # the end (or a server going round in circles)
            token = page.next_page_token

    async def cancel_task(self, task_id: str, *, metadata: dict[str, object] | None = None) -> Task:
        request = CANCEL_TASK.params(tenant=self.tenant, id=task_id, metadata=metadata)
        return await self._call(CANCEL_TASK, request)

    async def subscribe(
        self, task_id: str, *, last_event_id: str | None = None, resync: bool = False
    ) -> AsyncGenerator[StreamEvent, None]:
        """`SubscribeToTask`, resumed across dropped connections (see the module)."""
        sub = _Subscription(last=last_event_id, resync=resync)
        request = SUBSCRIBE_TO_TASK.params(tenant=self.tenant, id=task_id)
        attempt, hints = 0, StreamHints()
        while True:
            resuming = sub.last is not None or attempt > 0
            first = True
            try:
                hints.last_event_id = sub.last
                stream = self.transport.stream(SUBSCRIBE_TO_TASK, request, hints)
                async with contextlib.aclosing(stream):
                    async for event in stream:
                        snapshot = first and isinstance(event.payload, Task)
                        first = False
                        if snapshot and resuming:
                            if sub.resync or sub.last is None:
                                attempt = 0
                                yield StreamEvent(event.payload, None, resync=True)
                            if sub.last is not None:
                                continue  # the missed events follow; the state comes from them
                        elif event.id is None or sub.fresh(event.id):
                            if event.id is not None:
                                sub.last = event.id
                                sub.seen.add(event.id)
                            attempt = 0  # progress: the next drop starts the count again
                            yield event
                        else:
                            continue  # delivered before the drop
                        state = _state_of(event.payload)
                        if state is not None:
                            sub.state = state
                        if sub.state in TERMINAL:
                            return
                if sub.state in INTERRUPTED:
                    return  # the agent ended the stream while it waits for the user
                reason: BaseException = A2ATransportError("the stream ended early", self.url)
            except UnsupportedOperation:
                if not resuming:
                    raise
                final = await self.get_task(task_id)  # it ended while we were away?
                if final.status.state not in TERMINAL:
                    raise  # refused for another reason (the agent no longer streams)
                yield StreamEvent(final, None, resync=True)
                return
            except (A2ATransportError, TimeoutError) as exc:
                reason = exc
            except A2AHttpError as exc:
                if exc.status not in _TRANSIENT or not resuming:
                    raise
                reason = exc  # a proxy or a restarting server: try again
            attempt += 1
            if attempt > self.reconnect.attempts:
                raise A2ATransportError(
                    f"subscription to task {task_id} lost; {attempt - 1} reconnects failed: "
                    f"{reason}",
                    self.url,
                ) from reason
            await asyncio.sleep(self.reconnect.delay(attempt, hints.retry_ms))

    async def create_push_config(
        self,
        task_id: str,
        url: str,
        *,
        config_id: str = "",
        token: str = "",
        authentication: AuthenticationInfo | None = None,
    ) -> TaskPushNotificationConfig:
        config = TaskPushNotificationConfig(
            tenant=self.tenant,
            id=config_id,
            task_id=task_id,
            url=url,
            token=token,
            authentication=authentication,
        )
        return await self._call(CREATE_TASK_PUSH_NOTIFICATION_CONFIG, config)

    async def get_push_config(self, task_id: str, config_id: str) -> TaskPushNotificationConfig:
        request = GET_TASK_PUSH_NOTIFICATION_CONFIG.params(
            tenant=self.tenant, task_id=task_id, id=config_id
        )
        return await self._call(GET_TASK_PUSH_NOTIFICATION_CONFIG, request)

    async def list_push_configs(
        self, task_id: str, *, page_size: int = 0, page_token: str = ""
    ) -> ListTaskPushNotificationConfigsResponse:
        request = LIST_TASK_PUSH_NOTIFICATION_CONFIGS.params(
            tenant=self.tenant, task_id=task_id, page_size=page_size, page_token=page_token
        )
        return await self._call(LIST_TASK_PUSH_NOTIFICATION_CONFIGS, request)

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        request = DELETE_TASK_PUSH_NOTIFICATION_CONFIG.params(
            tenant=self.tenant, task_id=task_id, id=config_id
        )
        await self._call(DELETE_TASK_PUSH_NOTIFICATION_CONFIG, request)

    async def get_extended_card(self) -> AgentCard:
        request = GET_EXTENDED_AGENT_CARD.params(tenant=self.tenant)
        card = await self._call(GET_EXTENDED_AGENT_CARD, request)
        self._verified(card, self.resolved.card_url or self.url)
        return card

    def _verified(self, card: AgentCard, card_url: str) -> AgentCardSignature | None:
        """The signature of `card` that a trusted key verifies (None: no keys given)."""
        if self.trusted_keys is None:
            return None
        try:
            return verify_card(card, self.trusted_keys)
        except CardSignatureError as exc:
            exc.url = card_url
            raise

    # -- the wire ------------------------------------------------------------------------

    def _send_request(
        self,
        message: Message | str,
        task_id: str | None,
        context_id: str | None,
        return_immediately: bool,
        history_length: int | None,
        push_config: TaskPushNotificationConfig | None,
        accepted_output_modes: Sequence[str],
        metadata: dict[str, object] | None,
    ) -> SendMessageRequest:
        if isinstance(message, str):
            message = Message(
                message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text=message)]
            )
        if task_id is not None or context_id is not None:
            message = msgspec.structs.replace(
                message,
                task_id=message.task_id if task_id is None else task_id,
                context_id=message.context_id if context_id is None else context_id,
            )
        configuration = None
        if return_immediately or history_length is not None or push_config or accepted_output_modes:
            configuration = SendMessageConfiguration(
                accepted_output_modes=list(accepted_output_modes),
                task_push_notification_config=push_config,
                history_length=msgspec.UNSET if history_length is None else history_length,
                return_immediately=return_immediately,
            )
        return SendMessageRequest(
            tenant=self.tenant, message=message, configuration=configuration, metadata=metadata
        )

    async def _call(self, method: Method[msgspec.Struct, R], params: msgspec.Struct) -> R:
        return await self.transport.call(method, params)
