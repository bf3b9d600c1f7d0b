"""`interlink a2a check` cases: version and extension negotiation, and the JSON-RPC
binding's own rules (framing, ids, error objects)."""

from __future__ import annotations

import json

import httpx

from interlink.a2a import ValidationError, decode
from interlink.a2a import types as t
from interlink.check._a2a_cases_card import UNKNOWN_TASK, interfaces
from interlink.check._a2a_runner import Ctx, expect_code, message, required_extensions, text
from interlink.check._a2a_wire import Reply
from interlink.check._cases import MAY, MUST, SHOULD, Cases, Fail, Skip

__all__: list[str] = []


# -- version negotiation ---------------------------------------------------------------


async def version_unsupported(ctx: Ctx) -> str:
    task = await ctx.completed_task()
    reply = await ctx.call("GetTask", {"id": text(task, "id")}, version="99.0")
    return expect_code(reply, -32009, "VersionNotSupportedError")


def _versions(ctx: Ctx) -> set[str]:
    """The protocol versions the card declares for the interface spoken."""
    url, binding = ctx.binding.url, ctx.binding.name
    return {
        str(e.get("protocolVersion"))
        for e in interfaces(ctx.card)
        if e.get("url") == url and str(e.get("protocolBinding", "")).upper() == binding
    }


async def version_empty(ctx: Ctx) -> str:
    if "0.3" in _versions(ctx):
        raise Skip("the interface declares 0.3; 0.3 semantics are not checked")
    task = await ctx.completed_task()
    reply = await ctx.call("GetTask", {"id": text(task, "id")}, version=None)
    return expect_code(reply, -32009, "VersionNotSupportedError")


async def version_patch(ctx: Ctx) -> str:
    task = await ctx.completed_task()
    reply = await ctx.call("GetTask", {"id": text(task, "id")}, version="1.0.3")
    if not isinstance(reply.result, dict):
        raise Fail(f"A2A-Version: 1.0.3 got {reply.describe()}")
    return "A2A-Version: 1.0.3 served"


async def version_query(ctx: Ctx) -> str:
    url = httpx.URL(ctx.url).copy_merge_params({"A2A-Version": "99.0"})
    reply = await ctx.wire.rpc(str(url), "GetTask", {"id": UNKNOWN_TASK}, version=None)
    return expect_code(reply, -32009, "VersionNotSupportedError")


# -- extensions ------------------------------------------------------------------------


async def extensions_required(ctx: Ctx) -> str:
    required = required_extensions(ctx.card)
    if not required:
        raise Skip("the card declares no required extension")
    params = {"message": message(ctx.options.prompt)}
    reply = await ctx.call("SendMessage", params, headers={"A2A-Extensions": ""})
    return expect_code(reply, -32008, "ExtensionSupportRequiredError") + f" ({required[0]})"


async def extensions_unknown(ctx: Ctx) -> str:
    if required_extensions(ctx.card):
        raise Skip("the card declares a required extension")
    task = await ctx.completed_task()
    headers = {"A2A-Extensions": "https://a2a-check.invalid/extensions/unknown/v1"}
    reply = await ctx.call("GetTask", {"id": text(task, "id")}, headers=headers)
    if not isinstance(reply.result, dict):
        raise Fail(f"with an unknown extension: {reply.describe()}")
    return "served; A2A-Extensions in the response: " + repr(reply.headers.get("a2a-extensions"))


# -- the JSON-RPC binding --------------------------------------------------------------


def _error_reply(reply: Reply, code: int, name: str, *, null_id: bool = False) -> str:
    detail = expect_code(reply, code, name)
    if null_id and reply.obj.get("id", "absent") is not None:
        raise Fail(f"{name}: id is {reply.obj.get('id', 'absent')!r}, not null")
    return detail


_CODES = "JSON-RPC 2.0 §5.1 (A2A specification §9.5)"


async def jsonrpc_parse_error(ctx: Ctx) -> str:
    reply = await ctx.wire.post(ctx.url, b'{"jsonrpc": "2.0", "id": 1, "method": ')
    return _error_reply(reply, -32700, "Parse error", null_id=True)


async def jsonrpc_invalid_request(ctx: Ctx) -> str:
    reply = await ctx.wire.post(ctx.url, b'{"jsonrpc": "2.0", "id": 5, "params": {}}')
    return _error_reply(reply, -32600, "Invalid Request")


