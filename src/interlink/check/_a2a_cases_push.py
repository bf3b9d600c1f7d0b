"""`interlink a2a check` cases: push notifications (the capability, config CRUD, a
delivery to the checker's loopback webhook, refusing private webhook URLs)."""

from __future__ import annotations

import uuid

from interlink.check._a2a_cases_card import UNKNOWN_TASK
from interlink.check._a2a_cases_stream import KINDS, is_terminal
from interlink.check._a2a_runner import TERMINAL, Ctx, expect_code, state_of, text
from interlink.check._a2a_wire import Delivery, Json, Reply
from interlink.check._cases import MUST, SHOULD, Cases, Fail, Skip

__all__: list[str] = []


# -- push notifications ----------------------------------------------------------------


def _need_push(ctx: Ctx) -> None:
    if not ctx.capability("pushNotifications"):
        raise Skip("the card does not declare capabilities.pushNotifications")


async def push_unsupported(ctx: Ctx) -> str:
    if ctx.capability("pushNotifications"):
        raise Skip("the card declares capabilities.pushNotifications")
    task = await ctx.completed_task()
    hook = await ctx.webhook()
    calls = {
        "CreateTaskPushNotificationConfig": {"taskId": text(task, "id"), "url": hook.url + "/no"},
        "GetTaskPushNotificationConfig": {"taskId": text(task, "id"), "id": "a2a-check"},
        "ListTaskPushNotificationConfigs": {"taskId": text(task, "id")},
        "DeleteTaskPushNotificationConfig": {"taskId": text(task, "id"), "id": "a2a-check"},
    }
    wrong = []
    for method, params in calls.items():
        reply = await ctx.call(method, params)
        if reply.code != -32003:
            wrong.append(f"{method}: {reply.describe()}")
    if wrong:
        raise Fail("; ".join(wrong))
    return "all four: PushNotificationNotSupportedError (-32003)"


async def _live_task(ctx: Ctx) -> Json:
    """A task that stays open for a while: input-required, or a slow one."""
    if ctx.options.input_prompt:
        task = await ctx.new_task(ctx.options.input_prompt)
        if state_of(task) == "TASK_STATE_INPUT_REQUIRED":
            return task
    if ctx.options.slow_prompt:
        return await ctx.new_task(ctx.options.slow_prompt, immediately=True)
    raise Skip("needs --input-prompt or --slow-prompt: a task that stays open")


async def _create(ctx: Ctx, task: Json, path: str, **extra: object) -> Reply:
    hook = await ctx.webhook()
    params: Json = {"taskId": text(task, "id"), "url": hook.url + path, **extra}
    return await ctx.call("CreateTaskPushNotificationConfig", params)


def _refused(reply: Reply, url: str) -> Skip:
    return Skip(
        f"the server refused the loopback webhook {url} ({reply.describe()}): it refuses "
        "private URLs (§13.2); allow loopback webhooks on the server to check push"
    )


async def _crud(ctx: Ctx) -> dict[str, Reply]:
    """Create, get, list, delete, get again, delete again: each step's reply."""
    _need_push(ctx)
    task = await _live_task(ctx)
    steps: dict[str, Reply] = {}
    try:
        steps["create"] = created = await _create(ctx, task, "/crud", token="a2a-check-crud")
        config = created.result
        if created.error is not None:
            raise _refused(created, (await ctx.webhook()).url + "/crud")
        if not isinstance(config, dict) or not config.get("id"):
            raise Fail(f"CreateTaskPushNotificationConfig: {created.describe()}")
        ref = {"taskId": text(task, "id"), "id": config["id"]}
        steps["get"] = await ctx.call("GetTaskPushNotificationConfig", ref)
        steps["list"] = await ctx.call(
            "ListTaskPushNotificationConfigs", {"taskId": text(task, "id")}
        )
        steps["delete"] = await ctx.call("DeleteTaskPushNotificationConfig", ref)
        steps["get_deleted"] = await ctx.call("GetTaskPushNotificationConfig", ref)
        steps["delete_again"] = await ctx.call("DeleteTaskPushNotificationConfig", ref)
    finally:
        await ctx.call("CancelTask", {"id": text(task, "id")})
    return steps


async def _step(ctx: Ctx, name: str) -> tuple[Reply, Json]:
    steps = await ctx.once("push_crud", lambda: _crud(ctx))
    created = steps["create"].result
    assert isinstance(created, dict)
    return steps[name], created


