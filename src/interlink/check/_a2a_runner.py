"""How `interlink a2a check` runs its cases: the registry, what a case is given, the run.

A case is an async function listed in its module's `CASES` with its `Spec` (id, title,
level, the section and sentence it checks). It is given a `Ctx`: the options, the card as
fetched, the interface of each binding chosen from it (`bindings`: JSON-RPC, HTTP+JSON,
gRPC, each a `Binding`; `ctx.on(name)` speaks another than JSON-RPC), and helpers that
send requests and create the tasks it needs (each case makes its own, except the one
completed task that read-only cases share). The shared cases (`SHARED`) are asked again
of each other binding, as `rest.<id>` and `grpc.<id>` (`on_binding`). A case returns what it saw
(PASS) or raises `Fail` or `Skip`. A server that does not answer in time, or drops the
connection, is a FAIL that names the wait; any other exception is an ERROR: the checker
broke, not the server.

Cases run `jobs` at a time; each is bounded as a whole, so a run always ends.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar, cast

import httpx

from interlink.a2a import INTERRUPTED_STATES as INTERRUPTED
from interlink.a2a import TERMINAL_STATES as TERMINAL
from interlink.check._a2a_bindings import JSONRPC, Binding
from interlink.check._a2a_wire import (
    A2A_VERSION,
    Headers,
    Json,
    Refused,
    Reply,
    Version,
    Webhook,
    Wire,
)
from interlink.check._cases import Cases, Entry, Fail, Registry, Skip, run_case
from interlink.check._report import Outcome, Report, Result

if TYPE_CHECKING:
    from interlink.a2a import TrustedKeys

__all__ = [
    "CASES",
    "INTERRUPTED",
    "TERMINAL",
    "Ctx",
    "Fail",
    "Options",
    "Skip",
    "expect_code",
    "load_cases",
    "message",
    "on_binding",
    "objects",
    "run_check",
    "state_of",
    "text",
]

T = TypeVar("T")
SPEC = "A2A 1.0"
CARD_PATH = "/.well-known/agent-card.json"


@dataclass(frozen=True)
class Options:
    url: str
    timeout: float = 10.0
    prompt: str = "hello"
    input_prompt: str | None = None
    slow_prompt: str | None = None
    jobs: int = 4
    only: Sequence[str] = ()
    trusted_keys: TrustedKeys | None = None
    """The keys card signatures are verified with (`--verify-key`, `--jwks`); None:
    each signature's own `jwk` or `jku`."""


def _cite(section: str) -> str:
    """`§8.6.1` is a section of the spec; anything else names another document."""
    return section if not section.startswith("§") else f"A2A specification {section}"


_PREFIX = "interlink.check._a2a_cases_"
_AREAS = ("card", "rpc", "task", "content", "stream", "push", "rest", "grpc")
_REGISTRY = Registry["Ctx"](_PREFIX, _AREAS, _cite)
CASES = _REGISTRY.entries
load_cases = _REGISTRY.load


def message(text: str, *, task_id: str | None = None, context_id: str | None = None) -> Json:
    """A user message as ProtoJSON (1.0: `ROLE_USER`, a `text` part)."""
    out: Json = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    if task_id is not None:
        out["taskId"] = task_id
    if context_id is not None:
        out["contextId"] = context_id
    return out


def text(obj: Json, key: str) -> str:
    """`obj[key]` when it is a string, else ""."""
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def objects(obj: Json, key: str) -> list[Json]:
    """The objects in the array `obj[key]` (none when it is not an array)."""
    value = obj.get(key)
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def required_extensions(card: Json) -> list[str]:
    """The URIs of the extensions the card marks `required`."""
    caps = card.get("capabilities")
    found = objects(caps, "extensions") if isinstance(caps, dict) else []
    return [str(e.get("uri")) for e in found if e.get("required") is True]


def state_of(task: object) -> str:
    status = task.get("status") if isinstance(task, dict) else None
    state = status.get("state") if isinstance(status, dict) else None
    return state if isinstance(state, str) else ""


