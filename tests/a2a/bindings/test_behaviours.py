"""The server's behaviours, asserted once over every binding (§5.1: the bindings are
equivalent): send, get, list, cancel, subscribe, push configs, the extended card, the
errors, historyLength, service parameters and tenants."""

from __future__ import annotations

import msgspec
import pytest

from interlink.a2a import BearerAuth, TenantRouter, create_app
from interlink.a2a import types as t
from tests.a2a.agents import Scripted, card, message
from tests.a2a.bindings.conftest import Bound
from tests.a2a.bindings.drivers import Driver, Failure, Json, Unauthenticated

pytestmark = pytest.mark.timeout(60)


def task_of(result: Json) -> Json:
    task = result["task"]
    assert isinstance(task, dict), result
    return task


def items(result: Json, key: str) -> list[Json]:
    """The list of objects under `key` (`tasks`, `configs`)."""
    found = result[key]
    assert isinstance(found, list), result
    return [item for item in found if isinstance(item, dict)]


def ids(result: Json, key: str = "tasks") -> list[object]:
    return [item["id"] for item in items(result, key)]


def state(task: Json) -> str:
    status = task["status"]
    assert isinstance(status, dict)
    return str(status["state"])


async def failure(driver: Driver, method: str, params: Json, **headers: str) -> Failure:
    with pytest.raises(Failure) as caught:
        await driver.call(method, params, headers)
    return caught.value


async def drain(
    driver: Driver, method: str, params: Json, headers: dict[str, str] | None = None
) -> list[tuple[str | None, Json]]:
    """Every event of a stream, to its end."""
    async with driver.events(method, params, headers) as events:
        return [event async for event in events]


async def test_send_get_and_history_length(bound: Bound) -> None:
    driver = await bound(create_app(Scripted(), card()))
    task = task_of(await driver.call("SendMessage", message("echo hello")))
    assert state(task) == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["text"] == "hello"  # type: ignore[index]
    got = await driver.call("GetTask", {"id": task["id"]})
    assert got["id"] == task["id"]
    assert got["history"][0]["parts"] == [{"text": "echo hello"}]  # type: ignore[index]
    assert "history" not in await driver.call("GetTask", {"id": task["id"], "historyLength": 0})
    negative = await failure(driver, "GetTask", {"id": task["id"], "historyLength": -1})
    assert (negative.reason, negative.status) == ("INVALID_PARAMS", "INVALID_ARGUMENT")


async def test_list_tasks_filters_and_pages(bound: Bound) -> None:
    driver = await bound(create_app(Scripted(), card()))
    first = task_of(await driver.call("SendMessage", message("echo one")))
    context = str(first["contextId"])
    second = task_of(await driver.call("SendMessage", message("echo two", contextId=context)))
    await driver.call("SendMessage", message("ask"))
    mine = await driver.call(
        "ListTasks", {"contextId": context, "status": "TASK_STATE_COMPLETED", "pageSize": 1}
    )
    assert ids(mine) == [second["id"]]
    assert mine["nextPageToken"]
    rest = await driver.call(
        "ListTasks",
        {"contextId": context, "pageSize": 1, "pageToken": mine["nextPageToken"]},
    )
    assert ids(rest) == [first["id"]]
    assert "artifacts" not in items(rest, "tasks")[0]
    full = await driver.call(
        "ListTasks", {"contextId": context, "includeArtifacts": True, "historyLength": 0}
    )
    assert all("artifacts" in x and "history" not in x for x in items(full, "tasks"))
    later = await driver.call("ListTasks", {"statusTimestampAfter": "2999-01-01T00:00:00Z"})
    assert later["tasks"] == []
    bad = await failure(driver, "ListTasks", {"pageSize": 0})
    assert (bad.reason, bad.violations()) == ("INVALID_PARAMS", ["pageSize"])
    unknown = await failure(driver, "ListTasks", {"status": "TASK_STATE_NAPPING"})
    assert unknown.reason == "INVALID_PARAMS"