async def push_private_refused(ctx: Ctx) -> str:
    try:
        await ctx.once("push_crud", lambda: _crud(ctx))
    except Skip as skip:
        if "refused the loopback webhook" in str(skip):
            return str(skip).split(": it refuses")[0]
        raise
    raise Fail("a webhook on 127.0.0.1 was accepted (perhaps allowed by configuration)")


async def push_create(ctx: Ctx) -> str:
    _, created = await _step(ctx, "create")
    hook = await ctx.webhook()
    if created.get("url") != hook.url + "/crud":
        raise Fail(f"the created config's url is {created.get('url')!r}")
    return f"config {created['id']}"


async def push_get(ctx: Ctx) -> str:
    reply, created = await _step(ctx, "get")
    got = reply.result
    if not isinstance(got, dict) or got.get("id") != created["id"]:
        raise Fail(reply.describe())
    if got.get("url") != created.get("url"):
        raise Fail(f"url {got.get('url')!r}, created with {created.get('url')!r}")
    return f"config {got['id']}, url {got['url']}"


async def push_list(ctx: Ctx) -> str:
    reply, created = await _step(ctx, "list")
    result = reply.result
    configs = result.get("configs") if isinstance(result, dict) else None
    if not isinstance(configs, list):
        raise Fail(reply.describe())
    if created["id"] not in [c.get("id") for c in configs if isinstance(c, dict)]:
        raise Fail(f"config {created['id']} not listed: {reply.describe()}")
    return f"{len(configs)} config(s)"


async def _succeeded(ctx: Ctx, name: str, what: str) -> None:
    """FAIL unless the step `name` succeeded; `what` names it in the message."""
    reply, _ = await _step(ctx, name)
    if reply.error is not None:
        raise Fail(f"{what}: {reply.describe()}")


async def push_delete(ctx: Ctx) -> str:
    await _succeeded(ctx, "delete", "delete")
    gone, _ = await _step(ctx, "get_deleted")
    if gone.error is None:
        raise Fail(f"Get after delete: {gone.describe()}")
    return f"Get after delete: {gone.describe()}"


async def push_delete_idempotent(ctx: Ctx) -> str:
    await _succeeded(ctx, "delete_again", "the second delete")
    return "the second delete succeeded"


async def push_unknown_task(ctx: Ctx) -> str:
    _need_push(ctx)
    reply = await _create(ctx, {"id": UNKNOWN_TASK}, "/unknown")
    return expect_code(reply, -32001, "TaskNotFoundError")


CREDENTIALS = "a2a-check-credentials"


async def _deliveries(ctx: Ctx) -> tuple[str, list[Delivery]]:
    """Set a config on a live task, drive the task to its end, collect the POSTs."""
    _need_push(ctx)
    task = await _live_task(ctx)
    path = f"/delivery-{uuid.uuid4().hex[:8]}"
    auth = {"scheme": "Bearer", "credentials": CREDENTIALS}
    created = await _create(ctx, task, path, token="a2a-check-token", authentication=auth)
    if created.error is not None:
        await ctx.call("CancelTask", {"id": text(task, "id")})
        raise _refused(created, (await ctx.webhook()).url + path)
    if state_of(task) == "TASK_STATE_INPUT_REQUIRED":
        await ctx.send(
            ctx.options.prompt, task_id=text(task, "id"), context_id=text(task, "contextId")
        )
    await ctx.wait_state(text(task, "id"), TERMINAL, ctx.options.timeout * 3)
    hook = await ctx.webhook()

    def mine() -> list[Delivery]:
        return [d for d in hook.deliveries if d.path == hook.path + path]

    for _ in range(200):  # until a delivery that shows the terminal state, or the timeout
        if any(_shows_terminal(d) for d in mine()):
            break
        before = len(hook.deliveries)
        if len(await hook.wait(before + 1, ctx.options.timeout)) == before:
            break
    return text(task, "id"), mine()


def _shows_terminal(delivery: Delivery) -> bool:
    body = delivery.json()
    if not isinstance(body, dict):
        return False
    return any(isinstance(body.get(k), dict) and is_terminal(k, body[k]) for k in KINDS)


async def _delivered(ctx: Ctx) -> tuple[str, list[Delivery]]:
    task_id, got = await ctx.once("push_delivery", lambda: _deliveries(ctx))
    if not got:
        raise Fail(f"no POST reached the webhook for task {task_id}")
    return task_id, got


async def push_delivery(ctx: Ctx) -> str:
    task_id, got = await _delivered(ctx)
    shown = "including the terminal state" if any(map(_shows_terminal, got)) else "no final"
    return f"{len(got)} POST(s) for task {task_id}, {shown}"


