"""`interlink a2a check` cases: SSE streams (SendStreamingMessage, SubscribeToTask, the
Task snapshot first, closing at a terminal state, `Last-Event-ID`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from interlink.check._a2a_bindings import GRPC, KINDS
from interlink.check._a2a_cases_card import UNKNOWN_TASK
from interlink.check._a2a_runner import TERMINAL, Ctx, expect_code, message, state_of, text
from interlink.check._a2a_wire import Json, Reply
from interlink.check._cases import MAY, MUST, Cases, Fail, Skip

__all__ = ["KINDS", "is_terminal", "read_stream"]


def is_terminal(kind: str, obj: Json) -> bool:
    return kind in ("task", "statusUpdate") and state_of(obj) in TERMINAL


@dataclass
class Seen:
    """What one whole stream showed."""

    content_type: str = ""
    reply: Reply | None = None  # a plain JSON answer instead of a stream
    kinds: list[str] = field(default_factory=list)
    objects: list[Json] = field(default_factory=list)
    closed: bool = False

    def describe(self) -> str:
        if self.reply is not None:
            return f"not a stream ({self.content_type!r}): {self.reply.describe()}"
        states = [state_of(o) or k for k, o in zip(self.kinds, self.objects, strict=True)]
        return f"{len(self.kinds)} event(s): {', '.join(states)}"


async def read_stream(ctx: Ctx, method: str, params: Json) -> Seen:
    """Run a streaming call to its end (the server closes it) and keep what it sent."""
    seen = Seen()
    async with ctx.binding.stream(method, params) as events:
        seen.content_type, seen.reply = events.content_type, events.reply
        if events.reply is None:
            while (got := await events.next()) is not None:
                seen.kinds.append(got[0])
                seen.objects.append(got[1])
            seen.closed = events.closed
    return seen


async def streamed_task(ctx: Ctx) -> Seen:
    """SendStreamingMessage with --prompt, read to the end (once per run)."""
    ctx.need_streaming()

    async def run() -> Seen:
        return await read_stream(
            ctx, "SendStreamingMessage", {"message": message(ctx.options.prompt)}
        )

    seen = await ctx.once("stream", run)
    if seen.reply is not None:
        raise Fail(seen.describe())
    return seen


_BEGIN = (
    "If the agent returns a [`Task`](#411-task), the stream MUST begin with the Task "
    "object, followed by zero or more [`TaskStatusUpdateEvent`](#421-taskstatusupdateevent) "
    "or [`TaskArtifactUpdateEvent`](#422-taskartifactupdateevent) objects."
)
_CLOSE = "The stream MUST close when the task reaches a terminal state"


async def stream_unsupported(ctx: Ctx) -> str:
    if ctx.capability("streaming"):
        raise Skip("the card declares capabilities.streaming")
    params: Json = {"message": message(ctx.options.prompt)}
    return await _stream_error(
        ctx, "SendStreamingMessage", params, -32004, "UnsupportedOperationError"
    )


async def stream_content_type(ctx: Ctx) -> str:
    seen = await streamed_task(ctx)
    return f"Content-Type: {seen.content_type}"


async def stream_framing(ctx: Ctx) -> str:
    seen = await streamed_task(ctx)  # the binding checked every event while reading
    if not seen.kinds:
        raise Fail("the stream had no event")
    return f"{len(seen.kinds)} well-formed event(s)"


async def stream_task_first(ctx: Ctx) -> str:
    seen = await streamed_task(ctx)
    if seen.kinds[:1] == ["message"]:
        if len(seen.kinds) != 1:
            raise Fail(f"a Message stream with more than the Message: {seen.describe()}")
        raise Skip("--prompt streams a direct Message")
    if seen.kinds[:1] != ["task"]:
        raise Fail(f"the first event is {seen.kinds[:1]}: {seen.describe()}")
    return seen.describe()


async def stream_closes(ctx: Ctx) -> str:
    seen = await streamed_task(ctx)
    ends = [
        i
        for i, (k, o) in enumerate(zip(seen.kinds, seen.objects, strict=True))
        if is_terminal(k, o)
    ]
    if seen.kinds[:1] == ["message"]:
        raise Skip("--prompt streams a direct Message")
    if not ends:
        raise Fail(f"closed without a terminal state: {seen.describe()}")
    if ends[0] != len(seen.kinds) - 1:
        raise Fail(f"events after the terminal state: {seen.describe()}")
    return seen.describe()


async def stream_follow_up(ctx: Ctx) -> str:
    ctx.need_streaming()
    task = await ctx.input_task()
    follow = message(
        ctx.options.prompt, task_id=text(task, "id"), context_id=text(task, "contextId")
    )
    seen = await read_stream(ctx, "SendStreamingMessage", {"message": follow})
    if seen.reply is not None:
        raise Fail(seen.describe())
    if seen.kinds[:1] != ["task"] or seen.objects[0].get("id") != text(task, "id"):
        raise Fail(f"the follow-up stream began with {seen.kinds[:1]}: {seen.describe()}")
    return seen.describe()


# -- SubscribeToTask -------------------------------------------------------------------


async def _slow_task(ctx: Ctx) -> Json:
    ctx.need_streaming()
    task = await ctx.new_task(ctx.need("slow_prompt"), immediately=True)
    if state_of(task) in TERMINAL:
        raise Skip(f"--slow-prompt's task was already {state_of(task)}")
    return task


async def subscribe_task_first(ctx: Ctx) -> str:
    task = await _slow_task(ctx)
    seen = await read_stream(ctx, "SubscribeToTask", {"id": text(task, "id")})
    if seen.reply is not None:
        raise Fail(seen.describe())
    if seen.kinds[:1] != ["task"] or seen.objects[0].get("id") != text(task, "id"):
        raise Fail(f"began with {seen.kinds[:1]}: {seen.describe()}")
    if not is_terminal(seen.kinds[-1], seen.objects[-1]):
        raise Fail(f"closed before a terminal state: {seen.describe()}")
    return seen.describe()


async def subscribe_terminal(ctx: Ctx) -> str:
    ctx.need_streaming()
    task = await ctx.completed_task()
    params: Json = {"id": text(task, "id")}
    return await _stream_error(ctx, "SubscribeToTask", params, -32004, "UnsupportedOperationError")


async def subscribe_unknown(ctx: Ctx) -> str:
    ctx.need_streaming()
    params: Json = {"id": UNKNOWN_TASK}
    return await _stream_error(ctx, "SubscribeToTask", params, -32001, "TaskNotFoundError")


async def _stream_error(ctx: Ctx, method: str, params: Json, code: int, name: str) -> str:
    """PASS when a streaming call is refused with `code`: as a plain JSON-RPC answer, or
    as the stream's first (error) event."""
    seen = await read_stream(ctx, method, params)
    if seen.reply is not None:
        return expect_code(seen.reply, code, name)
    if seen.kinds[:1] == ["error"] and seen.objects[0].get("code") == code:
        return f"{name} ({code}) as an SSE event"
    raise Fail(f"expected {name} ({code}), got a stream: {seen.describe()}")


