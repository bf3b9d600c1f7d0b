"""The client side: the `Client` handlers an editor implements, and the connection that
is the editor's typed handle to the agent.

Guarantees: `initialize` is answered before anything else is sent and its version is
checked; all `session/update`s of a turn are handled, in order, before `prompt`
returns (the core's ordering rule); `cancel()` answers the session's pending
permission requests `cancelled`; requests gated by a capability we did not advertise
get -32601, and so do calls the agent did not advertise (checked before sending).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

import msgspec

from interlink.acp import _methods as m
from interlink.acp import _schema as s
from interlink.acp._endpoint import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    Endpoint,
    Handler,
    ProtocolVersionError,
    Route,
    capabilities_tree,
    elicitation_mode_open,
    nothing,
    unadvertised_content,
)
from interlink.acp._registry import Handlers
from interlink.acp._transcript import Transcript
from interlink.aio import ByteReader, ByteWriter
from interlink.jsonrpc import InvalidParams, ProtocolMisuse

__all__ = ["Client", "ClientSideConnection"]

_UNSET = msgspec.UNSET


class Client(Handlers, m.ClientMethods):
    """Subclass and override what your client handles; the rest answers -32601.

    Advertise the matching capabilities in `ClientSideConnection.initialize`.
    """


def _absolute(cwd: str | os.PathLike[str]) -> str:
    """`cwd` as sent: "The working directory for this session. Must be an absolute
    path" (schema); a relative one is our caller's mistake, refused before sending."""
    path = os.fspath(cwd)
    if not (PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute()):
        raise ProtocolMisuse(
            f"cwd {path!r} is a relative path; ACP requires an absolute one "
            f"(such as os.path.abspath({path!r}))"
        )
    return path