async def test_follow_up_inherits_the_context(bound: Bound) -> None:
    driver = await bound(create_app(Scripted(), card()))
    asked = task_of(await driver.call("SendMessage", message("ask")))
    assert state(asked) == "TASK_STATE_INPUT_REQUIRED"
    done = task_of(await driver.call("SendMessage", message("more", taskId=str(asked["id"]))))
    assert (done["id"], done["contextId"]) == (asked["id"], asked["contextId"])
    assert state(done) == "TASK_STATE_COMPLETED"
    again = await failure(driver, "SendMessage", message("x", taskId=str(asked["id"])))
    assert again.reason == "UNSUPPORTED_OPERATION"


async def test_errors_of_unknown_and_finished_tasks(bound: Bound) -> None:
    driver = await bound(create_app(Scripted(), card()))
    missing = await failure(driver, "GetTask", {"id": "nope"})
    assert (missing.reason, missing.status) == ("TASK_NOT_FOUND", "NOT_FOUND")
    assert (await failure(driver, "CancelTask", {"id": "nope"})).reason == "TASK_NOT_FOUND"
    done = task_of(await driver.call("SendMessage", message("echo x")))
    refused = await failure(driver, "CancelTask", {"id": done["id"]})
    assert (refused.reason, refused.status) == ("TASK_NOT_CANCELABLE", "FAILED_PRECONDITION")
    with pytest.raises(Failure) as over:
        await drain(driver, "SubscribeToTask", {"id": done["id"]})
    assert over.value.reason == "UNSUPPORTED_OPERATION"
    invalid = await failure(driver, "SendMessage", {"message": {"role": "ROLE_NOBODY"}})
    assert (invalid.reason, invalid.status) == ("INVALID_PARAMS", "INVALID_ARGUMENT")
    assert invalid.violations()


async def test_cancel_and_subscribe_a_running_task(bound: Bound) -> None:
    agent = Scripted()
    driver = await bound(create_app(agent, card()))
    slow = task_of(
        await driver.call(
            "SendMessage", message("slow") | {"configuration": {"returnImmediately": True}}
        )
    )
    await agent.started.wait()
    async with driver.events("SubscribeToTask", {"id": slow["id"]}) as events:
        seen: list[tuple[str | None, Json]] = []
        async for event_id, event in events:
            seen.append((event_id, event))
            if len(seen) == 1:
                assert task_of(event)["id"] == slow["id"]  # the snapshot first
                canceled = await driver.call("CancelTask", {"id": slow["id"]})
                assert state(canceled) == "TASK_STATE_CANCELED"
    last = seen[-1][1]
    final = last.get("statusUpdate") or last.get("task")
    assert isinstance(final, dict)
    assert state(final) == "TASK_STATE_CANCELED"
    assert state(await driver.call("CancelTask", {"id": slow["id"]})) == "TASK_STATE_CANCELED"


async def test_stream_then_resume_with_last_event_id(bound: Bound) -> None:
    agent = Scripted()
    driver = await bound(create_app(agent, card()))
    async with driver.events("SendStreamingMessage", message("slow")) as events:
        first_id, first = await anext(aiter(events))
    task_id = task_of(first)["id"]
    await agent.started.wait()
    if first_id is None:  # gRPC: no event ids, so no resuming; subscribing again starts
        assert driver.name == "grpc"  # from the snapshot, then the rest comes
        async with driver.events("SubscribeToTask", {"id": task_id}) as events:
            stream = aiter(events)
            assert task_of((await anext(stream))[1])["id"] == task_id
            agent.release.set()
            rest = [e async for _, e in stream]
        final = rest[-1].get("statusUpdate") or rest[-1].get("task")
        assert isinstance(final, dict)
        assert state(final) == "TASK_STATE_COMPLETED"
        return
    agent.release.set()
    async with driver.events(
        "SubscribeToTask", {"id": task_id}, {"Last-Event-ID": first_id}
    ) as events:
        resumed = [(i, e) async for i, e in events]
    ids = [int(i) for i, _ in resumed if i is not None]
    assert ids
    assert min(ids) > int(first_id)  # nothing again, nothing lost
    final = resumed[-1][1].get("statusUpdate") or resumed[-1][1].get("task")
    assert isinstance(final, dict)
    assert state(final) == "TASK_STATE_COMPLETED"


async def test_streamed_message_ends_at_the_terminal_state(bound: Bound) -> None:
    driver = await bound(create_app(Scripted(), card()))
    async with driver.events("SendStreamingMessage", message("echo streamed")) as events:
        kinds = [next(iter(e)) for _, e in [x async for x in events]]
    assert kinds[0] == "task"
    assert "artifactUpdate" in kinds
    assert kinds[-1] == "statusUpdate"


