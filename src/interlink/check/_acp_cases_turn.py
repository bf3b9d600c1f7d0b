"""Cases of prompt turns (updates before the answer, stop reasons, baseline and
unadvertised content, no calls the client did not advertise) and cancellation
(`session/cancel`, `$/cancel_request`, a permission request pending during a cancel).
Turns need text that makes the agent work: `--prompt`, `--slow-prompt`,
`--permission-prompt`; without it the case is a SKIP that says so."""

from __future__ import annotations

import asyncio

import msgspec

from interlink.acp import convert
from interlink.acp import schema as s
from interlink.check._acp_cases_rpc import error_code, expect_error
from interlink.check._acp_runner import Ctx, short
from interlink.check._cases import MUST, SHOULD, Cases, Fail, Skip
from interlink.check._wire import AgentUnderTest, Message, is_response, reject_outcome, same_id

TURN = "protocol/v1/prompt-turn.mdx"
CANCEL = "protocol/v1/cancellation.mdx"
STOP_REASONS = {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}
_AFTER = 0.5  # how long to listen after an answer for updates that came too late


def text(value: str) -> list[Message]:
    return [{"type": "text", "text": value}]


def updates(agent: AgentUnderTest, session: str, since: int = 0) -> list[Message]:
    found = []
    for message in agent.messages[since:]:
        params = message.get("params")
        of_session = isinstance(params, dict) and params.get("sessionId") == session
        if message.get("method") == "session/update" and of_session:
            found.append(message)
    return found


async def turn(ctx: Ctx, which: str = "prompt") -> tuple[AgentUnderTest, str, Message]:
    """A fresh agent, a session and one turn of the given text: the agent, the session
    and the prompt's answer."""
    words = ctx.need_prompt(which)
    agent = await ctx.agent()
    session = await ctx.session(agent)
    answer = await agent.call("session/prompt", {"sessionId": session, "prompt": text(words)})
    return agent, session, answer


async def no_late_updates(
    agent: AgentUnderTest, session: str, answer: Message, seconds: float
) -> None:
    """Listen for `seconds` after a turn's answer: no session/update of it may follow."""
    await agent.quiet(seconds)
    late = updates(agent, session, agent.messages.index(answer) + 1)
    if late:
        raise Fail(f"{len(late)} session/update after the answer: {short(late[0])}")


def stop_reason(answer: Message) -> object:
    result = answer.get("result")
    if not isinstance(result, dict):
        raise Fail(f"the prompt failed: {short(answer)}")
    return result.get("stopReason")


async def prompt_stop_reason(ctx: Ctx) -> str:
    _, _, answer = await turn(ctx)
    reason = stop_reason(answer)
    if reason not in STOP_REASONS:
        raise Fail(f"stopReason {reason!r} is not one of {sorted(STOP_REASONS)}")
    return f"stopReason {reason!r}"


async def updates_before_answer(ctx: Ctx) -> str:
    agent, session, answer = await turn(ctx)
    stop_reason(answer)
    await no_late_updates(agent, session, answer, _AFTER)
    return f"{len(updates(agent, session))} update(s), all before the answer"


async def updates_schema(ctx: Ctx) -> str:
    agent, session, answer = await turn(ctx)
    stop_reason(answer)
    sent = [m for m in agent.messages if m.get("method") == "session/update"]
    for message in sent:
        try:
            note = convert(s.SessionNotification, message.get("params"))
        except msgspec.ValidationError as exc:
            raise Fail(f"not a SessionNotification: {exc}: {short(message)}") from None
        if note.session_id != session:
            raise Fail(f"an update for session {note.session_id!r}, not {session!r}")
    if not sent:
        raise Skip("the turn sent no session/update")
    return f"{len(sent)} update(s) decoded"


async def resource_link(ctx: Ctx) -> str:
    words = ctx.need_prompt()
    agent = await ctx.agent()
    session = await ctx.session(agent)
    link = {"type": "resource_link", "uri": "file:///tmp/interlink-check.txt", "name": "notes"}
    prompt = [*text(words), link]
    answer = await agent.call("session/prompt", {"sessionId": session, "prompt": prompt})
    return f"stopReason {stop_reason(answer)!r}"


