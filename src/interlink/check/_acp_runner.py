"""How `interlink acp check` runs its cases: the registry, what a case is given, the run.

A case is an async function listed in its module's `CASES` with its `Spec` (id, title, level, the
page and sentence it checks). It is given a `Ctx`: the options, what
the probe learnt (the `initialize` answer and a first `session/new`), and `agent()`,
which starts a fresh agent process for it (each case gets its own; all are killed when
the case ends). A case returns what it saw (PASS), or raises `Fail` or `Skip`; an agent
that stays silent raises `NoAnswer` inside a wait, which is a FAIL naming the wait. Any
other exception is an ERROR: the checker broke, not the agent.

Cases run `jobs` at a time; each is bounded by a multiple of the timeout as a whole, so
a run always ends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from interlink.check._cases import Entry, Fail, Registry, Skip, run_case
from interlink.check._report import Outcome, Report, Result
from interlink.check._wire import AgentUnderTest, Launch, Message, NoAnswer

__all__ = [
    "CASES",
    "Ctx",
    "Fail",
    "Launch",
    "Options",
    "Probe",
    "Skip",
    "load_cases",
    "run_check",
]

PROTOCOL_VERSION = 1
CLIENT_INFO = {"name": "interlink-acp-check", "version": "1"}


@dataclass(frozen=True)
class Options:
    launch: Launch
    session_cwd: str
    timeout: float = 10.0
    startup: float = 30.0  # how long the first answer (to initialize) may take: a cold start
    prompt: str | None = None
    slow_prompt: str | None = None
    permission_prompt: str | None = None
    auth: str | None = None
    jobs: int = 4
    only: Sequence[str] = ()


@dataclass
class Probe:
    """What one plain start taught about the agent, for the cases' skips."""

    init: Message | None = None  # the initialize result
    init_problem: str = ""
    session: Message | None = None  # the first session/new result
    session_error: Message | None = None  # its error object, if it failed

    @property
    def caps(self) -> Message:
        caps = (self.init or {}).get("agentCapabilities")
        return caps if isinstance(caps, dict) else {}

    def session_cap(self, name: str) -> bool:
        session = self.caps.get("sessionCapabilities")
        return isinstance(session, dict) and session.get(name) is not None

    def need_session_cap(self, name: str) -> None:
        """SKIP unless the agent advertises `sessionCapabilities.<name>`."""
        if not self.session_cap(name):
            raise Skip(f"sessionCapabilities.{name} is not advertised")

    def prompt_cap(self, name: str) -> bool:
        prompt = self.caps.get("promptCapabilities")
        return isinstance(prompt, dict) and prompt.get(name) is True

    @property
    def auth_methods(self) -> list[Message]:
        methods = (self.init or {}).get("authMethods")
        return [m for m in methods if isinstance(m, dict)] if isinstance(methods, list) else []


# The report's order of areas.
_REGISTRY = Registry["Ctx"]("interlink.check._acp_cases_", ("rpc", "session", "config", "turn"))
CASES = _REGISTRY.entries
load_cases = _REGISTRY.load


@dataclass
class Ctx:
    options: Options
    probe: Probe
    agents: list[AgentUnderTest] = field(default_factory=list)

    async def agent(self, *, initialized: bool = True) -> AgentUnderTest:
        """A fresh agent process, `initialize`d unless told otherwise."""
        agent = AgentUnderTest(self.options.launch, self.options.timeout)
        self.agents.append(agent)
        await agent.start()
        if initialized:
            answer = await self.initialize(agent)
            succeeded(answer, "initialize failed")
        return agent

    async def initialize(
        self, agent: AgentUnderTest, version: object = PROTOCOL_VERSION
    ) -> Message:
        """Send initialize and wait for its answer, allowing for the agent's start-up."""
        rid = await agent.request("initialize", initialize_params(version))
        return await agent.response(rid, within=self.options.startup)

    async def session(self, agent: AgentUnderTest, *, judged: bool = False) -> str:
        """A new session's id; see `new_session`."""
        return (await self.new_session(agent, judged=judged))[0]

    async def new_session(
        self, agent: AgentUnderTest, *, judged: bool = False
    ) -> tuple[str, Message]:
        """A new session (authenticating first with --auth): its id and the whole result.
        An agent that wants authentication the checker was not given makes the case a
        SKIP; so does one whose session/new fails as it failed in the probe, unless the
        case judges session/new itself (`judged`): one FAIL for one fault."""
        if self.options.auth:
            answer = await agent.call("authenticate", {"methodId": self.options.auth})
            if "error" in answer:
                raise Fail(f"authenticate {self.options.auth!r} failed: {short(answer)}")
        answer = await agent.call("session/new", session_params(self.options))
        error = answer.get("error")
        if isinstance(error, dict) and error.get("code") == -32000:
            raise Skip(f"session/new needs authentication ({short(answer)}); pass --auth")
        result = answer.get("result")
        session = result.get("sessionId") if isinstance(result, dict) else None
        if isinstance(session, str) and isinstance(result, dict):
            return session, result
        if not judged and isinstance(error, dict) and self.probe.session_error is not None:
            raise Skip(f"needs a session, and session/new fails here (session.new): {short(error)}")
        raise Fail(f"session/new did not give a session: {short(answer)}")

    def need_prompt(self, which: str = "prompt") -> str:
        text = getattr(self.options, which.replace("-", "_"))
        if not text:
            raise Skip(f"needs a turn: pass --{which} TEXT")
        return str(text)

    async def close(self) -> None:
        await asyncio.gather(*(a.close() for a in self.agents), return_exceptions=True)


