"""Running tasks: executor events -> checked -> stored -> streamed.

Theory of operation. A task that has a running executor, or streams attached, is *live*:
one `LiveTask` holds its snapshot, version and sequence number, its subscriptions and the
executor's asyncio task. Every event goes through `LiveTask.publish`: `apply` checks it
against the task as it will be after the events before it (`head`) and yields the new
snapshot and the `StreamResponse`s to log; the event is *staged*. One writer per task
(under the task's lock) appends everything staged in one transaction (compare-and-set on
the version); only then are the events pushed to subscriptions and waiters woken. So
what a client sees was stored first, and every stream of a task sees the same events in
the same order. An artifact update returns once staged (group commit: an agent
streaming chunks writes them together, at most `STAGE_LIMIT` events or
`STAGE_BYTES` at a time); any other event returns once it and everything before it is
stored, so after `working()` or `complete()` the store has the task as published.
A subscription has a bounded queue: one that falls behind is cut off (it resumes by
`Last-Event-ID`), never slowing the executor or other streams. A task whose
executor returned and that has no streams is dropped from memory: idle interrupted tasks
are only rows in the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from datetime import UTC, datetime
from typing import NamedTuple, TypeVar

import msgspec

from interlink.a2a import _codec
from interlink.a2a._errors import A2AError, InvalidAgentResponse
from interlink.a2a._lifecycle import INTERRUPTED, NEW, TERMINAL, step
from interlink.a2a._types import (
    Artifact,
    Message,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from interlink.a2a.server._eager import eager_task
from interlink.a2a.server._executor import (
    AgentExecutor,
    Event,
    InvalidEventSequence,
    RequestContext,
    TaskUpdater,
)
from interlink.a2a.stores._base import (
    PushConfig,
    StoreError,
    TaskLeased,
    TaskRow,
    TaskStore,
    VersionConflict,
)
from interlink.jsonrpc import RpcError

__all__ = [
    "Item",
    "LiveTask",
    "Sink",
    "Subscription",
    "apply",
    "failure_reason",
    "micros",
    "spawn",
    "task_row",
]

logger = logging.getLogger("interlink.a2a")

#: the lifecycle's name of each kind of executor event
_KIND: dict[type[Event], str] = {
    Task: "task",
    TaskStatusUpdateEvent: "status",
    TaskArtifactUpdateEvent: "artifact",
    Message: "message",
}
STAGE_LIMIT = 64
"""Staged artifact updates at most, before `publish` waits for the write."""
STAGE_BYTES = 1024 * 1024
"""Staged bytes (encoded events) at most, before `publish` waits for the write."""

Item = tuple[int, bytes, StreamResponse | None]
"""A stream event: its sequence number, its ProtoJSON `StreamResponse` (the bytes every
stream of the task shares), and that `StreamResponse` itself when it was made here
(None when read back from the store): a binding that writes another form (gRPC)
converts from it instead of decoding the bytes."""


class _Staged(NamedTuple):
    event: Event
    context: RequestContext
    responses: list[StreamResponse]
    payloads: list[bytes]
    waiter: asyncio.Future[None] | None
    """The publisher waiting for this event's fate (None: an artifact update returned
    at once; a failure is then raised to the next `publish`)."""


def spawn(
    job: Coroutine[object, object, None], name: str, keep: set[asyncio.Task[None]] | None
) -> asyncio.Task[None]:
    """Run `job` in the background, kept in `keep` (which the server cancels) to its end."""
    task = asyncio.create_task(job, name=name)
    if keep is not None:
        keep.add(task)
        task.add_done_callback(keep.discard)
    return task


def micros(moment: datetime | None) -> int:
    moment = moment or datetime.now(UTC)
    return int(moment.timestamp() * 1_000_000)


def failure_reason(failure: BaseException | None, *, expose: bool = False) -> str:
    """What a client is told of the exception that ended a task (in its FAILED status,
    or in the -32006 of a task that never began). Our own words (an `RpcError` the
    agent raised on purpose, a broken event sequence) reach it; anything else is logged
    with its traceback and the client reads a generic reason, unless the app exposes
    errors (`create_app(..., expose_errors=True)`). A store's words (paths, schemas,
    the database's messages) always stay in the log."""
    if isinstance(failure, RpcError):
        return failure.message
    if isinstance(failure, InvalidEventSequence):
        return str(failure)
    if isinstance(failure, StoreError):
        return "the task store failed (the server's log says why)"
    if expose and failure is not None:
        return f"{type(failure).__name__}: {failure}"
    return "the agent failed (the server's log says why)"


