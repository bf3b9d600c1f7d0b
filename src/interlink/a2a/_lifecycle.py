"""The A2A task lifecycle as data: `(state, event) -> state`, and the state sets.

Theory of operation. A task is in one `TaskState`, or in `NEW` before its first event.
Two kinds of events move it. The executor publishes `task` (a `Task`: the first event
only), `status` (a status update), `artifact` and `message` (a direct message, which
answers instead of a task: never an event of one). A client's requests are `send` (a
follow-up message), `cancel` and `subscribe`. `TABLE` holds every allowed pair and the
state after it; `TARGET` there stands for the state the event itself names (the Task's,
the status update's). A pair not in the table is refused, and `refusal` says with which
error: an executor's event with `InvalidEventSequence` (the task fails with it), a
request with the A2A error its client gets (-32004 for a message or a subscription to a
finished task or for a follow-up while it works, -32002 for a cancel of a task that
ended otherwise; a cancel of a canceled task answers with it). A terminal state is the
end: no event follows it. The server, the runtime, the stores, the client and the CLI
read the state sets from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from interlink.a2a._errors import TaskNotCancelable, TaskNotFound, UnsupportedOperation
from interlink.a2a._executor import InvalidEventSequence
from interlink.a2a._types import TaskState

__all__ = [
    "ACTIVE",
    "EVENTS",
    "INTERRUPTED",
    "NEW",
    "REQUESTS",
    "STATES",
    "TABLE",
    "TARGET",
    "TERMINAL",
    "refusal",
    "step",
]

S = TaskState
NEW: Final = ""
"""The state of a task before its first event."""
STATES: Final = frozenset(S)
TERMINAL: Final = frozenset(
    {S.TASK_STATE_COMPLETED, S.TASK_STATE_FAILED, S.TASK_STATE_CANCELED, S.TASK_STATE_REJECTED}
)
INTERRUPTED: Final = frozenset({S.TASK_STATE_INPUT_REQUIRED, S.TASK_STATE_AUTH_REQUIRED})
ACTIVE: Final = frozenset({S.TASK_STATE_SUBMITTED, S.TASK_STATE_WORKING})
"""An executor runs the task (here or on another replica)."""
_OPEN: Final = STATES - TERMINAL

EVENTS: Final = ("task", "status", "artifact", "message")
"""What an executor publishes."""
REQUESTS: Final = ("send", "cancel", "subscribe")
"""What a client asks of an existing task."""
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
        if event == "message" and state == NEW:
            return InvalidEventSequence("a direct message is handled before any task exists")
        if event == "message":
            return InvalidEventSequence("a message cannot follow task events; use a status message")
        return InvalidEventSequence("a Task can only be the first event")
    if state == NEW:
        return TaskNotFound(f"Task {task_id!r} not found", taskId=task_id)
    if event == "cancel":
        return TaskNotCancelable(f"task {task_id} is {state}", taskId=task_id)
    if event == "subscribe":
        return UnsupportedOperation(
            f"task {task_id} is {state}; there is nothing to subscribe to", taskId=task_id
        )
    if state in TERMINAL:
        return UnsupportedOperation(
            f"task {task_id} is {state}; it takes no more messages", taskId=task_id
        )
    return UnsupportedOperation(
        f"task {task_id} is still working; send when it asks for input", taskId=task_id
    )
