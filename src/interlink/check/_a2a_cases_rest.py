"""`interlink a2a check` cases: the HTTP+JSON binding (§11) when the card declares it
(routes, `google.rpc.Status` errors with their HTTP status and ErrorInfo reason, SSE of
bare StreamResponses), and the same behaviour across the declared bindings (§5.1)."""

from __future__ import annotations

import json
import time
from urllib.parse import quote

from interlink.a2a import ValidationError, decode
from interlink.a2a import types as t
from interlink.check._a2a_cases_card import HTTP_JSON, JSONRPC, UNKNOWN_TASK, interfaces
from interlink.check._a2a_cases_stream import KINDS, is_terminal
from interlink.check._a2a_runner import INTERRUPTED, TERMINAL, Ctx, message, objects, state_of, text
from interlink.check._a2a_wire import Json, Reply, SseEvent
from interlink.check._cases import MUST, SHOULD, Cases, Fail, Skip

__all__: list[str] = []

MEDIA = {"Content-Type": "application/a2a+json"}
_MAPPED = (
    "All A2A-specific errors defined in [Section 3.3.2](#332-error-handling) **MUST** be "
    "mapped to binding-specific error representations."
)


def _base(ctx: Ctx) -> str:
    if ctx.rest_url is None:
        raise Skip(ctx.rest_problem or "no HTTP+JSON interface to check")
    return ctx.rest_url.rstrip("/")


async def rest(ctx: Ctx, method: str, path: str, body: Json | None = None, **kw: str) -> Reply:
    """One HTTP+JSON request to the checked interface (`path` after its URL)."""
    data = json.dumps(body).encode() if body is not None else None
    version = kw.pop("version", "1.0")
    return await ctx.wire.send(method, _base(ctx) + path, data, version=version, headers=MEDIA)


def _task_path(task_id: str, suffix: str = "") -> str:
    return f"/tasks/{quote(task_id, safe='')}{suffix}"


def _ok(reply: Reply, what: str) -> Json:
    if reply.status != 200 or not isinstance(reply.body, dict) or "error" in reply.obj:
        raise Fail(f"{what}: {reply.describe()}")
    return reply.obj


async def _completed(ctx: Ctx) -> Json:
    """One task run to a terminal state through HTTP+JSON (created once)."""

    async def run() -> Json:
        body: Json = {"message": message(ctx.options.prompt)}
        sent = _ok(await rest(ctx, "POST", "/message:send", body), "POST /message:send")
        task = sent.get("task")
        if not isinstance(task, dict) or not text(task, "id"):
            raise Skip(f"--prompt did not create a task: {json.dumps(sent)[:200]}")
        deadline = time.monotonic() + ctx.options.timeout * 3
        while state_of(task) not in TERMINAL:
            if state_of(task) in INTERRUPTED or time.monotonic() > deadline:
                raise Skip(f"--prompt's task stays {state_of(task)}")
            reply = await rest(ctx, "GET", _task_path(text(task, "id")))
            task = _ok(reply, "GET /tasks/{id}")
        return task

    return await ctx.once("rest_completed", run)


def expect_status(reply: Reply, status: int, reason: str) -> str:
    """PASS detail when `reply` is HTTP `status` with a google.rpc.Status whose ErrorInfo
    has `reason` in the a2a-protocol.org domain (§11.6); FAIL otherwise."""
    error = reply.obj.get("error")
    details = objects(error, "details") if isinstance(error, dict) else []
    info = [d for d in details if str(d.get("@type", "")).endswith("google.rpc.ErrorInfo")]
    got = f"HTTP {reply.status}, reasons {[d.get('reason') for d in info]}"
    if reply.status != status or not isinstance(error, dict):
        raise Fail(f"expected HTTP {status} ({reason}), got {reply.describe()}")
    if not any(d.get("reason") == reason and d.get("domain") == "a2a-protocol.org" for d in info):
        raise Fail(f"expected an ErrorInfo {reason} (domain a2a-protocol.org): {got}")
    return f"HTTP {status}, ErrorInfo {reason}"


async def rest_send(ctx: Ctx) -> str:
    body: Json = {"message": message(ctx.options.prompt)}
    sent = _ok(await rest(ctx, "POST", "/message:send", body), "POST /message:send")
    kinds = [k for k in ("task", "message") if isinstance(sent.get(k), dict)]
    if len(kinds) != 1:
        raise Fail(f"the answer has {kinds or 'neither'} of task/message")
    return f"a {kinds[0]}"


async def rest_get(ctx: Ctx) -> str:
    task = await _completed(ctx)
    got = _ok(await rest(ctx, "GET", _task_path(text(task, "id"))), "GET /tasks/{id}")
    if text(got, "id") != text(task, "id"):
        raise Fail(f"GET /tasks/{task['id']} answered task {got.get('id')!r}")
    return f"{got['id']} {state_of(got)}"


