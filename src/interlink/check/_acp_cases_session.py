"""Cases of initialisation (version negotiation, the gate, capabilities), authentication
and sessions (new, load, resume, list, close, delete, as advertised). Modes and config
options: `_acp_cases_config`."""

from __future__ import annotations

import msgspec

from interlink.acp import convert
from interlink.acp import schema as s
from interlink.check._acp_cases_rpc import DECISIONS, error_code, expect_error
from interlink.check._acp_runner import Ctx, session_params, short, succeeded
from interlink.check._cases import MUST, SHOULD, Cases, Fail, Skip, each
from interlink.check._wire import Message

INIT = "protocol/v1/initialization.mdx"
SETUP = "protocol/v1/session-setup.mdx"
NOT_FOUND = "protocol/v1/schema.mdx (ErrorCode) and " + DECISIONS
NOT_FOUND_SENTENCE = "-32002 Resource not found: A given resource, such as a file, was not found."
UNKNOWN_SESSION = "sess_interlink_check_unknown"
GATED = DECISIONS.replace("the spec is silent", "the spec binds only the client")
GATED_SENTENCE = "Capability-gated method that was not advertised -> -32601, on both sides"


async def same_version(ctx: Ctx) -> str:
    if ctx.probe.init is None:
        raise Fail(ctx.probe.init_problem)
    version = ctx.probe.init.get("protocolVersion")
    if version != 1 or not isinstance(version, int):
        raise Fail(f"asked for 1, answered protocolVersion {version!r}")
    return "protocolVersion 1"


async def response_schema(ctx: Ctx) -> str:
    if ctx.probe.init is None:
        raise Fail(ctx.probe.init_problem)
    try:
        convert(s.InitializeResponse, ctx.probe.init)
    except msgspec.ValidationError as exc:
        raise Fail(f"not an InitializeResponse: {exc}: {short(ctx.probe.init)}") from None
    return f"capabilities {short(ctx.probe.caps, 200)}"


async def newer_version(ctx: Ctx) -> str:
    agent = await ctx.agent(initialized=False)
    answer = await ctx.initialize(agent, version=65535)
    result = answer.get("result")
    if not isinstance(result, dict):
        raise Fail(f"initialize with version 65535 failed: {short(answer)}")
    version = result.get("protocolVersion")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version < 65535:
        raise Fail(f"asked for 65535, answered protocolVersion {version!r} (it speaks v1)")
    return f"answered protocolVersion {version}"


async def agent_info(ctx: Ctx) -> str:
    info = (ctx.probe.init or {}).get("agentInfo")
    if not (isinstance(info, dict) and info.get("name") and info.get("version")):
        raise Fail(f"agentInfo is {info!r}")
    return f"{info['name']} {info['version']}"


async def gate(ctx: Ctx) -> str:
    agent = await ctx.agent(initialized=False)
    rid = await agent.request("session/new", session_params(ctx.options))
    answer = await agent.response(rid, within=ctx.options.startup)
    if "result" in answer:
        raise Fail(f"session/new before initialize was served: {short(answer)}")
    if error_code(answer) != -32600:
        return f"refused, though not with -32600 (DECISIONS): {short(answer)}"
    return f"refused: {short(answer)}"


async def auth_methods(ctx: Ctx) -> str:
    methods = ctx.probe.auth_methods
    if not methods:
        raise Skip("the agent advertises no authMethods")
    bad = [m for m in methods if not isinstance(m.get("id"), str) or not m.get("name")]
    if bad:
        raise Fail(f"auth method without id or name: {short(bad[0])}")
    return "methods " + ", ".join(str(m["id"]) for m in methods)


async def auth_required(ctx: Ctx) -> str:
    error = ctx.probe.session_error
    if error is None:
        raise Skip("session/new succeeded without authentication")
    if not ctx.probe.auth_methods:
        raise Skip(f"session/new failed ({short(error)}) but no authMethods are advertised")
    if error.get("code") != -32000:
        raise Fail(f"authMethods advertised and session/new refused with {short(error)}")
    return f"refused: {short(error)}"


async def authenticate(ctx: Ctx) -> str:
    if not ctx.probe.auth_methods:
        raise Skip("the agent advertises no authMethods")
    if not ctx.options.auth:
        ids = ", ".join(str(m.get("id")) for m in ctx.probe.auth_methods)
        raise Skip(f"pass --auth METHOD_ID (advertised: {ids})")
    agent = await ctx.agent()
    return f"session {await ctx.session(agent, judged=True)}"


# -- sessions ------------------------------------------------------------------------------


async def new_session(ctx: Ctx) -> str:
    agent = await ctx.agent()
    return f"sessionId {await ctx.session(agent, judged=True)!r}"


async def unique(ctx: Ctx) -> str:
    agent = await ctx.agent()
    first = await ctx.session(agent, judged=True)
    second = await ctx.session(agent, judged=True)
    if first == second:
        raise Fail(f"both sessions are {first!r}")
    return f"{first!r} and {second!r}"


