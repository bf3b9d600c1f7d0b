"""An example ACP agent, served on stdio: `python examples/acp_agent.py`.

- any prompt: a plan, then the prompt echoed back in `agent_message_chunk`s: about
  sixteen pieces, cut after whitespace where it can, none over 16 KiB (an 8 MiB prompt
  is some 500 updates, not a million one-word ones);
- `tool PATH`: a tool call, a permission request, and (when allowed) the file read
  through the client's `fs/read_text_file`, then the tool call finished;
- `slow`: works for about ten seconds, one update at once and then every half second,
  so cancellation can be seen (`session/cancel` ends it with `cancelled`).

It advertises `loadSession` (replaying the session's history), `session/list` and
`session/close`.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from interlink import __version__
from interlink.acp import Agent, SessionNotFound, run_agent
from interlink.acp import schema as s
from interlink.jsonrpc import RpcError


@dataclass
class Session:
    cwd: str
    history: list[tuple[str, str]] = field(default_factory=list)  # (role, text)


def prompt_text(blocks: list[s.ContentBlock]) -> str:
    return "".join(block.text for block in blocks if isinstance(block, s.TextContent))


CHUNK_BYTES = 16 * 1024  # the most one echoed piece holds (UTF-8 bytes)
_PIECES = 16  # an echo streams in about this many pieces, when they stay under the bound
_SMALLEST = 8  # bytes: short prompts stream about a word at a time
_SPACES = tuple(b" \t\n\r\f\v")


def chunks(text: str, most: int = CHUNK_BYTES) -> Iterator[str]:
    """`text` in pieces of at most `most` UTF-8 bytes that join back to it exactly:
    each cut after the last whitespace within its bound, else (one long word) at
    a character boundary, never inside a character."""
    data = text.encode()
    size = len(data)
    limit = max(min(_SMALLEST, most), min(most, size // _PIECES))
    start = 0
    while start < size:
        end = start + limit
        if end >= size:
            end = size
        else:
            after_space = max(data.rfind(space, start, end) for space in _SPACES) + 1
            if after_space > start:
                end = after_space
            while end > start and data[end] & 0xC0 == 0x80:  # a continuation byte
                end -= 1
            if end == start:  # (a bound smaller than one character: the character)
                end = start + 1
                while end < size and data[end] & 0xC0 == 0x80:
                    end += 1
        yield data[start:end].decode()
        start = end


class ExampleAgent(Agent):
    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(
            protocol_version=params.protocol_version,
            agent_capabilities=s.AgentCapabilities(
                load_session=True,
                session_capabilities=s.SessionCapabilities(
                    list_=s.SessionListCapabilities(), close=s.SessionCloseCapabilities()
                ),
            ),
            agent_info=s.Implementation(
                name="interlink-example-agent", title="interlink example", version=__version__
            ),
        )

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        session_id = f"sess_{uuid.uuid4().hex[:12]}"
        self.sessions[session_id] = Session(cwd=params.cwd)
        return s.NewSessionResponse(session_id=session_id)

    async def load_session(self, params: s.LoadSessionRequest) -> s.LoadSessionResponse:
        session = self.sessions.get(params.session_id)
        if session is None:
            raise SessionNotFound(params.session_id)
        for role, text in session.history:  # replay the conversation
            content = s.TextContent(text=text)
            chunk: s.SessionUpdate = (
                s.UserMessageChunk(content=content)
                if role == "user"
                else s.AgentMessageChunk(content=content)
            )
            await self.client.session_update(params.session_id, chunk)
        return s.LoadSessionResponse()

    async def list_sessions(self, params: s.ListSessionsRequest) -> s.ListSessionsResponse:
        infos = [
            s.SessionInfo(
                session_id=session_id,
                cwd=session.cwd,
                title=session.history[0][1][:40] if session.history else "(new)",
            )
            for session_id, session in self.sessions.items()
            if not isinstance(params.cwd, str) or params.cwd == session.cwd
        ]
        return s.ListSessionsResponse(sessions=infos)

    async def close_session(self, params: s.CloseSessionRequest) -> s.CloseSessionResponse:
        return s.CloseSessionResponse()

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        session = self.sessions[params.session_id]
        text = prompt_text(params.prompt)
        session.history.append(("user", text))
        if text.startswith("tool "):
            return await self._tool(params.session_id, session, text[5:].strip())
        if text.strip() == "slow":
            return await self._slow(params.session_id)
        await self._plan(params.session_id, "completed")
        for piece in chunks(text):
            await self.client.send_text(params.session_id, piece)
        session.history.append(("agent", text))
        return s.PromptResponse(stop_reason="end_turn")

    async def _plan(self, session_id: str, answer_status: s.PlanEntryStatus) -> None:
        await self.client.session_update(
            session_id,
            s.Plan(
                entries=[
                    s.PlanEntry(content="Read the prompt", priority="high", status="completed"),
                    s.PlanEntry(content="Answer", priority="medium", status=answer_status),
                ]
            ),
        )

    async def _tool(self, session_id: str, session: Session, path: str) -> s.PromptResponse:
        await self._plan(session_id, "in_progress")
        call = s.ToolCall(
            tool_call_id="call_1", title=f"Read {path}", kind="read", status="pending"
        )
        await self.client.session_update(session_id, call)
        answer = await self.client.request_permission(
            session_id,
            s.ToolCallUpdate(tool_call_id="call_1", title=f"Read {path}", kind="read"),
            [
                s.PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                s.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        outcome = answer.outcome
        if not (isinstance(outcome, s.SelectedPermissionOutcome) and outcome.option_id == "allow"):
            await self.client.session_update(
                session_id, s.ToolCallUpdated(tool_call_id="call_1", status="failed")
            )
            cancelled = isinstance(outcome, s.CancelledPermissionOutcome)
            return s.PromptResponse(stop_reason="cancelled" if cancelled else "end_turn")
        await self.client.session_update(
            session_id, s.ToolCallUpdated(tool_call_id="call_1", status="in_progress")
        )
        try:
            content = await self.client.read_text_file(session_id, os.path.join(session.cwd, path))
        except RpcError as exc:  # the client refused or could not read it
            failed = s.ToolCallUpdated(
                tool_call_id="call_1",
                status="failed",
                content=[s.Content(content=s.TextContent(text=f"could not read {path}: {exc}"))],
            )
            await self.client.session_update(session_id, failed)
            return s.PromptResponse(stop_reason="end_turn")
        await self.client.session_update(
            session_id,
            s.ToolCallUpdated(
                tool_call_id="call_1",
                status="completed",
                content=[s.Content(content=s.TextContent(text=content))],
            ),
        )
        reply = f"read {len(content)} characters"
        await self.client.send_text(session_id, reply)
        session.history.append(("agent", reply))
        return s.PromptResponse(stop_reason="end_turn")

    async def _slow(self, session_id: str) -> s.PromptResponse:
        await self.client.send_text(session_id, "working")
        for step in range(20):
            await asyncio.sleep(0.5)
            await self.client.send_text(session_id, f" .{step + 1}")
        return s.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    run_agent(ExampleAgent())
