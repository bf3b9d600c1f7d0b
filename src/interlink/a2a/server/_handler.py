"""The A2A request handler: every method of the 1.0 service, free of any binding.

Each method of the generated table (`_methods.METHODS`) has its handler here, named by
the table: `handler(params, call)` takes the decoded params and a `Call` (who is asking,
for which tenant, with which extensions, from which event on) and returns the method's
result type, or a `TaskStream` for the streaming methods. A binding (JSON-RPC over HTTP
in `_http`) decodes, looks the handler up and encodes; the handlers know no wire format.

Rules (DECISIONS.md): follow-ups take the context id from the task (both given and
different: -32602); unknown or invisible task: -32001; message to a terminal task:
-32004; `historyLength` unset = all, 0 = none, n = last n, negative = -32602; cancel
is idempotent on CANCELED and -32002 on other terminal states; every task operation
passes `authorize(principal, row, operation)` and not-visible looks like not-found.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field

import msgspec

from interlink.a2a import _codec
from interlink.a2a import _types as t
from interlink.a2a._errors import (
    ExtendedAgentCardNotConfigured,
    PushNotificationNotSupported,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
    bad_request,
)
from interlink.a2a._lifecycle import ACTIVE, INTERRUPTED, TERMINAL, refusal, step
from interlink.a2a.server._executor import (
    AgentExecutor,
    InvalidEventSequence,
    RequestContext,
    TaskUpdater,
    new_id,
)
from interlink.a2a.server._media import MediaModes
from interlink.a2a.server._push import PushDelivery, check_url
from interlink.a2a.server._replicas import Replicas, ServerMember, SharedStore
from interlink.a2a.server._runtime import (
    LiveTask,
    Sink,
    Subscription,
    micros,
    no_answer,
    spawn,
)
from interlink.a2a.server._stream import StreamItem, TaskStream
from interlink.a2a.stores._base import (
    PushConfig,
    TaskLeased,
    TaskRow,
    TaskStore,
    VersionConflict,
)

__all__ = ["A2AServer", "Authorize", "Call", "Handler", "owner_only"]

logger = logging.getLogger("interlink.a2a")

Authorize = Callable[[str, TaskRow, str], bool]
"""`authorize(principal, task row, operation) -> allowed`; operation is the method name."""


def owner_only(principal: str, row: TaskRow, operation: str) -> bool:
    """The default: a task belongs to the principal that created it."""
    return row.owner == principal


@dataclass(frozen=True)
class Call:
    """Who is calling, and how."""

    principal: str = ""
    #: the A2A version (Major.Minor) the caller speaks; the binding translates (0.3)
    version: str = "1.0"
    tenant: str = ""
    extensions: frozenset[str] = frozenset()
    headers: Mapping[str, str] = field(default_factory=dict)
    #: the sequence number of the last event the client has (SSE: `Last-Event-ID`)
    last_event_id: int | None = None


Handler = Callable[[msgspec.Struct, Call], Awaitable[msgspec.Struct | TaskStream]]
"""A method's handler, as a binding calls it (`getattr(server, method.handler)`)."""


