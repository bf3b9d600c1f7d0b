"""`interlink a2a check` cases: SendMessage, multi-turn, GetTask and historyLength,
ListTasks (pagination invariants, ordering, artifacts) and CancelTask."""

from __future__ import annotations

import json
import re

from interlink.a2a import ValidationError, decode
from interlink.a2a import types as t
from interlink.check._a2a_cases_card import UNKNOWN_TASK
from interlink.check._a2a_runner import (
    INTERRUPTED,
    TERMINAL,
    Ctx,
    expect_code,
    objects,
    state_of,
    text,
)
from interlink.check._a2a_wire import Json
from interlink.check._cases import MUST, SHOULD, Cases, Fail, Skip

__all__: list[str] = []

_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


# -- SendMessage -----------------------------------------------------------------------


async def send_result(ctx: Ctx) -> str:
    reply = await ctx.send(ctx.options.prompt)
    result = reply.result
    if not isinstance(result, dict):
        raise Fail(reply.describe())
    keys = [k for k in ("task", "message") if isinstance(result.get(k), dict)]
    if len(keys) != 1:
        raise Fail(f"result has {keys or 'neither'} of task/message: {reply.describe()}")
    return f"a {keys[0]}"


async def send_task_ids(ctx: Ctx) -> str:
    task = await ctx.completed_task()
    if not task.get("contextId"):
        raise Fail(f"task {task['id']} has no contextId")
    return f"id {task['id']}, contextId {task['contextId']}"


async def send_blocking(ctx: Ctx) -> str:
    task = await ctx.new_task(ctx.options.prompt)
    if state_of(task) not in TERMINAL | INTERRUPTED:
        raise Fail(f"returned in state {state_of(task) or 'none'}")
    return f"returned {state_of(task)}"


async def send_timestamp(ctx: Ctx) -> str:
    task = await ctx.completed_task()
    status = task.get("status")
    stamp = status.get("timestamp") if isinstance(status, dict) else None
    if stamp is None:
        raise Skip("the task's status has no timestamp")
    if not isinstance(stamp, str) or not _TIMESTAMP.fullmatch(stamp):
        raise Fail(f"status.timestamp {stamp!r}")
    return f"status.timestamp {stamp}"


async def send_return_immediately(ctx: Ctx) -> str:
    task = await ctx.new_task(ctx.need("slow_prompt"), immediately=True)
    if state_of(task) in TERMINAL:
        raise Fail(f"returned {state_of(task)}: the slow prompt's task had finished")
    await ctx.call("CancelTask", {"id": text(task, "id")})
    return f"returned {state_of(task)}"


async def send_unknown_task(ctx: Ctx) -> str:
    reply = await ctx.send(ctx.options.prompt, task_id=UNKNOWN_TASK)
    return expect_code(reply, -32001, "TaskNotFoundError")


async def send_terminal_task(ctx: Ctx) -> str:
    task = await ctx.completed_task()
    reply = await ctx.send(
        ctx.options.prompt, task_id=text(task, "id"), context_id=text(task, "contextId")
    )
    return expect_code(reply, -32004, "UnsupportedOperationError")


async def send_context_inferred(ctx: Ctx) -> str:
    task = await ctx.input_task()
    reply = await ctx.send(ctx.options.prompt, task_id=text(task, "id"))
    result = reply.result
    got = result.get("task") if isinstance(result, dict) else None
    if not isinstance(got, dict):
        raise Fail(f"the follow-up: {reply.describe()}")
    if got.get("id") != text(task, "id") or got.get("contextId") != text(task, "contextId"):
        raise Fail(
            f"follow-up answered task {got.get('id')} in context {got.get('contextId')}, "
            f"not {task['id']} in {task['contextId']}"
        )
    return f"continued {task['id']} in {task['contextId']}, now {state_of(got)}"


async def send_context_mismatch(ctx: Ctx) -> str:
    task = await ctx.input_task()
    reply = await ctx.send(
        ctx.options.prompt, task_id=text(task, "id"), context_id="a2a-check-other"
    )
    await ctx.call("CancelTask", {"id": text(task, "id")})
    if reply.error is None:
        raise Fail(f"accepted: {reply.describe()}")
    return reply.describe()


# -- GetTask ---------------------------------------------------------------------------