async def subscribe_resume(ctx: Ctx) -> str:
    if ctx.binding.name == GRPC:
        raise Skip("gRPC streams carry no event ids (Last-Event-ID is SSE's)")
    task = await _slow_task(ctx)
    params: Json = {"id": text(task, "id")}
    async with ctx.binding.stream("SubscribeToTask", params) as events:
        if events.reply is not None:
            raise Fail(events.reply.describe())
        first = []
        for _ in range(3):  # the snapshot and two updates
            if (got := await events.next()) is None:
                raise Skip("the task ended before two updates were seen")
            first.append(got)
        ids = events.ids
    if ids[1] is None:
        raise Skip("the server sends no SSE id: fields")
    headers = {"Last-Event-ID": ids[1]}
    async with ctx.binding.stream("SubscribeToTask", params, headers=headers) as again:
        if again.reply is not None:
            if again.reply.code == -32004:
                raise Skip("the task ended before the resumption")
            raise Fail(again.reply.describe())
        resumed: list[tuple[str, Json]] = []
        while len(resumed) < 2 and (got := await again.next()) is not None:
            resumed.append(got)
        resumed_ids = again.ids
    if not resumed or resumed[0][0] != "task":
        raise Fail(f"the resumed stream began with {[k for k, _ in resumed[:1]]}, not the Task")
    if len(resumed) < 2:
        raise Fail("the resumed stream closed after its snapshot; the next event is missing")
    if resumed[1] != first[2] or resumed_ids[1] != ids[2]:
        raise Fail(
            f"after Last-Event-ID {ids[1]} came event {resumed_ids[1]} "
            f"({json.dumps(resumed[1][1])[:160]}), not {ids[2]}"
        )
    return f"after Last-Event-ID {ids[1]}: the Task, then event {ids[2]}"


