"""The agent processes of `bridge a2a`: a pool of up to `size` processes of one command.

Theory of operation. The first process starts with the bridge (its `initialize` makes
the card); the others start when they are wanted. A context is placed on a process at
its first message and stays on it while that process lives (its session is that
process's): on a running process that holds no context, else on a new process while
the pool has fewer than `size`, else on the running process that holds the fewest. Each
process has a supervisor that spawns it, initializes it (and authenticates, with
`auth_method`), and when it exits starts it again after a pause that doubles (to
`max_backoff`) while it keeps dying (a start refused for want of a login, which wants a
person, fails the contexts that wait for it at once). An exit lets go of the process's
contexts, their sessions and their terminals: each context's next message places it
again (and loads its session there where the agent can). A process wanted later that
does not start is dropped from the pool (the context goes to a running one, if any);
the first one's failure to start is the bridge's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from interlink import __version__, acp
from interlink.acp import schema as s
from interlink.jsonrpc import RpcError

__all__ = ["AgentUnavailable", "Launch", "Member", "Pool", "describe", "login_refusal"]

logger = logging.getLogger("interlink.bridge")

T = TypeVar("T")


class AgentUnavailable(Exception):
    """The agent process is not running (it failed to start, or is restarting)."""


@dataclass(frozen=True)
class Launch:
    """How each process of the pool is started."""

    command: list[str]
    capabilities: s.ClientCapabilities
    auth_method: str | None = None
    env: Mapping[str, str] | None = None
    forward_stderr: Callable[[bytes], None] | None = None
    start_timeout: float = 30.0
    min_backoff: float = 0.5
    max_backoff: float = 30.0


class Member(Generic[T]):
    """One process of the pool, what runs on it, and its supervisor (`T`: a turn)."""

    def __init__(self, index: int, launch: Launch) -> None:
        self.index = index
        self.launch = launch
        self.agent: acp.ClientSideConnection | None = None  # while it runs
        self.info: s.InitializeResponse | None = None
        self.pid: int | None = None
        #: how many times it was started, and why it last stopped
        self.starts = 0
        self.last_exit = ""
        #: why its last start failed, when that was for want of a login
        self.refusal: RpcError | None = None
        #: set while it runs, and while its last start was refused (`refusal`)
        self.ready = asyncio.Event()
        self.contexts: set[str] = set()  # placed here, for the life of the process
        self.sessions: dict[str, str] = {}  # context id -> its open session
        self.used: dict[str, float] = {}  # context id -> when its session was last used
        self.locals: dict[str, acp.LocalClient] = {}  # session id -> its files, terminals
        self.turns: dict[str, T] = {}  # session id -> its running turn
        self._stale: list[acp.LocalClient] = []  # of sessions gone, to close
        self.first: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # (a start nobody waits for any more fails quietly: its error is `last_exit`)
        self.first.add_done_callback(lambda first: first.cancelled() or first.exception())
        self._closing = False
        self._supervisor: asyncio.Task[None] | None = None

    @property
    def failed(self) -> bool:
        """Whether its first start failed (it is not started again)."""
        return self.first.done() and (self.first.cancelled() or self.first.exception() is not None)

    def start(self, client: acp.Client) -> None:
        """Start the supervisor; `first` resolves when the process first runs (or cannot)."""
        self._supervisor = asyncio.create_task(
            self._supervise(client), name=f"bridge-agent-{self.index}"
        )

    async def started(self) -> None:
        """Wait (`start_timeout` seconds at most) for the process to run; it may still not
        (a start refused for want of a login ends the wait)."""
        with contextlib.suppress(Exception):  # (timed out, or its start failed: last_exit)
            async with asyncio.timeout(self.launch.start_timeout):
                await asyncio.shield(self.first)
                await self.ready.wait()

    async def aclose(self) -> None:
        self._closing = True
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        await self.forget()

    def _let_go(self) -> None:
        """The process's sessions are gone with it: so are their contexts, at once (a
        message that comes while the process is cleaned up places its context anew)."""
        self.ready.clear()
        self.agent = None
        self.contexts.clear()
        self.sessions.clear()
        self.used.clear()
        self._stale += self.locals.values()
        self.locals.clear()

    async def forget(self) -> None:
        """`_let_go`, and the terminals of the sessions gone killed."""
        self._let_go()
        stale, self._stale = self._stale, []
        for local in stale:
            await local.aclose()

    async def _supervise(self, client: acp.Client) -> None:
        launch = self.launch
        loop = asyncio.get_running_loop()
        backoff = launch.min_backoff
        while True:
            began = loop.time()
            process = None
            error: Exception | None = None
            try:
                async with acp.spawn_agent(
                    launch.command, client, env=launch.env, forward_stderr=launch.forward_stderr
                ) as process:
                    agent = process.agent
                    async with asyncio.timeout(launch.start_timeout):
                        self.info = await agent.initialize(
                            launch.capabilities,
                            client_info=s.Implementation(
                                name="interlink-bridge", version=__version__
                            ),
                        )
                        if launch.auth_method is not None:
                            await agent.authenticate(launch.auth_method)
                    self.starts += 1
                    self.pid = process.pid
                    self.agent = agent
                    self.refusal = None
                    self.ready.set()
                    if not self.first.done():
                        self.first.set_result(None)
                    await agent.wait_closed()
                    self._let_go()
            except Exception as exc:
                if not self.first.done():
                    error = _start_error(exc, process)
                    self.last_exit = str(error)
                    self.first.set_exception(error)
                    return
                error = exc
            finally:
                self._let_go()
            code = process.returncode if process is not None else None
            if code is not None and not isinstance(error, RpcError):  # (an answer says more)
                assert process is not None
                self.last_exit = _exit_text(code, process.stderr_tail())
            elif error is not None:
                self.last_exit = describe(error)
            logger.warning(
                "agent process %d (pid %s) stopped (%s); starting it again",
                self.index,
                self.pid,
                self.last_exit,
            )
            await self.forget()
            if self._closing:
                return
            self.refusal = login_refusal(error) if error is not None else None
            if self.refusal is not None:
                self.ready.set()  # (with no agent: its contexts fail now, with the refusal)
            if loop.time() - began > launch.max_backoff:
                backoff = launch.min_backoff  # (it ran a good while: a fresh failure)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, launch.max_backoff)


class Pool(Generic[T]):
    """Up to `size` processes of `launch.command`; `client_of` makes each one's ACP client."""

    def __init__(
        self, size: int, launch: Launch, client_of: Callable[[Member[T]], acp.Client]
    ) -> None:
        if size < 1:
            raise ValueError("a pool has one agent process at least")
        self.size = size
        self.launch = launch
        self.client_of = client_of
        self.members: list[Member[T]] = []
        self._count = 0

    async def start(self) -> s.InitializeResponse:
        """Start the first process; raises what went wrong when it does not start."""
        member = self._spawn()
        await member.first
        assert member.info is not None
        return member.info

    async def aclose(self) -> None:
        members, self.members = self.members, []
        for member in members:
            await member.aclose()

    def member_of(self, context_id: str) -> Member[T] | None:
        return next((m for m in self.members if context_id in m.contexts), None)

    async def place(self, context_id: str) -> tuple[Member[T], acp.ClientSideConnection]:
        """The process that runs `context_id` and its connection (see the module): waits
        `start_timeout` at most for it to run, else raises `AgentUnavailable`."""
        member = self.member_of(context_id) or self._choose()
        member.contexts.add(context_id)
        if member.agent is None:
            await member.started()
        if member.agent is not None:
            return member, member.agent
        member.contexts.discard(context_id)
        if member.failed and member in self.members:
            self.members.remove(member)
            logger.warning("agent process %d did not start: %s", member.index, member.last_exit)
            running = [(m, m.agent) for m in self.members if m.agent is not None]
            if running:
                other, agent = min(running, key=lambda pair: len(pair[0].contexts))
                other.contexts.add(context_id)
                return other, agent
        why = member.last_exit or "starting"
        raise AgentUnavailable(f"the agent is not running ({why})") from member.refusal

    def _choose(self) -> Member[T]:
        self.members = [m for m in self.members if not m.failed]
        running = [m for m in self.members if m.agent is not None]
        empty = [m for m in running if not m.contexts]
        if empty:
            return empty[0]
        if len(self.members) < self.size:
            return self._spawn()
        return min(self.members, key=lambda m: (m.agent is None, len(m.contexts)))

    def _spawn(self) -> Member[T]:
        member: Member[T] = Member(self._count, self.launch)
        self._count += 1
        self.members.append(member)
        member.start(self.client_of(member))
        return member