def no_answer(failure: BaseException | None, *, expose: bool = False) -> RpcError:
    """The error for a task that ended before the agent answered at all: an A2A error the
    executor raised on purpose is the request's own (such as -32005 for a part the agent
    cannot take), anything else -32006 with the reason."""
    if isinstance(failure, A2AError):
        return failure
    return InvalidAgentResponse(
        f"the agent did not answer: {failure_reason(failure, expose=expose)}"
    )


def task_row(
    task: Task,
    *,
    tenant: str,
    owner: str,
    version: int = 0,
    last_seq: int = 0,
    encoded: bytes | None = None,
) -> TaskRow:
    """The row of `task` (`encoded`: its ProtoJSON, when the caller has it already)."""
    return TaskRow(
        tenant=tenant,
        task_id=task.id,
        context_id=task.context_id,
        owner=owner,
        state=str(task.status.state),
        status_time=micros(task.status.timestamp),
        version=version,
        last_seq=last_seq,
        task=_codec.encode(task) if encoded is None else encoded,
    )


def _with_user_message(task: Task, message: Message) -> Task:
    if any(m.message_id == message.message_id for m in task.history if message.message_id):
        return task
    return msgspec.structs.replace(task, history=[*task.history, message])


def apply(
    task: Task | None, event: Event, context: RequestContext
) -> tuple[Task, list[StreamResponse]]:
    """The task after `event`, and the stream events to log. Raises
    `InvalidEventSequence` for an event that cannot follow (`_lifecycle.TABLE`)."""
    kind = _KIND[type(event)]
    target = event.status.state if isinstance(event, Task | TaskStatusUpdateEvent) else ""
    step(NEW if task is None else str(task.status.state), kind, target)
    assert not isinstance(event, Message)  # (the table takes none: `publish` does)
    if task is None:
        if isinstance(event, Task):
            if event.id not in ("", context.task_id) or event.context_id not in (
                "",
                context.context_id,
            ):
                raise InvalidEventSequence("the task's ids differ from the request's")
            status = _own_status(event.status)
            if status.timestamp is None:
                status = msgspec.structs.replace(status, timestamp=datetime.now(UTC))
            first = msgspec.structs.replace(
                event,
                id=context.task_id,
                context_id=context.context_id,
                status=status,
                history=[_own_parts(m) for m in event.history],
                artifacts=[_own_parts(a) for a in event.artifacts],
            )
            first = _with_user_message(first, context.message)
            return first, [StreamResponse(task=first)]
        created = datetime.now(UTC)
        if isinstance(event, TaskStatusUpdateEvent) and event.status.timestamp is not None:
            created = min(created, event.status.timestamp)  # submitted no later than the update
        first = Task(
            id=context.task_id,
            context_id=context.context_id,
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED, timestamp=created),
            history=[context.message],
        )
        # (SUBMITTED takes every status and artifact update: no second step to check)
        task, response = _update(first, event)
        return task, [StreamResponse(task=first), response]
    assert not isinstance(event, Task)  # (the table refuses it here)
    task, response = _update(task, event)
    return task, [response]


