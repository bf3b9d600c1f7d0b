"""Cases of session modes and config options: offered on session/new, set, refused when
unknown."""

from __future__ import annotations

from interlink.check._acp_cases_rpc import DECISIONS, expect_error
from interlink.check._acp_runner import Ctx, short, succeeded
from interlink.check._cases import MUST, SHOULD, Cases, Fail, Skip
from interlink.check._wire import Message


def _modes(result: Message) -> tuple[object, list[str]]:
    modes = result.get("modes")
    if not isinstance(modes, dict):
        raise Skip("session/new returned no modes")
    available = modes.get("availableModes")
    ids = (
        [m.get("id") for m in available if isinstance(m, dict)]
        if isinstance(available, list)
        else []
    )
    return modes.get("currentModeId"), [i for i in ids if isinstance(i, str)]


async def set_mode(ctx: Ctx) -> str:
    agent = await ctx.agent()
    session, result = await ctx.new_session(agent)
    current, ids = _modes(result)
    if current not in ids:
        raise Fail(f"currentModeId {current!r} is not among availableModes {ids}")
    target = next((i for i in ids if i != current), ids[0])
    answer = await agent.call("session/set_mode", {"sessionId": session, "modeId": target})
    succeeded(answer, f"set_mode {target!r} failed")
    return f"mode {current!r} -> {target!r}"


async def unknown_mode(ctx: Ctx) -> str:
    agent = await ctx.agent()
    session, result = await ctx.new_session(agent)
    _modes(result)
    params = {"sessionId": session, "modeId": "interlink-check-no-such-mode"}
    return expect_error(await agent.call("session/set_mode", params), -32602)


def _options(result: Message) -> list[Message]:
    options = result.get("configOptions")
    if not isinstance(options, list) or not options:
        raise Skip("session/new returned no configOptions")
    return [o for o in options if isinstance(o, dict)]


async def config_defaults(ctx: Ctx) -> str:
    agent = await ctx.agent()
    _, result = await ctx.new_session(agent)
    options = _options(result)
    missing = [o.get("id") for o in options if o.get("currentValue") is None]
    if missing:
        raise Fail(f"options without a currentValue: {missing}")
    boolean = [o.get("id") for o in options if o.get("type") == "boolean"]
    if boolean:
        raise Fail(f"boolean options sent to a client that did not advertise them: {boolean}")
    return f"{len(options)} option(s), each with a value"


async def config_set(ctx: Ctx) -> str:
    agent = await ctx.agent()
    session, result = await ctx.new_session(agent)
    options = _options(result)
    option = next((o for o in options if o.get("type") == "select"), None)
    if option is None:
        raise Skip("no select option to set")
    values = _select_values(option)
    value = next((v for v in values if v != option.get("currentValue")), option.get("currentValue"))
    params = {"sessionId": session, "configId": option.get("id"), "value": value}
    answer = await agent.call("session/set_config_option", params)
    answered = answer.get("result")
    listed = answered.get("configOptions") if isinstance(answered, dict) else None
    if not isinstance(listed, list):
        raise Fail(f"no configOptions in the answer: {short(answer)}")
    before = {o.get("id") for o in options}
    after = {o.get("id") for o in listed if isinstance(o, dict)}
    if before - after:
        raise Fail(f"options missing from the answer: {sorted(map(str, before - after))}")
    return f"{option.get('id')!r} = {value!r}; {len(listed)} option(s) answered"


def _select_values(option: Message) -> list[object]:
    values: list[object] = []
    items = option.get("options")
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and "value" in item:
            values.append(item["value"])
        elif isinstance(item, dict) and isinstance(item.get("options"), list):  # groups
            values.extend(o.get("value") for o in item["options"] if isinstance(o, dict))
    return values


async def config_unknown(ctx: Ctx) -> str:
    agent = await ctx.agent()
    session, result = await ctx.new_session(agent)
    _options(result)
    params = {"sessionId": session, "configId": "interlink-check-no-such-option", "value": "x"}
    return expect_error(await agent.call("session/set_config_option", params), -32602)


CASES: Cases[Ctx] = {
    set_mode: (
        "modes.set",
        "session/set_mode to an available mode succeeds; the current mode is one of them",
        SHOULD,
        "protocol/v1/session-modes.mdx",
        "The current mode can be changed at any point during a session, whether the Agent is idle "
        "or generating a response.",
    ),
    unknown_mode: (
        "modes.unknown",
        "session/set_mode to an unknown mode is -32602",
        SHOULD,
        "protocol/v1/session-modes.mdx and " + DECISIONS,
        "The ID of the mode to switch to. Must be one of the modes listed in `availableModes`",
    ),
    config_defaults: (
        "config.defaults",
        "every config option has a current value, and none is boolean (not advertised)",
        MUST,
        "protocol/v1/session-config-options.mdx",
        "Agents MUST always provide a default value for every configuration option.",
    ),
    config_set: (
        "config.set",
        "session/set_config_option answers the complete list of options",
        MUST,
        "protocol/v1/session-config-options.mdx",
        "The Agent MUST respond with the complete list of all configuration options and their "
        "current values",
    ),
    config_unknown: (
        "config.unknown",
        "session/set_config_option with an unknown option id is -32602",
        SHOULD,
        "protocol/v1/session-config-options.mdx and " + DECISIONS,
        "The `id` of the configuration option to change",
    ),
}