@dataclass
class Ctx:
    options: Options
    wire: Wire
    card_url: str
    card_reply: Reply | None = None
    card: Json = field(default_factory=dict)
    card_problem: str = ""  # why there is no card to check against
    bindings: dict[str, Binding | str] = field(default_factory=dict)
    """Each binding's interface the cases speak to, or why there is none."""
    speaks: str = JSONRPC  # the binding `call`, `send` and the task helpers use
    _once: dict[str, asyncio.Future[object]] = field(default_factory=dict)
    _cleanups: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    # -- what the card says ----------------------------------------------------------

    def capability(self, name: str) -> bool:
        caps = self.card.get("capabilities")
        return isinstance(caps, dict) and caps.get(name) is True

    def on(self, binding: str) -> Ctx:
        """This run, speaking `binding` (the tasks it makes are its own)."""
        return dataclasses.replace(self, speaks=binding)

    @property
    def binding(self) -> Binding:
        found = self.bindings.get(self.speaks)
        if found is None or isinstance(found, str):
            if self.card_problem:
                raise Skip(f"no agent card ({self.card_problem})")
            raise Skip(found or f"the card declares no {self.speaks} interface")
        return found

    @property
    def url(self) -> str:
        """The JSON-RPC interface's URL (the cases of the JSON-RPC envelope)."""
        return self.on(JSONRPC).binding.url

    def need(self, option: str) -> str:
        value: str | None = getattr(self.options, option.replace("-", "_"))
        if not value:
            raise Skip(f"needs --{option.replace('_', '-')}: a prompt that {_NEEDS[option]}")
        return value

    def need_streaming(self) -> None:
        if not self.capability("streaming"):
            raise Skip("the card does not declare capabilities.streaming")

    # -- requests --------------------------------------------------------------------

    async def call(
        self,
        method: str,
        params: Mapping[str, object] | None = None,
        *,
        version: Version = A2A_VERSION,
        headers: Headers = None,
    ) -> Reply:
        """`method` on the binding spoken; its answer read as JSON-RPC's (see `Binding`)."""
        return await self.binding.call(method, dict(params or {}), version=version, headers=headers)

    async def result(self, method: str, params: Json | None = None) -> Json:
        """A call that must succeed with an object result; anything else is a FAIL."""
        reply = await self.call(method, params)
        if not isinstance(reply.result, dict):
            raise Fail(f"{method} did not succeed: {reply.describe()}")
        return reply.result

    async def send(
        self,
        text: str,
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        configuration: Json | None = None,
    ) -> Reply:
        params: Json = {"message": message(text, task_id=task_id, context_id=context_id)}
        if configuration:
            params["configuration"] = configuration
        return await self.call("SendMessage", params)

    async def new_task(
        self, text: str, *, immediately: bool = False, context_id: str | None = None
    ) -> Json:
        """SendMessage that must answer with a Task (not a Message); the Task."""
        config: Json = {"returnImmediately": True} if immediately else {}
        reply = await self.send(text, context_id=context_id, configuration=config)
        result = reply.result
        if isinstance(result, dict) and isinstance(result.get("task"), dict):
            task: Json = result["task"]
            if isinstance(task.get("id"), str) and task["id"]:
                return task
        if isinstance(result, dict) and "message" in result:
            raise Skip(f"the prompt {text!r} gets a direct Message, not a task")
        raise Fail(f"SendMessage {text!r} did not answer with a task: {reply.describe()}")

    async def once(self, key: str, make: Callable[[], Awaitable[T]]) -> T:
        """`make()`'s result, computed by the first case of this binding that asks and
        shared with the others (a Fail or Skip is shared too)."""
        return await self._shared(f"{self.speaks} {key}", make)

    async def _shared(self, key: str, make: Callable[[], Awaitable[T]]) -> T:
        if key not in self._once:
            self._once[key] = asyncio.ensure_future(make())
        return cast(T, await asyncio.shield(self._once[key]))

    async def webhook(self) -> Webhook:
        """The run's loopback webhook receiver (started on first use, closed at the end)."""

        async def start() -> Webhook:
            hook = await Webhook().__aenter__()
            self._cleanups.append(hook.close)
            return hook

        return await self._shared("webhook", start)

    async def input_task(self) -> Json:
        """A new task of --input-prompt, in TASK_STATE_INPUT_REQUIRED (else SKIP)."""
        task = await self.new_task(self.need("input_prompt"))
        if state_of(task) != "TASK_STATE_INPUT_REQUIRED":
            raise Skip(f"--input-prompt's task is {state_of(task)}, not input-required")
        return task

    async def completed_task(self) -> Json:
        """One task the default prompt ran to a terminal state, shared by the read-only
        cases."""
        return await self.once("completed", self._complete)

    async def _complete(self) -> Json:
        task = await self.new_task(self.options.prompt)
        deadline = time.monotonic() + self.options.timeout * 3
        while state_of(task) not in TERMINAL:
            if state_of(task) in INTERRUPTED:
                raise Skip(f"--prompt {self.options.prompt!r} stops at {state_of(task)}")
            if time.monotonic() > deadline:
                raise Fail(f"the task of --prompt stayed {state_of(task)}")
            await asyncio.sleep(0.2)
            task = await self.result("GetTask", {"id": task["id"]})
        return task

    async def wait_state(self, task_id: str, states: frozenset[str], seconds: float) -> Json:
        """Poll GetTask until the task is in one of `states`; the task (FAIL at the end)."""
        deadline = time.monotonic() + seconds
        while True:
            task = await self.result("GetTask", {"id": task_id})
            if state_of(task) in states or time.monotonic() > deadline:
                if state_of(task) not in states:
                    raise Fail(f"task {task_id} still {state_of(task)} after {seconds:.0f} s")
                return task
            await asyncio.sleep(0.1)


