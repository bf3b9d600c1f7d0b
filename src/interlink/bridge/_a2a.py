"""`AcpBridge`: an ACP agent served as an A2A agent (`interlink bridge a2a`).

Theory of operation. One agent process serves every conversation: an A2A context is an
ACP session, opened (`session/new`) in the context's own folder of the workspace, and a
task is one prompt turn in it. A turn's ACP traffic becomes A2A events in the order it
came, through one queue per turn (bounded in bytes: a full one holds the agent's
updates back while `execute` drains it; full while the task waits for input, the turn is
given up, FAILED with the reason when the follow-up comes, so one session never holds up
the others of its process) that one consumer drains, the `execute` that runs the turn:

- `agent_message_chunk`s: one artifact per turn, each chunk appended;
- every other update (thoughts, plans, tool calls, ...): a WORKING status whose message
  carries the ACP object as a data part;
- a permission request the policy does not answer: INPUT_REQUIRED with the options, and
  `execute` returns; the follow-up message's `execute` answers the request with the
  option it picks and drains the turn on;
- the prompt's answer: the terminal state of its stop reason (`end_turn` COMPLETED,
  `cancelled` CANCELED, `refusal` REJECTED, `max_tokens` and `max_turn_requests`
  COMPLETED saying so), `metadata.stopReason` on it; an error (the agent died, or
  refused with -32000 "authentication required") FAILED with the agent's words (and,
  where it wants a login, how to log in: `_login`).

`CancelTask` sends `session/cancel` (a permission request waiting is answered
`cancelled`) and the task ends CANCELED when the turn answers. A context takes one turn
at a time (an ACP session runs one prompt): a message for a context with a turn
unfinished is refused with -32004. The agent's file and terminal requests are served by
a `LocalClient` per session, confined to the context's folder. The agent runs as a pool
of up to `max_agents` processes (`_pool`), a context on one of them for the life of that
process. A process that exits fails its running turns with its exit status and stderr
tail and is started again after a pause that doubles (to `max_backoff`) while it keeps
dying; the other processes' turns go on. Which session each context has is kept in the
workspace (`.interlink-sessions.json`): after a restart of its process or of the bridge,
a context's next message loads its session again (`session/load`, else
`session/resume`, where the agent offers them), or opens a new one and says so in the
task's status. A turn that was running when the bridge died is
failed by the A2A server at start-up; one that waited for input is failed by its
follow-up (its ACP turn is gone). A context idle for `idle` seconds has its session
closed (`session/close` where offered) and its terminals killed, so what the bridge
holds grows with the contexts in use, not with all there ever were (but for the one
line per context of `.interlink-sessions.json`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
from collections import deque
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from interlink import acp
from interlink.a2a import (
    AgentExecutor,
    Event,
    EventSink,
    RequestContext,
    TaskUpdater,
    UnsupportedOperation,
    new_id,
)
from interlink.a2a import types as t
from interlink.acp import schema as s
from interlink.bridge._card import agent_card
from interlink.bridge._content import content_part, prompt_blocks
from interlink.bridge._login import login_hint
from interlink.bridge._permission import PermissionPolicy, chosen_option, question_parts
from interlink.bridge._pool import AgentUnavailable, Launch, Member, Pool
from interlink.bridge._pool import describe as _describe
from interlink.jsonrpc import ConnectionClosed, InvalidParams, RpcError

__all__ = ["AcpBridge", "AgentUnavailable"]

logger = logging.getLogger("interlink.bridge")

_STATES = {
    "end_turn": t.TaskState.TASK_STATE_COMPLETED,
    "cancelled": t.TaskState.TASK_STATE_CANCELED,
    "refusal": t.TaskState.TASK_STATE_REJECTED,
    "max_tokens": t.TaskState.TASK_STATE_COMPLETED,
    "max_turn_requests": t.TaskState.TASK_STATE_COMPLETED,
}
_CHUNKS_BYTES = 64 * 1024  # the most text (about) one artifact update of chunks carries
_SESSIONS = ".interlink-sessions.json"  # (a context's folder never starts with a dot)
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class TurnGivenUp(Exception):
    """The bridge ended a turn (the agent sent too much while the task waited for input)."""


@dataclass
class _Ask:
    """A permission request the A2A client is to answer (None: cancelled)."""

    request: s.RequestPermissionRequest
    answer: asyncio.Future[str | None]


@dataclass
class _End:
    """The prompt's answer, or what it failed with."""

    response: s.PromptResponse | None
    error: BaseException | None


