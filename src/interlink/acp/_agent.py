"""The agent side: the `Agent` base class an author subclasses, and the connection that
serves it and enforces the protocol's rules, so no agent has to.

Rules enforced here (ACP errors page, `DECISIONS.md`):

- a request other than `initialize` with no `initialize` before it: -32600; one that
  comes while `initialize` is being handled waits for it, then is served (-32600 if it
  failed); notifications likewise wait (in order) or are ignored; a second
  `initialize`: -32600; the version answered is the client's if we speak it, else ours;
- a method the agent did not implement, or gated by a capability it did not advertise:
  -32601 (never a silent success);
- session-scoped requests naming a session not active on this connection: -32002 with
  `data.sessionId`; deleting an unknown session succeeds;
- unknown `modeId`, config id or config value: -32602;
- agents that declare `requires_authentication` answer -32000 to session methods until
  `authenticate` succeeded;
- `session/cancel` cancels the running prompt, which then answers `stopReason: cancelled`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import msgspec

from interlink.acp import _schema as s
from interlink.acp._client_handle import ClientHandle
from interlink.acp._endpoint import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    Endpoint,
    SessionNotFound,
    capabilities_tree,
    unadvertised_content,
)
from interlink.acp._methods import MethodSpec
from interlink.acp._registry import Handlers
from interlink.aio import ByteReader, ByteWriter
from interlink.jsonrpc import InvalidRequest, RpcError

logger = logging.getLogger("interlink.acp")

__all__ = ["Agent", "AgentSideConnection"]

_UNSET = msgspec.UNSET


class Agent(Handlers):
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

    async def authenticate(self, params: s.AuthenticateRequest) -> s.AuthenticateResponse:
        raise RpcError.method_not_found("authenticate")

    async def logout(self, params: s.LogoutRequest) -> s.LogoutResponse:
        raise RpcError.method_not_found("logout")

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        raise RpcError.method_not_found("session/new")

    async def load_session(self, params: s.LoadSessionRequest) -> s.LoadSessionResponse:
        raise RpcError.method_not_found("session/load")

    async def resume_session(self, params: s.ResumeSessionRequest) -> s.ResumeSessionResponse:
        raise RpcError.method_not_found("session/resume")

    async def list_sessions(self, params: s.ListSessionsRequest) -> s.ListSessionsResponse:
        raise RpcError.method_not_found("session/list")

    async def delete_session(self, params: s.DeleteSessionRequest) -> s.DeleteSessionResponse:
        raise RpcError.method_not_found("session/delete")

    async def close_session(self, params: s.CloseSessionRequest) -> s.CloseSessionResponse:
        return s.CloseSessionResponse()

    async def set_session_mode(self, params: s.SetSessionModeRequest) -> s.SetSessionModeResponse:
        raise RpcError.method_not_found("session/set_mode")

    async def set_session_config_option(
        self, params: s.SetSessionConfigOptionRequest
    ) -> s.SetSessionConfigOptionResponse:
        raise RpcError.method_not_found("session/set_config_option")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        raise RpcError.method_not_found("session/prompt")

    async def cancel(self, params: s.CancelNotification) -> None:
        """Called on `session/cancel` (the running prompt is cancelled for you)."""

    async def ext_method(self, method: str, params: object) -> object:
        raise RpcError.method_not_found(method)

    async def ext_notification(self, method: str, params: object) -> None:
        return None


# wire method -> Agent method name
_HANDLERS = {
    "initialize": "initialize",
    "authenticate": "authenticate",
    "logout": "logout",
    "session/new": "new_session",
    "session/load": "load_session",
    "session/resume": "resume_session",
    "session/list": "list_sessions",
    "session/delete": "delete_session",
    "session/close": "close_session",
    "session/set_mode": "set_session_mode",
    "session/set_config_option": "set_session_config_option",
    "session/prompt": "prompt",
}
_SESSION_SCOPED = frozenset(
    {"session/prompt", "session/set_mode", "session/set_config_option", "session/close"}
)
_NEEDS_AUTH = frozenset(_HANDLERS) - {"initialize", "authenticate", "logout"}


@dataclass
class _Session:
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
        super().__init__(
            reader,
            writer,
            max_message_size=max_message_size,
            unstable=unstable,
            name="acp-agent",
        )
        self.agent = agent
        self.client = ClientHandle(self)
        #: set once the `initialize` being handled is over; None when none is
        self._initializing: asyncio.Event | None = None
        self._initialized = False
        self._authenticated = False
        self._sessions: dict[str, _Session] = {}
        #: what `initialize` answered: the prompt content this agent takes
        self._agent_caps: s.AgentCapabilities | msgspec.UnsetType | None = None
        self.connection.admit_requests(self._admit)
        agent.on_connect(self.client)

    async def serve(self) -> None:
        """Serve until the client closes the connection."""
        async with self:
            await self.wait_closed()

    # -- rules before decoding ---------------------------------------------------------

    def _admit(self, method: str) -> Callable[[], None] | None:
        """The initialisation gate, applied as each request arrives: with no `initialize`
        before it, anything but `initialize` is -32600, and so is a second `initialize`.
        A request that comes while `initialize` is being handled is admitted and waits
        for it (`_dispatch_request`). An `initialize` that fails (bad params, an error, a
        cancel) leaves the gate as it was: it may be sent again."""
        if method == "initialize":
            if self._initialized:
                raise InvalidRequest(data={"detail": "the connection is already initialized"})
            if self._initializing is not None:
                raise InvalidRequest(data={"detail": "an initialize is already being handled"})
            self._initializing = asyncio.Event()
            return self._initialize_over
        if self._initialized or self._initializing is not None:
            return None
        raise InvalidRequest(data={"detail": "initialize first"})

    def _initialize_over(self) -> None:
        """Called once the `initialize` request is over (its answer is queued)."""
        over, self._initializing = self._initializing, None
        if over is not None:
            over.set()

    async def _after_initialize(self) -> bool:
        """Waits for the `initialize` being handled, if any: whether it succeeded."""
        over = self._initializing
        if not self._initialized and over is not None:
            await over.wait()
        return self._initialized

    async def _dispatch_request(self, method: str, raw: msgspec.Raw | msgspec.UnsetType) -> object:
        # admitted, so initialized or come while `initialize` was being handled: such a
        # request starts before that one's `_initialize_over` (a done callback) runs,
        # so it finds the event to wait on
        if method == "initialize":
            # what it asks the client is answered at once, not behind the notifications that
            # wait for it
            self.connection.answer_this_task_directly()
        elif not await self._after_initialize():
            raise InvalidRequest(data={"detail": "the initialize before this request failed"})
        return await super()._dispatch_request(method, raw)

    def _check_request(self, spec: MethodSpec) -> None:
        if (
            self.agent.requires_authentication
            and not self._authenticated
            and spec.name in _NEEDS_AUTH
        ):
            raise RpcError.auth_required({"detail": "authenticate first"})

    # -- requests -----------------------------------------------------------------------

    async def _handle_request(self, spec: MethodSpec, params: object) -> object:
        name = spec.name
        handler = self.agent.registered(name) or getattr(
            self.agent, _HANDLERS.get(name) or name.replace("/", "_"), None
        )
        if handler is None:
            raise RpcError.method_not_found(name)
        if name == "initialize":
            return await self._initialize(handler, params)  # type: ignore[arg-type]
        if name in _SESSION_SCOPED:
            session = self._session(params)
            if name == "session/prompt":
                return await self._prompt(session, params)  # type: ignore[arg-type]
            if name == "session/set_mode":
                self._check_mode(session, params)  # type: ignore[arg-type]
            elif name == "session/set_config_option":
                self._check_config(session, params)
        if name == "session/delete":
            return await self._delete(params)  # type: ignore[arg-type]
        if name == "session/close":  # "as if session/cancel had been called", first
            await self._cancel(getattr(params, "session_id"))  # noqa: B009
        result = await handler(params)
        if name == "authenticate":
            self._authenticated = True
        elif name == "logout":
            self._authenticated = False
        self._track(name, params, result)
        return result

    async def _initialize(
        self,
        handler: Callable[[s.InitializeRequest], Awaitable[s.InitializeResponse]],
        params: s.InitializeRequest,
    ) -> s.InitializeResponse:
        response = await handler(params)
        requested = params.protocol_version
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        if response.protocol_version != version:
            response = msgspec.structs.replace(response, protocol_version=version)
        self._own_caps = capabilities_tree(self.OWN_ROOT, response.agent_capabilities)
        self._agent_caps = response.agent_capabilities
        self._peer_caps = capabilities_tree(self.PEER_ROOT, params.client_capabilities)
        self._initialized = True
        return response

    def _session(self, params: object) -> _Session:
        session_id: str = getattr(params, "session_id")  # noqa: B009 - every scoped params has it
        session = self._sessions.get(session_id)
        if session is None:
            raise SessionNotFound(session_id)
        return session

    async def _prompt(self, session: _Session, params: s.PromptRequest) -> object:
        if session.prompt is not None and not session.prompt.done():
            raise InvalidRequest(data={"detail": "a prompt is already running in this session"})
        refused = unadvertised_content(self._agent_caps, params.prompt)
        if refused is not None:  # content this agent did not advertise: not its handler's
            raise refused
        session.cancelled = False
        task = asyncio.current_task()
        session.prompt = task
        try:
            handler = self.agent.registered("session/prompt") or self.agent.prompt
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

    def _check_mode(self, session: _Session, params: s.SetSessionModeRequest) -> None:
        if session.modes is not None and params.mode_id not in session.modes:
            raise RpcError.invalid_params(
                {"detail": f"unknown modeId {params.mode_id!r}", "modeId": params.mode_id}
            )

    def _check_config(self, session: _Session, params: object) -> None:
        config_id: str = getattr(params, "config_id", "")
        if session.config is None:  # never announced: the agent decides
            return
        if config_id not in session.config:
            raise RpcError.invalid_params(
                {"detail": f"unknown configId {config_id!r}", "configId": config_id}
            )
        allowed = session.config[config_id]
        value = getattr(params, "value", _UNSET)
        if isinstance(allowed, set) and value not in allowed:
            raise RpcError.invalid_params(
                {"detail": f"unknown value {value!r} for {config_id!r}", "configId": config_id}
            )
        if allowed is bool and not isinstance(value, bool):
            raise RpcError.invalid_params({"detail": f"{config_id!r} takes true or false"})

    async def _delete(self, params: s.DeleteSessionRequest) -> object:
        session = self._sessions.pop(params.session_id, None)
        if session is not None and session.prompt is not None:
            session.cancelled = True  # (the prompt answers `cancelled`)
            session.prompt.cancel()
        try:
            return await self.agent.delete_session(params)
        except SessionNotFound:
            return s.DeleteSessionResponse()  # deleting what does not exist succeeds

    def _track(self, name: str, params: object, result: object) -> None:
        """Keep the connection's view of sessions, modes and config options current."""
        if name in ("session/new", "session/load", "session/resume"):
            session_id = getattr(result, "session_id", None) or getattr(params, "session_id")  # noqa: B009
            session = self._sessions.setdefault(session_id, _Session())
            self._learn(session, result)
        elif name == "session/close":
            self._sessions.pop(getattr(params, "session_id"), None)  # noqa: B009
        elif name in ("session/set_config_option", "session/set_mode"):
            known = self._sessions.get(getattr(params, "session_id"))  # noqa: B009
            if known is not None:
                self._learn(known, result)

    @staticmethod
    def _learn(session: _Session, result: object) -> None:
        available = getattr(getattr(result, "modes", None), "available_modes", None)
        if isinstance(available, list):
            session.modes = {mode.id for mode in available}
        options = getattr(result, "config_options", None)
        if isinstance(options, list):
            session.config = _config_values(options)

    def note_update(self, session_id: str, update: object) -> None:
        """Learn modes and config options the agent announces in its own updates."""
        if type(update).__name__ != "ConfigOptionUpdate":  # the hot path: message chunks
            return
        session = self._sessions.get(session_id)
        if session is not None:
            session.config = _config_values(getattr(update, "config_options", ()))

    # -- notifications -------------------------------------------------------------------

    async def _handle_notification(self, spec: MethodSpec, params: object) -> None:
        if not await self._after_initialize():
            return  # (before initialize: ignored)
        if spec.name == "session/cancel":
            await self._cancel(getattr(params, "session_id"), params)  # noqa: B009

    async def _cancel(self, session_id: str, notification: object = None) -> None:
        """`session/cancel`: the running prompt answers `cancelled`; the agent's hook
        gets the notification (or one made up, for a `session/close`)."""
        session = self._sessions.get(session_id)
        if session is not None and session.prompt is not None and not session.prompt.done():
            session.cancelled = True
            session.prompt.cancel()
        handler = self.agent.registered("session/cancel") or self.agent.cancel
        await handler(notification or s.CancelNotification(session_id=session_id))  # type: ignore[arg-type]

    async def _ext_request(self, method: str, params: object) -> object:
        if not self._initialized:
            raise InvalidRequest(data={"detail": "initialize first"})
        return await self.agent.ext_method(method, params)

    async def _ext_notification(self, method: str, params: object) -> None:
        if not await self._after_initialize():
            return
        with contextlib.suppress(RpcError):
            await self.agent.ext_notification(method, params)


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