class A2AServer:
    """Serves one agent: its card, its executor, its store."""

    def __init__(
        self,
        executor: AgentExecutor,
        card: t.AgentCard,
        store: TaskStore,
        *,
        extended_card: t.AgentCard | None = None,
        authorize: Authorize = owner_only,
        stream_queue_limit: int = 1024,
        stream_queue_bytes: int = 4 * 1024 * 1024,
        push: PushDelivery | None = None,
        lease_ttl: float = 10.0,
        retention: float | None = None,
        cancel_wait: float = 5.0,
        expose_errors: bool = False,
    ) -> None:
        self.executor = executor
        #: an executor's exception text reaches the client (default: the log only)
        self.expose_errors = expose_errors
        self.card = card
        #: the media types the card takes and produces, checked on every send
        self.media = MediaModes(card)
        self.store = store
        self.extended_card = extended_card
        self.authorize = authorize
        self.stream_queue_limit = stream_queue_limit
        #: the bytes of events a stream may have waiting before it is cut off
        self.stream_queue_bytes = stream_queue_bytes
        self.live: dict[tuple[str, str], LiveTask] = {}
        #: the server stops: a blocking `SendMessage` answers with the task as it stands
        self.answering_now = False
        if push is None and card.capabilities.push_notifications is True:
            push = PushDelivery(store)
        #: the outbox worker, when the card declares push notifications
        self.push = push
        #: the tenants this server answers for (a tenant router sets its names)
        self.tenants: frozenset[str] = frozenset({""})
        #: on a store that replicas share: how long a replica's lease on a running task
        #: lasts, how long finished tasks keep their event logs, and how long a cancel
        #: waits for the replica running the task before writing the cancel itself
        self.lease_ttl = lease_ttl
        self.retention = retention
        self.cancel_wait = cancel_wait
        #: the hub of the shared store, once started (None: this process is alone)
        self.replicas: Replicas | None = None
        #: this server as a member of the hub (it answers the other replicas' news)
        self._member: ServerMember | None = None
        self._background: set[asyncio.Task[None]] = set()

    # -- lifecycle --------------------------------------------------------------------

    async def startup(self) -> None:
        """Open the store; tasks that were running when the process died are failed with
        a reason, or re-run when the executor is resumable."""
        self.answering_now = False
        await _open_shared(self.store)
        if self.push is not None:
            self.push.serve(self.tenants)
            await self.push.start()
        if isinstance(self.store, SharedStore):
            # Other replicas may be running the active tasks: only those whose lease
            # expired are taken over (by the hub's sweeps, the first one right away).
            self._member = ServerMember(self)
            self.replicas = await Replicas.join(
                self.store, self._member, lease_ttl=self.lease_ttl, retention=self.retention
            )
            return
        for row in await self.store.active():
            if row.tenant not in self.tenants:
                continue  # another tenant's agent (sharing the store) takes care of it
            live = self._live(row.tenant, row.task_id, row=row)
            await self._recover(live, "the server stopped while this task was running")
            self._evict(live)  # (unless it runs again)
        if self.retention is not None:  # (replicas: the hub prunes, once per store)
            spawn(self._prune_forever(self.retention), "a2a-prune", self._background)

    async def _prune_forever(self, retention: float) -> None:
        """Retention: every `retention / 10` (1 s to 1 h), drop the event logs of the
        tasks that ended more than `retention` seconds ago."""
        while True:
            try:
                pruned = await self.store.prune(micros(None) - int(retention * 1_000_000))
                if pruned:
                    logger.info("pruned %d events of finished tasks", pruned)
            except Exception:
                logger.exception("could not prune finished tasks; retrying")
            await asyncio.sleep(min(max(retention / 10, 1.0), 3600.0))

    def answer_now(self) -> None:
        """The server is about to stop: every blocking `SendMessage` (and any from now
        on) answers with its task as it stands, instead of waiting for the task to end,
        which the host would cut short (the client polls or subscribes for the rest)."""
        self.answering_now = True
        for live in list(self.live.values()):
            live.wake()

    async def shutdown(self) -> None:
        """Stop running executors (a resumable one is re-run at the next start, any
        other fails with the reason), end every stream, close the store."""
        if self.replicas is not None and self._member is not None:  # first: no take-over
            await self.replicas.leave(self._member)  # may start a runner now
            self.replicas = self._member = None
        runners = []
        for live in self.live.values():
            if live.runner is not None:
                live.shutting_down = True
                runners.append(live.runner)
        for runner in runners:
            runner.cancel()
        if runners:
            await asyncio.wait(runners)
            for runner in runners:  # retrieved (logged by the runner itself)
                _ = runner.cancelled() or runner.exception()
        while self._background:
            background = list(self._background)
            for task in background:
                task.cancel()
            await asyncio.wait(background)
            self._background.difference_update(background)
        for live in self.live.values():
            for sub in live.subscriptions:
                sub.close()
        if self.push is not None:
            await self.push.stop()
        await _close_shared(self.store)

    async def _recover(self, live: LiveTask, reason: str) -> None:
        """A task whose executor's process stopped while it ran: re-run it when the
        executor is resumable, else fail it with `reason`."""
        context = _context_of(live)
        if self.executor.resumable:
            live.start(self.executor, context)  # (forgotten once it returns, if idle)
            return
        with contextlib.suppress(InvalidEventSequence):  # it ended meanwhile
            await TaskUpdater(context, Sink(live, context, durable=True)).failed(reason)

    # -- helpers ----------------------------------------------------------------------

    def _live(
        self,
        tenant: str,
        task_id: str,
        *,
        row: TaskRow | None = None,
        owner: str = "",
        context_id: str = "",
    ) -> LiveTask:
        key = (tenant, task_id)
        live = self.live.get(key)
        if live is None:
            live = LiveTask(
                self.store,
                tenant=tenant,
                task_id=task_id,
                context_id=row.context_id if row else context_id,
                owner=row.owner if row else owner,
                row=row,
                on_append=None if self.push is None else self.push.wake,
                background=self._background,
                on_interrupted=None if self._member is None else self._member.release,
                on_return=self._evict,
                expose_errors=self.expose_errors,
            )
            self.live[key] = live
        return live

    async def _takes_a_follow_up(self, live: LiveTask) -> None:
        """Raises -32004 unless `live` waits for input, as it is now (not as the row a
        request read a moment ago says)."""
        if not live.running:
            # what happened since the row was read (another follow-up may have finished
            # it meanwhile; another replica may have worked on it)
            with self._holding(live, evict=False):  # (no stream's end evicts it meanwhile)
                await live.catch_up()
        runner = live.runner if live.running else None
        # (a follow-up's executor that has published nothing yet is not returning: it has
        # the task, as refused below)
        if runner is not None and live.state in INTERRUPTED and live.last_seq > live.run_from:
            # it asked for input and is returning right now: let it finish first (held:
            # its end would forget the task, and this follow-up would run on a copy)
            with (
                self._holding(live, evict=False),
                contextlib.suppress(TimeoutError, asyncio.CancelledError),
            ):
                await asyncio.wait_for(asyncio.shield(runner), 2.0)
        state = live.state  # (it may have finished meanwhile)
        if (live.running or live.users) and state not in TERMINAL:
            state = t.TaskState.TASK_STATE_WORKING  # an executor or a request has it now
        step(state, "send", task_id=live.task_id)  # (active: another replica runs it)

    @contextlib.contextmanager
    def _holding(self, live: LiveTask, *, evict: bool = True) -> Iterator[None]:
        """Hold `live` for the block (no stream's end evicts it, no other request starts
        its executor), then let go of it (and forget it if idle, unless not `evict`)."""
        live.users += 1
        try:
            yield
        finally:
            live.users -= 1
            if evict:
                self._evict(live)

    def _evict(self, live: LiveTask) -> None:
        """Forget an idle task (no executor, no stream, no request holding it); only this
        very object, never a newer one under the same key."""
        key = (live.tenant, live.task_id)
        if self.live.get(key) is live and not (live.running or live.subscriptions or live.users):
            del self.live[key]

    async def _visible(self, call: Call, task_id: str, operation: str) -> TaskRow:
        if not task_id:  # a REQUIRED field: bad params, not an unknown task
            field = "taskId" if "PushNotification" in operation else "id"
            raise bad_request([(field, "required field is missing or empty")])
        usable = _id_problem(task_id) is None  # (no store holds another)
        row = await self.store.get(call.tenant, task_id) if usable else None
        if row is None or not self.authorize(call.principal, row, operation):
            raise TaskNotFound(f"Task {task_id!r} not found", taskId=task_id)
        return row

    @staticmethod
    def _shape(task: t.Task, history: int | None, *, artifacts: bool = True) -> t.Task:
        changes: dict[str, object] = {}
        if history is not None:
            changes["history"] = task.history[-history:] if history else []
        if not artifacts:
            changes["artifacts"] = []
        return msgspec.structs.replace(task, **changes) if changes else task

    # -- SendMessage / SendStreamingMessage ------------------------------------------------

    async def _begin(
        self, params: t.SendMessageRequest, call: Call
    ) -> tuple[LiveTask, RequestContext, int | None]:
        """Check a send and hold its task (new, or the one it follows up) until `_start`:
        the task, the executor's context and the history length asked (None: all)."""
        message = params.message
        _check_message(message)
        _check_ids(
            ("message.messageId", message.message_id), ("message.contextId", message.context_id)
        )
        configuration = params.configuration
        self.media.check(message, configuration.accepted_output_modes if configuration else ())
        inline = history = None
        if configuration is not None:
            history = _history_length(configuration.history_length, "configuration.historyLength")
            inline = configuration.task_push_notification_config
            if inline is not None:
                self._require_push()
                await self._check_webhook(inline.url)
        # Checks done; from here the task is held (`users`) until its executor starts,
        # so no other request starts one too and no stream's end evicts it meanwhile.
        if message.task_id:
            row = await self._visible(call, message.task_id, "SendMessage")
            if message.context_id and message.context_id != row.context_id:
                raise bad_request(
                    [("message.contextId", f"differs from the task's context {row.context_id!r}")]
                )
            if row.state in TERMINAL:
                step(row.state, "send", task_id=row.task_id)
            live = self._live(call.tenant, row.task_id, row=row)
            try:
                await self._takes_a_follow_up(live)
            except BaseException:
                self._evict(live)  # (unless someone else holds it)
                raise
            task_id, context_id = row.task_id, row.context_id
        else:
            task_id, context_id = new_id(), message.context_id or new_id()
            live = self._live(call.tenant, task_id, owner=call.principal, context_id=context_id)
        live.users += 1
        try:
            message = msgspec.structs.replace(message, task_id=task_id, context_id=context_id)
            context = _context_of(
                live, call, message, configuration=configuration, metadata=params.metadata
            )
            if live.task is not None:
                await self._add_follow_up(live, message)
            if inline is not None:
                stored = self._push_config(call, task_id, inline)
                if live.task is not None:
                    await self.store.put_push_config(
                        call.tenant, task_id, stored.id, _codec.encode(stored), call.version
                    )
                else:  # stored with the task, once the agent makes one
                    live.pending_push.append(
                        PushConfig(stored.id, _codec.encode(stored), call.version)
                    )
        except BaseException:
            self._let_go(live)
            raise
        return live, context, history

    async def _add_follow_up(self, live: LiveTask, message: t.Message) -> None:
        """The follow-up's message joins the task. Among replicas the write is strict:
        a task that took another message meanwhile refuses this one; a task whose
        executor (elsewhere) is still returning from asking holds its lease a moment
        longer, so this waits for it (2 s at most, as a local follow-up does)."""
        if self.replicas is None:
            await live.add_user_message(message)
            return
        deadline = asyncio.get_running_loop().time() + 2.0
        delay = 0.01
        while True:
            try:
                await live.add_user_message(message, strict=True)
                return
            except TaskLeased:
                if asyncio.get_running_loop().time() > deadline:
                    break
            except VersionConflict:
                break
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.2)
            await live.catch_up()
            if live.state not in INTERRUPTED:
                break
        raise UnsupportedOperation(
            f"task {live.task_id} took another message meanwhile; send when it asks for"
            " input again",
            taskId=live.task_id,
        )

    def _start(self, live: LiveTask, context: RequestContext) -> None:
        """Start the executor of a task `_begin` holds, and let go of it."""
        live.start(self.executor, context)  # (it forgets `live` once it returns, if idle)
        self._let_go(live)

    def _let_go(self, live: LiveTask) -> None:
        live.users -= 1
        self._evict(live)

    async def send_message(self, params: t.SendMessageRequest, call: Call) -> t.SendMessageResponse:
        """Start the task and wait until it answers (ends, asks for input, or, with
        `returnImmediately`, exists)."""
        live, context, history = await self._begin(params, call)
        configuration = params.configuration
        immediately = configuration is not None and configuration.return_immediately
        started_at = live.last_seq  # a follow-up's task is already interrupted: wait for news
        self._start(live, context)

        def answered(task: LiveTask) -> bool:
            if task.failure is not None or task.direct_message is not None:
                return True
            if task.task is None:
                return False
            if immediately or self.answering_now or task.state in TERMINAL:
                return True
            fresh = task.last_seq > started_at or not task.running
            return fresh and task.state in INTERRUPTED

        await live.wait_for(answered)
        if live.direct_message is None and live.task is None:
            raise no_answer(live.failure, expose=self.expose_errors)
        if live.direct_message is not None:
            return t.SendMessageResponse(message=live.direct_message)
        assert live.task is not None
        return t.SendMessageResponse(task=self._shape(live.task, history))

    async def send_streaming_message(self, params: t.SendMessageRequest, call: Call) -> TaskStream:
        self._require_streaming()
        live, context, history = await self._begin(params, call)
        sub = self._subscribe(live, close_on_interrupt=True)
        snapshot = None
        if live.task is not None:  # a follow-up: the stream starts with the task
            snapshot = live.snapshot()
        self._start(live, context)
        return TaskStream(self._evict, live, sub, snapshot, [], history)

    def _subscribe(self, live: LiveTask, *, close_on_interrupt: bool) -> Subscription:
        return live.subscribe(
            self.stream_queue_limit,
            close_on_interrupt=close_on_interrupt,
            max_bytes=self.stream_queue_bytes,
        )

    # -- tasks ----------------------------------------------------------------------------

    async def get_task(self, params: t.GetTaskRequest, call: Call) -> t.Task:
        history = _history_length(params.history_length, "historyLength")
        row = await self._visible(call, params.id, "GetTask")
        return self._shape(_codec.decode(t.Task, row.task), history)

    async def list_tasks(self, params: t.ListTasksRequest, call: Call) -> t.ListTasksResponse:
        violations: list[tuple[str, str]] = []
        page_size = 50 if params.page_size is msgspec.UNSET else params.page_size
        assert isinstance(page_size, int)
        if not 1 <= page_size <= 100:
            violations.append(("pageSize", "must be between 1 and 100"))
        history = _history_length(params.history_length, "historyLength", violations)
        before = None
        if params.page_token:
            before = _decode_token(params.page_token)
            if before is None:
                violations.append(("pageToken", "is not a token this server issued"))
        if violations:
            raise bad_request(violations)
        state = None if params.status is t.TaskState.TASK_STATE_UNSPECIFIED else str(params.status)
        after = None
        if params.status_timestamp_after is not None:
            after = micros(params.status_timestamp_after) - 1  # the filter is inclusive
        owner = call.principal if self.authorize is owner_only else None
        context_id = params.context_id or None

        async def fetch(size: int, cursor: tuple[int, str] | None) -> list[TaskRow]:
            return await self.store.list(
                call.tenant,
                owner=owner,
                context_id=context_id,
                state=state,
                status_after=after,
                page_size=size,
                before=cursor,
            )

        if self.authorize is owner_only:  # the store filters by owner itself
            rows = await fetch(page_size + 1, before)
            total = await self.store.count(
                call.tenant, owner=owner, context_id=context_id, state=state, status_after=after
            )
        else:  # only the hook knows: one scan of all it allows gives the total and the page
            visible = await self._visible_rows(call, fetch)
            total = len(visible)
            rows = [r for r in visible if before is None or (r.status_time, r.task_id) < before]
            rows = rows[: page_size + 1]
        more = len(rows) > page_size
        rows = rows[:page_size]
        artifacts = params.include_artifacts is True
        tasks = [
            self._shape(_codec.decode(t.Task, r.task), history, artifacts=artifacts) for r in rows
        ]
        token = _encode_token(rows[-1].status_time, rows[-1].task_id) if more and rows else ""
        return t.ListTasksResponse(
            tasks=tasks, next_page_token=token, page_size=page_size, total_size=total
        )

    async def _visible_rows(
        self,
        call: Call,
        fetch: Callable[[int, tuple[int, str] | None], Awaitable[list[TaskRow]]],
    ) -> list[TaskRow]:
        """Every row `authorize` lets the caller list, in `list` order (keyset order:
        `(status_time, task_id)` descending)."""
        visible: list[TaskRow] = []
        before = None
        while True:
            batch = await fetch(100, before)
            visible += [r for r in batch if self.authorize(call.principal, r, "ListTasks")]
            if len(batch) < 100:
                return visible
            before = (batch[-1].status_time, batch[-1].task_id)

    async def cancel_task(self, params: t.CancelTaskRequest, call: Call) -> t.Task:
        row = await self._visible(call, params.id, "CancelTask")
        if row.state in TERMINAL:  # (canceled: answered as it is)
            step(row.state, "cancel", task_id=row.task_id)
            return _codec.decode(t.Task, row.task)
        live = self._live(call.tenant, row.task_id, row=row)
        replicas = self.replicas  # (kept: a shutdown meanwhile forgets the hub)
        with self._holding(live):
            asked = False
            if replicas is not None and not live.running:
                await live.catch_up()
                if live.state in ACTIVE:  # running on another replica: ask it
                    await self._ask_to_cancel(replicas, live)
                    asked = True
            # If that replica did not answer in time, the cancel is written here unless it
            # still holds the lease (it refused, or is slow): then it is not cancelable.
            # The lease also shows a follow-up taken elsewhere that has not said so yet.
            while True:
                try:
                    await self._cancel_running(live, call, params.metadata)
                    break
                except TaskLeased:
                    if replicas is None or asked:
                        raise TaskNotCancelable(
                            f"task {row.task_id} runs on another replica, which did not cancel it",
                            taskId=row.task_id,
                        ) from None
                await self._ask_to_cancel(replicas, live)
                asked = True
            if live.state != t.TaskState.TASK_STATE_CANCELED:  # (the executor refused)
                raise refusal(live.state, "cancel", row.task_id)
            assert live.task is not None
            return live.task

    async def _ask_to_cancel(self, replicas: Replicas, live: LiveTask) -> None:
        """Ask the replica running `live`'s task to cancel it; wait (`cancel_wait` at most)
        until the end reaches this copy."""
        await replicas.store.request_cancel(live.tenant, live.task_id)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.cancel_wait):
                await live.wait_for(lambda task: task.state in TERMINAL)

    async def _cancel_running(
        self, live: LiveTask, call: Call | None = None, metadata: dict[str, object] | None = None
    ) -> None:
        """Cancel a task `live` holds (for `call`; None: for its owner, as another
        replica asks): its executor's `cancel`, if it runs here, then the CANCELED
        status unless it ended otherwise."""
        context = _context_of(live, call, metadata=metadata)
        publisher = Sink(live, context, durable=True)
        try:
            if live.running and live.runner is not None:
                # the executor may refuse (an RpcError): then the task runs on
                await self.executor.cancel(context, publisher)
                live.cancel_requested = True
                live.runner.cancel()
                # (its end, whatever it was; our own cancellation still goes through)
                await asyncio.wait([live.runner], timeout=10)
            elif live.state in INTERRUPTED:
                # no executor runs, but it may hold work behind its question (the bridge:
                # an ACP permission request, which a cancel must answer `cancelled`)
                await self.executor.cancel(context, publisher)
            if live.state not in TERMINAL:
                await TaskUpdater(context, publisher).cancel()
        except InvalidEventSequence:
            pass  # the task reached another terminal state meanwhile

    async def subscribe_to_task(self, params: t.SubscribeToTaskRequest, call: Call) -> TaskStream:
        """The task's stream from its snapshot on, or after `call.last_event_id` (the
        events stored since, then the live ones)."""
        self._require_streaming()
        last_event_id = call.last_event_id
        row = await self._visible(call, params.id, "SubscribeToTask")
        ended = row.state in TERMINAL
        if ended and last_event_id is not None and last_event_id < row.last_seq:
            return await self._replay(call, row, last_event_id)  # it ended while away
        step(row.state, "subscribe", task_id=row.task_id)
        live = self._live(call.tenant, row.task_id, row=row)
        if not live.running:
            with self._holding(live, evict=False):  # it may have ended since `row` was read
                await live.catch_up()
            if live.state in TERMINAL:
                self._evict(live)
                return await self.subscribe_to_task(params, call)  # (it is over)
        sub = self._subscribe(live, close_on_interrupt=False)
        if self.replicas is not None and not live.running:
            live.follow()  # events committed since `row` was read were announced to nobody
        snapshot = live.snapshot()
        if last_event_id is None:
            return TaskStream(self._evict, live, sub, snapshot, [])
        try:
            return await self._resumed(call, live, sub, snapshot, last_event_id, live.last_seq)
        except BaseException:
            live.unsubscribe(sub)
            self._evict(live)
            raise

    async def _resumed(
        self,
        call: Call,
        live: LiveTask,
        sub: Subscription,
        snapshot: StreamItem,
        after: int,
        upto: int,
    ) -> TaskStream:
        """A stream of `live` from `snapshot`, then the stored events after `after` up to
        `upto` (read a page at a time, as its client takes them), then `sub`'s."""

        async def more(after: int, limit: int) -> list[tuple[int, bytes]]:
            rows = await self.store.events(call.tenant, live.task_id, after, limit=limit)
            return [(e.seq, e.payload) for e in rows]

        first_page = await more(after, 1) if after < upto else []  # (its size sets the next's)
        backlog = [(seq, p) for seq, p in first_page if seq <= upto]
        first = (None, *snapshot[1:])  # (no id: the events after it have theirs)
        return TaskStream(self._evict, live, sub, first, backlog, more=more, after=after, upto=upto)

    async def _replay(self, call: Call, row: TaskRow, after: int) -> TaskStream:
        """A resumed subscription to a task that ended meanwhile: the final snapshot,
        then the events the client missed, then the end."""
        live = LiveTask(
            self.store,
            tenant=call.tenant,
            task_id=row.task_id,
            context_id=row.context_id,
            owner=row.owner,
            row=row,
        )  # not registered: nothing will happen to this task any more
        sub = self._subscribe(live, close_on_interrupt=False)
        sub.close()
        snapshot = (None, b'{"task":' + row.task + b"}", None)  # (the stored task)
        return await self._resumed(call, live, sub, snapshot, after, row.last_seq)

    # -- push configs ------------------------------------------------------------------

    def _require_push(self) -> None:
        if self.card.capabilities.push_notifications is not True:
            raise PushNotificationNotSupported()

    def _require_streaming(self) -> None:
        if self.card.capabilities.streaming is not True:
            raise UnsupportedOperation("this agent does not stream")

    @staticmethod
    def _push_config(
        call: Call, task_id: str, config: t.TaskPushNotificationConfig
    ) -> t.TaskPushNotificationConfig:
        _check_ids(("id", config.id))
        return msgspec.structs.replace(
            config, id=config.id or new_id(), task_id=task_id, tenant=call.tenant
        )

    async def _check_webhook(self, url: str) -> None:
        """Refuse webhooks on loopback, private and other non-public addresses unless the
        server allows the host (-32602 with the reason)."""
        allowed = self.push.allow_hosts if self.push is not None else frozenset()
        reason = await check_url(url, allowed, unresolvable_ok=True)
        if reason is not None:
            raise bad_request([("url", reason)])

    async def create_task_push_notification_config(
        self, params: t.TaskPushNotificationConfig, call: Call
    ) -> t.TaskPushNotificationConfig:
        self._require_push()
        if not params.url:
            raise bad_request([("url", "a webhook URL is required")])
        row = await self._visible(call, params.task_id, "CreateTaskPushNotificationConfig")
        await self._check_webhook(params.url)
        stored = self._push_config(call, row.task_id, params)
        encoded = _codec.encode(stored)
        await self.store.put_push_config(call.tenant, row.task_id, stored.id, encoded, call.version)
        return stored

    async def get_task_push_notification_config(
        self, params: t.GetTaskPushNotificationConfigRequest, call: Call
    ) -> t.TaskPushNotificationConfig:
        self._require_push()
        row = await self._visible(call, params.task_id, "GetTaskPushNotificationConfig")
        stored = None
        if _id_problem(params.id) is None:
            stored = await self.store.get_push_config(call.tenant, row.task_id, params.id)
        if stored is None:
            raise TaskNotFound(f"push config {params.id!r} not found", taskId=row.task_id)
        return _codec.decode(t.TaskPushNotificationConfig, stored)

    async def list_task_push_notification_configs(
        self, params: t.ListTaskPushNotificationConfigsRequest, call: Call
    ) -> t.ListTaskPushNotificationConfigsResponse:
        self._require_push()
        row = await self._visible(call, params.task_id, "ListTaskPushNotificationConfigs")
        configs = await self.store.list_push_configs(call.tenant, row.task_id)
        return t.ListTaskPushNotificationConfigsResponse(
            configs=[_codec.decode(t.TaskPushNotificationConfig, c) for _, c in configs]
        )

    async def delete_task_push_notification_config(
        self, params: t.DeleteTaskPushNotificationConfigRequest, call: Call
    ) -> t.Empty:
        self._require_push()
        row = await self._visible(call, params.task_id, "DeleteTaskPushNotificationConfig")
        if _id_problem(params.id) is None:  # (another is in no store: nothing to delete)
            await self.store.delete_push_config(call.tenant, row.task_id, params.id)
        return t.Empty()

    # -- cards ------------------------------------------------------------------------

    async def get_extended_agent_card(
        self, params: t.GetExtendedAgentCardRequest, call: Call
    ) -> t.AgentCard:
        if self.card.capabilities.extended_agent_card is not True:
            raise UnsupportedOperation("this agent has no extended card")
        if self.extended_card is None:
            raise ExtendedAgentCardNotConfigured()
        return self.extended_card