class _Chunks:
    """Message chunks queued one after another: one artifact update once taken."""

    __slots__ = ("parts",)

    def __init__(self, part: t.Part) -> None:
        self.parts = [part]


_Item = Event | _Ask | _End


class _Turn:
    """One prompt turn: its queue of what to publish, and its state."""

    def __init__(
        self, task_id: str, context_id: str, session_id: str, limit: int, member: Member[_Turn]
    ) -> None:
        self.task_id = task_id
        self.context_id = context_id
        self.session_id = session_id
        self.limit = limit
        self.member = member  # (the process that runs its session)
        self._items: deque[tuple[_Item | _Chunks, int]] = deque()
        self._size = 0
        self._loop = asyncio.get_running_loop()
        self._wanted: asyncio.Future[None] | None = None  # what `get` waits on, if it waits
        self._waking = False
        self._room = asyncio.Event()
        self._stopped = asyncio.Event()  # (set when its driver stops)
        self.artifact_id: str | None = None
        self.question: _Ask | None = None
        self.cancelled = False
        self.driving = False
        self.given_up = False
        self.ended = asyncio.Event()
        self.prompt: asyncio.Task[None] | None = None
        self.running = False  # (its prompt's task took its first step)

    def fits(self, size: int) -> bool:
        """Whether `size` more bytes may be queued now (one item always fits)."""
        return not self._items or self._size + size <= self.limit

    async def room(self, size: int) -> bool:
        """Wait while the queue holds `limit` bytes and `execute` drains it; False when it
        is full and nobody drains it (the task waits for input): the agent's process is
        not held up for one turn."""
        while not self.fits(size):
            if not self.driving:
                return False
            self._room.clear()
            await self._room.wait()
        return True

    async def put(self, item: Event, size: int) -> bool:
        """Queue an event (`room` first)."""
        if not (self.fits(size) or await self.room(size)):
            return False
        self._push(item, size)
        return True

    def put_chunk(self, part: t.Part, size: int) -> bool:
        """Queue an `agent_message_chunk`'s part if it fits now (else False: `room`
        first): with the chunks queued right before it (up to `_CHUNKS_BYTES` of them),
        one artifact update to publish, store and stream, not one each."""
        items = self._items
        if items:
            if self._size + size > self.limit:
                return False
            last, queued = items[-1]
            if type(last) is _Chunks and queued + size <= _CHUNKS_BYTES:
                last.parts.append(part)
                items[-1] = (last, queued + size)
                self._size += size
                return True
        self._push(_Chunks(part), size)
        return True

    def give_up(self, reason: str) -> None:
        """Drop what is queued and end the turn (`execute` publishes the end, FAILED with
        `reason`, when the task's next message drives it); its question is answered
        `cancelled`, what the agent sends from now on is dropped."""
        self.given_up = True
        self._items.clear()
        self._size = 0
        if self.question is not None and not self.question.answer.done():
            self.question.answer.set_result(None)
        self.put_now(_End(None, TurnGivenUp(reason)))

    def stop_driving(self) -> None:
        self.driving = False
        self._room.set()  # (a `put` waiting for room sees that nobody drains it)
        self._stopped.set()

    def end(self) -> None:
        self.ended.set()
        self._stopped.set()  # (who waits in `driven` sees it)

    async def driven(self) -> bool:
        """Wait while another drives the turn; whether it has ended (False: its driver
        stopped short of the end, as on a failed write: the turn is to drive on)."""
        while self.driving and not self.ended.is_set():
            self._stopped.clear()
            await self._stopped.wait()
        return self.ended.is_set()

    def put_now(self, item: _Ask | _End) -> None:
        self._push(item, 0)

    def _push(self, item: _Item | _Chunks, size: int) -> None:
        self._items.append((item, size))
        self._size += size
        if self._wanted is not None and not self._waking:
            # Next time round the loop: what else the agent sent in the same read (the
            # prompt's answer too, which its task queues then) is taken with it.
            self._waking = True
            self._loop.call_soon(self._wake)

    def _wake(self) -> None:
        wanted = self._wanted
        if wanted is not None and not wanted.done():
            wanted.set_result(None)

    async def get(self) -> _Item:
        """The next item (chunks as one artifact update of their parts). One driver
        takes them (the server runs one executor of a task at a time): a second `get`
        while one waits is a bug, refused rather than left waiting for ever."""
        items = self._items
        while not items:
            if self._wanted is not None:
                raise RuntimeError(f"turn {self.task_id}: a second get while one waits")
            self._wanted = self._loop.create_future()
            try:
                await self._wanted
            finally:
                self._wanted = None
                self._waking = False
        item, size = items.popleft()
        self._size -= size
        self._room.set()
        if type(item) is _Chunks:
            return self.chunk(item.parts)
        return item  # type: ignore[return-value]

    async def run(self, agent: acp.ClientSideConnection, blocks: list[s.ContentBlock]) -> None:
        """The prompt's task: its answer (or what it failed with) queued as the end."""
        self.running = True
        try:
            response = await agent.prompt(self.session_id, blocks)
        except asyncio.CancelledError:
            self.put_now(_End(None, ConnectionClosed("the turn was stopped")))
            raise
        except Exception as error:
            self.put_now(_End(None, error))
        else:
            self.put_now(_End(response, None))

    def prompt_over(self, prompt: asyncio.Task[None]) -> None:
        """A prompt's task cancelled before its first step queued no end: queue it."""
        if not self.running:
            self.put_now(_End(None, ConnectionClosed("the turn was stopped")))

    def status(
        self,
        state: t.TaskState,
        parts: Sequence[t.Part] = (),
        metadata: dict[str, object] | None = None,
    ) -> t.TaskStatusUpdateEvent:
        message = None
        if parts:
            message = t.Message(
                message_id=new_id(),
                context_id=self.context_id,
                task_id=self.task_id,
                role=t.Role.ROLE_AGENT,
                parts=list(parts),
            )
        return t.TaskStatusUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            status=t.TaskStatus(state=state, message=message, timestamp=datetime.now(UTC)),
            metadata=metadata,
        )

    def chunk(self, parts: list[t.Part]) -> t.TaskArtifactUpdateEvent:
        """`agent_message_chunk`s as the next piece of the turn's one artifact."""
        append = self.artifact_id is not None
        if self.artifact_id is None:
            self.artifact_id = new_id()
        return t.TaskArtifactUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            artifact=t.Artifact(artifact_id=self.artifact_id, name="response", parts=parts),
            append=append,
        )