JSONRPC_ONLY = {stream_framing}
"""JSON-RPC's SSE framing (§9.4.2); HTTP+JSON's is `rest.stream_framing`."""

CASES: Cases[Ctx] = {
    stream_unsupported: (
        "stream.unsupported",
        "without capabilities.streaming, SendStreamingMessage is UnsupportedOperationError",
        MUST,
        "§3.3.4",
        "If `AgentCard.capabilities.streaming` is `false` or not present, attempts to use "
        "`SendStreamingMessage` or `SubscribeToTask` operations **MUST** return "
        "[`UnsupportedOperationError`](#332-error-handling).",
    ),
    stream_content_type: (
        "stream.content_type",
        "SendStreamingMessage answers HTTP 200 text/event-stream",
        MUST,
        "§3.1.2",
        "The operation MUST establish a streaming connection for real-time updates.",
    ),
    stream_framing: (
        "stream.framing",
        "each SSE event is one JSON-RPC response (the request's id) with one StreamResponse",
        MUST,
        "§9.4.2",
        "**Response:** HTTP 200 with `Content-Type: text/event-stream` [...] "
        '`data: {"jsonrpc": "2.0", "id": 1, "result": { /* StreamResponse object */ }}`',
    ),
    stream_task_first: (
        "stream.task_first",
        "a task stream begins with the Task",
        MUST,
        "§3.1.2",
        _BEGIN,
    ),
    stream_closes: (
        "stream.closes_terminal",
        "a task stream closes at the terminal state",
        MUST,
        "§3.1.2",
        _CLOSE,
    ),
    stream_follow_up: (
        "stream.follow_up_task_first",
        "a streamed follow-up to an input-required task also begins with the Task",
        MUST,
        "§3.1.2",
        _BEGIN,
    ),
    subscribe_task_first: (
        "subscribe.task_first",
        "SubscribeToTask begins with the Task and closes at the terminal state",
        MUST,
        "§3.1.6",
        "The operation MUST return a `Task` object as the first event in the stream, "
        "representing the current state of the task at the time of subscription.",
    ),
    subscribe_terminal: (
        "subscribe.terminal",
        "SubscribeToTask of a terminal task is UnsupportedOperationError (-32004)",
        MUST,
        "§3.1.6",
        "[`UnsupportedOperationError`](#332-error-handling): The operation is attempted on a "
        "task that is in a terminal state",
    ),
    subscribe_unknown: (
        "subscribe.unknown",
        "SubscribeToTask of an unknown id is TaskNotFoundError (-32001)",
        MUST,
        "§3.1.6",
        "[`TaskNotFoundError`](#332-error-handling): The task ID does not exist or is not "
        "accessible.",
    ),
    subscribe_resume: (
        "subscribe.resume",
        "Last-Event-ID resumes a subscription after the event it names, without gaps",
        MAY,
        "interlink DECISIONS.md (A2A 1.0)",
        "`SubscribeToTask` stays open until a terminal state, accepts `Last-Event-ID` to "
        "resume without gaps",
    ),
}
SLOW = {subscribe_task_first, subscribe_resume}