#: the longest id a client may choose (a task's, context's, message's, push config's)
MAX_ID = 1024


def _id_problem(value: str) -> str | None:
    """What makes `value` unusable as an id in every store, if anything."""
    if len(value) > MAX_ID:
        return f"is longer than {MAX_ID} characters"
    if "\x00" in value:
        return "contains a NUL character"
    return None


def _check_message(message: t.Message) -> None:
    """-32602 naming each REQUIRED field of a client's message that is missing
    (`messageId`, `role`: ROLE_UNSPECIFIED is no role; at least one part)."""
    violations = []
    if not message.message_id:
        violations.append(("message.messageId", "required field is missing or empty"))
    if message.role is t.Role.ROLE_UNSPECIFIED:
        violations.append(("message.role", "required field is missing (or ROLE_UNSPECIFIED)"))
    if not message.parts:
        violations.append(("message.parts", "a message needs at least one part"))
    if violations:
        raise bad_request(violations)


def _history_length(
    value: int | msgspec.UnsetType, field: str, violations: list[tuple[str, str]] | None = None
) -> int | None:
    """`historyLength`: unset = all (None), 0 = none, n = the last n; a negative one is
    -32602 (added to `violations`, when given, instead of raised)."""
    if not isinstance(value, int) or value >= 0:
        return None if value is msgspec.UNSET else value
    if violations is None:
        raise bad_request([(field, "must not be negative")])
    violations.append((field, "must not be negative"))
    return None