async def get_task(ctx: Ctx) -> str:
    task = await ctx.completed_task()
    got = await ctx.result("GetTask", {"id": text(task, "id")})
    if got.get("id") != text(task, "id") or state_of(got) != state_of(task):
        raise Fail(f"GetTask {task['id']}: id {got.get('id')}, state {state_of(got)}")
    return f"{got['id']} {state_of(got)}"


async def get_unknown(ctx: Ctx) -> str:
    return expect_code(await ctx.call("GetTask", {"id": UNKNOWN_TASK}), -32001, "TaskNotFoundError")


async def get_history_zero(ctx: Ctx) -> str:
    task = await ctx.completed_task()
    got = await ctx.result("GetTask", {"id": text(task, "id"), "historyLength": 0})
    if "history" in got:
        raise Fail(f"history present: {len(objects(got, 'history'))} message(s)")
    return "no history field"


async def get_history_length(ctx: Ctx) -> str:
    task = await ctx.completed_task()
    full = await ctx.result("GetTask", {"id": text(task, "id")})
    history = objects(full, "history")
    if not history:
        raise Skip("the task has no history to limit")
    got = await ctx.result("GetTask", {"id": text(task, "id"), "historyLength": 1})
    short = objects(got, "history")
    if len(short) > 1:
        raise Fail(f"historyLength 1 returned {len(short)} messages")
    if short and short[-1] != history[-1]:
        raise Fail("historyLength 1 did not return the most recent message")
    return f"{len(short)} of {len(history)} messages"


# -- ListTasks -------------------------------------------------------------------------


async def list_next_page_token(ctx: Ctx) -> str:
    task = await ctx.completed_task()
    page = await ctx.result("ListTasks", {"contextId": text(task, "contextId")})
    if "nextPageToken" not in page:
        raise Fail(f"no nextPageToken in {sorted(page)}")
    if not isinstance(page.get("tasks"), list):
        raise Fail(f"no tasks array in {sorted(page)}")
    if page["nextPageToken"] != "":
        raise Fail(f'the last page\'s nextPageToken is {page["nextPageToken"]!r}, not ""')
    return f'{len(objects(page, "tasks"))} task(s), nextPageToken ""'


async def list_artifacts_omitted(ctx: Ctx) -> str:
    task = await ctx.completed_task()
    page = await ctx.result("ListTasks", {"contextId": text(task, "contextId")})
    tasks = objects(page, "tasks")
    bad = [x.get("id") for x in tasks if "artifacts" in x]
    if bad:
        raise Fail(f"artifacts present in {bad}")
    return f"{len(tasks)} task(s) without artifacts"


async def list_include_artifacts(ctx: Ctx) -> str:
    task = await ctx.completed_task()
    full = await ctx.result("GetTask", {"id": text(task, "id")})
    if not full.get("artifacts"):
        raise Skip("--prompt's task has no artifacts")
    page = await ctx.result(
        "ListTasks", {"contextId": text(task, "contextId"), "includeArtifacts": True}
    )
    listed = [x for x in objects(page, "tasks") if x.get("id") == text(task, "id")]
    if not listed:
        raise Fail(f"task {task['id']} not listed")
    if _artifacts(listed[0]) != _artifacts(full):
        raise Fail(
            f"listed artifacts {json.dumps(listed[0].get('artifacts'))[:200]} differ "
            f"from GetTask's {json.dumps(full['artifacts'])[:200]}"
        )
    return f"{len(objects(full, 'artifacts'))} artifact(s), as GetTask shows them"


def _artifacts(task: Json) -> list[t.Artifact] | None:
    """The task's artifacts decoded (so that ProtoJSON's optional zero values compare
    equal to their absence); None when they do not decode."""
    try:
        return [decode(t.Artifact, json.dumps(a).encode()) for a in objects(task, "artifacts")]
    except ValidationError:
        return None


def _stamp(task: Json) -> str:
    status = task.get("status")
    stamp = status.get("timestamp") if isinstance(status, dict) else None
    return stamp if isinstance(stamp, str) else ""