class _BridgeClient(acp.Client):
    """The bridge's ACP client side to one process: updates and permission go to the
    bridge, files and terminals to the session's `LocalClient` (its context's folder)."""

    def __init__(self, bridge: AcpBridge, member: Member[_Turn]) -> None:
        self.bridge = bridge
        self.member = member

    def _local(self, session_id: str) -> acp.LocalClient:
        local = self.member.locals.get(session_id)
        if local is None:
            raise InvalidParams(data={"detail": f"no session {session_id!r} of this bridge"})
        return local

    def session_update(self, params: s.SessionNotification) -> Coroutine[object, object, None]:
        return self.bridge._on_update(params, self.member)  # (a coroutine less: the hot path)

    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        return await self.bridge._on_permission(params, self.member)

    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        return await self._local(params.session_id).read_text_file(params)

    async def write_text_file(self, params: s.WriteTextFileRequest) -> s.WriteTextFileResponse:
        return await self._local(params.session_id).write_text_file(params)

    async def create_terminal(self, params: s.CreateTerminalRequest) -> s.CreateTerminalResponse:
        return await self._local(params.session_id).create_terminal(params)

    async def terminal_output(self, params: s.TerminalOutputRequest) -> s.TerminalOutputResponse:
        return await self._local(params.session_id).terminal_output(params)

    async def wait_for_terminal_exit(
        self, params: s.WaitForTerminalExitRequest
    ) -> s.WaitForTerminalExitResponse:
        return await self._local(params.session_id).wait_for_terminal_exit(params)

    async def kill_terminal(self, params: s.KillTerminalRequest) -> s.KillTerminalResponse:
        return await self._local(params.session_id).kill_terminal(params)

    async def release_terminal(self, params: s.ReleaseTerminalRequest) -> s.ReleaseTerminalResponse:
        return await self._local(params.session_id).release_terminal(params)