def expect_not_found(answer: Message, session_id: str) -> str:
    detail = expect_error(answer, -32002)
    error = answer.get("error")
    data = error.get("data") if isinstance(error, dict) else None
    if not (isinstance(data, dict) and data.get("sessionId") == session_id):
        raise Fail(f"-32002 without data.sessionId {session_id!r}: {short(answer)}")
    return detail


_UNKNOWN_SESSION_CALLS: list[tuple[str, str, str | None, dict[str, object]]] = [
    ("prompt", "session/prompt", None, {"prompt": [{"type": "text", "text": "hi"}]}),
    ("load", "session/load", "load", {"mcpServers": []}),
    ("resume", "session/resume", "resume", {"mcpServers": []}),
    ("close", "session/close", "close", {}),
    ("set-mode", "session/set_mode", "modes", {"modeId": "x"}),
    (
        "set-config-option",
        "session/set_config_option",
        "configOptions",
        {"configId": "x", "value": "x"},
    ),
]


def _unknown(row: tuple[str, str, str | None, dict[str, object]]) -> Cases[Ctx]:
    name, method, cap, extra = row

    async def unknown(ctx: Ctx) -> str:
        if cap == "load" and ctx.probe.caps.get("loadSession") is not True:
            raise Skip("loadSession is not advertised")
        if cap in ("modes", "configOptions"):
            if not (ctx.probe.session or {}).get(cap):
                raise Skip(f"session/new returned no {cap}")
        elif cap not in (None, "load"):
            ctx.probe.need_session_cap(cap)
        agent = await ctx.agent()
        params: dict[str, object] = {"sessionId": UNKNOWN_SESSION, **extra}
        if method in ("session/load", "session/resume"):
            params["cwd"] = ctx.options.session_cwd
        return expect_not_found(await agent.call(method, params), UNKNOWN_SESSION)

    title = f"{method} of an unknown session is -32002 with data.sessionId"
    return {unknown: (f"session.{name}-unknown", title, SHOULD, NOT_FOUND, NOT_FOUND_SENTENCE)}


_GATES: list[tuple[str, str, dict[str, object]]] = [
    ("load", "session/load", {"sessionId": UNKNOWN_SESSION, "mcpServers": []}),
    ("list", "session/list", {}),
    ("resume", "session/resume", {"sessionId": UNKNOWN_SESSION, "mcpServers": []}),
    ("close", "session/close", {"sessionId": UNKNOWN_SESSION}),
    ("delete", "session/delete", {"sessionId": UNKNOWN_SESSION}),
]


def _gate(row: tuple[str, str, dict[str, object]]) -> Cases[Ctx]:
    cap, method, params = row

    async def gated(ctx: Ctx) -> str:
        advertised = (
            ctx.probe.caps.get("loadSession") is True
            if cap == "load"
            else ctx.probe.session_cap(cap)
        )
        if advertised:
            raise Skip(f"{cap} is advertised")
        agent = await ctx.agent()
        sent = dict(params)
        if "mcpServers" in sent:
            sent["cwd"] = ctx.options.session_cwd
        return expect_error(await agent.call(method, sent), -32601)

    title = f"{method}, not advertised, is answered -32601"
    return {gated: (f"session.{cap}-not-advertised", title, SHOULD, GATED, GATED_SENTENCE)}


async def list_sessions(ctx: Ctx) -> str:
    ctx.probe.need_session_cap("list")
    agent = await ctx.agent()
    answer = await agent.call("session/list", {})
    if error_code(answer) == -32000:
        raise Skip(f"the agent wants authentication first ({short(answer, 150)}); pass --auth")
    result = answer.get("result")
    sessions = result.get("sessions") if isinstance(result, dict) else None
    if not isinstance(sessions, list):
        raise Fail(f"no sessions array: {short(answer)}")
    bad = [x for x in sessions if not (isinstance(x, dict) and isinstance(x.get("sessionId"), str))]
    if bad:
        raise Fail(f"a listed session without sessionId: {short(bad[0])}")
    return f"{len(sessions)} session(s)"


async def close(ctx: Ctx) -> str:
    ctx.probe.need_session_cap("close")
    agent = await ctx.agent()
    session = await ctx.session(agent)
    answer = await agent.call("session/close", {"sessionId": session})
    succeeded(answer, "session/close failed")
    return "closed"


async def delete_unknown(ctx: Ctx) -> str:
    ctx.probe.need_session_cap("delete")
    agent = await ctx.agent()
    answer = await agent.call("session/delete", {"sessionId": UNKNOWN_SESSION})
    succeeded(answer, "refused")
    return "succeeded"


