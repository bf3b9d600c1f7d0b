"""What an agent calls on its client: updates, permission, files, terminals, elicitation.

Every call checks the client's advertised capabilities first: asking for
`fs/read_text_file` of a client that did not advertise it raises `MethodNotFound`
(-32601) here, without a round trip.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING

import msgspec

from interlink.acp import _methods as m
from interlink.acp import _schema as s
from interlink.acp._endpoint import elicitation_mode_open
from interlink.jsonrpc import InvalidParams

if TYPE_CHECKING:
    from interlink.acp._agent import AgentSideConnection

__all__ = ["ClientHandle", "TerminalHandle"]

_UNSET = msgspec.UNSET
_SESSION_UPDATE = m.SESSION_UPDATE.name


class ClientHandle:
    """The connected client, as seen by the agent."""

    def __init__(self, endpoint: AgentSideConnection) -> None:
        self._endpoint = endpoint
        #: what `session_update` returns once its notification is queued (done already)
        self._done: asyncio.Future[None] | None = None
        self._notify_update = endpoint.connection.notifier(_SESSION_UPDATE)

    @property
    def capabilities(self) -> dict[str, object]:
        """The client's capabilities from `initialize`, as JSON values."""
        caps = self._endpoint._peer_caps.get("clientCapabilities")
        return caps if isinstance(caps, dict) else {}

    def session_update(self, session_id: str, update: s.SessionUpdate) -> Awaitable[None]:
        """Send one `session/update` notification (ungated: every client takes them);
        await what it returns (done at once unless the output is full). It is queued
        as this is called, so updates go out in the order of the calls."""
        if type(update).__name__ == "ConfigOptionUpdate":  # (a call less for the others)
            self._endpoint.note_update(session_id, update)
        waiting = self._notify_update(s.SessionNotification(session_id=session_id, update=update))
        if waiting is None:  # (else the output is full)
            waiting = self._done  # (not a coroutine of its own: the hot path of every agent)
            if waiting is None:
                waiting = self._done = asyncio.get_running_loop().create_future()
                self._done.set_result(None)
        return waiting

    async def send_text(self, session_id: str, text: str) -> None:
        """An `agent_message_chunk` with one text block."""
        await self.session_update(session_id, s.AgentMessageChunk(content=s.TextContent(text=text)))

    async def request_permission(
        self,
        session_id: str,
        tool_call: s.ToolCallUpdate,
        options: Sequence[s.PermissionOption],
    ) -> s.RequestPermissionResponse:
        return await self._endpoint._call(
            m.REQUEST_PERMISSION,
            s.RequestPermissionRequest(
                session_id=session_id, tool_call=tool_call, options=list(options)
            ),
        )

    async def read_text_file(
        self, session_id: str, path: str, *, line: int | None = None, limit: int | None = None
    ) -> str:
        result = await self._endpoint._call(
            m.READ_TEXT_FILE,
            s.ReadTextFileRequest(
                session_id=session_id,
                path=path,
                line=_UNSET if line is None else line,
                limit=_UNSET if limit is None else limit,
            ),
        )
        return result.content

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        await self._endpoint._call(
            m.WRITE_TEXT_FILE,
            s.WriteTextFileRequest(session_id=session_id, path=path, content=content),
        )

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: Sequence[str] = (),
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> TerminalHandle:
        """Start a command in a client terminal; use the handle as `async with`."""
        result = await self._endpoint._call(
            m.CREATE_TERMINAL,
            s.CreateTerminalRequest(
                session_id=session_id,
                command=command,
                args=list(args),
                env=_UNSET
                if env is None
                else [s.EnvVariable(name=k, value=v) for k, v in env.items()],
                cwd=_UNSET if cwd is None else cwd,
                output_byte_limit=_UNSET if output_byte_limit is None else output_byte_limit,
            ),
        )
        return TerminalHandle(self, session_id, result.terminal_id)

    async def create_elicitation(
        self, params: s.CreateElicitationRequest
    ) -> s.CreateElicitationResponse:
        endpoint = self._endpoint
        endpoint._require(m.CREATE_ELICITATION.name)  # (no elicitation at all: -32601)
        if not elicitation_mode_open(params, endpoint.PEER_ROOT, endpoint._peer_caps):
            # "Agents MUST NOT request a mode the Client has not advertised"
            raise InvalidParams(data={"detail": "the client did not advertise this mode"})
        return await endpoint._call(m.CREATE_ELICITATION, params)

    async def complete_elicitation(self, elicitation_id: str) -> None:
        await self._endpoint._notify(
            m.COMPLETE_ELICITATION,
            s.CompleteElicitationNotification(elicitation_id=elicitation_id),
        )

    async def ext_method(self, method: str, params: object = None) -> object:
        return await self._endpoint.ext_method(method, params)

    async def ext_notification(self, method: str, params: object = None) -> None:
        await self._endpoint.ext_notification(method, params)


class TerminalHandle:
    """A terminal on the client. Released on `async with` exit (or `release()`)."""

    def __init__(self, client: ClientHandle, session_id: str, terminal_id: str) -> None:
        self._client = client
        self.session_id = session_id
        self.id = terminal_id
        self._released = False

    async def output(self) -> s.TerminalOutputResponse:
        return await self._client._endpoint._call(
            m.TERMINAL_OUTPUT,
            s.TerminalOutputRequest(session_id=self.session_id, terminal_id=self.id),
        )

    async def wait_for_exit(self) -> s.WaitForTerminalExitResponse:
        return await self._client._endpoint._call(
            m.WAIT_FOR_TERMINAL_EXIT,
            s.WaitForTerminalExitRequest(session_id=self.session_id, terminal_id=self.id),
        )

    async def kill(self) -> None:
        await self._client._endpoint._call(
            m.KILL_TERMINAL,
            s.KillTerminalRequest(session_id=self.session_id, terminal_id=self.id),
        )

    async def release(self) -> None:
        if self._released:
            return
        self._released = True
        await self._client._endpoint._call(
            m.RELEASE_TERMINAL,
            s.ReleaseTerminalRequest(session_id=self.session_id, terminal_id=self.id),
        )

    async def __aenter__(self) -> TerminalHandle:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.release()