_NEEDS = {
    "input_prompt": "moves the task to TASK_STATE_INPUT_REQUIRED",
    "slow_prompt": "keeps the task working a few seconds",
}


SHARED = ("rpc", "task", "content", "stream", "push")
"""The modules whose cases every binding answers (all but each one's `JSONRPC_ONLY`)."""


def _spoken(run: Callable[[Ctx], Awaitable[str]], binding: str) -> Callable[[Ctx], Awaitable[str]]:
    async def spoken(ctx: Ctx) -> str:
        view = ctx.on(binding)
        view.binding  # noqa: B018 (SKIP at once when the card declares no such interface)
        return await run(view)

    return spoken


def on_binding(binding: str, area: str) -> tuple[Cases[Ctx], set[object]]:
    """The shared cases, spoken over `binding`, their ids under `area` (`rest.get.task`);
    and those of them that wait for a long task."""
    cases: Cases[Ctx] = {}
    slow: set[object] = set()
    for name in SHARED:
        module = importlib.import_module(_PREFIX + name)
        only = getattr(module, "JSONRPC_ONLY", ())
        for run, (id, title, level, page, sentence) in module.CASES.items():
            if run in only:
                continue
            spoken = _spoken(run, binding)
            cases[spoken] = (f"{area}.{id}", f"{title} ({binding})", level, page, sentence)
            if run in getattr(module, "SLOW", ()):
                slow.add(spoken)
    return cases, slow


def expect_code(reply: Reply, code: int, name: str) -> str:
    """PASS detail when `reply` is the JSON-RPC error `code`; FAIL otherwise."""
    if reply.code == code:
        return f"{name} ({code}): {str((reply.error or {}).get('message'))[:120]}"
    raise Fail(f"expected {name} ({code}), got {reply.describe()}")


# -- the run ---------------------------------------------------------------------------


def _outcome_of(bound: float) -> Callable[[Exception], tuple[Outcome, str] | None]:
    """What a transport error makes of a case bounded by `bound` seconds."""

    def outcome_of(exc: Exception) -> tuple[Outcome, str] | None:
        if isinstance(exc, Refused):
            return Outcome.SKIP, str(exc)
        if isinstance(exc, (TimeoutError, httpx.TimeoutException)):
            return Outcome.FAIL, f"no answer within the time allowed ({bound:.0f} s)"
        if isinstance(exc, httpx.TransportError):
            return Outcome.FAIL, f"the connection failed: {type(exc).__name__}: {exc}"
        return None

    return outcome_of


def card_url_for(url: str) -> str:
    target = httpx.URL(url)
    if target.path.endswith(".json"):
        return str(target)
    return str(target.copy_with(path=CARD_PATH, query=None, fragment=None))


async def run_check(options: Options, transport: httpx.AsyncBaseTransport | None = None) -> Report:
    """Fetch the card, choose the JSON-RPC interface and run the selected cases.
    `transport` replaces the network (for tests)."""
    load_cases()
    from interlink.check._a2a_cases_card import probe

    started = time.monotonic()
    report = Report(checker="interlink a2a check", protocol=SPEC, target=options.url)
    origin = httpx.URL(options.url)
    wire = Wire(origin, options.timeout, transport)
    ctx = Ctx(options, wire, card_url_for(options.url))
    try:
        try:
            await asyncio.wait_for(probe(ctx), options.timeout * 2)
        except TimeoutError:
            ctx.card_problem = f"GET {ctx.card_url}: no answer within {options.timeout * 2:.0f} s"
        entries = _REGISTRY.selected(options.only)
        gate = asyncio.Semaphore(options.jobs)

        async def bounded(entry: Entry[Ctx]) -> Result:
            bound = options.timeout * (8 if entry.slow else 4)
            async with gate:
                body = asyncio.wait_for(entry.run(ctx), bound)
                return await run_case(entry.case, body, _outcome_of(bound))

        report.results.extend(await asyncio.gather(*(bounded(e) for e in entries)))
    finally:
        for future in ctx._once.values():
            future.cancel()
        for cleanup in ctx._cleanups:
            await cleanup()
        await wire.aclose()
    report.seconds = time.monotonic() - started
    return report