def _update(
    task: Task, event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent
) -> tuple[Task, StreamResponse]:
    """`apply` of an update the lifecycle allows: the task after it, and its event."""
    task_id, context_id = task.id, task.context_id
    if event.task_id not in ("", task_id) or event.context_id not in ("", context_id):
        raise InvalidEventSequence("the event's ids differ from the task's")
    ids_given = event.task_id == task_id and event.context_id == context_id
    if isinstance(event, TaskStatusUpdateEvent):
        status = _own_status(event.status)
        if status.timestamp is None:
            status = msgspec.structs.replace(status, timestamp=datetime.now(UTC))
        history = task.history
        if status.message is not None:
            history = [*history, status.message]
        task = msgspec.structs.replace(task, status=status, history=history)
        if not ids_given or status is not event.status:
            event = msgspec.structs.replace(
                event, task_id=task_id, context_id=context_id, status=status
            )
        return task, StreamResponse(status_update=event)
    artifact = event.artifact
    artifacts = list(task.artifacts)
    for i, existing in enumerate(artifacts):
        if existing.artifact_id == artifact.artifact_id:
            if event.append:
                artifact = msgspec.structs.replace(
                    existing, parts=[*existing.parts, *artifact.parts]
                )
            else:
                artifact = _own_parts(artifact)
            artifacts[i] = artifact
            break
    else:
        artifacts.append(_own_parts(artifact))
    task = msgspec.structs.replace(task, artifacts=artifacts)
    if not ids_given:
        event = msgspec.structs.replace(event, task_id=task_id, context_id=context_id)
    return task, StreamResponse(artifact_update=event)


_Owned = TypeVar("_Owned", Artifact, Message)


def _own_parts(item: _Owned) -> _Owned:
    """The artifact or message with a list of parts of the task's own: an executor that
    goes on adding to the list it published (to stream the next chunk) changes neither
    the task nor what its events said."""
    return msgspec.structs.replace(item, parts=list(item.parts))


def _own_status(status: TaskStatus) -> TaskStatus:
    """The status with its message's parts the task's own (`_own_parts`)."""
    if status.message is None:
        return status
    return msgspec.structs.replace(status, message=_own_parts(status.message))


class Subscription:
    """One stream's queue of `Item`s, bounded in events and bytes (an empty queue takes
    any one event, however large).

    A reader that falls behind the bound is cut off: it still gets what was queued
    (so it knows the task and the last id it saw), then its stream ends and it resumes
    with `Last-Event-ID`. The executor and the other streams never wait for it. The
    payloads are the bytes every stream of the task shares, never copies.
    """

    def __init__(
        self, limit: int, *, close_on_interrupt: bool, max_bytes: int = 16 * 1024 * 1024
    ) -> None:
        self.limit = limit
        self.max_bytes = max_bytes
        self.close_on_interrupt = close_on_interrupt
        self.items: deque[Item] = deque()
        self.queued_bytes = 0
        self.ready = asyncio.Event()
        self.closed = False
        self.overflowed = False

    def push(self, seq: int, payload: bytes, response: StreamResponse | None = None) -> None:
        if self.closed:
            return
        if self.items and (
            len(self.items) >= self.limit or self.queued_bytes + len(payload) > self.max_bytes
        ):
            self.overflowed = True
            self.closed = True
        else:
            self.items.append((seq, payload, response))
            self.queued_bytes += len(payload)
        self.ready.set()

    def close(self) -> None:
        self.closed = True
        self.ready.set()

    def next_ready(self) -> Item:
        """The next queued event (there must be one)."""
        item = self.items.popleft()
        self.queued_bytes -= len(item[1])
        return item

    async def next(self) -> Item | None:
        """The next event, or `None` when the stream is over."""
        while True:
            if self.items:
                return self.next_ready()
            if self.closed:
                return None
            self.ready.clear()
            await self.ready.wait()