async def jsonrpc_method_not_found(ctx: Ctx) -> str:
    return _error_reply(await ctx.call("a2a/noSuchMethod", {}), -32601, "Method not found")


async def jsonrpc_invalid_params(ctx: Ctx) -> str:
    reply = await ctx.call("SendMessage", {"message": {"role": "ROLE_USER", "parts": []}})
    if reply.error is None:
        raise Fail(f"accepted: {reply.describe()}")
    return reply.describe()


async def jsonrpc_invalid_params_code(ctx: Ctx) -> str:
    reply = await ctx.call("SendMessage", {"message": {"role": "ROLE_USER", "parts": []}})
    return expect_code(reply, -32602, "Invalid params")


async def jsonrpc_id_echo(ctx: Ctx) -> str:
    for id in ("a2a-check-\u00e9-1", 4242):
        reply = await ctx.wire.rpc(ctx.url, "GetTask", {"id": UNKNOWN_TASK}, id=id)
        got = reply.obj.get("id", "absent")
        if got != id or type(got) is not type(id):
            raise Fail(f"request id {id!r} answered with id {got!r}")
    return "string and number ids echoed"


async def jsonrpc_content_type(ctx: Ctx) -> str:
    reply = await ctx.call("GetTask", {"id": UNKNOWN_TASK})
    value = reply.headers.get("content-type", "")
    if value.split(";")[0].strip().lower() != "application/json":
        raise Fail(f"Content-Type: {value!r}")
    return f"Content-Type: {value}"


async def jsonrpc_error_details(ctx: Ctx) -> str:
    reply = await ctx.call("GetTask", {"id": UNKNOWN_TASK})
    if reply.error is None:
        raise Fail(f"GetTask of an unknown task: {reply.describe()}")
    if "data" not in reply.error:
        return "no error.data (it is optional)"
    data = reply.error["data"]
    if not isinstance(data, list) or not all(isinstance(d, dict) and "@type" in d for d in data):
        raise Fail(f"error.data: {json.dumps(data)[:300]}")
    return f"error.data: {', '.join(str(d['@type']) for d in data)}"


async def jsonrpc_error_info(ctx: Ctx) -> str:
    reply = await ctx.call("GetTask", {"id": UNKNOWN_TASK})
    data = (reply.error or {}).get("data")
    items = data if isinstance(data, list) else []
    info = [d for d in items if isinstance(d, dict) and "ErrorInfo" in str(d.get("@type"))]
    if not info:
        raise Fail(f"no ErrorInfo in {reply.describe()}; data: {json.dumps(data)[:200]}")
    return f"ErrorInfo reason {info[0].get('reason')!r}, domain {info[0].get('domain')!r}"


# -- the extended agent card -----------------------------------------------------------


async def extended_card(ctx: Ctx) -> str:
    reply = await ctx.call("GetExtendedAgentCard", {})
    if not ctx.capability("extendedAgentCard"):
        return expect_code(reply, -32004, "UnsupportedOperationError")
    if reply.code == -32007:
        return "declared, not configured: ExtendedAgentCardNotConfiguredError (-32007)"
    if not isinstance(reply.result, dict):
        raise Fail(f"declared, but: {reply.describe()}")
    try:
        card = decode(t.AgentCard, json.dumps(reply.result).encode(), check_required=True)
    except ValidationError as exc:
        raise Fail(f"the extended card is not a valid AgentCard: {exc}") from None
    return f"an extended card: {card.name!r}, {len(card.skills)} skill(s)"


JSONRPC_ONLY = {
    version_query,
    jsonrpc_parse_error,
    jsonrpc_invalid_request,
    jsonrpc_method_not_found,
    jsonrpc_invalid_params,
    jsonrpc_invalid_params_code,
    jsonrpc_id_echo,
    jsonrpc_content_type,
    jsonrpc_error_details,
    jsonrpc_error_info,
}
"""The cases of JSON-RPC's own envelope; the others are asked of every binding."""