def _check_ids(*fields: tuple[str, str]) -> None:
    """-32602 for client-chosen ids no store can hold alike (PostgreSQL's TEXT takes no
    NUL, and its indexes no very long value)."""
    violations = [(name, p) for name, value in fields if (p := _id_problem(value)) is not None]
    if violations:
        raise bad_request(violations)


_store_users: dict[int, int] = {}


async def _open_shared(store: TaskStore) -> None:
    """Open a store once however many servers (tenants) share it (its `open` is
    idempotent, also when they start at the same time)."""
    await store.open()
    _store_users[id(store)] = _store_users.get(id(store), 0) + 1


async def _close_shared(store: TaskStore) -> None:
    users = _store_users.get(id(store), 1) - 1
    if users <= 0:
        _store_users.pop(id(store), None)
        await store.close()
    else:
        _store_users[id(store)] = users


def _context_of(
    live: LiveTask,
    call: Call | None = None,
    message: t.Message | None = None,
    *,
    configuration: t.SendMessageConfiguration | None = None,
    metadata: dict[str, object] | None = None,
) -> RequestContext:
    """The executor's context for `live`'s task and `call` (None: for its owner); without
    a `message` (a cancel, a re-run after a restart) its last user message stands in."""
    if message is None:
        assert live.task is not None
        history = reversed(live.task.history)
        message = next((m for m in history if m.role is t.Role.ROLE_USER), t.Message())
    call = call or Call(principal=live.owner, tenant=live.tenant)
    return RequestContext(
        message=message,
        task_id=live.task_id,
        context_id=live.context_id,
        task=live.task,
        principal=call.principal,
        tenant=call.tenant,
        extensions=call.extensions,
        headers=call.headers,
        configuration=configuration,
        metadata=metadata,
    )


def _encode_token(status_time: int, task_id: str) -> str:
    return base64.urlsafe_b64encode(f"{status_time}:{task_id}".encode()).decode().rstrip("=")


def _decode_token(token: str) -> tuple[int, str] | None:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        time, _, task_id = raw.partition(":")
        micros = int(time)
        if not -(2**62) < micros < 2**62:  # (an agent may date a status before 1970)
            return None
        return micros, task_id
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