_DETAILS = ("details", "detail", "message", "reason")  # (where agents put theirs)


def describe(exc: BaseException) -> str:
    """What a client reads of why a turn could not run: an agent's error with the detail
    its data gives, if any (`-32603: Internal error` alone says nothing)."""
    if isinstance(exc, RpcError):
        data = exc.data
        if isinstance(data, dict):
            data = next((data[k] for k in _DETAILS if isinstance(data.get(k), str)), None)
        detail = f" ({data[:500]})" if isinstance(data, str) and data else ""
        return f"the agent answered {exc.code}: {exc.message}{detail}"
    return str(exc) or type(exc).__name__


def login_refusal(exc: BaseException, *, opening: bool = False) -> RpcError | None:
    """The agent's answer in `exc` when it is for want of a login: -32000 (authentication
    required), or -32603 while a session opens (`opening`: claude-agent-acp's answer when
    logged out); also the refused start an `AgentUnavailable` comes from. Else None."""
    if isinstance(exc, AgentUnavailable):
        exc = exc.__cause__ or exc
    if isinstance(exc, RpcError) and (exc.code == -32000 or (opening and exc.code == -32603)):
        return exc
    return None


def _exit_text(returncode: int, stderr_tail: str) -> str:
    tail = f"; stderr ends with:\n{stderr_tail}" if stderr_tail else ""
    return f"the agent exited with code {returncode}{tail}"


def _start_error(exc: Exception, process: acp.AgentProcess | None) -> Exception:
    if isinstance(exc, TimeoutError):
        return AgentUnavailable("the agent did not answer initialize in time")
    if process is not None and process.returncode is not None and not str(exc):
        return AgentUnavailable(_exit_text(process.returncode, process.stderr_tail()))
    return exc
