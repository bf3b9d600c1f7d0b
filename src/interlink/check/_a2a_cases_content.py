"""`interlink a2a check` cases: media types. A part of a type the card does not accept
(ContentTypeNotSupportedError, -32005), output modes the agent cannot produce, and
InvalidAgentResponseError (-32006), which no request can provoke."""

from __future__ import annotations

from interlink.check._a2a_runner import Ctx, expect_code, message, objects
from interlink.check._a2a_wire import Json
from interlink.check._cases import MUST, SHOULD, Cases, Fail, Skip

__all__: list[str] = []

UNKNOWN_TYPE = "application/x-a2a-check-unknown"


def _accepted(card: Json) -> set[str]:
    """What the card says the agent takes: its defaultInputModes and every skill's
    inputModes (a skill may widen the defaults; the request names no skill)."""
    modes = set(_strings(card.get("defaultInputModes")))
    for skill in objects(card, "skills"):
        modes.update(_strings(skill.get("inputModes")))
    return modes


def _strings(value: object) -> list[str]:
    return [m for m in value if isinstance(m, str)] if isinstance(value, list) else []


async def content_input_mode(ctx: Ctx) -> str:
    accepted = _accepted(ctx.card)
    if not accepted:
        raise Skip("the card declares no input modes")
    if any("*" in mode for mode in accepted):
        raise Skip(f"the card accepts a wildcard: {sorted(accepted)}")
    sent = message(ctx.options.prompt)
    part: Json = {"raw": "YTJhLWNoZWNr", "mediaType": UNKNOWN_TYPE, "filename": "check.bin"}
    sent["parts"] = [*objects(sent, "parts"), part]
    reply = await ctx.call("SendMessage", {"message": sent})
    if reply.error is None:
        raise Fail(f"a part of {UNKNOWN_TYPE} (the card takes {sorted(accepted)}) was served")
    return expect_code(reply, -32005, "ContentTypeNotSupportedError")


def _media_types(result: object) -> list[str]:
    """The media types of every part an answer carries (a text part without one is
    text/plain): a direct message's, or the task's status message and artifacts."""
    answer = result if isinstance(result, dict) else {}
    task = answer.get("task")
    task = task if isinstance(task, dict) else {}
    status = task.get("status")
    said = status.get("message") if isinstance(status, dict) else None
    parts: list[Json] = []
    for holder in (answer.get("message"), said, *objects(task, "artifacts")):
        parts.extend(objects(holder, "parts") if isinstance(holder, dict) else [])
    return [str(p.get("mediaType") or ("text/plain" if "text" in p else "")) for p in parts]


async def content_output_mode(ctx: Ctx) -> str:
    config: Json = {"acceptedOutputModes": [UNKNOWN_TYPE]}
    sent: Json = {"message": message(ctx.options.prompt), "configuration": config}
    reply = await ctx.call("SendMessage", sent)
    if reply.error is not None:
        return expect_code(reply, -32005, "ContentTypeNotSupportedError")
    other = sorted({m for m in _media_types(reply.result) if m != UNKNOWN_TYPE})
    if other:
        raise Fail(f"accepting only {UNKNOWN_TYPE}, the answer has parts of {other}")
    return "no part of a type the client did not accept"


async def content_invalid_agent_response(ctx: Ctx) -> str:
    raise Skip(
        "InvalidAgentResponseError reports an agent's answer that breaks the spec to the "
        "client; no request a client sends can make a conforming server produce one"
    )


JSONRPC_ONLY = {content_invalid_agent_response}
"""Asked once: it SKIPs on every binding alike."""

CASES: Cases[Ctx] = {
    content_input_mode: (
        "content.input_mode",
        "a part of a media type the card does not accept is refused (-32005)",
        SHOULD,
        "§13.4",
        "Agents **SHOULD** sanitize or validate file content types and reject unexpected "
        "media types",
    ),
    content_output_mode: (
        "content.output_mode",
        "acceptedOutputModes the agent cannot produce: no other part, or -32005",
        SHOULD,
        "a2a.proto SendMessageConfiguration.accepted_output_modes",
        "A list of media types the client is prepared to accept for response parts. Agents "
        "SHOULD use this to tailor their output.",
    ),
    content_invalid_agent_response: (
        "content.invalid_agent_response",
        "InvalidAgentResponseError (-32006) maps to each binding's code",
        MUST,
        "§5.4",
        "All A2A-specific errors defined in [Section 3.3.2](#332-error-handling) **MUST** be "
        "mapped to binding-specific error representations.",
    ),
}