async def test_push_config_crud(bound: Bound) -> None:
    driver = await bound(create_app(Scripted(), card(), push_allow=["127.0.0.1"]))
    task = task_of(await driver.call("SendMessage", message("ask")))
    task_id = str(task["id"])
    config = {"taskId": task_id, "id": "c1", "url": "http://127.0.0.1:9/hook", "token": "tok"}
    made = await driver.call("CreateTaskPushNotificationConfig", config)
    assert (made["id"], made["url"]) == ("c1", "http://127.0.0.1:9/hook")
    got = await driver.call("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"})
    assert got["token"] == "tok"
    listed = await driver.call("ListTaskPushNotificationConfigs", {"taskId": task_id})
    assert ids(listed, "configs") == ["c1"]
    assert (
        await driver.call("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"}) == {}
    )
    gone = await failure(driver, "GetTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"})
    assert gone.reason == "TASK_NOT_FOUND"


async def test_push_not_supported(bound: Bound) -> None:
    driver = await bound(create_app(Scripted(), card(push_notifications=False)))
    task = task_of(await driver.call("SendMessage", message("ask")))
    config = {"taskId": task["id"], "url": "https://example.org/hook"}
    refused = await failure(driver, "CreateTaskPushNotificationConfig", config)
    assert (refused.reason, refused.status) == (
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
        "FAILED_PRECONDITION",
    )


async def test_extended_card(bound: Bound) -> None:
    plain = await bound(create_app(Scripted(), card()))
    assert (await failure(plain, "GetExtendedAgentCard", {})).reason == "UNSUPPORTED_OPERATION"
    unset = await bound(create_app(Scripted(), card(extended_agent_card=True)))
    missing = await failure(unset, "GetExtendedAgentCard", {})
    assert missing.reason == "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
    rich = await bound(
        create_app(
            Scripted(),
            card(extended_agent_card=True),
            extended_card=msgspec.structs.replace(card(), name="the extended agent"),
        )
    )
    assert (await rich.call("GetExtendedAgentCard", {}))["name"] == "the extended agent"


async def test_service_parameters(bound: Bound) -> None:
    extensions = [
        t.AgentExtension(uri="urn:x:required", required=True),
        t.AgentExtension(uri="urn:x:optional"),
    ]
    driver = await bound(create_app(Scripted(), card(extensions=extensions)))
    needed = await failure(driver, "SendMessage", message("echo x"))
    assert (needed.reason, needed.status) == ("EXTENSION_SUPPORT_REQUIRED", "FAILED_PRECONDITION")
    asked = {"A2A-Extensions": "urn:x:required, urn:x:optional, urn:x:unknown"}
    await driver.call("SendMessage", message("echo x"), asked)
    assert (await driver.last_headers())["a2a-extensions"] == "urn:x:optional, urn:x:required"
    future = await failure(driver, "GetTask", {"id": "x"}, **{"A2A-Version": "2.0", **asked})
    assert (future.reason, future.status) == ("VERSION_NOT_SUPPORTED", "FAILED_PRECONDITION")
    old = await failure(driver, "GetTask", {"id": "x"}, **{"A2A-Version": "", **asked})
    assert old.reason == "VERSION_NOT_SUPPORTED"  # none is 0.3 (not served here)
    patch = await failure(driver, "GetTask", {"id": "x"}, **{"A2A-Version": "1.0.7", **asked})
    assert patch.reason == "TASK_NOT_FOUND"  # past the version check


async def test_tenants_see_only_their_own_tasks(bound: Bound) -> None:
    router = TenantRouter(
        {"acme": create_app(Scripted(), card()), "zeta": create_app(Scripted(), card())}
    )
    driver = await bound(router)
    made = task_of(await driver.call("SendMessage", message("echo mine") | {"tenant": "acme"}))
    got = await driver.call("GetTask", {"id": made["id"], "tenant": "acme"})
    assert got["id"] == made["id"]
    other = await failure(driver, "GetTask", {"id": made["id"], "tenant": "zeta"})
    assert other.reason == "TASK_NOT_FOUND"
    listed = await driver.call("ListTasks", {"tenant": "zeta"})
    assert listed["tasks"] == []