async def list_pagination(ctx: Ctx) -> str:
    first = await ctx.new_task(ctx.options.prompt)
    context = str(first.get("contextId"))
    made = {text(first, "id")}
    for _ in range(2):
        task = await ctx.new_task(ctx.options.prompt, context_id=context)
        made.add(text(task, "id"))
    for task_id in made:
        await ctx.wait_state(task_id, TERMINAL | INTERRUPTED, ctx.options.timeout)
    seen: list[Json] = []
    token, pages = "", 0
    while True:
        params: Json = {"contextId": context, "pageSize": 1}
        if token:
            params["pageToken"] = token
        page = await ctx.result("ListTasks", params)
        tasks = objects(page, "tasks")
        pages += 1
        if len(tasks) > 1:
            raise Fail(f"page {pages} has {len(tasks)} tasks for pageSize 1")
        seen.extend(tasks)
        token = str(page.get("nextPageToken", ""))
        if not token or pages > len(made) + 2:
            break
    ids = [str(x.get("id")) for x in seen]
    if len(ids) != len(set(ids)):
        raise Fail(f"a task on two pages: {ids}")
    if set(ids) != made:
        raise Fail(f"pages listed {sorted(ids)}, the context has {sorted(made)}")
    if token:
        raise Fail(f"still a nextPageToken after {pages} pages")
    foreign = [x.get("id") for x in seen if x.get("contextId") != context]
    if foreign:
        raise Fail(f"tasks of another context: {foreign}")
    stamps = [_stamp(x) for x in seen]
    if all(stamps) and stamps != sorted(stamps, reverse=True):
        raise Fail(f"not newest first: {stamps}")
    return f"{len(ids)} tasks on {pages} pages, newest first"


# -- CancelTask ------------------------------------------------------------------------


async def cancel_working(ctx: Ctx) -> str:
    task = await ctx.new_task(ctx.need("slow_prompt"), immediately=True)
    got = await ctx.result("CancelTask", {"id": text(task, "id")})
    if got.get("id") != text(task, "id"):
        raise Fail(f"CancelTask answered {got.get('id')!r}, not the task")
    final = await ctx.wait_state(text(task, "id"), TERMINAL, ctx.options.timeout * 3)
    if state_of(final) != "TASK_STATE_CANCELED":
        raise Fail(f"the task ended {state_of(final)}")
    return f"returned {state_of(got)}; ended TASK_STATE_CANCELED"


async def cancel_idempotent(ctx: Ctx) -> str:
    task = await ctx.new_task(ctx.need("slow_prompt"), immediately=True)
    await ctx.call("CancelTask", {"id": text(task, "id")})
    await ctx.wait_state(text(task, "id"), frozenset({"TASK_STATE_CANCELED"}), ctx.options.timeout)
    again = await ctx.call("CancelTask", {"id": text(task, "id")})
    final = await ctx.result("GetTask", {"id": text(task, "id")})
    if state_of(final) != "TASK_STATE_CANCELED":
        raise Fail(f"after the second cancel the task is {state_of(final)}")
    if again.error is not None and again.code not in (-32001, -32002):
        raise Fail(f"the second cancel: {again.describe()}")
    return f"the second cancel: {again.describe() if again.error else 'the task again'}"


async def cancel_terminal(ctx: Ctx) -> str:
    task = await ctx.completed_task()
    if state_of(task) == "TASK_STATE_CANCELED":
        raise Skip("--prompt's task ended canceled")
    reply = await ctx.call("CancelTask", {"id": text(task, "id")})
    return expect_code(reply, -32002, "TaskNotCancelableError")


async def cancel_unknown(ctx: Ctx) -> str:
    return expect_code(
        await ctx.call("CancelTask", {"id": UNKNOWN_TASK}), -32001, "TaskNotFoundError"
    )