async def push_delivery_payload(ctx: Ctx) -> str:
    task_id, got = await _delivered(ctx)
    for delivery in got:
        body = delivery.json()
        kinds = [k for k in KINDS if isinstance(body, dict) and isinstance(body.get(k), dict)]
        if not isinstance(body, dict) or len(kinds) != 1 or len(body) != 1:
            raise Fail(f"a POST body that is not one StreamResponse: {delivery.raw[:200]!r}")
        obj = body[kinds[0]]
        if (obj.get("id") if kinds[0] == "task" else obj.get("taskId")) != task_id:
            raise Fail(f"a POST for another task: {delivery.raw[:200]!r}")
    return f"{len(got)} StreamResponse(s)"


async def push_delivery_auth(ctx: Ctx) -> str:
    _, got = await _delivered(ctx)
    wrong = [
        d.headers.get("authorization")
        for d in got
        if d.headers.get("authorization") != f"Bearer {CREDENTIALS}"
    ]
    if wrong:
        raise Fail(f"Authorization headers: {wrong[:3]}")
    return f"Authorization: Bearer <the credentials> on {len(got)} POST(s)"


CASES: Cases[Ctx] = {
    push_unsupported: (
        "push.unsupported",
        "without capabilities.pushNotifications, the push-config calls are -32003",
        MUST,
        "§3.3.4",
        "If `AgentCard.capabilities.pushNotifications` is `false` or not present, operations "
        "related to push notification configuration (Create, Get, List, Delete) **MUST** return "
        "[`PushNotificationNotSupportedError`](#332-error-handling).",
    ),
    push_private_refused: (
        "push.private_refused",
        "a webhook URL on loopback (127.0.0.1) is refused",
        SHOULD,
        "§13.2",
        "Agents **SHOULD** validate webhook URLs to prevent SSRF (Server-Side Request Forgery) "
        "attacks: - Reject private IP ranges (127.0.0.0/8, 10.0.0.0/8, 172.16.0.0/12, "
        "192.168.0.0/16)",
    ),
    push_create: (
        "push.create",
        "CreateTaskPushNotificationConfig returns the config with an id and the URL",
        MUST,
        "§3.1.7",
        "The operation MUST establish a webhook endpoint for task update notifications.",
    ),
    push_get: (
        "push.get",
        "GetTaskPushNotificationConfig returns the config (URL included)",
        MUST,
        "§3.1.8",
        "The operation MUST return configuration details including webhook URL and "
        "notification settings.",
    ),
    push_list: (
        "push.list",
        "ListTaskPushNotificationConfigs includes the config",
        MUST,
        "§3.1.9",
        "The operation MUST return all active push notification configurations for the specified "
        "task",
    ),
    push_delete: (
        "push.delete",
        "DeleteTaskPushNotificationConfig removes it (a Get afterwards fails)",
        MUST,
        "§3.1.10",
        "The operation MUST permanently remove the specified push notification configuration.",
    ),
    push_delete_idempotent: (
        "push.delete_idempotent",
        "deleting the deleted config again succeeds",
        MUST,
        "§3.1.10",
        "This operation MUST be idempotent - multiple deletions of the same config have the "
        "same effect.",
    ),
    push_unknown_task: (
        "push.unknown_task",
        "a push config for an unknown task is TaskNotFoundError (-32001)",
        MUST,
        "§3.1.7",
        "[`TaskNotFoundError`](#332-error-handling): The task ID does not exist or is not "
        "accessible.",
    ),
    push_delivery: (
        "push.delivery",
        "a configured webhook receives the task's updates",
        MUST,
        "§4.3.3",
        "Agents MUST attempt delivery at least once for each configured webhook",
    ),
    push_delivery_payload: (
        "push.delivery_payload",
        "each webhook POST is one StreamResponse for the task",
        MUST,
        "§4.3.3",
        "The webhook payload is a [`StreamResponse`](#323-stream-response) object containing "
        "exactly one of the following:",
    ),
    push_delivery_auth: (
        "push.delivery_auth",
        "webhook POSTs carry the config's authentication (Authorization: Bearer ...)",
        MUST,
        "§13.2",
        "Agents **MUST** include authentication credentials in webhook requests as specified "
        "in [`PushNotificationConfig.authentication`](#432-authenticationinfo)",
    ),
}
SLOW = {push_delivery, push_delivery_payload, push_delivery_auth}
