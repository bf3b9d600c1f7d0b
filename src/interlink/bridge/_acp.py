"""`A2AAgentBridge`: an A2A agent served as an ACP agent on stdio (`interlink bridge acp`).

Theory of operation. `initialize` resolves the agent's card (agentInfo from its name and
version, prompt capabilities from its input modes); `session/new` is a new A2A context;
`session/prompt` sends the prompt to that context (streaming when the card says so) and
turns what comes back into `session/update`s:

- artifacts: `agent_message_chunk`s, a part each;
- a status message: its text as an `agent_thought_chunk`, and a data part that holds
  an ACP update (what `bridge a2a` sends: plans, tool calls, thoughts) as that update;
- INPUT_REQUIRED: when it asks a permission the way `bridge a2a` does (a data part
  `{"permission": {"toolCall", "options"}}`), a `session/request_permission` to the
  editor, whose answer is sent as the follow-up (`{"optionId": ...}`) and the turn goes
  on; otherwise the question ends the turn (`end_turn`) and the next prompt answers it;
- the end: COMPLETED `end_turn` (or the `metadata.stopReason` it carries; its status
  message a thought), CANCELED `cancelled`, REJECTED `refusal`, FAILED `end_turn` with
  the agent's reason as a message.

`session/cancel` cancels the A2A task (the prompt answers `cancelled`). Where the agent
serves `ListTasks` (tried once, at `initialize`), `session/list` lists its contexts and
`session/load` replays a context's tasks (`_history`), then goes on in that context;
elsewhere neither is offered.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast, get_args

import msgspec

from interlink import acp
from interlink.a2a import INTERRUPTED_STATES, A2AClient, A2AError, new_id
from interlink.a2a import types as t
from interlink.acp import schema as s
from interlink.bridge._content import content_part, part_block, prompt_capabilities
from interlink.bridge._history import replay, said, session_infos, thoughts
from interlink.jsonrpc import InvalidParams, RpcError

__all__ = ["A2AAgentBridge"]

logger = logging.getLogger("interlink.bridge")

S = t.TaskState
_STOP_REASONS = frozenset(get_args(s.StopReason))
_ENDS: dict[t.TaskState, s.StopReason] = {
    S.TASK_STATE_COMPLETED: "end_turn",
    S.TASK_STATE_FAILED: "end_turn",
    S.TASK_STATE_CANCELED: "cancelled",
    S.TASK_STATE_REJECTED: "refusal",
}


_LIST_TASKS = 1000  # tasks `session/list` reads at most (the newest)
_PAGE = 50  # sessions per page of `session/list`


@dataclass
class _Session:
    context_id: str
    cwd: str = ""
    task_id: str = ""  # the task of the turn, or the one waiting for an answer
    waiting: bool = False
    #: how many parts of each artifact of the task the editor was told
    said: dict[str, int] = field(default_factory=dict)


class _Answer(Exception):
    """The turn goes on with this follow-up message (a permission answered)."""

    def __init__(self, message: t.Message) -> None:
        self.message = message


class A2AAgentBridge(acp.Agent):
    """An ACP agent whose turns are tasks of the A2A agent at `url`."""

    def __init__(
        self,
        url: str,
        *,
        bearer: str | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.url = url
        self.bearer = bearer
        self.api_key = api_key
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.a2a: A2AClient | None = None
        self.sessions: dict[str, _Session] = {}
        self.cwd = os.getcwd()  # (the cwd of a context no session of ours opened)
        #: whether the agent serves `ListTasks` (so `session/list` and `session/load`)
        self.lists_tasks = False

    async def aclose(self) -> None:
        if self.a2a is not None:
            await self.a2a.aclose()

    async def serve_stdio(self) -> None:
        """Serve on this process's stdin/stdout until stdin reaches EOF, then close."""
        try:
            await acp.serve_agent(self)
        finally:
            await self.aclose()

    def _client(self) -> A2AClient:
        assert self.a2a is not None  # (the connection runs initialize first)
        return self.a2a

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        try:
            self.a2a = await A2AClient.connect(
                self.url,
                bearer=self.bearer,
                api_key=self.api_key,
                headers=self.headers,
                timeout=self.timeout,
            )
        except Exception as exc:
            raise RpcError(f"cannot reach the A2A agent at {self.url}: {exc}") from None
        card = self.a2a.card
        try:
            await self.a2a.list_tasks(page_size=1, history_length=0)
            self.lists_tasks = True
        except Exception as exc:  # (not served, or refused: no history to offer)
            logger.info("the A2A agent does not list its tasks (%s): no session/list", exc)
        lists = s.SessionListCapabilities() if self.lists_tasks else msgspec.UNSET
        return s.InitializeResponse(
            protocol_version=params.protocol_version,
            agent_capabilities=s.AgentCapabilities(
                prompt_capabilities=prompt_capabilities(card.default_input_modes),
                load_session=self.lists_tasks,
                session_capabilities=s.SessionCapabilities(list_=lists),
            ),
            agent_info=s.Implementation(name=card.name, title=card.name, version=card.version),
        )

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        session_id = new_id()
        self.sessions[session_id] = _Session(context_id=session_id, cwd=params.cwd)
        return s.NewSessionResponse(session_id=session_id)

    async def list_sessions(self, params: s.ListSessionsRequest) -> s.ListSessionsResponse:
        """The contexts of the agent's newest `_LIST_TASKS` tasks, newest first, a page
        of `_PAGE` at a time."""
        skip = _cursor_skip(params.cursor)
        tasks = []
        try:
            async for task in self._client().iter_tasks(page_size=100, include_artifacts=False):
                tasks.append(task)
                if len(tasks) >= _LIST_TASKS:
                    break
        except A2AError as exc:
            raise RpcError(f"the A2A agent answered {exc.code}: {exc.message}") from None
        cwds = {session.context_id: session.cwd for session in self.sessions.values()}
        infos = session_infos(tasks, cwds, self.cwd)
        if isinstance(params.cwd, str):
            infos = [info for info in infos if info.cwd == params.cwd]
        page = infos[skip : skip + _PAGE]
        more = skip + _PAGE < len(infos)
        return s.ListSessionsResponse(
            sessions=page, next_cursor=_cursor(skip + _PAGE) if more else msgspec.UNSET
        )

    async def load_session(self, params: s.LoadSessionRequest) -> s.LoadSessionResponse:
        """The context's tasks told again (oldest first), then its session goes on."""
        context_id = params.session_id
        try:
            tasks = [
                task
                async for task in self._client().iter_tasks(
                    context_id=context_id, page_size=100, include_artifacts=True
                )
            ]
        except A2AError as exc:
            raise RpcError(f"the A2A agent answered {exc.code}: {exc.message}") from None
        if not tasks and context_id not in self.sessions:
            raise acp.SessionNotFound(context_id)
        tasks.reverse()
        for task in tasks:
            for update in replay(task):
                await self.client.session_update(context_id, update)
        session = _Session(context_id=context_id, cwd=params.cwd)
        if tasks:
            newest = tasks[-1]
            session.task_id = newest.id
            session.said = {a.artifact_id: len(a.parts) for a in newest.artifacts}
            session.waiting = newest.status.state in INTERRUPTED_STATES
        self.sessions[context_id] = session
        return s.LoadSessionResponse()

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        session = self.sessions[params.session_id]
        message = t.Message(
            message_id=new_id(),
            role=t.Role.ROLE_USER,
            context_id=session.context_id,
            task_id=session.task_id if session.waiting else "",
            parts=[content_part(block) for block in params.prompt],
        )
        session.waiting = False
        try:
            while True:
                try:
                    return await self._turn(params.session_id, session, message)
                except _Answer as answer:
                    message = answer.message
        except asyncio.CancelledError:
            if session.task_id:
                await asyncio.shield(self._cancel(session.task_id))
            raise
        except A2AError as exc:
            raise RpcError(f"the A2A agent answered {exc.code}: {exc.message}") from None

    async def _cancel(self, task_id: str) -> None:
        with contextlib.suppress(Exception):  # (ended meanwhile, or unreachable: told below)
            async with asyncio.timeout(self.timeout):
                await self._client().cancel_task(task_id)

    async def _turn(
        self, session_id: str, session: _Session, message: t.Message
    ) -> s.PromptResponse:
        client = self._client()
        if client.card.capabilities.streaming is not True:
            return await self._blocking_turn(session_id, session, message)
        update = self.client.session_update
        # (closed here, not when collected: once the task ended it is read to its end,
        # and its connection serves the next turn)
        async with contextlib.aclosing(client.stream_message(message)) as events:
            async for event in events:
                payload = event.payload
                if isinstance(payload, t.TaskArtifactUpdateEvent):  # (the most of a turn)
                    parts = _unsaid(session, payload.artifact, payload.append)
                    for index, part in enumerate(parts):  # (as `said`, without its list)
                        await update(
                            session_id, s.AgentMessageChunk(content=part_block(part, index))
                        )
                elif isinstance(payload, t.Message):  # a direct answer: no task
                    await self._say(session_id, payload.parts)
                    return s.PromptResponse(stop_reason="end_turn")
                elif isinstance(payload, t.Task):  # (the snapshot: its status is not news)
                    if payload.id != session.task_id:
                        session.task_id, session.said = payload.id, {}
                elif isinstance(payload, t.TaskStatusUpdateEvent):
                    stop = await self._status(session_id, session, payload.status, payload.metadata)
                    if stop is not None:
                        return s.PromptResponse(stop_reason=stop)
        return s.PromptResponse(stop_reason="end_turn")  # (a stream that ended early)

    async def _blocking_turn(
        self, session_id: str, session: _Session, message: t.Message
    ) -> s.PromptResponse:
        result = await self._client().send_message(message)
        if isinstance(result, t.Message):
            await self._say(session_id, result.parts)
            return s.PromptResponse(stop_reason="end_turn")
        if result.id != session.task_id:
            session.task_id, session.said = result.id, {}
        for artifact in result.artifacts:  # (what was not said before the question)
            await self._say(session_id, _unsaid(session, artifact, append=False))
        stop = await self._status(session_id, session, result.status, result.metadata)
        return s.PromptResponse(stop_reason=stop or "end_turn")

    async def _say(self, session_id: str, parts: list[t.Part]) -> None:
        for update in said(parts):
            await self.client.session_update(session_id, update)

    async def _status(
        self,
        session_id: str,
        session: _Session,
        status: t.TaskStatus,
        metadata: dict[str, object] | None,
    ) -> s.StopReason | None:
        """Tell the editor of a status; the stop reason, when it ends the turn."""
        state = status.state
        parts = status.message.parts if status.message is not None else []
        if state in INTERRUPTED_STATES:
            answer = await self._ask(session_id, session, parts)
            if isinstance(answer, t.Message):
                raise _Answer(answer)
            if answer is not None:
                return answer
            await self._say(session_id, parts)  # the question, which the next prompt answers
            session.waiting = True
            return "end_turn"
        if state in _ENDS:
            if state == S.TASK_STATE_COMPLETED:
                await self._think(session_id, parts)  # (a remark: the answer is the artifacts)
            else:
                await self._say(session_id, parts)  # (the reason: for the person to read)
            stop = _ENDS[state]
            reason = (metadata or {}).get("stopReason")
            if state == S.TASK_STATE_COMPLETED and reason in _STOP_REASONS:
                stop = cast(s.StopReason, reason)
            return stop
        await self._think(session_id, parts)  # working: the agent at work
        return None

    async def _think(self, session_id: str, parts: list[t.Part]) -> None:
        """A status message's parts: text as thoughts, ACP updates as themselves."""
        for update in thoughts(parts):
            await self.client.session_update(session_id, update)

    async def _ask(
        self, session_id: str, session: _Session, parts: list[t.Part]
    ) -> t.Message | s.StopReason | None:
        """A permission question, asked of the editor: the follow-up that answers it, or
        `cancelled` (the task is cancelled too). None for any other question."""
        for part in parts:
            asked = part.data.get("permission") if isinstance(part.data, dict) else None
            if not isinstance(asked, dict):
                continue
            try:
                tool_call = acp.convert(s.ToolCallUpdate, asked.get("toolCall"))
                options = acp.convert(list[s.PermissionOption], asked.get("options"))
            except Exception:
                logger.warning("a permission question of an unknown shape: said as text")
                return None
            answer = await self.client.request_permission(session_id, tool_call, options)
            outcome = answer.outcome
            if not isinstance(outcome, s.SelectedPermissionOutcome):
                await self._cancel(session.task_id)
                return "cancelled"
            return t.Message(
                message_id=new_id(),
                role=t.Role.ROLE_USER,
                context_id=session.context_id,
                task_id=session.task_id,
                parts=[t.Part(data={"optionId": outcome.option_id})],
            )
        return None


def _unsaid(session: _Session, artifact: t.Artifact, append: bool) -> list[t.Part]:
    """An artifact's parts not said yet (a snapshot repeats what its chunks said); now
    counted as said."""
    said = session.said.get(artifact.artifact_id, 0)
    if append:
        parts = artifact.parts
        said += len(parts)
    else:
        parts = artifact.parts[said:]
        said = max(said, len(artifact.parts))
    session.said[artifact.artifact_id] = said
    return parts


def _cursor(skip: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"skip": skip}).encode()).decode()


def _cursor_skip(cursor: str | msgspec.UnsetType | None) -> int:
    """How many sessions a `session/list` cursor (of `_cursor`) skips; -32602 if not ours."""
    if not isinstance(cursor, str):
        return 0
    try:
        skip = json.loads(base64.urlsafe_b64decode(cursor.encode()))["skip"]
    except Exception:
        skip = None
    if not isinstance(skip, int) or skip < 0:
        raise InvalidParams(data={"detail": f"cursor {cursor!r} is not one session/list gave"})
    return skip