CASES: Cases[Ctx] = {
    version_unsupported: (
        "version.unsupported",
        "A2A-Version: 99.0 is answered VersionNotSupportedError (-32009)",
        MUST,
        "§3.6.2",
        "If the version is not supported by the interface, agents MUST return a "
        "[`VersionNotSupportedError`](#332-error-handling).",
    ),
    version_empty: (
        "version.empty_is_0_3",
        "a request without A2A-Version is taken as 0.3 (refused when 0.3 is not declared)",
        MUST,
        "§3.6.2",
        "Agents MUST interpret empty value as 0.3 version.",
    ),
    version_patch: (
        "version.patch_ignored",
        "A2A-Version: 1.0.3 is served as 1.0 (the patch number is not negotiated)",
        MUST,
        "§3.6",
        "Patch version numbers [...] MUST not be considered when clients and servers "
        "negotiate protocol versions.",
    ),
    version_query: (
        "version.query_parameter",
        "the version may come as the A2A-Version query parameter (99.0 there is refused)",
        MAY,
        "§3.6.1",
        "Clients MAY provide the `A2A-Version` as a request parameter instead of a header.",
    ),
    extensions_required: (
        "extensions.required",
        "a request that does not activate a required extension is refused (-32008)",
        MUST,
        "§3.3.4",
        "When a server requests use of an extension marked as `required: true` in the Agent "
        "Card but the client does not declare support for it, the agent **MUST** return "
        "[`ExtensionSupportRequiredError`](#332-error-handling).",
    ),
    extensions_unknown: (
        "extensions.unknown_ignored",
        "an extension the agent does not know (A2A-Extensions) is ignored",
        SHOULD,
        "§4.6.3",
        "If a client requests a versions of an extension that the agent does not support, the "
        "agent **SHOULD** ignore the extension for that interaction and proceed without it",
    ),
    jsonrpc_parse_error: (
        "jsonrpc.parse_error",
        "invalid JSON is answered -32700 with id null",
        MUST,
        _CODES,
        "-32700 Parse error: Invalid JSON was received by the server.",
    ),
    jsonrpc_invalid_request: (
        "jsonrpc.invalid_request",
        "a request without a method is answered -32600",
        MUST,
        _CODES,
        "-32600 Invalid Request: The JSON sent is not a valid Request object.",
    ),
    jsonrpc_method_not_found: (
        "jsonrpc.method_not_found",
        "an unknown method is answered -32601",
        MUST,
        _CODES,
        "-32601 Method not found: The method does not exist / is not available.",
    ),
    jsonrpc_invalid_params: (
        "jsonrpc.invalid_params",
        "SendMessage whose message has no parts and no messageId is refused",
        MUST,
        "§3.3.2",
        "Servers **MUST** validate all input parameters before processing",
    ),
    jsonrpc_invalid_params_code: (
        "jsonrpc.invalid_params_code",
        "invalid parameters are answered -32602",
        SHOULD,
        "§9.5",
        '| `-32602` | `InvalidParamsError` | "Invalid parameters" | The method parameters '
        "are invalid |",
    ),
    jsonrpc_id_echo: (
        "jsonrpc.id_echo",
        "the response id is the request's id, exactly (string and number)",
        MUST,
        "JSON-RPC 2.0 §5",
        "It MUST be the same as the value of the id member in the Request Object.",
    ),
    jsonrpc_content_type: (
        "jsonrpc.content_type",
        "JSON-RPC responses are Content-Type application/json",
        SHOULD,
        "§9.1",
        "**Content-Type:** `application/json` for requests and responses",
    ),
    jsonrpc_error_details: (
        "jsonrpc.error_details",
        "error.data, when present, is an array of objects that each have @type",
        MUST,
        "§9.5",
        "Each object in the `data` array **MUST** include a `@type` key that identifies the "
        "object's type.",
    ),
    jsonrpc_error_info: (
        "jsonrpc.error_info",
        "an A2A error carries a google.rpc.ErrorInfo in error.data",
        SHOULD,
        "§9.5",
        "Implementations **SHOULD** use well-known types such as `google.rpc.ErrorInfo` to "
        "refine error reporting",
    ),
    extended_card: (
        "extended.card",
        "GetExtendedAgentCard: -32004 when not declared; a card or -32007 when declared",
        MUST,
        "§3.3.4",
        "If `AgentCard.capabilities.extendedAgentCard` is `false` or not present, attempts to "
        "call the Get Extended Agent Card operation **MUST** return "
        "[`UnsupportedOperationError`](#332-error-handling). If the agent declares support but "
        "has not configured an extended card, it **MUST** return "
        "[`ExtendedAgentCardNotConfiguredError`](#332-error-handling).",
    ),
}