class AcpBridge(AgentExecutor):
    """An A2A executor that runs each task as a prompt turn of the ACP agent `command`.

    `await start()` spawns the agent and initializes it (raising what went wrong, if it
    does not start); `card()` is then its agent card, and `on_card` (when set) receives
    the card again each time the agent announces new slash commands. Up to `max_agents`
    processes of it run, started as contexts want them. `aclose()` stops them.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        workspace: str | Path,
        policy: PermissionPolicy | None = None,
        auth_method: str | None = None,
        fs: bool = True,
        terminal: bool = True,
        env: Mapping[str, str] | None = None,
        forward_stderr: Callable[[bytes], None] | None = None,
        start_timeout: float = 30.0,
        cancel_wait: float = 10.0,
        min_backoff: float = 0.5,
        max_backoff: float = 30.0,
        queue_bytes: int = 1024 * 1024,
        idle: float | None = 3600.0,
        max_agents: int = 1,
    ) -> None:
        self.command = list(command)
        self.workspace = Path(workspace).resolve()
        self.policy = policy or PermissionPolicy()
        capabilities = s.ClientCapabilities(
            fs=s.FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=terminal
        )
        self.start_timeout = start_timeout
        self.cancel_wait = cancel_wait
        self.queue_bytes = queue_bytes
        self.idle = idle
        self.on_card: Callable[[t.AgentCard], None] | None = None
        self.info: s.InitializeResponse | None = None
        launch = Launch(
            self.command,
            capabilities,
            auth_method=auth_method,
            env=env,
            forward_stderr=forward_stderr,
            start_timeout=start_timeout,
            min_backoff=min_backoff,
            max_backoff=max_backoff,
        )
        #: the agent's processes
        self.pool: Pool[_Turn] = Pool(max_agents, launch, lambda m: _BridgeClient(self, m))
        self._commands: dict[str, s.AvailableCommand] = {}
        self._turns: dict[str, _Turn] = {}  # by task id
        self._busy: dict[str, str] = {}  # context id -> the task of its unfinished turn
        self._known_sessions: dict[str, str] | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()  # (`session/cancel`s sent)

    # -- the agent's processes -----------------------------------------------------------

    async def start(self) -> s.InitializeResponse:
        """Spawn the agent and initialize it (and `authenticate`, with `auth_method`)."""
        self.info = await self.pool.start()
        if self.idle is not None:
            self._sweeper = asyncio.create_task(self._sweep(self.idle), name="bridge-idle")
        return self.info

    async def aclose(self) -> None:
        """Stop the agent's processes (and every terminal they opened)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        await self.pool.aclose()
        # (the prompts in flight end with their connection: see them end)
        prompts = [turn.prompt for turn in self._turns.values() if turn.prompt is not None]
        for prompt in prompts:
            prompt.cancel()
        await asyncio.gather(*prompts, return_exceptions=True)

    async def _sweep(self, idle: float) -> None:
        while True:
            await asyncio.sleep(min(max(idle / 4, 0.05), 60.0))
            try:
                await self.close_idle()
            except Exception:  # (the next sweep tries again)
                logger.exception("closing idle sessions failed")

    async def close_idle(self, now: float | None = None) -> list[str]:
        """Close the sessions of the contexts idle for `idle` seconds (at `now`, loop
        time): `session/close` where the agent offers it, their terminals killed. A
        context's next message loads its session again, or opens a new one. Returns the
        contexts closed."""
        if self.idle is None:
            return []
        now = asyncio.get_running_loop().time() if now is None else now
        caps = self.info.agent_capabilities if self.info is not None else None
        sessions = caps.session_capabilities if isinstance(caps, s.AgentCapabilities) else None
        closes = isinstance(sessions, s.SessionCapabilities) and isinstance(
            sessions.close, s.SessionCloseCapabilities
        )
        closed = []
        for member in list(self.pool.members):
            idle = [
                context_id
                for context_id, used in member.used.items()
                if now - used >= self.idle and context_id not in self._busy
            ]
            for context_id in idle:
                del member.used[context_id]
                session_id = member.sessions.pop(context_id, None)
                local = member.locals.pop(session_id, None) if session_id is not None else None
                if local is not None:
                    await local.aclose()
                if session_id is not None and closes and member.agent is not None:
                    with contextlib.suppress(RpcError, ConnectionClosed):
                        await member.agent.close_session(session_id)
            closed += idle
        return closed

    def explain(self, exc: BaseException, *, opening: bool = False) -> str:
        """What a client reads of why the agent failed a task (or its start) with `exc`:
        the agent's words, and a line on how to log in when it wants that."""
        info = self.info or next((m.info for m in self.pool.members if m.info), None)
        hint = login_hint(exc, self.command, info, opening=opening)
        return f"{_describe(exc)}\n{hint}" if hint else _describe(exc)

    # -- the card ------------------------------------------------------------------------

    def card(self) -> t.AgentCard:
        """The agent card (after `start`)."""
        if self.info is None:
            raise RuntimeError("start() the bridge first")
        return agent_card(self.info, self.command, self._commands.values())

    def _prompt_capabilities(self) -> s.PromptCapabilities | None:
        caps = self.info.agent_capabilities if self.info is not None else None
        if not isinstance(caps, s.AgentCapabilities):
            return None
        prompt = caps.prompt_capabilities
        return prompt if isinstance(prompt, s.PromptCapabilities) else None

    def _announce(self, commands: Sequence[s.AvailableCommand]) -> None:
        fresh = {c.name: c for c in commands if self._commands.get(c.name) != c}
        if fresh:
            self._commands.update(fresh)
            if self.on_card is not None and self.info is not None:
                self.on_card(self.card())

    # -- the agent's calls ---------------------------------------------------------------

    async def _on_update(self, notification: s.SessionNotification, member: Member[_Turn]) -> None:
        update = notification.update
        if isinstance(update, s.AvailableCommandsUpdate):
            self._announce(update.available_commands)
            return
        turn = member.turns.get(notification.session_id)
        if turn is None or turn.given_up:
            return  # (between turns: no task to tell)
        if isinstance(update, s.AgentMessageChunk):
            content = update.content
            if isinstance(content, s.TextContent):  # (the most of a turn: no call more)
                part, size = t.Part(text=content.text), len(content.text)
            else:
                part = content_part(content)
                size = len(part.text) if isinstance(part.text, str) else len(acp.encode(update))
            if turn.put_chunk(part, size) or (await turn.room(size) and turn.put_chunk(part, size)):
                return
        elif isinstance(update, s.UserMessageChunk):
            return  # (a replay)
        else:
            raw = acp.encode(update)
            part = t.Part(data=msgspec.json.decode(raw), media_type="application/json")
            event = turn.status(t.TaskState.TASK_STATE_WORKING, [part])
            if await turn.put(event, len(raw)):
                return
        self._give_up(turn)

    def _give_up(self, turn: _Turn) -> None:
        """The agent sent more than the turn's queue holds while its task waits for input:
        the turn ends (its question answered `cancelled`, `session/cancel` sent) rather
        than hold up every session of the agent's process."""
        turn.give_up(
            f"the agent sent more than {turn.limit} bytes of updates while the task waited "
            "for input; the bridge gave the turn up (session/cancel)"
        )
        agent = turn.member.agent
        if agent is not None:
            cancel = asyncio.create_task(_cancel_session(agent, turn.session_id))
            self._background.add(cancel)
            cancel.add_done_callback(self._background.discard)

    async def _on_permission(
        self, request: s.RequestPermissionRequest, member: Member[_Turn]
    ) -> s.RequestPermissionResponse:
        choice = self.policy.answer(request)
        turn = member.turns.get(request.session_id)
        if choice is None and turn is not None and not turn.cancelled and not turn.given_up:
            ask = _Ask(request, asyncio.get_running_loop().create_future())
            turn.put_now(ask)
            choice = await ask.answer  # (a cancel of the session answers `cancelled`)
        if choice is None:
            return s.RequestPermissionResponse(outcome=s.CancelledPermissionOutcome())
        return s.RequestPermissionResponse(outcome=s.SelectedPermissionOutcome(option_id=choice))

    # -- tasks ---------------------------------------------------------------------------

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        updater = TaskUpdater(context, events)
        turn = self._turns.get(context.task_id)
        if turn is not None:  # the answer to the turn's question
            await self._answer(turn, context, updater)
            return
        if context.task is not None:
            await updater.failed(
                "this task's ACP turn is gone (the bridge or the agent restarted while it "
                "waited for input); send a new message"
            )
            return
        blocks = prompt_blocks(context.message.parts, self._prompt_capabilities())
        busy = self._busy.get(context.context_id)
        if busy is not None:
            raise UnsupportedOperation(
                f"context {context.context_id} has a turn unfinished (task {busy}): an ACP "
                "session runs one prompt at a time; send when it ends",
                taskId=busy,
            )
        self._busy[context.context_id] = context.task_id
        try:
            await updater.working()
            try:
                member, agent = await self.pool.place(context.context_id)
                session_id, note = member.sessions.get(context.context_id), ""
                if session_id is None:  # (opened here: an agent may never answer)
                    async with asyncio.timeout(self.start_timeout):
                        session_id, note = await self._session(member, agent, context.context_id)
            except TimeoutError:
                await updater.failed(f"the agent did not open a session in {self.start_timeout} s")
                del self._busy[context.context_id]
                return
            except (RpcError, ConnectionClosed, AgentUnavailable, OSError) as exc:
                await updater.failed(self.explain(exc, opening=True))
                del self._busy[context.context_id]
                return
            if note:
                await updater.working(note)
            turn = _Turn(context.task_id, context.context_id, session_id, self.queue_bytes, member)
            self._turns[turn.task_id] = turn
            member.turns[session_id] = turn
            turn.prompt = asyncio.create_task(turn.run(agent, blocks))
            turn.prompt.add_done_callback(turn.prompt_over)
        except BaseException:
            if self._busy.get(context.context_id) == context.task_id:
                del self._busy[context.context_id]
            raise
        await self._drive(turn, updater)

    async def _session(
        self, member: Member[_Turn], agent: acp.ClientSideConnection, context_id: str
    ) -> tuple[str, str]:
        """The context's session on `member` (`session/new` in its folder the first time),
        and a note for the task when an earlier session of the context is gone."""
        session_id = member.sessions.get(context_id)
        if session_id is not None:
            return session_id, ""
        folder = self.workspace / _folder_name(context_id)
        await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
        known = await self._known()
        earlier = known.get(context_id)
        note = ""
        if earlier is not None:
            if await self._reconnect(agent, earlier, folder):
                self._open(member, context_id, earlier, folder)
                return earlier, ""
            note = (
                f"a new ACP session: this context's earlier one ({earlier}) is gone with the "
                "agent process that had it, and the agent could not load it"
            )
        response = await agent.new_session(folder)
        self._open(member, context_id, response.session_id, folder)
        known[context_id] = response.session_id
        await asyncio.to_thread(_write_json, self.workspace / _SESSIONS, known)
        return response.session_id, note

    def _open(self, member: Member[_Turn], context_id: str, session_id: str, folder: Path) -> None:
        member.sessions[context_id] = session_id
        member.used[context_id] = asyncio.get_running_loop().time()
        member.locals[session_id] = acp.LocalClient(folder)

    async def _known(self) -> dict[str, str]:
        """The session of every context so far (kept in the workspace, for restarts)."""
        if self._known_sessions is None:
            self._known_sessions = await asyncio.to_thread(_read_json, self.workspace / _SESSIONS)
        return self._known_sessions

    async def _reconnect(
        self, agent: acp.ClientSideConnection, session_id: str, folder: Path
    ) -> bool:
        """Whether the agent took up `session_id` again (`session/load` or `resume`)."""
        caps = self.info.agent_capabilities if self.info is not None else None
        if not isinstance(caps, s.AgentCapabilities):
            return False
        sessions = caps.session_capabilities
        try:
            if caps.load_session:
                await agent.load_session(session_id, folder)
            elif isinstance(sessions, s.SessionCapabilities) and isinstance(
                sessions.resume, s.SessionResumeCapabilities
            ):
                await agent.resume_session(session_id, folder)
            else:
                return False
        except RpcError:
            return False
        return True

    async def _answer(self, turn: _Turn, context: RequestContext, updater: TaskUpdater) -> None:
        # (a cancel that drives the turn to its end: that end is this task's too)
        if turn.driving and await turn.driven():
            return
        # The turn is this follow-up's to drive from here, before its first wait: a cancel
        # that comes meanwhile waits for this drive's end instead of driving it too.
        turn.driving = True
        try:
            ask = turn.question
            if ask is not None and not ask.answer.done():
                option = chosen_option(ask.request, context.message.parts)
                if option is None:
                    again = question_parts(ask.request)
                    message = updater.message("That picks no option.", parts=again)
                    await updater.requires_input(message)
                    if not turn.cancelled:
                        return
                    # (cancelled meanwhile: the cancel waits for the end, driven here)
                    if not ask.answer.done():
                        ask.answer.set_result(None)
                else:
                    await updater.working()
                    if not ask.answer.done():  # (else given up meanwhile: the drive tells so)
                        ask.answer.set_result(option.option_id)  # (drained from here: no await)
            else:
                await updater.working()
            turn.question = None
            await self._drive(turn, updater)
        finally:
            turn.stop_driving()

    async def _drive(self, turn: _Turn, updater: TaskUpdater) -> None:
        """Publish the turn's events until it asks or ends."""
        turn.driving = True
        try:
            while True:
                item = await turn.get()
                if isinstance(item, _Ask):
                    if turn.cancelled:
                        if not item.answer.done():
                            item.answer.set_result(None)
                        continue
                    turn.question = item
                    parts = question_parts(item.request)
                    await updater.requires_input(updater.message(parts=parts))
                    if not _cancelled(turn):
                        return
                    # cancelled while the question was published: the cancel waits for
                    # the end, driven on here (the question is answered `cancelled`)
                    if not item.answer.done():
                        item.answer.set_result(None)
                    turn.question = None
                    continue
                if isinstance(item, _End):
                    self._finish(turn)
                    await updater.events.publish(_end_event(turn, item, self.explain))
                    return
                await updater.events.publish(item)
        finally:
            turn.stop_driving()

    def _finish(self, turn: _Turn) -> None:
        self._turns.pop(turn.task_id, None)
        turns = turn.member.turns
        if turns.get(turn.session_id) is turn:
            del turns[turn.session_id]
        if self._busy.get(turn.context_id) == turn.task_id:
            del self._busy[turn.context_id]
        if turn.context_id in turn.member.used:
            turn.member.used[turn.context_id] = asyncio.get_running_loop().time()
        turn.end()

    async def cancel(self, context: RequestContext, events: EventSink) -> None:
        """`session/cancel`; the task ends CANCELED once the turn answers (or after
        `cancel_wait` seconds, when the server cancels it anyway)."""
        turn = self._turns.get(context.task_id)
        updater = TaskUpdater(context, events)
        if turn is None:
            await updater.cancel()
            return
        turn.cancelled = True
        agent = turn.member.agent
        if agent is not None:
            with contextlib.suppress(ConnectionClosed):
                await agent.cancel(turn.session_id)
        if turn.question is not None and not turn.question.answer.done():
            # (the connection answers it `cancelled` itself; with the agent gone, nobody)
            turn.question.answer.set_result(None)
        try:
            async with asyncio.timeout(self.cancel_wait):
                # the running `execute` publishes the end; else, or if its drive stops
                # short of it, this drives the turn to its end
                while not turn.ended.is_set():
                    if turn.driving:
                        await turn.driven()
                    else:
                        await self._drive(turn, updater)
        except TimeoutError:
            # The agent did not answer the cancel: the server ends the task CANCELED, and
            # the context takes its next message (its turn is let go).
            logger.warning("the agent did not end turn %s after session/cancel", turn.task_id)
            self._finish(turn)