class LiveTask:
    """A task in memory while its executor runs or streams are attached."""

    def __init__(
        self,
        store: TaskStore,
        *,
        tenant: str,
        task_id: str,
        context_id: str,
        owner: str,
        row: TaskRow | None = None,
        on_append: Callable[[], None] | None = None,
        background: set[asyncio.Task[None]] | None = None,
        on_interrupted: Callable[[LiveTask], Awaitable[None]] | None = None,
        on_return: Callable[[LiveTask], None] | None = None,
        expose_errors: bool = False,
    ) -> None:
        self.store = store
        #: an executor's exception text reaches the client (see `failure_reason`)
        self.expose_errors = expose_errors
        #: awaited when the executor returns with the task waiting for input
        self.on_interrupted = on_interrupted
        #: called when the executor has returned (the server forgets an idle task)
        self.on_return = on_return
        #: where background catch-ups are kept (the server cancels them when it stops)
        self.background = background
        #: called after every append (wakes the push outbox worker)
        self.on_append = on_append
        self.tenant = tenant
        self.task_id = task_id
        self.context_id = context_id
        self.owner = owner
        self.task: Task | None = None if row is None else _codec.decode(Task, row.task)
        self.version = 0 if row is None else row.version
        self.last_seq = 0 if row is None else row.last_seq
        self.subscriptions: set[Subscription] = set()
        self.runner: asyncio.Task[None] | None = None
        #: `last_seq` when the executor started (a follow-up's: at its task's question)
        self.run_from = 0
        #: the executor runs (from `start` until `_run` returns, in the runner's last step)
        self.running = False
        self.direct_message: Message | None = None
        self.failure: BaseException | None = None
        self.cancel_requested = False
        #: the server is stopping: a running executor is cancelled, not failed by us
        self.shutting_down = False
        #: requests holding this task between their checks and starting the executor
        self.users = 0
        #: push configs sent with the first message, stored once the task exists
        self.pending_push: list[PushConfig] = []
        self.lock = asyncio.Lock()
        #: the store's methods never wait (`MemoryTaskStore`): a write cannot be cut
        #: short, nor can anything come between its parts. Only a class that says so
        #: itself counts: a subclass may override methods with ones that wait.
        self._never_suspends: bool = vars(type(store)).get("writes_never_suspend") is True
        self._waiters: list[asyncio.Future[None]] = []
        self._follower: asyncio.Task[None] | None = None
        self._follow_again = False
        #: the seq the next catch-up must reach (None: whatever the store has)
        self._follow_to: int | None = 0
        #: published, not yet stored, in order; `_head` is the task after all of them
        self._staged: list[_Staged] = []
        self._staged_bytes = 0
        self._head: Task | None = self.task
        self._writer: asyncio.Task[None] | None = None
        self._write_planned = False
        #: the executor's first step runs now (`start`): a planned write waits for its end
        self._first_step = False
        #: what the last write raised: raised to the next `publish` or `flush`
        self._write_error: Exception | None = None
        #: the last task stored from here, and its ProtoJSON
        self._encoded: tuple[Task, bytes] | None = None
        #: the `StreamResponse` of that ProtoJSON (the streams' first event)
        self._snapshot: tuple[bytes, bytes] | None = None

    def task_json(self) -> bytes:
        """`task` as ProtoJSON (encoded once per stored version)."""
        assert self.task is not None
        encoded = self._encoded
        if encoded is None or encoded[0] is not self.task:
            encoded = self._encoded = (self.task, _codec.encode(self.task))
        return encoded[1]

    def snapshot_json(self) -> bytes:
        """The `StreamResponse` holding `task`, as every stream starts with it (encoded
        once per stored version: the streams of a task share these bytes)."""
        task_json = self.task_json()
        snapshot = self._snapshot
        if snapshot is None or snapshot[0] is not task_json:
            snapshot = self._snapshot = (task_json, b'{"task":' + task_json + b"}")
        return snapshot[1]

    def snapshot(self) -> Item:
        """The first event of a stream: the task as stored now (`snapshot_json`)."""
        assert self.task is not None
        return self.last_seq, self.snapshot_json(), StreamResponse(task=self.task)

    @property
    def state(self) -> str:
        return "" if self.task is None else str(self.task.status.state)

    # -- events ---------------------------------------------------------------------

    async def publish(self, event: Event, context: RequestContext) -> None:
        """Check and stage `event`; an artifact update returns then (unless too much is
        staged), any other event once stored. Raises `InvalidEventSequence` for an event
        that cannot follow, and what a write of earlier events raised."""
        if self._write_error is not None:
            error, self._write_error = self._write_error, None
            raise error
        if isinstance(event, Message) and self._head is None:
            async with self.lock:
                if self.direct_message is not None:
                    raise InvalidEventSequence("only one direct message may be published")
                if event.task_id == self.task_id:  # no task was created: name none
                    event = msgspec.structs.replace(event, task_id="")
                self.direct_message = event
                response = StreamResponse(message=event)
                payload = _codec.encode(response)
                for sub in self.subscriptions:
                    sub.push(0, payload, response)
                    sub.close()
                self._notify()
                return
        if self.direct_message is not None:
            raise InvalidEventSequence("no event may follow a direct message")
        head, responses = apply(self._head, event, context)
        payloads = [_codec.encode(r) for r in responses]
        size = sum(map(len, payloads))
        if (
            isinstance(event, TaskArtifactUpdateEvent)
            and len(self._staged) + 1 < STAGE_LIMIT
            and self._staged_bytes + size < STAGE_BYTES
        ):
            self._stage(head, _Staged(event, context, responses, payloads, None), size)
            if not self._write_planned:
                # Next time round the loop: by then the agent may have flushed what is
                # staged itself (its next status update), and no writer task is needed.
                # (In the executor's first step, `start` plans it once the step is over:
                # an executor that ends there has flushed it.)
                self._write_planned = True
                if not self._first_step:
                    asyncio.get_running_loop().call_soon(self._planned_write)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stage(head, _Staged(event, context, responses, payloads, waiter), size)
        try:
            while not waiter.done():
                await self._drain()
        except BaseException:
            waiter.cancel()  # nobody will look at its fate any more
            raise
        waiter.result()  # what became of this very event

    def _stage(self, head: Task, staged: _Staged, size: int) -> None:
        self._head = head
        self._staged.append(staged)
        self._staged_bytes += size

    def _planned_write(self) -> None:
        self._write_planned = False
        if self._staged:
            self._write_soon()

    def _write_soon(self) -> None:
        if self._writer is None or self._writer.done():
            self._writer = spawn(self._write(), f"a2a-write-{self.task_id}", self.background)

    async def flush(self) -> None:
        """Until every event published so far is stored; raises what became of events
        whose publishers did not wait (a failed write, a task that ended elsewhere)."""
        while self._staged:
            await self._drain()
        if self._write_error is not None:
            error, self._write_error = self._write_error, None
            raise error

    def _drain(self) -> Awaitable[None]:
        """One step of writing what is staged (to await): here when nobody writes, else
        with the writer (shielded: a cancelled publisher does not stop the others' write)."""
        if (self._writer is None or self._writer.done()) and not self.lock.locked():
            return self._write()  # nobody is writing: write here (no task)
        self._write_soon()
        assert self._writer is not None
        return asyncio.shield(self._writer)

    async def _write(self) -> None:
        """The task's writer: appends what is staged, in batches, until nothing is."""
        if self._never_suspends and not self.lock.locked():
            # Nothing can come between (no write or read of this store waits): nobody
            # can find the lock free meanwhile, so it needs no taking.
            await self._write_staged()
            return
        async with self.lock:
            await self._write_staged()

    async def _write_staged(self) -> None:
        """`_write` under the task's lock."""
        while self._staged:
            count, head = len(self._staged), self._head
            assert head is not None
            payloads = [p for staged in self._staged for p in staged.payloads]
            responses = [r for staged in self._staged for r in staged.responses]
            version = self.version
            error: Exception
            try:
                await self._store_payloads(head, payloads, responses)
            except VersionConflict:
                # Someone else wrote the task (a cancel or a take-over on another
                # replica): catch up, re-check what is staged on top, write again.
                try:
                    if await self._catch_up():
                        continue
                    error = StoreError(f"task {self.task_id} is not in the store")
                except Exception as exc:
                    error = exc
            except asyncio.CancelledError:
                if self.version != version:  # it landed before the cancel took effect
                    self._unstage(count)
                raise
            except Exception as exc:
                error = exc
            else:
                self._unstage(count)
                continue
            logger.error("could not store events of task %s: %s", self.task_id, error)
            runner = self.runner
            if isinstance(error, TaskLeased) and self.running and runner is not None:
                # another replica took the task over: stop running it here
                self.cancel_requested = True
                runner.cancel()
            self._fail_staged(self._staged, error)
            self._staged = []
            self._staged_bytes = 0
            self._head = self.task
            self._notify()
            return

    def _unstage(self, count: int) -> None:
        if count == len(self._staged):  # (the usual: nothing was staged meanwhile)
            done, self._staged, self._staged_bytes = self._staged, [], 0
        else:
            done, self._staged = self._staged[:count], self._staged[count:]
            self._staged_bytes -= sum(len(p) for staged in done for p in staged.payloads)
        for staged in done:
            if staged.waiter is not None and not staged.waiter.done():
                staged.waiter.set_result(None)

    def _fail_staged(self, failed: list[_Staged], error: Exception) -> None:
        """These events will never be stored: each waiting publisher gets `error`; when
        none waits (only artifact updates failed), the next `publish` (or `flush`) gets it."""
        told = False
        for staged in failed:
            if staged.waiter is not None and not staged.waiter.done():
                staged.waiter.set_exception(error)
                told = True
        if not told and failed:
            self._write_error = self._write_error or error

    def _restage(self) -> None:
        """The stored task changed under what is staged: apply the staged events again
        on top of it; those that no longer fit (it ended meanwhile) are dropped."""
        head, kept, size = self.task, [], 0
        for staged in self._staged:
            try:
                head, responses = apply(head, staged.event, staged.context)
            except InvalidEventSequence as exc:
                logger.info("task %s: dropped a staged event: %s", self.task_id, exc)
                self._fail_staged([staged], exc)
                continue
            payloads = [_codec.encode(r) for r in responses]
            kept.append(_Staged(staged.event, staged.context, responses, payloads, staged.waiter))
            size += sum(len(p) for p in payloads)
        self._staged, self._staged_bytes, self._head = kept, size, head

    async def add_user_message(self, message: Message, *, strict: bool = False) -> None:
        """A follow-up's message joins the history (a snapshot change, no stream event).
        When someone else wrote the task meanwhile (another replica, or an older copy of
        it here), catch up and add it again; `strict` (another replica may have taken a
        follow-up): catch up and raise `VersionConflict` instead."""
        async with self.lock:
            for attempt in range(4):
                assert self.task is not None
                try:
                    await self._store_payloads(_with_user_message(self.task, message), [], [])
                    return
                except VersionConflict:
                    if not await self._catch_up() or strict or attempt == 3:
                        raise

    async def catch_up(self) -> None:
        """Read what others (other replicas) wrote to this task since our copy: streams
        get the new events in order, waiters wake; a terminal state ends the streams and
        stops an executor running here (a cancel or a lease take-over elsewhere)."""
        async with self.lock:
            await self._catch_up()

    async def _catch_up(self) -> bool:
        """`catch_up` under the lock; False when the task is not in the store."""
        row = await self.store.get(self.tenant, self.task_id)
        if row is None:
            return False
        if row.version == self.version:
            return True
        events: list[tuple[int, bytes]] = []
        after = self.last_seq
        while after < row.last_seq:
            rows = await self.store.events(self.tenant, self.task_id, after, limit=1000)
            if not rows:
                break  # pruned (only logs of old finished tasks are)
            events += [(e.seq, e.payload) for e in rows if e.seq <= row.last_seq]
            after = rows[-1].seq
        self.task, self.version = _codec.decode(Task, row.task), row.version
        self.last_seq = max(self.last_seq, row.last_seq)
        self._restage()
        for seq, payload in events:
            for sub in self.subscriptions:
                sub.push(seq, payload)
        if self.state in TERMINAL:
            for sub in self.subscriptions:
                sub.close()
            runner = self.runner
            if self.running and runner is not None and not self.cancel_requested:
                # ended elsewhere (a cancel, a lease taken over): nothing more to publish
                self.cancel_requested = True
                runner.cancel()
        self._notify()
        return True

    def follow(self, seq: int | None = None) -> None:
        """Catch up soon, in the background (to `seq` at least: nothing to do once this
        copy has it, e.g. our own write; `None`: whatever the store has); calls while one
        runs make it run again."""
        self._follow_to = (
            None if seq is None or self._follow_to is None else max(seq, self._follow_to)
        )
        if self._follower is not None and not self._follower.done():
            self._follow_again = True
            return
        self._follower = spawn(self._follow(), f"a2a-follow-{self.task_id}", self.background)

    async def _follow(self) -> None:
        delay = 0.05
        while True:
            self._follow_again = False
            try:
                async with self.lock:
                    upto, self._follow_to = self._follow_to, 0
                    if upto is None or upto > self.last_seq:
                        await self._catch_up()
            except Exception:
                logger.exception("could not catch up on task %s; retrying", self.task_id)
                self._follow_to = None  # whatever the store has, next time
                self._follow_again = bool(self.subscriptions or self._waiters)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
            if not self._follow_again:
                return

    async def _store_payloads(
        self, task: Task, payloads: list[bytes], responses: list[StreamResponse]
    ) -> None:
        """Store `task` with the events `payloads` (the encoded `responses`)."""
        encoded = _codec.encode(task)
        if self.version == 0:
            write = self._create(
                task_row(task, tenant=self.tenant, owner=self.owner, encoded=encoded), payloads
            )
        else:
            write = self.store.append(
                self.tenant,
                self.task_id,
                expected_version=self.version,
                task=encoded,
                state=str(task.status.state),
                status_time=micros(task.status.timestamp),
                events=payloads,
            )
        row, cancelled = await self._settled(write)
        self._encoded = (task, encoded)
        self._stored(task, row, payloads, responses)
        if cancelled:
            raise asyncio.CancelledError

    async def _create(self, row: TaskRow, payloads: list[bytes]) -> TaskRow:
        """The task's first write, with the push configs sent with the first message
        (their deliveries of the first events are queued in the same transaction)."""
        created = await self.store.create(row, payloads, self.pending_push)
        self.pending_push.clear()
        return created

    async def _settled(self, write: Coroutine[object, object, TaskRow]) -> tuple[TaskRow, bool]:
        """Await a store write to its end even when cancelled meanwhile (a thread or the
        database may commit it all the same, and memory and streams must follow what the
        store holds): the row, and whether a cancellation came (the caller records the
        outcome, then stops). A failed write after a cancellation is the cancellation."""
        if self._never_suspends:
            return await write, False  # nothing can interrupt it half-way
        job = asyncio.ensure_future(write)
        cancelled = False
        while True:
            try:
                return await asyncio.shield(job), cancelled
            except asyncio.CancelledError:
                if job.cancelled():
                    raise  # the write itself was cancelled (the loop is closing)
                cancelled = True  # (it may have just ended: the next round reads it)
            except Exception:
                if cancelled:
                    raise asyncio.CancelledError from None
                raise

    def _stored(
        self, task: Task, row: TaskRow, payloads: list[bytes], responses: list[StreamResponse]
    ) -> None:
        """`task` and its events (`payloads`, the encoded `responses`) are in the store as
        `row`: memory and streams follow."""
        first_seq = self.last_seq + 1
        self.task, self.version, self.last_seq = task, row.version, row.last_seq
        if not self._staged:
            self._head = task
        if self.on_append is not None and payloads:
            self.on_append()
        for offset, payload in enumerate(payloads):
            for sub in self.subscriptions:
                sub.push(first_seq + offset, payload, responses[offset])
        if self.state in TERMINAL:
            for sub in self.subscriptions:
                sub.close()
        self._notify()

    def wake(self) -> None:
        """Whoever waits in `wait_for` checks its predicate again."""
        self._notify()

    def _notify(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait_for(self, predicate: Callable[[LiveTask], bool]) -> None:
        """Until `predicate(self)` holds (checked after every change)."""
        while not predicate(self):
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter

    # -- the executor -------------------------------------------------------------------

    def start(self, executor: AgentExecutor, context: RequestContext) -> None:
        """Run the executor in a task of its own, started eagerly (`_eager`): an executor
        that never waits is done when this returns."""
        self.run_from = self.last_seq
        self.running = self._first_step = True
        try:
            eager_task(self._run(executor, context), f"a2a-task-{self.task_id}", self._runs)
        finally:
            self._first_step = False
            if self._write_planned:
                if self._staged:
                    asyncio.get_running_loop().call_soon(self._planned_write)
                else:
                    self._write_planned = False

    def _runs(self, runner: asyncio.Task[None]) -> None:
        self.runner = runner

    async def _run(self, executor: AgentExecutor, context: RequestContext) -> None:
        try:
            try:
                await executor.execute(context, Sink(self, context))
            except asyncio.CancelledError:
                if self.shutting_down:
                    await self._stopped(executor, context)
                    raise
                if not self.cancel_requested:
                    raise
            except Exception as exc:
                logger.exception("executor failed on task %s", self.task_id)
                reason = failure_reason(exc, expose=self.expose_errors)
                if not reason.startswith("the agent failed"):
                    reason = f"the agent failed: {reason}"
                with contextlib.suppress(Exception):
                    await self._fail(context, reason, exc)
            if not self.shutting_down:
                try:
                    try:
                        await self._finish(context)
                    except Exception:
                        logger.exception("could not finish task %s", self.task_id)
                    if self.on_interrupted is not None and self.state in INTERRUPTED:
                        try:
                            await self.on_interrupted(self)  # (also when finishing failed)
                        except Exception:
                            logger.exception("could not release task %s", self.task_id)
                finally:
                    self._end_streams()
        finally:
            self.running = False
            self._notify()
            if self.on_return is not None:
                self.on_return(self)

    async def _stopped(self, executor: AgentExecutor, context: RequestContext) -> None:
        """The server stops while the executor runs: a resumable one is left as it is
        (re-run at the next start); any other fails with the reason."""
        try:
            if not executor.resumable:
                await self._fail(
                    context, "the server stopped while this task was running", RuntimeError()
                )
            await self.flush()  # what it published before is kept
        except Exception:
            logger.exception("could not fail task %s at shutdown", self.task_id)
        finally:
            for sub in list(self.subscriptions):
                sub.close()
            self._notify()

    @property
    def _head_state(self) -> str:
        return "" if self._head is None else str(self._head.status.state)

    async def _fail(self, context: RequestContext, reason: str, exc: BaseException) -> None:
        if self._head is None and self.direct_message is None:
            self.failure = exc
            self._notify()
        elif self._head is not None and self._head_state not in TERMINAL:
            updater = TaskUpdater(context, Sink(self, context))
            await updater.failed(reason)

    async def _finish(self, context: RequestContext) -> None:
        head = self._head
        if self.cancel_requested and head is not None and self._head_state not in TERMINAL:
            await TaskUpdater(context, Sink(self, context)).cancel()
        if head is not None and self._head_state not in TERMINAL | INTERRUPTED:
            await self._fail(
                context, "the agent returned without finishing the task", RuntimeError()
            )
        await self.flush()
        if self.task is None and self.direct_message is None and self.failure is None:
            self.failure = InvalidEventSequence("the agent published nothing")

    def _end_streams(self) -> None:
        """The executor returned: streams that end at an interruption end now."""
        for sub in list(self.subscriptions):
            if sub.close_on_interrupt or self.task is None or self.state in TERMINAL:
                sub.close()

    def subscribe(
        self, limit: int, *, close_on_interrupt: bool, max_bytes: int = 4 * 1024 * 1024
    ) -> Subscription:
        sub = Subscription(limit, close_on_interrupt=close_on_interrupt, max_bytes=max_bytes)
        self.subscriptions.add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        self.subscriptions.discard(sub)


class Sink:
    """The `events` an executor publishes to. `durable`: each `publish` also waits until
    everything is stored (the server's own events, and a cancelling executor's, are
    followed by reads of the stored state)."""

    def __init__(self, live: LiveTask, context: RequestContext, *, durable: bool = False) -> None:
        self._live = live
        self._context = context
        self._durable = durable

    async def publish(self, event: Event) -> None:
        await self._live.publish(event, self._context)
        if self._durable:
            await self._live.flush()