def initialize_params(version: object = PROTOCOL_VERSION, **extra: object) -> Message:
    """What a client that advertises nothing sends (every capability omitted)."""
    return {
        "protocolVersion": version,
        "clientCapabilities": {},
        "clientInfo": CLIENT_INFO,
        **extra,
    }


def session_params(options: Options, **extra: object) -> Message:
    return {"cwd": options.session_cwd, "mcpServers": [], **extra}


def succeeded(answer: Message, what: str) -> None:
    """FAIL, with `what` and the answer, unless `answer` is a result."""
    if "result" not in answer:
        raise Fail(f"{what}: {short(answer)}")


def short(value: object, limit: int = 300) -> str:
    """A message, compactly, for a detail line."""
    import json

    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else text[:limit] + "..."


async def _probe(options: Options) -> Probe:
    probe = Probe()
    ctx = Ctx(options, probe)
    try:
        agent = await ctx.agent(initialized=False)
        answer = await ctx.initialize(agent)
        if not isinstance(answer.get("result"), dict):
            probe.init_problem = f"initialize was answered {short(answer)}"
            return probe
        probe.init = answer["result"]  # type: ignore[assignment]
        if options.auth:
            await agent.call("authenticate", {"methodId": options.auth})
        answer = await agent.call("session/new", session_params(options))
        if isinstance(answer.get("result"), dict):
            probe.session = answer["result"]  # type: ignore[assignment]
        elif isinstance(answer.get("error"), dict):
            probe.session_error = answer["error"]  # type: ignore[assignment]
    except NoAnswer as exc:
        probe.init_problem = probe.init_problem or str(exc)
    finally:
        await ctx.close()
    return probe


def _case_limit(options: Options) -> float:
    return options.startup + options.timeout * 4 + 5


async def _run_one(entry: Entry[Ctx], options: Options, probe: Probe) -> Result:
    ctx = Ctx(options, probe)
    limit = _case_limit(options)

    def outcome_of(exc: Exception) -> tuple[Outcome, str] | None:
        if isinstance(exc, NoAnswer):
            return Outcome.FAIL, str(exc)
        if isinstance(exc, TimeoutError):
            return Outcome.FAIL, f"the case did not end within {limit:g}s"
        return None  # the checker's own fault: an ERROR, reported, never hidden

    async def body() -> str:
        async with asyncio.timeout(limit):
            return await entry.run(ctx)

    try:
        return await run_case(entry.case, body(), outcome_of)
    finally:
        await ctx.close()


async def run_check(options: Options, target: str) -> Report:
    """Every selected case against the agent; the report in registration order."""
    started = time.monotonic()
    probe = await _probe(options)
    entries = _REGISTRY.selected(options.only)
    gate = asyncio.Semaphore(max(1, options.jobs))

    async def limited(entry: Entry[Ctx]) -> Result:
        async with gate:
            return await _run_one(entry, options, probe)

    results = await asyncio.gather(*(limited(e) for e in entries))
    report = Report("interlink acp check", "ACP v1", target, list(results))
    report.seconds = time.monotonic() - started
    return report