class ClientSideConnection(Endpoint):
    """The client's connection to one agent: call the agent, serve its requests."""

    SIDE = "client"
    OWN_ROOT = "clientCapabilities"
    PEER_ROOT = "agentCapabilities"

    def __init__(
        self,
        client: Client,
        reader: ByteReader,
        writer: ByteWriter,
        *,
        max_message_size: int | None = None,
        unstable: bool = False,
    ) -> None:
        #: the transcripts collecting each session's updates (`prompt_transcript`)
        self._transcripts: dict[str, list[Transcript]] = {}
        super().__init__(
            client,
            reader,
            writer,
            max_message_size=max_message_size,
            unstable=unstable,
            name="acp-client",
        )
        self.client = client
        self.agent_info: s.InitializeResponse | None = None
        self._initializing = False
        self._permissions: dict[str, set[asyncio.Task[Any]]] = {}
        self._cancelled: set[asyncio.Task[Any]] = set()

    # -- calls to the agent --------------------------------------------------------------

    async def initialize(
        self,
        capabilities: s.ClientCapabilities | None = None,
        *,
        client_info: s.Implementation | None = None,
        protocol_version: int = LATEST_PROTOCOL_VERSION,
    ) -> s.InitializeResponse:
        if self.agent_info is not None or self._initializing:
            raise ProtocolMisuse("initialize was already called")
        self._initializing = True  # (until answered: a second call would go out too)
        try:
            return await self._initialize(capabilities, client_info, protocol_version)
        finally:
            self._initializing = False

    async def _initialize(
        self,
        capabilities: s.ClientCapabilities | None,
        client_info: s.Implementation | None,
        protocol_version: int,
    ) -> s.InitializeResponse:
        caps = capabilities or s.ClientCapabilities()
        self._own_caps = capabilities_tree(self.OWN_ROOT, caps)
        params = s.InitializeRequest(
            protocol_version=protocol_version,
            client_capabilities=caps,
            client_info=_UNSET if client_info is None else client_info,
        )
        result = await self._call(m.INITIALIZE, params)
        if result.protocol_version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise ProtocolVersionError(
                f"the agent speaks ACP version {result.protocol_version}; interlink speaks "
                f"{sorted(SUPPORTED_PROTOCOL_VERSIONS)}"
            )
        self._peer_caps = capabilities_tree(self.PEER_ROOT, result.agent_capabilities)
        self.agent_info = result
        return result

    def _ready(self) -> None:
        if self.agent_info is None:
            raise ProtocolMisuse("call initialize() first and wait for its answer")

    _check_ready = _ready  # (extension methods and notifications wait for it too)

    async def authenticate(self, method_id: str) -> s.AuthenticateResponse:
        self._ready()
        return await self._call(m.AUTHENTICATE, s.AuthenticateRequest(method_id=method_id))

    async def logout(self) -> s.LogoutResponse:
        self._ready()
        return await self._call(m.LOGOUT, s.LogoutRequest())

    async def new_session(
        self, cwd: str | os.PathLike[str], mcp_servers: Sequence[s.McpServer] = ()
    ) -> s.NewSessionResponse:
        """A session working in `cwd`, an absolute path (a relative one is refused
        here, with `ProtocolMisuse`: ACP requires absolute paths)."""
        self._ready()
        params = s.NewSessionRequest(cwd=_absolute(cwd), mcp_servers=list(mcp_servers))
        return await self._call(m.NEW_SESSION, params)

    async def load_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str],
        mcp_servers: Sequence[s.McpServer] = (),
    ) -> s.LoadSessionResponse:
        self._ready()
        params = s.LoadSessionRequest(
            session_id=session_id, cwd=_absolute(cwd), mcp_servers=list(mcp_servers)
        )
        return await self._call(m.LOAD_SESSION, params)

    async def resume_session(
        self, session_id: str, cwd: str | os.PathLike[str]
    ) -> s.ResumeSessionResponse:
        self._ready()
        params = s.ResumeSessionRequest(session_id=session_id, cwd=_absolute(cwd))
        return await self._call(m.RESUME_SESSION, params)

    async def list_sessions(
        self, *, cwd: str | os.PathLike[str] | None = None, cursor: str | None = None
    ) -> s.ListSessionsResponse:
        self._ready()
        params = s.ListSessionsRequest(
            cwd=_UNSET if cwd is None else _absolute(cwd),
            cursor=_UNSET if cursor is None else cursor,
        )
        return await self._call(m.LIST_SESSIONS, params)

    async def delete_session(self, session_id: str) -> s.DeleteSessionResponse:
        self._ready()
        params = s.DeleteSessionRequest(session_id=session_id)
        return await self._call(m.DELETE_SESSION, params)

    async def close_session(self, session_id: str) -> s.CloseSessionResponse:
        self._ready()
        params = s.CloseSessionRequest(session_id=session_id)
        return await self._call(m.CLOSE_SESSION, params)

    async def set_session_mode(self, session_id: str, mode_id: str) -> s.SetSessionModeResponse:
        self._ready()
        params = s.SetSessionModeRequest(session_id=session_id, mode_id=mode_id)
        return await self._call(m.SET_SESSION_MODE, params)

    async def set_session_config_option(
        self, session_id: str, config_id: str, value: str | bool
    ) -> s.SetSessionConfigOptionResponse:
        self._ready()
        params: object
        if isinstance(value, bool):
            params = s.SetSessionConfigOptionRequestBoolean(
                session_id=session_id, config_id=config_id, value=value
            )
        else:
            params = s.SetSessionConfigOptionRequestValueId(
                session_id=session_id, config_id=config_id, value=value
            )
        return await self._call(m.SET_SESSION_CONFIG_OPTION, params)

    async def prompt(
        self, session_id: str, prompt: str | Sequence[s.ContentBlock]
    ) -> s.PromptResponse:
        """Run one turn; every `session/update` of it was handled when this returns."""
        self._ready()
        blocks: list[s.ContentBlock] = (
            [s.TextContent(text=prompt)] if isinstance(prompt, str) else list(prompt)
        )
        self._check_content(blocks)
        params = s.PromptRequest(session_id=session_id, prompt=blocks)
        return await self._call(m.PROMPT, params)

    def _check_content(self, blocks: Sequence[object]) -> None:
        """A block the agent did not advertise is refused here, before it is sent."""
        assert self.agent_info is not None
        refused = unadvertised_content(self.agent_info.agent_capabilities, blocks)
        if refused is not None:
            raise refused

    async def prompt_transcript(
        self, session_id: str, prompt: str | Sequence[s.ContentBlock]
    ) -> tuple[s.PromptResponse, Transcript]:
        """`prompt`, also collecting the turn's updates into a readable transcript."""
        transcript = Transcript()
        collectors = self._transcripts.setdefault(session_id, [])
        collectors.append(transcript)
        try:
            response = await self.prompt(session_id, prompt)
        finally:
            collectors.remove(transcript)
        transcript.stop_reason = str(response.stop_reason)
        return response, transcript

    async def cancel(self, session_id: str) -> None:
        """`session/cancel`; pending permission requests of the session answer cancelled."""
        self._ready()
        for task in self._permissions.pop(session_id, set()):
            if not task.done():
                self._cancelled.add(task)
                task.cancel()
        await self._notify(m.CANCEL, s.CancelNotification(session_id=session_id))

    # -- the agent's calls to us (`_on_<handler>`: the client's part) --------------------

    async def _on_create_elicitation(self, handler: Handler, params: object, _: None) -> object:
        if not elicitation_mode_open(params, self.OWN_ROOT, self._own_caps):
            raise InvalidParams(data={"detail": "the client did not advertise this mode"})
        return await handler(params)

    async def _on_request_permission(
        self, handler: Handler, params: s.RequestPermissionRequest, _: None
    ) -> object:
        task = asyncio.current_task()
        assert task is not None
        pending = self._permissions.setdefault(params.session_id, set())
        pending.add(task)
        try:
            return await handler(params)
        except asyncio.CancelledError:
            if task not in self._cancelled:
                raise
            task.uncancel()
            return s.RequestPermissionResponse(outcome=s.CancelledPermissionOutcome())
        finally:
            self._cancelled.discard(task)
            pending.discard(task)
            if not pending and self._permissions.get(params.session_id) is pending:
                del self._permissions[params.session_id]  # (ever new ids must not add up)

    def _notifier(self, route: Route) -> Callable[[Any], Awaitable[None]]:
        if route.spec.handler != "session_update":
            return super()._notifier(route)
        # `session/update`, the hot path of every client: the transcripts, the handler's
        # lookup (as `_handler`) and its call in one call, with no coroutine of its own
        handlers, name, transcripts = self._handlers, route.spec.name, self._transcripts

        def session_update(params: s.SessionNotification) -> Awaitable[None]:
            if transcripts:  # (the hot path: none)
                for transcript in transcripts.get(params.session_id, ()):
                    transcript.add(params.update)
            handler = handlers._registered.get(name) or getattr(handlers, "session_update", None)
            return nothing() if handler is None else handler(params)

        return session_update