def _cancelled(turn: _Turn) -> bool:
    """`turn.cancelled`, read afresh after a wait (a test of it before, in the same
    function, would otherwise seem to tell it: mypy narrows the attribute)."""
    return turn.cancelled


async def _cancel_session(agent: acp.ClientSideConnection, session_id: str) -> None:
    with contextlib.suppress(ConnectionClosed):  # (the agent is gone: its turn too)
        await agent.cancel(session_id)


def _end_event(
    turn: _Turn, end: _End, explain: Callable[[BaseException], str]
) -> t.TaskStatusUpdateEvent:
    """The terminal status of a turn that answered (or failed) so."""
    if end.response is None:
        reason = explain(end.error) if end.error is not None else "the turn ended"
        # (canceled all the same: the client asked for it, and the turn is over)
        state = t.TaskState.TASK_STATE_CANCELED if turn.cancelled else t.TaskState.TASK_STATE_FAILED
        return turn.status(state, [t.Part(text=reason)])
    stop = str(end.response.stop_reason)
    metadata: dict[str, object] = {"stopReason": stop}
    state = _STATES.get(stop, t.TaskState.TASK_STATE_COMPLETED)
    if turn.cancelled:
        state = t.TaskState.TASK_STATE_CANCELED
    parts = []
    if stop in ("max_tokens", "max_turn_requests") or stop not in _STATES:
        parts = [t.Part(text=f"the agent stopped: {stop}")]
    return turn.status(state, parts, metadata)


def _folder_name(context_id: str) -> str:
    """A context's folder: its id when that is a plain name, else a digest of it."""
    if _SAFE_NAME.fullmatch(context_id) and context_id not in (".", ".."):
        return context_id
    return "ctx-" + hashlib.sha256(context_id.encode()).hexdigest()[:32]


def _read_json(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        logger.warning("cannot read %s (%s): contexts start new sessions", path, exc)
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def _write_json(path: Path, data: dict[str, str]) -> None:
    """Written whole, then renamed over the old file: a crash leaves one or the other."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".new")
    temporary.write_text(json.dumps(data, indent=0), encoding="utf-8")
    os.replace(temporary, path)