async def load_replay(ctx: Ctx) -> str:
    if ctx.probe.caps.get("loadSession") is not True:
        raise Skip("loadSession is not advertised")
    words = ctx.need_prompt()
    agent = await ctx.agent()
    session = await ctx.session(agent)
    prompt = [{"type": "text", "text": words}]
    turn = await agent.call("session/prompt", {"sessionId": session, "prompt": prompt})
    succeeded(turn, "the turn to replay failed")
    params = {"sessionId": session, "cwd": ctx.options.session_cwd, "mcpServers": []}
    seen = len(agent.messages)
    rid = await agent.request("session/load", params)
    answer = await agent.response(rid)
    succeeded(answer, "session/load of a live session failed")
    before = agent.messages[seen : agent.messages.index(answer)]
    replayed = [m for m in before if m.get("method") == "session/update"]
    if not replayed:
        raise Fail("no session/update of the conversation before the answer to session/load")
    return f"{len(replayed)} session/update replayed, then the answer"


async def resume(ctx: Ctx) -> str:
    ctx.probe.need_session_cap("resume")
    agent = await ctx.agent()
    session = await ctx.session(agent)
    seen = len(agent.messages)
    params = {"sessionId": session, "cwd": ctx.options.session_cwd, "mcpServers": []}
    answer = await agent.call("session/resume", params)
    succeeded(answer, "session/resume of a live session failed")
    replayed = [m for m in agent.messages[seen:] if m.get("method") == "session/update"]
    if replayed:
        raise Fail(f"{len(replayed)} session/update before the answer: {short(replayed[0])}")
    return "resumed, nothing replayed"


CASES: Cases[Ctx] = {
    same_version: (
        "init.same-version",
        "initialize with version 1 is answered with version 1",
        MUST,
        INIT,
        "If the Agent supports the requested version, it MUST respond with the same version.",
    ),
    response_schema: (
        "init.response-schema",
        "the initialize answer is an InitializeResponse (version, capabilities, auth methods)",
        MUST,
        INIT,
        "The Agent MUST respond with the chosen protocol version and the capabilities it supports.",
    ),
    newer_version: (
        "init.newer-version",
        "initialize with a version from the future is answered with the agent's latest",
        MUST,
        INIT,
        "Otherwise, the Agent MUST respond with the latest version it supports.",
    ),
    agent_info: (
        "init.agent-info",
        "the agent names itself (agentInfo name and version)",
        SHOULD,
        INIT,
        "It SHOULD also provide a name and version to the Client as well",
    ),
    gate: (
        "init.gate",
        "a request before initialize is refused (not served)",
        SHOULD,
        "protocol/v1/session-setup.mdx and " + DECISIONS,
        "Before creating a session, Clients MUST first complete the initialization phase to "
        "establish protocol compatibility and capabilities.",
    ),
    auth_methods: (
        "auth.methods-schema",
        "each advertised auth method has an id and a name",
        MUST,
        "protocol/v1/authentication.mdx",
        "Agents advertise available authentication methods in `authMethods`. Every method has an "
        "id",
    ),
    auth_required: (
        "auth.required-code",
        "session/new refused for want of authentication is -32000",
        SHOULD,
        "protocol/v1/schema.mdx (ErrorCode)",
        "-32000 Authentication required: Authentication is required before this operation can be "
        "performed.",
    ),
    authenticate: (
        "auth.authenticate",
        "authenticate with an advertised method (--auth) succeeds, then session/new is served",
        MUST,
        "protocol/v1/authentication.mdx",
        "Every method has an `id`, but the Client sends that ID to `authenticate` only for a "
        "method whose type defines that protocol-driven flow.",
    ),
    new_session: (
        "session.new",
        "session/new answers a session id",
        MUST,
        SETUP,
        "The Agent MUST respond with a unique Session ID that identifies this conversation",
    ),
    unique: (
        "session.unique",
        "two sessions get different ids",
        MUST,
        SETUP,
        "The Agent MUST respond with a unique Session ID that identifies this conversation",
    ),
    **each(_unknown, _UNKNOWN_SESSION_CALLS),
    **each(_gate, _GATES),
    list_sessions: (
        "session.list",
        "session/list answers a sessions array",
        MUST,
        "protocol/v1/session-list.mdx",
        "The Agent MUST respond with a list of sessions and optional pagination metadata",
    ),
    close: (
        "session.close",
        "session/close of a live session succeeds",
        MUST,
        SETUP,
        "The Agent MUST cancel any ongoing work for that session as if `session/cancel` had been "
        "called, then free the resources associated with the session.",
    ),
    delete_unknown: (
        "session.delete-unknown",
        "session/delete of a session that never existed succeeds",
        SHOULD,
        "protocol/v1/session-delete.mdx",
        "Deleting an already-deleted session, or a session that never existed, SHOULD succeed "
        "silently.",
    ),
    load_replay: (
        "session.load-replay",
        "session/load of a session with a turn replays it as session/update before answering",
        MUST,
        SETUP,
        "The Agent MUST replay the entire conversation to the Client in the form of "
        "`session/update` notifications (like `session/prompt`).",
    ),
    resume: (
        "session.resume-no-replay",
        "session/resume answers without replaying the conversation",
        MUST,
        SETUP,
        "Unlike `session/load`, the Agent MUST NOT replay the conversation history via "
        "`session/update` notifications before responding.",
    ),
}
