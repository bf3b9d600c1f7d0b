"""The A2A task lifecycle as data: `(state, event) -> state`, and the state sets.

Theory of operation. A task is in a `TaskState`, or `NEW` before its first event. An
executor publishes `EVENTS` (`task`: a Task, first only; `status`; `artifact`;
`message`: a direct message, never an event of a task); a client asks `REQUESTS` of an
existing task. `TABLE` holds every allowed pair and the state after it (`TARGET`: the
state the event names). Any other pair is refused with `refusal(...)`: an executor's
event with `InvalidEventSequence`, a request with the A2A error its client gets (-32004,
-32002, -32001). No event follows a terminal state. Everyone reads the sets from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from interlink.a2a._errors import (
    InvalidEventSequence,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
)
from interlink.a2a._types import TaskState

__all__ = ["ACTIVE", "INTERRUPTED", "NEW", "STATES", "TABLE", "TERMINAL", "refusal", "step"]

S = TaskState
NEW: Final = ""
STATES: Final = frozenset(S)
TERMINAL: Final = frozenset(
    {S.TASK_STATE_COMPLETED, S.TASK_STATE_FAILED, S.TASK_STATE_CANCELED, S.TASK_STATE_REJECTED}
)
INTERRUPTED: Final = frozenset({S.TASK_STATE_INPUT_REQUIRED, S.TASK_STATE_AUTH_REQUIRED})
ACTIVE: Final = frozenset({S.TASK_STATE_SUBMITTED, S.TASK_STATE_WORKING})  # an executor runs it
_OPEN: Final = STATES - TERMINAL

EVENTS: Final = ("task", "status", "artifact", "message")
REQUESTS: Final = ("send", "cancel", "subscribe")
TARGET: Final = "(the event's state)"

TABLE: Final[Mapping[tuple[str, str], str]] = MappingProxyType(
    {
        (NEW, "task"): TARGET,
        (NEW, "status"): TARGET,  # (through SUBMITTED: the task is made first)
        (NEW, "artifact"): S.TASK_STATE_SUBMITTED,
        **{(s, "status"): TARGET for s in _OPEN},
        **{(s, "artifact"): s for s in _OPEN},
        **{(s, "send"): s for s in _OPEN - ACTIVE},  # the executor moves it on
        **{(s, "cancel"): S.TASK_STATE_CANCELED for s in _OPEN},
        (S.TASK_STATE_CANCELED, "cancel"): S.TASK_STATE_CANCELED,  # (idempotent)
        **{(s, "subscribe"): s for s in _OPEN},
    }
)


def step(state: str, event: str, target: str = "", *, task_id: str = "") -> str:
    """The state after `event` (`target`: the state a Task or status update names);
    raises `refusal(...)` for a pair the table does not hold."""
    after = TABLE.get((state, event))
    if after is None:
        raise refusal(state, event, task_id)
    return target if after == TARGET else after


def refusal(state: str, event: str, task_id: str = "") -> Exception:
    """The error refusing `event` in `state` (a pair `TABLE` does not hold)."""
    if event in EVENTS:
        if state in TERMINAL:
            return InvalidEventSequence(f"the task is already {state}; no event may follow")
        if event == "message":
            if state == NEW:
                return InvalidEventSequence("a direct message is handled before any task exists")
            return InvalidEventSequence("a message cannot follow task events; use a status message")
        return InvalidEventSequence("a Task can only be the first event")
    if state == NEW:
        return TaskNotFound(f"Task {task_id!r} not found", taskId=task_id)
    if event == "cancel":
        return TaskNotCancelable(f"task {task_id} is {state}", taskId=task_id)
    why = f"is {state}; it takes no more messages"
    if event == "subscribe":
        why = f"is {state}; there is nothing to subscribe to"
    elif state not in TERMINAL:
        why = "is still working; send when it asks for input"
    return UnsupportedOperation(f"task {task_id} {why}", taskId=task_id)
