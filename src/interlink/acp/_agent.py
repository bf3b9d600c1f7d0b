"""The agent side: the `Agent` base class an author subclasses, and the connection that
serves it and enforces the protocol's rules, so no agent has to.

Rules enforced here (ACP errors page, `DECISIONS.md`):

- the lifecycle of `_lifecycle.py`: `initialize` first (-32600), what comes while it is
  handled waits for it, then authentication where the agent requires it (-32000); the
  version answered is the client's if we speak it, else ours;
- a method the agent did not implement, or gated by a capability it did not advertise:
  -32601 (never a silent success);
- session-scoped requests naming a session not active on this connection: -32002 with
  `data.sessionId`; deleting an unknown session succeeds;
- unknown `modeId`, config id or config value: -32602;
- `session/cancel` cancels the running prompt, which then answers `stopReason: cancelled`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

import msgspec

from interlink.acp import _schema as s
from interlink.acp._client_handle import ClientHandle
from interlink.acp._endpoint import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    Endpoint,
    Handler,
    Route,
    SessionNotFound,
    capabilities_tree,
    unadvertised_content,
)
from interlink.acp._lifecycle import (
    ARRIVALS,
    SUCCESSES,
    Dropped,
    Event,
    State,
    Waits,
    initialize_failed,
    step,
)
from interlink.acp._methods import CANCEL, AgentMethods, MethodSpec
from interlink.acp._registry import Handlers
from interlink.aio import ByteReader, ByteWriter
from interlink.jsonrpc import InvalidRequest, RpcError

logger = logging.getLogger("interlink.acp")

__all__ = ["Agent", "AgentSideConnection"]

_UNSET = msgspec.UNSET


class Agent(Handlers, AgentMethods):
    """Subclass and override what your agent implements; the rest answers -32601.

    `self.client` is the handle to the connected client (permission, files, terminals,
    updates), set before the first request is served. Handlers can also be registered on
    an instance: `@agent.on(methods.PROMPT)`.
    """

    #: answer -32000 to session methods until `authenticate` succeeded
    requires_authentication: ClassVar[bool] = False
    client: ClientHandle

    def on_connect(self, client: ClientHandle) -> None:
        self.client = client

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(protocol_version=LATEST_PROTOCOL_VERSION)

    async def close_session(self, params: s.CloseSessionRequest) -> s.CloseSessionResponse:
        return s.CloseSessionResponse()

    async def cancel(self, params: s.CancelNotification) -> None:
        """Called on `session/cancel` (the running prompt is cancelled for you)."""


class _Session(msgspec.Struct):
    modes: set[str] | None = None
    config: dict[str, object] | None = None  # None: never announced
    prompt: asyncio.Task[object] | None = None
    cancelled: bool = False


class AgentSideConnection(Endpoint):
    """Serves one `Agent` to one client over a byte stream pair."""

    SIDE = "agent"
    OWN_ROOT = "agentCapabilities"
    PEER_ROOT = "clientCapabilities"

    def __init__(
        self,
        agent: Agent,
        reader: ByteReader,
        writer: ByteWriter,
        *,
        max_message_size: int | None = None,
        unstable: bool = False,
    ) -> None:
        """`unstable=True` opts in to the unstable methods; their params are then the
        types of `interlink.acp._schema_unstable`, and an unstable-only method calls the
        agent's method named after it (`session/fork` -> `session_fork`)."""
        self.agent = agent
        super().__init__(
            agent,
            reader,
            writer,
            max_message_size=max_message_size,
            unstable=unstable,
            name="acp-agent",
        )
        self.client = ClientHandle(self)
        self._state = State.NEW
        #: set once the `initialize` being handled is over (a new one for each)
        self._initialize_over = asyncio.Event()
        self._sessions: dict[str, _Session] = {}
        #: what `initialize` answered: the prompt content this agent takes
        self._agent_caps: s.AgentCapabilities | msgspec.UnsetType | None = None
        self.connection.admit_requests(self._arrive)
        agent.on_connect(self.client)

    async def serve(self) -> None:
        """Serve until the client closes the connection."""
        async with self:
            await self.wait_closed()

    # -- the lifecycle (`_lifecycle.py`) ------------------------------------------------

    def _route(self, spec: MethodSpec[Any, Any]) -> Route:
        guarded = spec.needs_auth and self.agent.requires_authentication
        return Route(
            spec,
            getattr(self, f"_on_{spec.handler}", None),
            ARRIVALS.get(spec.name, Event.GUARDED_REQUEST if guarded else Event.REQUEST),
            SUCCESSES.get(spec.name),
        )

    def _arrive(self, method: str) -> Callable[[], None] | None:
        """A request's event as it arrives, until initialized (arrival order decides
        there); then this hook goes and `_step` steps it as its handling starts."""
        route = self._routes.get(method)
        event = Event.REQUEST if route is None else route.arrive
        try:
            state = step(self._state, event)  # raises the refusal: answered at once
        except Waits:
            return None  # admitted: it waits in its task
        if event is not Event.INITIALIZE:
            return None
        self._state = state
        self._initialize_over = asyncio.Event()
        return self._initialize_ended

    def _initialize_ended(self) -> None:
        """The `initialize` admitted is over: unless it succeeded (it failed, its params
        did not decode, it was cancelled, even before it started), it did not happen."""
        if self._state is State.INITIALIZING:
            self._state = step(self._state, Event.INITIALIZE_FAILED)
            self._initialize_over.set()

    async def _step(self, event: Event) -> bool:
        """Step the lifecycle for what starts being handled (raising its refusal): False
        for a notification to drop. What came while `initialize` was handled waits."""
        try:
            self._state = step(self._state, event)
        except Waits:
            await self._initialize_over.wait()
            if self._state in (State.NEW, State.INITIALIZING):  # it failed
                if event is Event.NOTIFICATION:
                    return False
                raise initialize_failed() from None
            self._state = step(self._state, event)
        except Dropped:
            return False
        return True

    async def _serve(self, route: Route, raw: msgspec.Raw | msgspec.UnsetType) -> object:
        if route.arrive is Event.INITIALIZE and self._state is State.INITIALIZING:
            # (admitted as it arrived, by `_arrive`): what it asks the client is answered
            # at once, not behind the notifications that wait for it
            self.connection.answer_this_task_directly()
            result = await super()._serve(route, raw)
            self._state = step(self._state, Event.INITIALIZED)
            self.connection.admit_requests(None)  # (from now on: `_step`)
            self._initialize_over.set()
            return result
        try:  # (`_step` without a coroutine of its own, unless it waits: the hot path)
            self._state = step(self._state, route.arrive)
        except Waits:
            await self._step(route.arrive)
        result = await super()._serve(route, raw)
        if route.success is not None:
            self._state = step(self._state, route.success)
        return result

    async def _unknown_request(self, method: str, raw: msgspec.Raw | msgspec.UnsetType) -> object:
        await self._step(Event.REQUEST)
        return await super()._unknown_request(method, raw)

    def _notifier(self, route: Route) -> Callable[[Any], Awaitable[None]]:
        notified = super()._notifier(route)

        async def stepped(params: object) -> None:
            if await self._step(Event.NOTIFICATION):
                await notified(params)

        return stepped

    async def _dispatch_notification(
        self, method: str, raw: msgspec.Raw | msgspec.UnsetType
    ) -> None:
        if await self._step(Event.NOTIFICATION):
            await super()._dispatch_notification(method, raw)

    # -- the agent's part of its methods (`_on_<handler>`) ---------------------------------

    async def _on_initialize(
        self, handler: Handler, params: s.InitializeRequest, _: None
    ) -> object:
        response: s.InitializeResponse = await handler(params)
        requested = params.protocol_version
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        if response.protocol_version != version:
            response = msgspec.structs.replace(response, protocol_version=version)
        self._own_caps = capabilities_tree(self.OWN_ROOT, response.agent_capabilities)
        self._agent_caps = response.agent_capabilities
        self._peer_caps = capabilities_tree(self.PEER_ROOT, params.client_capabilities)
        return response

    def _session(self, params: object) -> _Session:
        session_id: str = getattr(params, "session_id")  # noqa: B009 - every scoped params has it
        session = self._sessions.get(session_id)
        if session is None:
            raise SessionNotFound(session_id)
        return session

    async def _on_prompt(
        self, handler: Handler, params: s.PromptRequest, session: _Session
    ) -> object:
        if session.prompt is not None and not session.prompt.done():
            raise InvalidRequest(data={"detail": "a prompt is already running in this session"})
        refused = unadvertised_content(self._agent_caps, params.prompt)
        if refused is not None:  # content this agent did not advertise: not its handler's
            raise refused
        session.cancelled = False
        task = asyncio.current_task()
        session.prompt = task
        try:
            response = await handler(params)
            if session.cancelled and isinstance(response, s.PromptResponse):
                # the handler swallowed the cancellation: a cancelled turn still answers
                # `cancelled` ("Agents MUST ... return the `cancelled` stop reason")
                response = msgspec.structs.replace(response, stop_reason="cancelled")
            return response
        except asyncio.CancelledError:
            if not session.cancelled or task is None:
                raise
            task.uncancel()
            return s.PromptResponse(stop_reason="cancelled")
        except Exception:
            if not session.cancelled:
                raise
            # "Agents MUST catch these errors and return ... `cancelled`" (prompt-turn):
            # a handler that turned the cancellation into an error of its own
            logger.debug("session %s: cancelled prompt raised", params.session_id, exc_info=True)
            if task is not None and task.cancelling():
                task.uncancel()
            return s.PromptResponse(stop_reason="cancelled")
        finally:
            session.prompt = None

    async def _on_set_session_mode(
        self, handler: Handler, params: s.SetSessionModeRequest, session: _Session
    ) -> object:
        if session.modes is not None and params.mode_id not in session.modes:
            raise RpcError.invalid_params(
                {"detail": f"unknown modeId {params.mode_id!r}", "modeId": params.mode_id}
            )
        return self._learn(session, await handler(params))

    async def _on_set_session_config_option(
        self, handler: Handler, params: object, session: _Session
    ) -> object:
        config_id: str = getattr(params, "config_id", "")
        if session.config is not None:  # (never announced: the agent decides)
            if config_id not in session.config:
                raise RpcError.invalid_params(
                    {"detail": f"unknown configId {config_id!r}", "configId": config_id}
                )
            allowed = session.config[config_id]
            value = getattr(params, "value", _UNSET)
            if isinstance(allowed, set) and value not in allowed:
                detail = f"unknown value {value!r} for {config_id!r}"
                raise RpcError.invalid_params({"detail": detail, "configId": config_id})
            if allowed is bool and not isinstance(value, bool):
                raise RpcError.invalid_params({"detail": f"{config_id!r} takes true or false"})
        return self._learn(session, await handler(params))

    async def _on_delete_session(
        self, handler: Handler, params: s.DeleteSessionRequest, _: None
    ) -> object:
        session = self._sessions.pop(params.session_id, None)
        if session is not None and session.prompt is not None:
            session.cancelled = True  # (the prompt answers `cancelled`)
            session.prompt.cancel()
        try:
            return await handler(params)
        except SessionNotFound:
            return s.DeleteSessionResponse()  # deleting what does not exist succeeds

    async def _on_close_session(
        self, handler: Handler, params: s.CloseSessionRequest, _: _Session
    ) -> object:
        # "as if session/cancel had been called", first
        await self._on_cancel(
            self._handler(CANCEL), s.CancelNotification(session_id=params.session_id), None
        )
        result = await handler(params)
        self._sessions.pop(params.session_id, None)
        return result

    async def _on_new_session(self, handler: Handler, params: object, _: None) -> object:
        """(and `session/load`, `session/resume`): the session is active from now on."""
        result = await handler(params)
        session_id = getattr(result, "session_id", None) or getattr(params, "session_id")  # noqa: B009
        return self._learn(self._sessions.setdefault(session_id, _Session()), result)

    _on_load_session = _on_resume_session = _on_new_session

    @staticmethod
    def _learn(session: _Session, result: object) -> object:
        """Keep the connection's view of a session's modes and config options current."""
        available = getattr(getattr(result, "modes", None), "available_modes", None)
        if isinstance(available, list):
            session.modes = {mode.id for mode in available}
        options = getattr(result, "config_options", None)
        if isinstance(options, list):
            session.config = _config_values(options)
        return result

    def note_update(self, session_id: str, update: object) -> None:
        """Learn the config options the agent announces in its own `ConfigOptionUpdate`."""
        session = self._sessions.get(session_id)
        if session is not None:
            session.config = _config_values(getattr(update, "config_options", ()))

    async def _on_cancel(
        self, handler: Handler | None, params: s.CancelNotification, _: None
    ) -> None:
        """`session/cancel` (and `session/close`): the running prompt answers `cancelled`,
        then the agent's hook gets the notification."""
        session = self._sessions.get(params.session_id)
        if session is not None and session.prompt is not None and not session.prompt.done():
            session.cancelled = True
            session.prompt.cancel()
        if handler is not None:
            await handler(params)


def _tag(value: object) -> object:
    """A tagged struct's tag (stable and unstable types alike), else None."""
    config = getattr(type(value), "__struct_config__", None)
    return getattr(config, "tag", None)


def _config_values(options: Sequence[object]) -> dict[str, object]:
    """config id -> the set of allowed value ids (select) or `bool` (boolean option).

    Works on the stable and the unstable generated types alike (by tag and field).
    """
    known: dict[str, object] = {}
    for option in options:
        option_id = getattr(option, "id", None)
        if not isinstance(option_id, str):
            continue
        if _tag(option) == "select":
            values: set[str] = set()
            for entry in getattr(option, "options", ()):
                value = getattr(entry, "value", None)
                if isinstance(value, str):
                    values.add(value)
                else:  # a group of options
                    values.update(o.value for o in getattr(entry, "options", ()))
            known[option_id] = values
        elif _tag(option) == "boolean":
            known[option_id] = bool
    return known
