"""The task lifecycle table: every (state, event) pair, and `apply` following it."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interlink.a2a._errors import TaskNotCancelable, TaskNotFound, UnsupportedOperation
from interlink.a2a._lifecycle import (
    ACTIVE,
    EVENTS,
    INTERRUPTED,
    NEW,
    REQUESTS,
    STATES,
    TABLE,
    TERMINAL,
    step,
)
from interlink.a2a._types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from interlink.a2a.server._executor import InvalidEventSequence, RequestContext
from interlink.a2a.server._runtime import apply
from interlink.jsonrpc import RpcError

S = TaskState
ALL = [*sorted(STATES), NEW]
PAIRS = list(itertools.product(ALL, (*EVENTS, *REQUESTS)))


def expected(state: str, event: str, target: str) -> str | tuple[type[Exception], int, str]:
    """The lifecycle, written out again independently of the table."""
    if event in EVENTS:
        if state in TERMINAL:
            return InvalidEventSequence, 0, "no event may follow"
        if event == "message":
            return InvalidEventSequence, 0, "message"
        if event == "task":
            return target if state == NEW else (InvalidEventSequence, 0, "first event")
        if event == "status":
            return target
        return S.TASK_STATE_SUBMITTED if state == NEW else state
    if state == NEW:
        return TaskNotFound, -32001, "not found"
    if event == "cancel":
        if state == S.TASK_STATE_CANCELED or state not in TERMINAL:
            return S.TASK_STATE_CANCELED
        return TaskNotCancelable, -32002, f"is {state}"
    if event == "subscribe":
        if state in TERMINAL:
            return UnsupportedOperation, -32004, "nothing to subscribe to"
        return state
    if state in TERMINAL:
        return UnsupportedOperation, -32004, "takes no more messages"
    if state in ACTIVE:
        return UnsupportedOperation, -32004, "still working"
    return state


def test_the_state_sets() -> None:
    assert TERMINAL | INTERRUPTED | ACTIVE < STATES
    assert not (TERMINAL & INTERRUPTED)
    assert not (TERMINAL & ACTIVE)
    assert not (INTERRUPTED & ACTIVE)
    assert {S.TASK_STATE_UNSPECIFIED} == STATES - TERMINAL - INTERRUPTED - ACTIVE
    assert all(isinstance(state, str) for state in STATES)  # (a store row's state is text)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(PAIRS), st.sampled_from(sorted(STATES)))
def test_every_pair_is_allowed_or_refused_with_its_error(
    pair: tuple[str, str], target: str
) -> None:
    state, event = pair
    want = expected(state, event, target)
    if isinstance(want, str):
        assert (state, event) in TABLE
        assert step(state, event, target, task_id="t1") == want
        return
    assert (state, event) not in TABLE
    kind, code, words = want
    with pytest.raises(kind, match=words) as refused:
        step(state, event, target, task_id="t1")
    if code:
        assert isinstance(refused.value, RpcError)
        assert refused.value.code == code


def test_the_walk_covers_every_pair() -> None:
    assert len(PAIRS) == len(STATES | {NEW}) * 7
    assert set(TABLE) < set(PAIRS)


CONTEXT = RequestContext(
    message=Message(message_id="m1", role=Role.ROLE_USER, parts=[Part(text="hi")]),
    task_id="t1",
    context_id="c1",
    task=None,
)


def event_of(kind: str, target: str) -> object:
    status = TaskStatus(state=TaskState(target))
    if kind == "task":
        return Task(id="t1", context_id="c1", status=status)
    if kind == "status":
        return TaskStatusUpdateEvent(task_id="t1", context_id="c1", status=status)
    if kind == "artifact":
        artifact = Artifact(artifact_id="a", parts=[Part(text="x")])
        return TaskArtifactUpdateEvent(task_id="t1", context_id="c1", artifact=artifact)
    return Message(message_id="m2", role=Role.ROLE_AGENT, parts=[Part(text="x")])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(EVENTS), st.sampled_from(sorted(STATES))), max_size=8))
def test_apply_follows_the_table(events: list[tuple[str, str]]) -> None:
    """Any sequence of executor events: `apply` takes each the table allows, to the
    state it says, and refuses the first it does not with the table's error."""
    task: Task | None = None
    for kind, target in events:
        state = NEW if task is None else str(task.status.state)
        event = event_of(kind, target)
        assert isinstance(event, Message | Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent)
        if (state, kind) not in TABLE:
            with pytest.raises(InvalidEventSequence):
                apply(task, event, CONTEXT)
            return
        task, _ = apply(task, event, CONTEXT)
        assert str(task.status.state) == step(state, kind, target)


def test_an_executor_adding_to_a_list_it_published_changes_no_task() -> None:
    """The task is the fold of its events: parts added to a published artifact's list
    afterwards (an executor reusing it to stream) are in no event, so not in the task."""
    parts = [Part(text="a")]
    first = Task(
        id="t1",
        context_id="c1",
        status=TaskStatus(state=S.TASK_STATE_WORKING),
        artifacts=[Artifact(artifact_id="given", parts=parts)],
    )
    task, _ = apply(None, first, CONTEXT)
    for event in (
        TaskArtifactUpdateEvent(artifact=Artifact(artifact_id="new", parts=parts)),
        TaskArtifactUpdateEvent(artifact=Artifact(artifact_id="given", parts=parts)),
    ):
        task, _ = apply(task, event, CONTEXT)
    appended = TaskArtifactUpdateEvent(
        artifact=Artifact(artifact_id="new", parts=[Part(text="c")]), append=True
    )
    parts.append(Part(text="b"))  # (not published)
    task, _ = apply(task, appended, CONTEXT)
    assert {a.artifact_id: [p.text for p in a.parts] for a in task.artifacts} == {
        "given": ["a"],
        "new": ["a", "c"],
    }


def test_an_executor_adding_to_a_message_it_published_changes_no_task() -> None:
    """The same for the parts of a status message and of a first task's history."""
    said = [Part(text="asked")]
    kept = [Part(text="before")]
    first = Task(
        id="t1",
        context_id="c1",
        status=TaskStatus(
            state=S.TASK_STATE_WORKING,
            message=Message(message_id="m0", role=Role.ROLE_AGENT, parts=said),
        ),
        history=[Message(message_id="m1", role=Role.ROLE_AGENT, parts=kept)],
    )
    started, _ = apply(None, first, CONTEXT)
    asking = TaskStatusUpdateEvent(
        status=TaskStatus(
            state=S.TASK_STATE_INPUT_REQUIRED,
            message=Message(message_id="m2", role=Role.ROLE_AGENT, parts=said),
        )
    )
    task, _ = apply(started, asking, CONTEXT)
    said.append(Part(text="later"))  # (not published)
    kept.append(Part(text="later"))
    for status in (started.status, task.status):
        assert status.message is not None
        assert [p.text for p in status.message.parts] == ["asked"]
    texts = {m.message_id: [p.text for p in m.parts] for m in task.history}
    assert texts["m1"] == ["before"]
    assert texts["m2"] == ["asked"]