CASES: Cases[Ctx] = {
    send_result: (
        "send.result",
        "SendMessage answers with exactly one of task or message",
        MUST,
        "§3.1.1",
        "The operation MUST return immediately with either task information or response message.",
    ),
    send_task_ids: (
        "send.task_ids",
        "a created task carries its id and contextId",
        MUST,
        "§3.4.2",
        "The generated `taskId` **MUST** be included in the [`Task`](#411-task) object "
        "returned to the client",
    ),
    send_blocking: (
        "send.blocking",
        "a blocking SendMessage returns once the task is terminal or interrupted",
        MUST,
        "§3.2.2",
        "The operation MUST wait until the task reaches a terminal state [...] or an "
        "interrupted state [...] before returning.",
    ),
    send_timestamp: (
        "send.timestamp",
        "status timestamps are ISO 8601 in UTC with a Z",
        MUST,
        "§5.6.1",
        "When serialized to JSON [...], these timestamps **MUST** be represented as ISO 8601 "
        "formatted strings in UTC timezone.",
    ),
    send_return_immediately: (
        "send.return_immediately",
        "returnImmediately answers before a slow task finishes",
        MUST,
        "§3.2.2",
        "The operation MUST return immediately after creating the task, even if processing is "
        "still in progress.",
    ),
    send_unknown_task: (
        "send.unknown_task",
        "a message naming an unknown taskId is answered TaskNotFoundError (-32001)",
        MUST,
        "§3.4.2",
        "Agents **MUST** return a [`TaskNotFoundError`](#332-error-handling) if the provided "
        "`taskId` does not correspond to an existing task",
    ),
    send_terminal_task: (
        "send.terminal_task",
        "a message to a terminal task is answered UnsupportedOperationError (-32004)",
        MUST,
        "§3.1.1",
        "[`UnsupportedOperationError`](#332-error-handling): Messages sent to Tasks that are in "
        "a terminal state [...] cannot accept further messages.",
    ),
    send_context_inferred: (
        "send.context_inferred",
        "a follow-up with only taskId continues in the task's contextId",
        MUST,
        "§3.4.3",
        "Agents **MUST** infer `contextId` from the task if only `taskId` is provided",
    ),
    send_context_mismatch: (
        "send.context_mismatch",
        "a follow-up whose contextId differs from its task's is refused",
        MUST,
        "§3.4.3",
        "Agents **MUST** reject messages containing mismatching `contextId` and `taskId`",
    ),
    get_task: (
        "get.task",
        "GetTask returns the task",
        MUST,
        "§3.1",
        "The following operations define the fundamental capabilities that all A2A "
        "implementations must support",
    ),
    get_unknown: (
        "get.unknown",
        "GetTask of an unknown id is answered TaskNotFoundError (-32001)",
        MUST,
        "§3.3.2",
        "Servers **MUST** return a not found error when a requested resource does not exist "
        "or is not accessible to the authenticated client",
    ),
    get_history_zero: (
        "get.history_zero",
        "historyLength 0 omits history",
        SHOULD,
        "§3.2.4",
        "**0**: No history should be returned; the `history` field SHOULD be omitted",
    ),
    get_history_length: (
        "get.history_length",
        "historyLength 1 returns at most the last message",
        SHOULD,
        "§3.2.4",
        "**> 0**: Return at most this many recent messages from the task's history",
    ),
    list_next_page_token: (
        "list.next_page_token",
        'ListTasks always has nextPageToken ("" on the last page)',
        MUST,
        "§3.1.4",
        "The `nextPageToken` field MUST always be present in the response.",
    ),
    list_artifacts_omitted: (
        "list.artifacts_omitted",
        "without includeArtifacts, listed tasks have no artifacts field",
        MUST,
        "§3.1.4",
        "When `includeArtifacts` is false (the default), the artifacts field MUST be omitted "
        "entirely from each Task object in the response.",
    ),
    list_include_artifacts: (
        "list.include_artifacts",
        "includeArtifacts returns the artifacts GetTask shows",
        SHOULD,
        "§3.1.4",
        "When `includeArtifacts` is true, the artifacts field should be included with its "
        "actual content",
    ),
    list_pagination: (
        "list.pagination",
        "pageSize 1 pages through a context: no task twice, none lost, newest first",
        MUST,
        "§3.1.4",
        "The operation MUST return only tasks visible to the authenticated client and MUST use "
        "cursor-based pagination for performance and consistency. Tasks MUST be sorted by last "
        "update time in descending order.",
    ),
    cancel_working: (
        "cancel.working",
        "CancelTask of a working task returns it; it ends TASK_STATE_CANCELED",
        MUST,
        "§3.1.5",
        "The operation attempts to cancel the specified task and returns its updated state.",
    ),
    cancel_idempotent: (
        "cancel.idempotent",
        "cancelling a canceled task again has the same effect",
        SHOULD,
        "§3.3.1",
        "**Cancel Task** operations are idempotent - multiple cancellation requests have the "
        "same effect.",
    ),
    cancel_terminal: (
        "cancel.terminal",
        "CancelTask of a completed task is answered TaskNotCancelableError (-32002)",
        MUST,
        "§3.1.5",
        "[`TaskNotCancelableError`](#332-error-handling): The task is not in a cancelable "
        "state (e.g., already completed, failed, or canceled).",
    ),
    cancel_unknown: (
        "cancel.unknown",
        "CancelTask of an unknown id is answered TaskNotFoundError (-32001)",
        MUST,
        "§3.1.5",
        "[`TaskNotFoundError`](#332-error-handling): The task ID does not exist or is not "
        "accessible.",
    ),
}
SLOW = {send_return_immediately, cancel_working, cancel_idempotent}