async def rest_not_found(ctx: Ctx) -> str:
    reply = await rest(ctx, "GET", _task_path(UNKNOWN_TASK))
    return expect_status(reply, 404, "TASK_NOT_FOUND")


async def rest_error_details(ctx: Ctx) -> str:
    reply = await rest(ctx, "GET", _task_path(UNKNOWN_TASK))
    error = reply.obj.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        raise Fail(f"not a google.rpc.Status: {reply.describe()}")
    if error.get("code") not in (None, reply.status):
        raise Fail(f"error.code {error.get('code')!r} differs from HTTP {reply.status}")
    details = error.get("details", [])
    if not isinstance(details, list) or not all(
        isinstance(d, dict) and "@type" in d for d in details
    ):
        raise Fail(f"error.details: {json.dumps(details)[:300]}")
    return f"error.code {error.get('code')}, {len(details)} detail(s)"


async def rest_not_cancelable(ctx: Ctx) -> str:
    task = await _completed(ctx)
    reply = await rest(ctx, "POST", _task_path(text(task, "id"), ":cancel"), {})
    return expect_status(reply, 400, "TASK_NOT_CANCELABLE")


async def rest_version(ctx: Ctx) -> str:
    task = await _completed(ctx)
    reply = await rest(ctx, "GET", _task_path(text(task, "id")), version="99.0")
    return expect_status(reply, 400, "VERSION_NOT_SUPPORTED")


async def rest_list(ctx: Ctx) -> str:
    task = await _completed(ctx)
    context = quote(text(task, "contextId"), safe="")
    page = _ok(await rest(ctx, "GET", f"/tasks?contextId={context}"), "GET /tasks")
    listed = objects(page, "tasks")
    if "nextPageToken" not in page:
        raise Fail(f"no nextPageToken in {sorted(page)}")
    if text(task, "id") not in [text(x, "id") for x in listed]:
        raise Fail(f"task {task['id']} not listed")
    if any("artifacts" in x for x in listed):
        raise Fail("artifacts present without includeArtifacts (§3.1.4: MUST be omitted)")
    return f"{len(listed)} task(s)"


async def rest_history_zero(ctx: Ctx) -> str:
    task = await _completed(ctx)
    path = _task_path(text(task, "id"), "?historyLength=0")
    got = _ok(await rest(ctx, "GET", path), "GET /tasks/{id}?historyLength=0")
    if "history" in got:
        raise Fail(f"history present: {len(objects(got, 'history'))} message(s)")
    return "no history field"


async def rest_content_type(ctx: Ctx) -> str:
    task = await _completed(ctx)
    ok = await rest(ctx, "GET", _task_path(text(task, "id")))
    error = await rest(ctx, "GET", _task_path(UNKNOWN_TASK))
    types = {r.headers.get("content-type", "").split(";")[0].strip() for r in (ok, error)}
    if types != {"application/a2a+json"}:
        raise Fail(f"Content-Type of a task and of an error: {sorted(types)}")
    return "application/a2a+json"


def _bare(event: SseEvent) -> tuple[str, Json]:
    body = event.json()
    kinds = [k for k in KINDS if isinstance(body, dict) and isinstance(body.get(k), dict)]
    if not isinstance(body, dict) or len(kinds) != 1 or len(body) != 1:
        raise Fail(f"an SSE event that is not one StreamResponse: {event.data[:200]!r}")
    return kinds[0], body[kinds[0]]


async def rest_stream(ctx: Ctx) -> str:
    ctx.need_streaming()
    body = json.dumps({"message": message(ctx.options.prompt)}).encode()
    url = _base(ctx) + "/message:stream"
    async with ctx.wire.open_stream(url, body, headers=MEDIA) as stream:
        if stream.reply is not None:
            raise Fail(f"not a stream ({stream.content_type!r}): {stream.reply.describe()}")
        seen = [_bare(e) for e in await stream.read_all()]
    kinds = [k for k, _ in seen]
    if kinds[:1] == ["message"] and len(kinds) == 1:
        return "one Message"
    if kinds[:1] != ["task"]:
        raise Fail(f"began with {kinds[:1]} (§3.1.2: the stream MUST begin with the Task)")
    if not is_terminal(*seen[-1]):
        raise Fail(f"closed without a terminal state last: {kinds}")
    return f"{len(kinds)} event(s): {', '.join(kinds)}"


# -- the same behaviour on every binding -------------------------------------------------


def _semantic(task: Json) -> tuple[object, ...]:
    try:
        decoded = decode(t.Task, json.dumps(task).encode())
    except ValidationError as exc:
        raise Fail(f"a task that does not decode: {exc}") from None
    return (decoded.id, decoded.context_id, decoded.status.state, decoded.artifacts)