async def test_a_plain_app_refuses_an_unknown_tenant(bound: Bound) -> None:
    driver = await bound(create_app(Scripted(), card()))
    ghost = await failure(driver, "GetTask", {"id": "x", "tenant": "ghost"})
    assert (ghost.reason, ghost.status) == ("TASK_NOT_FOUND", "NOT_FOUND")
    made = task_of(await driver.call("SendMessage", message("echo x")))
    assert (await driver.call("GetTask", {"id": made["id"]}))["id"] == made["id"]


async def test_authentication_and_owners(bound: Bound) -> None:
    auth = BearerAuth({"tok-a": "alice", "tok-b": "bob"})
    driver = await bound(create_app(Scripted(), card(), auth=[auth]))
    with pytest.raises(Unauthenticated) as refused:
        await driver.call("GetTask", {"id": "x"})
    assert refused.value.challenge == 'Bearer realm="a2a"'
    alice = {"Authorization": "Bearer tok-a"}
    made = task_of(await driver.call("SendMessage", message("echo mine"), alice))
    assert (await driver.call("GetTask", {"id": made["id"]}, alice))["id"] == made["id"]
    bob = {"Authorization": "Bearer tok-b"}
    hidden = await failure(driver, "GetTask", {"id": made["id"]}, **bob)
    assert hidden.reason == "TASK_NOT_FOUND"  # not visible looks like not found
    assert ids(await driver.call("ListTasks", {}, bob)) == []


def info_metadata(failure: Failure) -> Json:
    """The metadata of the error's `ErrorInfo`."""
    for detail in failure.details:
        if isinstance(detail, dict) and detail.get("@type", "").endswith("google.rpc.ErrorInfo"):
            found = detail.get("metadata", {})
            assert isinstance(found, dict), detail
            return found
    raise AssertionError(f"no ErrorInfo in {failure.details}")


async def test_media_types_the_card_does_not_list_are_refused(bound: Bound) -> None:
    """§13.4: a part of a type the card does not take is -32005 naming the part; so is a
    send whose acceptedOutputModes the agent produces none of (a2a.proto). Wildcards,
    parameters and case are judged as media types are; a skill's modes widen the card's."""
    picture = t.AgentSkill(
        id="look", name="Look", description="Looks.", tags=["t"], input_modes=["image/*"]
    )
    driver = await bound(create_app(Scripted(), msgspec.structs.replace(card(), skills=[picture])))
    sent = message("echo hi")
    pdf = {"raw": "YQ==", "mediaType": "application/pdf", "filename": "a.pdf"}
    sent["message"]["parts"].append(pdf)  # type: ignore[index]
    refused = await failure(driver, "SendMessage", sent)
    assert (refused.reason, refused.status) == ("CONTENT_TYPE_NOT_SUPPORTED", "INVALID_ARGUMENT")
    assert "message.parts[1] is application/pdf" in refused.message
    assert info_metadata(refused) == {"part": "1", "mediaType": "application/pdf"}
    data = message("echo hi")
    data["message"]["parts"] = [{"data": {"a": 1}}]  # type: ignore[index]
    assert (await failure(driver, "SendMessage", data)).reason == "CONTENT_TYPE_NOT_SUPPORTED"

    taken = message("echo hi")
    png = {"raw": "YQ==", "mediaType": "Image/PNG; q=1", "filename": "a.png"}
    taken["message"]["parts"].append(png)  # type: ignore[index]
    assert state(task_of(await driver.call("SendMessage", taken))) == "TASK_STATE_COMPLETED"

    json_only = {"acceptedOutputModes": ["application/json"]}
    asks_json = message("echo hi") | {"configuration": json_only}
    unproducible = await failure(driver, "SendMessage", asks_json)
    assert unproducible.reason == "CONTENT_TYPE_NOT_SUPPORTED"
    assert "produces only text/plain" in unproducible.message
    asks_text = message("echo hi") | {"configuration": {"acceptedOutputModes": ["text/*"]}}
    assert state(task_of(await driver.call("SendMessage", asks_text))) == "TASK_STATE_COMPLETED"
    assert len(items(await driver.call("ListTasks", {}), "tasks")) == 2  # none for the refused
