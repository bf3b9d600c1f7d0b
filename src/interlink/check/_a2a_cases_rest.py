"""`interlink a2a check` cases: the HTTP+JSON binding (§11) when the card declares it,
and the same behaviour across the declared bindings (§5.1).

Every shared case (messages, tasks, ListTasks, streams, subscriptions, push configs,
versions) is asked again over HTTP+JSON as `rest.<id>`: §11.3's routes, §11.5's query
parameters, errors judged by their HTTP status and ErrorInfo reason (§5.4, §11.6). Beside
them, the binding's own rules: `google.rpc.Status`, its media type, bare SSE events."""

from __future__ import annotations

import json

from interlink.a2a import ValidationError, decode
from interlink.a2a import types as t
from interlink.check._a2a_bindings import (
    BINDINGS,
    HTTP_JSON,
    JSONRPC,
    Binding,
    Unavailable,
    contactable,
    make_binding,
)
from interlink.check._a2a_cases_card import UNKNOWN_TASK, interfaces
from interlink.check._a2a_cases_stream import streamed_task
from interlink.check._a2a_runner import Ctx, objects, on_binding, state_of, text
from interlink.check._a2a_wire import Json
from interlink.check._cases import MUST, SHOULD, Cases, Fail, Skip

__all__: list[str] = []


async def rest_error_details(ctx: Ctx) -> str:
    reply = await ctx.on(HTTP_JSON).call("GetTask", {"id": UNKNOWN_TASK})
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


async def rest_content_type(ctx: Ctx) -> str:
    rest = ctx.on(HTTP_JSON)
    task = await rest.completed_task()
    ok = await rest.call("GetTask", {"id": text(task, "id")})
    error = await rest.call("GetTask", {"id": UNKNOWN_TASK})
    types = {r.headers.get("content-type", "").split(";")[0].strip() for r in (ok, error)}
    if types != {"application/a2a+json"}:
        raise Fail(f"Content-Type of a task and of an error: {sorted(types)}")
    return "application/a2a+json"


async def rest_stream_framing(ctx: Ctx) -> str:
    seen = await streamed_task(ctx.on(HTTP_JSON))  # the binding checked every event
    if not seen.kinds:
        raise Fail("the stream had no event")
    return f"{len(seen.kinds)} bare StreamResponse(s): {', '.join(seen.kinds)}"


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
        url, name = str(entry.get("url")), str(entry.get("protocolBinding")).upper()
        if url == ctx.url and name == JSONRPC:
            continue
        if name not in BINDINGS:
            skipped.append(f"{name} {url}: binding not checked by this version")
            continue
        if not contactable(ctx.wire, name, url):
            skipped.append(f"{url}: another host, not contacted")
            continue
        try:
            spoken = make_binding(ctx.wire, name, url)
        except Unavailable as exc:
            skipped.append(f"{name} {url}: {exc}")
            continue
        got, wrong = await _seen_at(spoken, task)
        if _semantic(got) != _semantic(task):
            raise Fail(f"{name} {url} shows the task as {json.dumps(got)[:200]}")
        if wrong:
            raise Fail(f"{name} {url}: " + "; ".join(wrong))
        checked.append(f"{name} {url}")
    if not checked:
        raise Skip("; ".join(skipped))
    return (
        "the same task, listing and errors (unknown task, cancel of a finished one) at "
        + ", ".join(checked)
        + "".join(f"; {s}" for s in skipped)
    )


async def _seen_at(binding: Binding, task: Json) -> tuple[Json, list[str]]:
    """The task as `binding` shows it, and where its answers differ from JSON-RPC's: the
    task missing from its context's list, an unknown task not TaskNotFoundError, the
    finished task's cancel not TaskNotCancelableError."""
    task_id = text(task, "id")
    reply = await binding.call("GetTask", {"id": task_id})
    if not isinstance(reply.result, dict):
        raise Fail(f"GetTask at {binding.url}: {reply.describe()}")
    wrong = []
    listed = await binding.call("ListTasks", {"contextId": text(task, "contextId")})
    page = listed.result if isinstance(listed.result, dict) else {}
    if task_id not in [text(x, "id") for x in objects(page, "tasks")]:
        wrong.append(f"ListTasks of its context does not list it: {listed.describe()}")
    unknown = await binding.call("GetTask", {"id": UNKNOWN_TASK})
    if unknown.code != -32001:
        wrong.append(f"an unknown task: {unknown.describe()}")
    if state_of(task) != "TASK_STATE_CANCELED":
        cancel = await binding.call("CancelTask", {"id": task_id})
        if cancel.code != -32002:
            wrong.append(f"cancelling the finished task: {cancel.describe()}")
    return reply.result, wrong


SHARED, SHARED_SLOW = on_binding(HTTP_JSON, "rest")

CASES: Cases[Ctx] = {
    rest_error_details: (
        "rest.error_details",
        "an HTTP+JSON error is a google.rpc.Status whose details each have @type",
        MUST,
        "§11.6",
        "Each object in the `details` array **MUST** include a `@type` key that identifies the "
        "object's type.",
    ),
    rest_content_type: (
        "rest.content_type",
        "HTTP+JSON responses are application/a2a+json",
        SHOULD,
        "§11.1",
        "**Content-Type:** application/a2a+json **SHOULD** be used for requests and responses",
    ),
    rest_stream_framing: (
        "rest.stream_framing",
        "each SSE event of POST /message:stream is one bare StreamResponse",
        MUST,
        "§11.7",
        "REST streaming uses Server-Sent Events with the `data` field containing JSON "
        "serializations of the protocol data objects",
    ),
    binding_equivalence: (
        "binding.equivalence",
        "each declared binding shows the same task and listing, and the same errors",
        MUST,
        "§5.1",
        "When an agent supports multiple protocols, all supported protocols **MUST**: [...] "
        "**Consistent Behavior**: Return semantically equivalent results for the same "
        "requests - **Same Error Handling**: Map errors consistently using appropriate "
        "protocol-specific codes",
    ),
} | SHARED
SLOW = SHARED_SLOW
