"""Cases of the JSON-RPC envelope and NDJSON framing, unknown methods, extensions and the
agent process. Bad inputs are data (`_BAD_INPUTS`): each gives one case that judges the
answer and one that checks the agent still serves afterwards."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from interlink.check._acp_runner import Ctx, initialize_params, session_params, short, succeeded
from interlink.check._cases import MUST, SHOULD, Cases, Fail, Skip, each
from interlink.check._report import Level
from interlink.check._wire import AgentUnderTest, Message, is_response, same_id

JSONRPC_ID = "JSON-RPC 2.0 §5 (Response object)"
JSONRPC_ID_NULL = (
    "If there was an error in detecting the id in the Request object (e.g. Parse "
    "error/Invalid Request), it MUST be Null."
)
JSONRPC_REPLY = "JSON-RPC 2.0 §5 (Response object)"
JSONRPC_REPLY_SENTENCE = (
    "When a rpc call is made, the Server MUST reply with a Response, except for in the "
    "case of Notifications."
)
TRANSPORTS = "protocol/v1/transports.mdx (stdio)"
EXTENSIBILITY = "protocol/v1/extensibility.mdx"
DECISIONS = "interlink DECISIONS.md (the spec is silent)"
_ALIVE = "_interlink.check/alive"


def error_code(answer: Message) -> object:
    error = answer.get("error")
    return error.get("code") if isinstance(error, dict) else None


def expect_error(answer: Message, *codes: int) -> str:
    """PASS detail when `answer` is an error with one of `codes`, else Fail. An agent that
    first wants authentication (-32000) was not asked the case: Skip."""
    if error_code(answer) == -32000 and -32000 not in codes:
        raise Skip(f"the agent wants authentication first ({short(answer, 150)}); pass --auth")
    if "result" in answer:
        raise Fail(f"answered with a result, expected error {codes[0]}: {short(answer)}")
    if error_code(answer) not in codes:
        raise Fail(f"error code {error_code(answer)!r}, expected {codes[0]}: {short(answer)}")
    return f"answered {short(answer)}"


async def alive(agent: AgentUnderTest) -> str:
    """The agent still answers a request (any answer), and its process is running."""
    rid = f"alive-{agent.new_id()}"
    answer = await agent.call(_ALIVE, id=rid)
    if agent.returncode is not None:
        raise Fail(f"the agent exited with status {agent.returncode}{agent.stderr_tail()}")
    return f"still serving (answered {short(answer, 120)})"


async def first_other_response(agent: AgentUnderTest, known: set[str]) -> Message:
    """The first response whose id is not one the case already saw answered."""
    return await agent.wait_for(
        lambda m: is_response(m) and repr(m.get("id")) not in known, "answer to the bad input"
    )


# -- bad inputs: the answer, then survival ---------------------------------------------

Judge = Callable[[Message], str]


def _null_id_error(*codes: int) -> Judge:
    def judge(answer: Message) -> str:
        detail = expect_error(answer, *codes)
        if answer.get("id", "missing") is not None:
            raise Fail(f"id {answer.get('id', 'missing')!r}, expected null: {short(answer)}")
        return detail

    return judge


def _error_with_id_or_null(rid: str, *codes: int) -> Judge:
    def judge(answer: Message) -> str:
        detail = expect_error(answer, *codes)
        if answer.get("id") not in (rid, None):
            raise Fail(f"id {answer.get('id')!r}, expected {rid!r} or null: {short(answer)}")
        return detail

    return judge


def _any_answer(answer: Message) -> str:
    return f"answered {short(answer)}"


@dataclass(frozen=True)
class BadInput:
    name: str
    title: str
    data: bytes
    level: Level
    page: str
    sentence: str
    judge: Judge | None  # None: any answer or none; only survival is checked
    what: str = ""  # the input, for the survival case's title
    survival: Level = MUST


_BAD_INPUTS = [
    BadInput(
        "parse-error",
        "invalid JSON is answered -32700 with id null",
        b'{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]\n',
        MUST,
        "JSON-RPC 2.0 §5.1 (Error object)",
        "-32700 Parse error: Invalid JSON was received by the server. " + JSONRPC_ID_NULL,
        _null_id_error(-32700),
        what="invalid JSON",
    ),
    BadInput(
        "invalid-utf8",
        "a line that is not UTF-8 is answered -32700",
        b'{"jsonrpc":"2.0","id":"utf8","method":"_interlink.check/x","params":{"a":"\xff\xfe"}}\n',
        SHOULD,
        "protocol/v1/transports.mdx",
        "JSON-RPC messages MUST be UTF-8 encoded.",
        _null_id_error(-32700),
        what="a line that is not UTF-8",
    ),
    BadInput(
        "number-line",
        "a line holding a number is answered -32600 with id null",
        b"42\n",
        MUST,
        "JSON-RPC 2.0 §5.1 (Error object)",
        "-32600 Invalid Request: The JSON sent is not a valid Request object. " + JSONRPC_ID_NULL,
        _null_id_error(-32600),
        what="a line holding a number",
    ),
    BadInput(
        "string-line",
        "a line holding a string is answered -32600 with id null",
        b'"session/new"\n',
        MUST,
        "JSON-RPC 2.0 §5.1 (Error object)",
        "-32600 Invalid Request: The JSON sent is not a valid Request object. " + JSONRPC_ID_NULL,
        _null_id_error(-32600),
        what="a line holding a string",
    ),
    BadInput(
        "empty-array",
        "an empty JSON array is answered with one -32600 response",
        b"[]\n",
        MUST,
        "JSON-RPC 2.0 §6 (Batch)",
        "If the batch rpc call itself fails to be recognized as an valid JSON or as an Array "
        "with at least one value, the response from the Server MUST be a single Response object.",
        _null_id_error(-32600),
        what="an empty JSON array",
    ),
    BadInput(
        "batch",
        "a JSON array of requests is answered (a batch answer, or -32600 where batches are off)",
        b'[{"jsonrpc":"2.0","id":"batched","method":"_interlink.check/batched"}]\n',
        SHOULD,
        "JSON-RPC 2.0 §6 (Batch)",
        "The Server should respond with an Array containing the corresponding Response objects, "
        "after all of the batch Request objects have been processed.",
        _any_answer,
        what="a JSON array of requests",
    ),
    BadInput(
        "wrong-version",
        'a request with "jsonrpc": "1.0" is answered -32600',
        b'{"jsonrpc":"1.0","id":"v1","method":"session/new","params":{}}\n',
        SHOULD,  # the client's MUST; the code is the table's
        "JSON-RPC 2.0 §4 (Request object)",
        'jsonrpc: A String specifying the version of the JSON-RPC protocol. MUST be exactly "2.0".',
        _error_with_id_or_null("v1", -32600),
        what='"jsonrpc": "1.0"',
    ),
    BadInput(
        "method-not-string",
        "a request whose method is a number is answered -32600",
        b'{"jsonrpc":"2.0","id":"m1","method":42}\n',
        SHOULD,  # the client's MUST; the code is the table's
        "JSON-RPC 2.0 §4 (Request object)",
        "method: A String containing the name of the method to be invoked.",
        _error_with_id_or_null("m1", -32600),
        what="a method that is a number",
    ),
    BadInput(
        "id-object",
        "a request whose id is an object is answered -32600 with id null",
        b'{"jsonrpc":"2.0","id":{"a":1},"method":"_interlink.check/x"}\n',
        MUST,
        "JSON-RPC 2.0 §4 (Request object)",
        "An identifier established by the Client that MUST contain a String, Number, or NULL "
        "value if included. " + JSONRPC_ID_NULL,
        _null_id_error(-32600),
        what="an id that is an object",
    ),
    BadInput(
        "params-not-structured",
        "params that are a string are refused (-32602 or -32600)",
        b'{"jsonrpc":"2.0","id":"p1","method":"session/new","params":"cwd"}\n',
        SHOULD,  # the client's MUST; the code is the table's
        "JSON-RPC 2.0 §4.2 (Parameter Structures)",
        "If present, parameters for the rpc call MUST be provided as a Structured value.",
        _error_with_id_or_null("p1", -32602, -32600),
        what="params that are a string",
    ),
    BadInput(
        "blank-lines",
        "blank lines between messages",
        b"\n   \n\t\n",
        MUST,
        TRANSPORTS,
        "Messages are delimited by newlines (\\n), and MUST NOT contain embedded newlines.",
        None,
        what="blank lines",
    ),
]


def _bad_input(bad: BadInput) -> Cases[Ctx]:
    async def answer(ctx: Ctx) -> str:
        assert bad.judge is not None
        agent = await ctx.agent()
        await agent.send_raw(bad.data)
        return bad.judge(await first_other_response(agent, {"1"}))

    async def survival(ctx: Ctx) -> str:
        agent = await ctx.agent()
        await agent.send_raw(bad.data)
        return await alive(agent)

    survives = (f"still serving after {bad.what}", bad.survival, JSONRPC_REPLY)
    cases: Cases[Ctx] = {
        survival: (f"process.survives-{bad.name}", *survives, JSONRPC_REPLY_SENTENCE)
    }
    if bad.judge is None:
        return cases
    return {answer: (f"rpc.{bad.name}", bad.title, bad.level, bad.page, bad.sentence)} | cases


# -- framing that is valid ---------------------------------------------------------------


async def crlf(ctx: Ctx) -> str:
    agent = await ctx.agent()
    await agent.send_raw(b'{"jsonrpc":"2.0","id":"crlf","method":"_interlink.check/crlf"}\r\n')
    return _any_answer(await agent.response("crlf"))


async def large_line(ctx: Ctx) -> str:
    agent = await ctx.agent()
    pad = {"interlink.check/pad": "x" * (1 << 20)}
    await agent.request(_ALIVE, {"_meta": pad}, id="large")
    answer = await agent.response("large")
    return f"{_any_answer(answer)}; {await alive(agent)}"


async def multibyte(ctx: Ctx) -> str:
    agent = await ctx.agent()
    line = (
        '{"jsonrpc":"2.0","id":"ü-🚀","method":"_interlink.check/utf8",'
        '"params":{"text":"日本語 🚀 é"}}\n'
    ).encode()
    cut = line.index("🚀".encode()) + 2  # inside the 4-byte character
    await agent.send_raw(line[:cut])
    await agent.send_raw(line[cut:])
    return _any_answer(await agent.response("ü-🚀"))


_IDS: list[tuple[str, object]] = [
    ("string", "id-ü-1"),
    ("zero", 0),
    ("negative", -7),
    ("large", 9007199254740991),
]


_ID_SAME = (
    "id: This member is REQUIRED. It MUST be the same as the value of the id member in the "
    "Request Object."
)


def _id(row: tuple[str, object]) -> Cases[Ctx]:
    name, rid = row

    async def echo(ctx: Ctx) -> str:
        agent = await ctx.agent()
        await agent.request("_interlink.check/id", id=rid)
        answer = await first_other_response(agent, {"1"})
        if not same_id(answer.get("id"), rid):
            raise Fail(f"sent id {rid!r}, the answer has id {answer.get('id')!r}")
        return f"id {rid!r} echoed"

    return {echo: (f"rpc.id-{name}", f"a {name} id is echoed exactly", MUST, JSONRPC_ID, _ID_SAME)}


async def notifications_unanswered(ctx: Ctx) -> str:
    agent = await ctx.agent()
    await agent.notify("session/interlink_no_such_notification", {"sessionId": "x"})
    await agent.notify("_interlink.check/note", {"n": 1})
    await agent.notify("session/cancel", {"sessionId": "sess_interlink_check_unknown"})
    await alive(agent)
    extra = [m for m in agent.messages if is_response(m) and m.get("id") in (None, "")]
    if extra:
        raise Fail(f"a notification was answered: {short(extra[0])}")
    return "no answer to any of the three notifications"


async def unknown_method(ctx: Ctx) -> str:
    agent = await ctx.agent()
    return expect_error(await agent.call("session/interlink_no_such_method", {}), -32601)


# -- extensions --------------------------------------------------------------------------


async def ext_answered(ctx: Ctx) -> str:
    agent = await ctx.agent()
    return _any_answer(await agent.call("_interlink.check/unknown", {"x": 1}, id="ext-1"))


async def ext_unknown(ctx: Ctx) -> str:
    agent = await ctx.agent()
    return expect_error(await agent.call("_interlink.check/unknown", {"x": 1}), -32601)


async def ext_notification(ctx: Ctx) -> str:
    agent = await ctx.agent()
    await agent.notify("_interlink.check/note", {"_meta": {"x": 1}})
    return await alive(agent)


async def ext_meta(ctx: Ctx) -> str:
    agent = await ctx.agent(initialized=False)
    meta = {"_meta": {"interlink.check/meta": {"n": 1}, "traceparent": "00-0-0-00"}}
    rid = await agent.request("initialize", initialize_params(**meta))
    answer = await agent.response(rid, within=ctx.options.startup)
    succeeded(answer, "initialize with _meta")
    if ctx.probe.session is None:
        return "initialize with _meta served (session/new fails here even without _meta)"
    answer = await agent.call("session/new", session_params(ctx.options, **meta))
    succeeded(answer, "session/new with _meta")
    return "initialize and session/new with _meta served"


# -- the process ---------------------------------------------------------------------------


async def stdout_only(ctx: Ctx) -> str:
    agent = await ctx.agent()
    try:
        session = await ctx.session(agent)
        if ctx.options.prompt:
            prompt = [{"type": "text", "text": ctx.options.prompt}]
            await agent.call("session/prompt", {"sessionId": session, "prompt": prompt})
    except (Skip, Fail):
        pass  # what the agent wrote until then is still judged
    finally:
        await agent.close_stdin()
        await agent.wait_exit(ctx.options.timeout)
    if agent.garbage:
        raise Fail(
            f"{len(agent.garbage)} line(s) that are not JSON-RPC, first: {agent.garbage[0]!r}"
        )
    return f"{len(agent.messages)} messages, all JSON-RPC"


async def exit_on_eof(ctx: Ctx) -> str:
    agent = await ctx.agent()
    await agent.close_stdin()
    status = await agent.wait_exit(ctx.options.timeout)
    if status is None:
        raise Fail(f"still running {ctx.options.timeout:g}s after stdin closed")
    return f"exited with status {status}"


CASES: Cases[Ctx] = {
    **each(_bad_input, _BAD_INPUTS),
    crlf: (
        "rpc.crlf",
        "a request ended by CRLF is answered (CR is JSON whitespace)",
        MUST,
        JSONRPC_REPLY,
        JSONRPC_REPLY_SENTENCE,
    ),
    large_line: (
        "rpc.large-line",
        "a 1 MiB request line is answered",
        SHOULD,
        JSONRPC_REPLY,
        JSONRPC_REPLY_SENTENCE,
    ),
    multibyte: (
        "rpc.multibyte",
        "a request with multi-byte UTF-8, written split inside a character, is answered",
        MUST,
        "protocol/v1/transports.mdx",
        "JSON-RPC messages MUST be UTF-8 encoded.",
    ),
    **each(_id, _IDS),
    notifications_unanswered: (
        "rpc.notifications-unanswered",
        "notifications (known, unknown, extension) are never answered",
        MUST,
        "JSON-RPC 2.0 §4.1 (Notification)",
        "The Server MUST NOT reply to a Notification, including those that are within a batch "
        "request.",
    ),
    unknown_method: (
        "rpc.unknown-method",
        "an unknown method is answered -32601",
        SHOULD,
        "JSON-RPC 2.0 §5.1 (Error object)",
        "-32601 Method not found: The method does not exist / is not available.",
    ),
    ext_answered: (
        "ext.request-answered",
        "an extension request (`_`-prefixed) is answered with its id",
        MUST,
        EXTENSIBILITY,
        "Upon receiving a custom request, implementations MUST respond accordingly with the "
        "provided id",
    ),
    ext_unknown: (
        "ext.unknown-request",
        "an unrecognised extension request is answered -32601",
        SHOULD,
        EXTENSIBILITY,
        "If the receiving end doesn't recognize the custom method name, it should respond with "
        'the standard "Method not found" error',
    ),
    ext_notification: (
        "ext.notification-ignored",
        "an unrecognised extension notification is ignored",
        SHOULD,
        EXTENSIBILITY,
        "Unlike with custom requests, implementations SHOULD ignore unrecognized notifications.",
    ),
    ext_meta: (
        "ext.meta",
        "`_meta` on initialize and session/new is accepted",
        SHOULD,
        EXTENSIBILITY,
        "All types in the protocol include a `_meta` field with type `{ [key: string]: unknown }` "
        "that implementations can use to attach custom information.",
    ),
    stdout_only: (
        "process.stdout-only-protocol",
        "everything the agent writes to stdout is a JSON-RPC message",
        MUST,
        TRANSPORTS,
        "The agent MUST NOT write anything to its stdout that is not a valid ACP message.",
    ),
    exit_on_eof: (
        "process.exit-on-eof",
        "the agent exits when its stdin closes",
        SHOULD,
        DECISIONS,
        "stdio, agent side: stdout carries JSON-RPC only. [...] EOF on stdin ends the agent "
        "cleanly.",
    ),
}
