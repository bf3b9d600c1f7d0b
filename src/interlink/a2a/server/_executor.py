"""The agent author's API: `AgentExecutor`, its `RequestContext`, and `TaskUpdater`.

An executor gets the request's context and an `EventSink` and publishes, in order,
either one `Message` (a direct answer: no task is kept), or the task's events: status
updates and artifact updates (a `Task` first is allowed, to set the initial snapshot).
The server checks the sequence (nothing after a terminal state, no message after task
events), stores every event before anyone sees it, and streams it to subscribers. An
exception in `execute` fails the task: the log gets its traceback, the client a generic
reason (its own text with `create_app(..., expose_errors=True)`; an `RpcError` raised on
purpose always with its message).

`TaskUpdater` writes those events for you, so a common agent is a dozen lines::

    class Echo(AgentExecutor):
        async def execute(self, context, events):
            task = TaskUpdater(context, events)
            await task.working()
            await task.add_artifact(text=context.text, name="echo")
            await task.complete()
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import ClassVar, Protocol

from interlink.a2a._errors import InvalidEventSequence as InvalidEventSequence
from interlink.a2a._types import (
    Artifact,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

Event = Message | Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent


def new_id() -> str:
    """A random (version 4) UUID as text, like `str(uuid.uuid4())`.

    The random bytes come from `os.urandom` 64 ids at a time (one system call rather
    than one per id); `list.pop` hands each id out once even across threads, and a
    forked child starts with none of its parent's."""
    try:
        return _ids.pop()
    except IndexError:
        _ids.extend(_fresh_ids())
        return new_id()


_ids: list[str] = []
_BATCH = 64
_VERSION_4 = bytes(b & 0x0F | 0x40 for b in range(256))
_RFC_4122 = bytes(b & 0x3F | 0x80 for b in range(256))  # the variant bits


def _fresh_ids() -> list[str]:
    raw = bytearray(os.urandom(16 * _BATCH))
    raw[6::16] = raw[6::16].translate(_VERSION_4)
    raw[8::16] = raw[8::16].translate(_RFC_4122)
    text = raw.hex()
    return [
        f"{text[i : i + 8]}-{text[i + 8 : i + 12]}-{text[i + 12 : i + 16]}-"
        f"{text[i + 16 : i + 20]}-{text[i + 20 : i + 32]}"
        for i in range(0, 32 * _BATCH, 32)
    ]


if hasattr(os, "register_at_fork"):  # pragma: no branch - every POSIX system has it
    os.register_at_fork(after_in_child=_ids.clear)


@dataclass(frozen=True)
class RequestContext:
    """What an executor knows about the request it serves."""

    message: Message
    """The incoming message (ids filled in: `task_id` and `context_id` are set)."""
    task_id: str
    context_id: str
    task: Task | None
    """The task before this message: `None` for a new task."""
    principal: str = ""
    """The authenticated caller ("" when the agent has no authentication)."""
    tenant: str = ""
    extensions: frozenset[str] = frozenset()
    """Extensions the caller activated (`A2A-Extensions`) that this agent supports."""
    headers: Mapping[str, str] = field(default_factory=dict)
    configuration: SendMessageConfiguration | None = None
    metadata: dict[str, object] | None = None

    @property
    def text(self) -> str:
        """The text parts of the message, joined."""
        return "".join(part.text for part in self.message.parts if isinstance(part.text, str))


class EventSink(Protocol):
    """Where an executor publishes its events (`events` in `execute`)."""

    async def publish(self, event: Event) -> None: ...


class AgentExecutor:
    """Subclass and implement `execute`; override `cancel` to stop work your own way."""

    #: re-run `execute` for tasks that were running when the server stopped, instead of
    #: failing them at start-up
    resumable: ClassVar[bool] = False

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        raise NotImplementedError

    async def cancel(self, context: RequestContext, events: EventSink) -> None:
        """Called by `CancelTask` on a running task, or on one waiting for input (no
        `execute` runs then, but the agent may hold work behind its question); the
        default publishes CANCELED (a running `execute` is then cancelled by the server)."""
        await TaskUpdater(context, events).cancel()


class TaskUpdater:
    """Publishes a task's status and artifact events with the right ids and times."""

    def __init__(self, context: RequestContext, events: EventSink) -> None:
        self.context = context
        self.events = events
        self.task_id = context.task_id
        self.context_id = context.context_id

    def message(self, text: str | None = None, *, parts: Sequence[Part] = ()) -> Message:
        """An agent message of this task (for a status or a direct answer)."""
        all_parts = [*parts] if text is None else [Part(text=text), *parts]
        return Message(
            message_id=new_id(),
            context_id=self.context_id,
            task_id=self.task_id,
            role=Role.ROLE_AGENT,
            parts=all_parts,
        )

    async def _status(self, state: TaskState, message: Message | str | None) -> None:
        if isinstance(message, str):
            message = self.message(message)
        await self.events.publish(
            TaskStatusUpdateEvent(
                task_id=self.task_id,
                context_id=self.context_id,
                status=TaskStatus(state=state, message=message, timestamp=datetime.now(UTC)),
            )
        )

    async def submit(self, message: Message | str | None = None) -> None:
        await self._status(TaskState.TASK_STATE_SUBMITTED, message)

    async def working(self, message: Message | str | None = None) -> None:
        await self._status(TaskState.TASK_STATE_WORKING, message)

    async def complete(self, message: Message | str | None = None) -> None:
        await self._status(TaskState.TASK_STATE_COMPLETED, message)

    async def failed(self, message: Message | str | None = None) -> None:
        await self._status(TaskState.TASK_STATE_FAILED, message)

    async def reject(self, message: Message | str | None = None) -> None:
        await self._status(TaskState.TASK_STATE_REJECTED, message)

    async def cancel(self, message: Message | str | None = None) -> None:
        await self._status(TaskState.TASK_STATE_CANCELED, message)

    async def requires_input(self, message: Message | str | None = None) -> None:
        await self._status(TaskState.TASK_STATE_INPUT_REQUIRED, message)

    async def requires_auth(self, message: Message | str | None = None) -> None:
        await self._status(TaskState.TASK_STATE_AUTH_REQUIRED, message)

    async def add_artifact(
        self,
        parts: Sequence[Part] = (),
        *,
        text: str | None = None,
        artifact_id: str | None = None,
        name: str = "",
        append: bool = False,
        last_chunk: bool = False,
        metadata: dict[str, object] | None = None,
    ) -> str:
        """Publish an artifact (or, with `append=True`, more parts of one); returns its id."""
        artifact_id = artifact_id or new_id()
        all_parts = [*parts] if text is None else [*parts, Part(text=text)]
        await self.events.publish(
            TaskArtifactUpdateEvent(
                task_id=self.task_id,
                context_id=self.context_id,
                artifact=Artifact(
                    artifact_id=artifact_id, name=name, parts=all_parts, metadata=metadata
                ),
                append=append,
                last_chunk=last_chunk,
            )
        )
        return artifact_id

    async def reply(self, text: str | None = None, *, parts: Sequence[Part] = ()) -> None:
        """Answer with a direct `Message` instead of a task (only as the first event)."""
        await self.events.publish(self.message(text, parts=parts))