async def unadvertised_content(ctx: Ctx) -> str:
    if ctx.probe.prompt_cap("image"):
        raise Skip("promptCapabilities.image is advertised")
    agent = await ctx.agent()
    session = await ctx.session(agent)
    image = {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
    prompt = [*text(ctx.options.prompt or "describe"), image]
    answer = await agent.call("session/prompt", {"sessionId": session, "prompt": prompt})
    return expect_error(answer, -32602)


async def no_unadvertised_calls(ctx: Ctx) -> str:
    which = "permission-prompt" if ctx.options.permission_prompt else "prompt"
    agent, _, answer = await turn(ctx, which)
    await agent.quiet(_AFTER)
    if agent.unexpected_requests:
        raise Fail(f"the agent called {sorted(set(agent.unexpected_requests))}")
    return f"no such call (the turn ended {short(answer, 100)})"


# -- cancellation --------------------------------------------------------------------------


async def slow_turn(ctx: Ctx) -> tuple[AgentUnderTest, str, object]:
    """A fresh agent with a --slow-prompt turn under way (its first update seen)."""
    words = ctx.need_prompt("slow-prompt")
    agent = await ctx.agent()
    session = await ctx.session(agent)
    rid = await agent.request("session/prompt", {"sessionId": session, "prompt": text(words)})
    await agent.wait_for(
        lambda m: bool(updates(agent, session)) or (is_response(m) and same_id(m["id"], rid)),
        "first session/update of the slow turn",
    )
    if agent.responses_to(rid):
        raise Skip(f"--slow-prompt ended at once: {short(agent.responses_to(rid)[0])}")
    return agent, session, rid


async def session_cancel(ctx: Ctx) -> str:
    agent, session, rid = await slow_turn(ctx)
    await agent.notify("session/cancel", {"sessionId": session})
    reason = stop_reason(await agent.response(rid))
    if reason != "cancelled":
        raise Fail(f"stopReason {reason!r} after session/cancel")
    return "stopReason 'cancelled'"


async def no_updates_after(ctx: Ctx) -> str:
    agent, session, rid = await slow_turn(ctx)
    await agent.notify("session/cancel", {"sessionId": session})
    answer = await agent.response(rid)
    await no_late_updates(agent, session, answer, _AFTER * 2)
    return f"answered {short(answer, 100)}; nothing after it"


async def cancel_request(ctx: Ctx) -> str:
    agent, _, rid = await slow_turn(ctx)
    await agent.notify("$/cancel_request", {"requestId": rid})
    answer = await agent.response(rid)
    if "error" in answer and error_code(answer) != -32800:
        raise Fail(f"answered an error that is not -32800: {short(answer)}")
    return f"answered {short(answer, 150)}"


async def permission_pending(ctx: Ctx) -> str:
    words = ctx.need_prompt("permission-prompt")
    asked: asyncio.Future[Message] = asyncio.get_running_loop().create_future()

    async def hold(agent: AgentUnderTest, request: Message) -> None:
        if not asked.done():
            asked.set_result(request)
            return
        await agent.respond(request["id"], result={"outcome": reject_outcome(request)})

    agent = await ctx.agent()
    agent.on_permission = hold
    session = await ctx.session(agent)
    rid = await agent.request("session/prompt", {"sessionId": session, "prompt": text(words)})
    done = asyncio.ensure_future(agent.response(rid))
    await asyncio.wait({asked, done}, timeout=ctx.options.timeout, return_when="FIRST_COMPLETED")
    if not asked.done():
        done.cancel()
        raise Skip("--permission-prompt asked no permission")
    await agent.notify("session/cancel", {"sessionId": session})
    await agent.respond(asked.result()["id"], result={"outcome": {"outcome": "cancelled"}})
    reason = stop_reason(await done)
    if reason != "cancelled":
        raise Fail(f"stopReason {reason!r} after session/cancel with a permission pending")
    return "stopReason 'cancelled'"


CASES: Cases[Ctx] = {
    prompt_stop_reason: (
        "prompt.stop-reason",
        "a turn ends with a response carrying a stop reason",
        MUST,
        TURN,
        "If there are no pending tool calls, the turn ends and the Agent MUST respond to the "
        "original `session/prompt` request with a `StopReason`",
    ),
    updates_before_answer: (
        "prompt.updates-before-answer",
        "every session/update of a turn comes before the turn's answer",
        MUST,
        TURN,
        "If there are no pending tool calls, the turn ends and the Agent MUST respond to the "
        "original `session/prompt` request with a `StopReason`",
    ),
    updates_schema: (
        "prompt.updates-schema",
        "each session/update of a turn is a SessionNotification of that session",
        MUST,
        "protocol/v1/prompt-turn.mdx",
        "The Agent reports the model's output to the Client via `session/update` notifications.",
    ),
    resource_link: (
        "prompt.resource-link",
        "a prompt with a text block and a resource_link block is served",
        MUST,
        "protocol/v1/initialization.mdx",
        "As a baseline, all Agents MUST support `ContentBlock::Text` and "
        "`ContentBlock::ResourceLink` in `session/prompt` requests.",
    ),
    unadvertised_content: (
        "prompt.unadvertised-content",
        "an image block, when promptCapabilities.image is not advertised, is -32602",
        SHOULD,
        "protocol/v1/prompt-turn.mdx (the spec binds only the client)",
        "Clients MUST restrict types of content according to the Prompt Capabilities established "
        "during initialization.",
    ),
    no_unadvertised_calls: (
        "prompt.no-unadvertised-calls",
        "during a turn the agent calls no client method the client did not advertise",
        MUST,
        "protocol/v1/file-system.mdx",
        "If `readTextFile` or `writeTextFile` is `false` or not present, the Agent MUST NOT "
        "attempt "
        "to call the corresponding filesystem method.",
    ),
    session_cancel: (
        "cancel.session-cancel",
        "session/cancel during a turn: the turn answers stopReason cancelled",
        MUST,
        TURN,
        "After all ongoing operations have been successfully aborted and pending updates have been "
        "sent, the Agent MUST respond to the original `session/prompt` request with the "
        "`cancelled` stop reason.",
    ),
    no_updates_after: (
        "cancel.no-updates-after-answer",
        "after a cancelled turn's answer no session/update follows",
        MUST,
        TURN,
        "The Agent MAY send `session/update` notifications with content or tool call updates after "
        "receiving the `session/cancel` notification, but it MUST ensure that it does so before "
        "responding to the `session/prompt` request.",
    ),
    cancel_request: (
        "cancel.cancel-request",
        "$/cancel_request of a running prompt: the request is answered (-32800 or a result)",
        SHOULD,
        CANCEL,
        "MUST send one of these responses for the original request: A valid response with "
        "appropriate data (such as partial results or cancellation marker); An error response "
        "with code -32800 (Request Cancelled)",
    ),
    permission_pending: (
        "cancel.permission-pending",
        "session/cancel while a permission request is pending: the turn answers cancelled",
        MUST,
        TURN,
        "The Client MUST respond to all pending `session/request_permission` requests with the "
        "`cancelled` outcome. [...] the Agent MUST respond to the original `session/prompt` "
        "request with the `cancelled` stop reason.",
    ),
}