async def binding_equivalence(ctx: Ctx) -> str:
    entries = interfaces(ctx.card)
    if len(entries) < 2:
        raise Skip("the card declares one interface")
    task = await ctx.completed_task()  # made through the JSON-RPC interface
    checked, skipped = [], []
    for entry in entries:
        url, binding = str(entry.get("url")), str(entry.get("protocolBinding")).upper()
        if url == ctx.url and binding == JSONRPC:
            continue
        if binding not in (JSONRPC, HTTP_JSON):
            skipped.append(f"{binding} {url}: binding not checked by this version")
            continue
        if not ctx.wire.allowed(url):
            skipped.append(f"{url}: another host, not contacted")
            continue
        if binding == JSONRPC:
            got, missing = await _by_rpc(ctx, url, text(task, "id"))
        else:
            got, missing = await _by_rest(ctx, url, text(task, "id"))
        if _semantic(got) != _semantic(task):
            raise Fail(f"{binding} {url} shows the task as {json.dumps(got)[:200]}")
        if missing:
            raise Fail(f"{binding} {url}, an unknown task: {missing}")
        checked.append(f"{binding} {url}")
    if not checked:
        raise Skip("; ".join(skipped))
    return (
        "the same task and not-found error at "
        + ", ".join(checked)
        + "".join(f"; {s}" for s in skipped)
    )


CASES: Cases[Ctx] = {
    rest_send: (
        "rest.send",
        "POST /message:send answers with exactly one of task or message",
        MUST,
        "§3.1.1",
        "The operation MUST return immediately with either task information or response message.",
    ),
    rest_get: (
        "rest.get",
        "GET /tasks/{id} returns the task",
        MUST,
        "§3.1",
        "The following operations define the fundamental capabilities that all A2A "
        "implementations must support",
    ),
    rest_not_found: (
        "rest.not_found",
        "GET /tasks/{unknown} is 404 with ErrorInfo TASK_NOT_FOUND",
        MUST,
        "§5.4",
        _MAPPED,
    ),
    rest_error_details: (
        "rest.error_details",
        "an HTTP+JSON error is a google.rpc.Status whose details each have @type",
        MUST,
        "§11.6",
        "Each object in the `details` array **MUST** include a `@type` key that identifies the "
        "object's type.",
    ),
    rest_not_cancelable: (
        "rest.not_cancelable",
        "cancelling a completed task is 400 TASK_NOT_CANCELABLE",
        MUST,
        "§5.4",
        _MAPPED,
    ),
    rest_version: (
        "rest.version",
        "A2A-Version: 99.0 is 400 with ErrorInfo VERSION_NOT_SUPPORTED",
        MUST,
        "§3.6.2",
        "If the version is not supported by the interface, agents MUST return a "
        "[`VersionNotSupportedError`](#332-error-handling).",
    ),
    rest_list: (
        "rest.list",
        "GET /tasks?contextId= lists the context's tasks, nextPageToken present, no artifacts",
        MUST,
        "§3.1.4",
        "The `nextPageToken` field MUST always be present in the response.",
    ),
    rest_history_zero: (
        "rest.history_zero",
        "GET /tasks/{id}?historyLength=0 omits history",
        SHOULD,
        "§3.2.4",
        "**0**: No history should be returned; the `history` field SHOULD be omitted",
    ),
    rest_content_type: (
        "rest.content_type",
        "HTTP+JSON responses are application/a2a+json",
        SHOULD,
        "§11.1",
        "**Content-Type:** application/a2a+json **SHOULD** be used for requests and responses",
    ),
    rest_stream: (
        "rest.stream",
        "POST /message:stream is SSE of StreamResponses: the Task first, closed at the end",
        MUST,
        "§11.7",
        "REST streaming uses Server-Sent Events with the `data` field containing JSON "
        "serializations of the protocol data objects",
    ),
    binding_equivalence: (
        "binding.equivalence",
        "each declared binding shows the same task, and the same error for an unknown one",
        MUST,
        "§5.1",
        "When an agent supports multiple protocols, all supported protocols **MUST**: [...] "
        "Return semantically equivalent results for the same requests",
    ),
}


async def _by_rpc(ctx: Ctx, url: str, task_id: str) -> tuple[Json, str]:
    reply = await ctx.wire.rpc(url, "GetTask", {"id": task_id})
    if not isinstance(reply.result, dict):
        raise Fail(f"GetTask at {url}: {reply.describe()}")
    unknown = await ctx.wire.rpc(url, "GetTask", {"id": UNKNOWN_TASK})
    return reply.result, "" if unknown.code == -32001 else unknown.describe()


async def _by_rest(ctx: Ctx, url: str, task_id: str) -> tuple[Json, str]:
    base = url.rstrip("/")
    reply = await ctx.wire.send("GET", base + _task_path(task_id), headers=MEDIA)
    got = _ok(reply, f"GET {base}/tasks/{{id}}")
    unknown = await ctx.wire.send("GET", base + _task_path(UNKNOWN_TASK), headers=MEDIA)
    try:
        expect_status(unknown, 404, "TASK_NOT_FOUND")
    except Fail as exc:
        return got, str(exc)
    return got, ""
