"""A bidirectional JSON-RPC connection over a byte stream pair.

Theory of operation. Three tasks per connection:

- the *reader* reads chunks and feeds them to the sans-IO `jsonrpc.Peer`, which holds
  every wire rule (framing, classification, batches, duplicate ids, cancels, the
  ordering of answers behind notifications) and says what they are: a request starts
  its own handler task (requests run concurrently); a notification with nothing queued
  ahead of it is handled there, as far as its handler goes without waiting; any other,
  the rest of a handler that waits, and a response the peer queues behind notifications
  go to the ordered inbox; a response it does not queue, or has nothing queued ahead of
  it, is delivered at once; bad input is answered at once with its error.
- the *inbox worker* handles the inbox one item at a time in arrival order, so a caller
  never sees a response before the notifications that arrived ahead of it were handled.
- the *writer* drains the outgoing queue: everything queued goes out in one write, then
  it awaits `drain()` (a lone line, our one pending request or the answer to the one
  request in flight, goes out at once with what is queued, if the writer is idle). Every
  queue is bounded in items and bytes; a full outgoing queue
  makes senders wait, a full inbox makes the reader wait (and so the peer, through the
  pipe).

Backpressure rule. Output not yet written (queued, or handed to the transport and not
yet drained) is bounded in lines (`max_outgoing`) and bytes (`max_outgoing_bytes`).
Our own requests and notifications wait for room; answers and error replies cannot
wait (their handler is over), so they go past the bound, and while the output is over
it the reader stops reading: it stops at the next request (answers and notifications
ahead of it are still delivered), starts it and reads on only once the writer has
brought the output down to half the bound. The kernel pipe then fills and
the peer's writes block: end to end, memory stays bounded however fast the peer
writes. (The reader also yields to the handlers it started every `_YIELD_EVERY`
requests, so their answers count before it reads on.) We stop reading only because the
peer does not read what we write; while we are paused, the answers to our own requests
wait in the pipe too. So a peer must read what we write whether or not its own writes
to us make progress: one that stops reading until its writes go through deadlocks with
us, and that is its fault. Two peers that both keep flooding each other with requests
without reading the answers are both at fault, and both stall. The number of handlers
in flight is not bounded: a handler waiting on the peer must get its answer, so
reading never waits for handlers to end.

Close: EOF from the peer stops the reader; handlers already running finish and their
answers are written, queued notifications are handled, then the writer closes. With
`cancel_at_eof` (an agent on stdio: EOF means its client is gone), the handlers still
running once every request read before the EOF has had its first step are cancelled
instead and answer -32800, and the output gets no more than `_EOF_STALL` seconds
without progress (a peer that closed its end of our input but does not read either
would otherwise keep us, our writes blocked, for ever).
Requests we are still awaiting fail with `ConnectionClosed`. `aclose()` is the local
close: it cancels handlers, fails pending requests, flushes what is queued and waits
for every task, so nothing is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import types
from collections import deque
from collections.abc import Awaitable, Callable, Generator
from typing import Protocol, TypeVar, cast

import msgspec

from interlink.jsonrpc import (
    DEFAULT_CODEC,
    AnyRequest,
    CancelRequested,
    ConnectionClosed,
    Decoded,
    ErrorResponse,
    Notification,
    NotificationType,
    Peer,
    Profile,
    ProtocolMisuse,
    Queued,
    Reply,
    Request,
    RequestCancelled,
    RequestId,
    RequestType,
    RpcError,
    SuccessResponse,
    ValueCodec,
    decode_params,
    decode_result,
)

logger = logging.getLogger("interlink.aio")

#: the connection whose notification handler runs in this context (see `request_raw`)
_handling: contextvars.ContextVar[Connection | None] = contextvars.ContextVar(
    "interlink_handling", default=None
)

P = TypeVar("P")
R = TypeVar("R")

RequestHandler = Callable[[P], Awaitable[R]]
NotificationHandler = Callable[[P], Awaitable[None]]
RawRequestHandler = Callable[[str, msgspec.Raw | msgspec.UnsetType], Awaitable[object]]
RawNotificationHandler = Callable[[str, msgspec.Raw | msgspec.UnsetType], Awaitable[None]]

_Response = SuccessResponse[msgspec.Raw] | ErrorResponse

_READ_CHUNK = 256 * 1024
#: the reader lets the handlers it started run after this many requests in a row
_YIELD_EVERY = 64
#: `cancel_at_eof`: how long the output may go without progress once the input has ended
#: before what is left of it is dropped (the peer is gone and does not read)
_EOF_STALL = 0.5
_UNSET = msgspec.UNSET
#: what `next` gives for a handler that ended in its first step
_STEPPED = object()


class ByteReader(Protocol):
    """What the connection reads from (an `asyncio.StreamReader` fits)."""

    async def read(self, n: int = -1, /) -> bytes: ...


class ByteWriter(Protocol):
    """What the connection writes to (an `asyncio.StreamWriter` fits)."""

    def write(self, data: bytes, /) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...

    async def wait_closed(self) -> None: ...


class _RequestEntry(msgspec.Struct, frozen=True):
    params: type[object]
    handler: Callable[[object], Awaitable[object]]


class _NotificationEntry(msgspec.Struct, frozen=True):
    params: type[object]
    handler: Callable[[object], Awaitable[None]]


_Note = Notification[msgspec.Raw] | Decoded
_InboxItem = _Note | _Response | Awaitable[None]


@types.coroutine
def _resume(
    step: Generator[object, object, object], waits_on: object
) -> Generator[object, object, None]:
    """The rest of an awaitable already stepped once, which waits on `waits_on`: what
    `await` does (what it waits on goes up to the task, what the task sends or throws,
    cancellation included, goes down to it)."""
    while True:
        try:
            sent = yield waits_on
        except BaseException as exc:
            try:
                waits_on = step.throw(exc)
            except StopIteration:
                return
        else:
            try:
                waits_on = step.send(sent)
            except StopIteration:
                return


class Connection:
    """One JSON-RPC peer: send requests and notifications, serve the peer's.

    Use as `async with Connection(reader, writer, profile=...) as conn:`; register
    handlers before entering (or before the peer can send them).
    """

    def __init__(
        self,
        reader: ByteReader,
        writer: ByteWriter,
        *,
        profile: Profile | None = None,
        max_outgoing: int = 1024,
        max_outgoing_bytes: int = 4 * 1024 * 1024,
        max_inbox: int = 1024,
        max_inbox_bytes: int = 16 * 1024 * 1024,
        codec: ValueCodec = DEFAULT_CODEC,
        name: str = "jsonrpc",
        cancel_at_eof: bool = False,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.profile = profile or Profile()
        self.codec = codec
        self.name = name
        self._requests: dict[str, _RequestEntry] = {}
        self._notifications: dict[str, _NotificationEntry] = {}
        self._fallback_request: RawRequestHandler | None = None
        self._fallback_notification: RawNotificationHandler | None = None
        self._admit: Callable[[str], Callable[[], None] | None] | None = None
        self._on_invalid: Callable[[bytes, int, RpcError], None] | None = None
        self._peer: Peer[asyncio.Future[_Response], asyncio.Task[None]] = Peer(self.profile, codec)
        #: the peer's requests being served (the peer's table: id -> handler task)
        self._in_flight = self._peer.in_flight
        self._cancelled_by_peer: set[asyncio.Task[None]] = set()
        self._outq: deque[bytes] = deque()
        self._max_outgoing = max_outgoing
        self._max_outgoing_bytes = max_outgoing_bytes
        #: bytes queued plus bytes handed to the transport and not yet drained
        self._out_bytes = 0
        self._out_ready = asyncio.Event()
        #: set while the output is under the bound: the reader may read (see the module doc)
        self._out_room = asyncio.Event()
        self._out_room.set()
        #: senders waiting for room, FIFO, with their line (queued for them when it fits)
        self._senders: deque[tuple[asyncio.Future[bool], bytes]] = deque()
        self.cancel_at_eof = cancel_at_eof
        self._inbox: deque[_InboxItem] = deque()
        self._max_inbox = max_inbox
        self._max_inbox_bytes = max_inbox_bytes
        self._inbox_sizes: deque[int] = deque()  # each item's size in bytes, in step
        self._inbox_bytes = 0
        self._inbox_ready = asyncio.Event()
        self._inbox_space = asyncio.Event()
        self._inbox_finished = False
        #: the inbox worker is handling an item (the reader may not hand out the next)
        self._inbox_busy = False
        #: request handlers started and not yet run: a notification read after them is
        #: handled after their first step (the reader hands it to the inbox worker)
        self._unstarted = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._reading = False
        #: the writer runs (set on start, cleared as it ends)
        self._writing = False
        self._closing = False
        self.close_timeout = 5.0
        self._close_reason = "connection closed"
        self._closed = asyncio.Event()
        self._drains = 0  # writes drained so far (the `cancel_at_eof` watch looks at it)
        #: the writer waits for lines (nothing queued or undrained: one may be written at once)
        self._parked = False
        #: bytes written at once that the transport holds, for the writer to drain
        self._undrained = 0
        #: a `_flush` is scheduled (the lines queued while the writer is idle go then)
        self._flushing = False
        #: ... and the lines queued meanwhile may simply gather for it, as long as they fit:
        #: the writer is parked, nothing is undrained, no sender waits, not closing
        #: (cleared as soon as any of that may no longer hold)
        self._gathering = False
        self._flush_context = contextvars.Context()

    # -- registration -----------------------------------------------------------------

    def on_request(self, method: RequestType[P, R], handler: RequestHandler[P, R]) -> None:
        self._requests[method.method] = _RequestEntry(
            cast("type[object]", method.params),
            cast("Callable[[object], Awaitable[object]]", handler),
        )

    def on_notification(self, method: NotificationType[P], handler: NotificationHandler[P]) -> None:
        self._notifications[method.method] = _NotificationEntry(
            cast("type[object]", method.params),
            cast("Callable[[object], Awaitable[None]]", handler),
        )
        self._peer.decode_notifications({m: e.params for m, e in self._notifications.items()})

    def on_unknown_request(self, handler: RawRequestHandler | None) -> None:
        """Handler for requests with no registered method (default: -32601)."""
        self._fallback_request = handler

    def admit_requests(self, check: Callable[[str], Callable[[], None] | None] | None) -> None:
        """Check each request's method as it arrives, before any handler runs; raising
        `RpcError` answers the request with it (a protocol's lifecycle gate). What it
        returns, if anything, is called once the request is over, however it ended
        (answered, failed, refused by its params, cancelled before it started)."""
        self._admit = check

    def on_invalid_input(self, handler: Callable[[bytes, int, RpcError], None] | None) -> None:
        """Called with each incoming line that is not a message (its first bytes, as many
        as were kept, its size, and the error it is answered with), so that a peer writing
        something else on the stream can be told about (a stray print on an agent's stdout)."""
        self._on_invalid = handler

    def _report_invalid(self, head: bytes, size: int, error: RpcError) -> None:
        if self._on_invalid is not None:
            try:
                self._on_invalid(head, size, error)
            except Exception:
                logger.exception("%s: the on_invalid_input handler failed", self.name)

    def answer_this_task_directly(self) -> None:
        """Deliver the answers to the requests the calling task sends from now on as they
        arrive, ahead of the notifications queued before them, as for a notification
        handler (see `request_raw`): for a request handler that queued notifications
        wait for, such as a protocol's `initialize` (waiting behind them: a deadlock)."""
        _handling.set(self)

    def on_unknown_notification(self, handler: RawNotificationHandler | None) -> None:
        """Handler for notifications with no registered method (default: ignored)."""
        self._fallback_notification = handler

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        if self._tasks:
            raise ProtocolMisuse("connection already started")
        self._reading = True
        self._writing = True
        # Request handlers run in copies of the caller's context; notification handlers in
        # one context shared by the reader and the inbox worker (either may run them),
        # where what they ask is answered directly (see `request_raw`).
        self._request_context = contextvars.copy_context()
        self._loop = asyncio.get_running_loop()
        handling = contextvars.copy_context()
        handling.run(_handling.set, self)
        self._tasks = [
            asyncio.create_task(self._read_loop(), name=f"{self.name}-reader", context=handling),
            asyncio.create_task(self._inbox_loop(), name=f"{self.name}-inbox", context=handling),
            asyncio.create_task(self._write_loop(), name=f"{self.name}-writer"),
        ]

    async def __aenter__(self) -> Connection:
        if not self._tasks:
            self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def wait_closed(self) -> None:
        """Until the connection has ended (peer EOF, transport error, or `aclose`)."""
        await self._closed.wait()

    async def aclose(self) -> None:
        """Close locally: cancel handlers, fail pending requests, flush what is queued
        (for at most `close_timeout` seconds) and wait for every task."""
        if not self._tasks:
            self._closing = True
            self._close_reason = "connection closed locally"
            self._writer.close()
            with contextlib.suppress(OSError, RuntimeError):
                await self._writer.wait_closed()
            self._closed.set()
            return
        self._shut_down("connection closed locally")
        reader, inbox, writer = self._tasks
        try:
            await asyncio.wait_for(asyncio.shield(writer), self.close_timeout)
        except TimeoutError:
            writer.cancel()
        except BaseException:
            writer.cancel()
            raise
        finally:
            await asyncio.gather(reader, inbox, writer, *self._serving(), return_exceptions=True)
            self._closed.set()

    # -- sending ----------------------------------------------------------------------

    async def request(self, method: RequestType[P, R], params: P) -> R:
        """Send a request and await its typed result; an error answer raises `RpcError`."""
        result = await self.request_raw(method.method, params)
        return decode_result(result, method.result, self.codec)

    async def request_raw(self, method: str, params: object = None) -> msgspec.Raw:
        """Send a request by name; the result comes back undecoded."""
        if self._closing or not self._reading:
            raise ConnectionClosed(self._close_reason)
        future: asyncio.Future[_Response] = asyncio.get_running_loop().create_future()
        # Sent by a notification handler that waits for the answer: it is delivered at
        # once, not after the notifications behind that handler (a deadlock).
        id, line = self._peer.request(method, params, future, direct=_handling.get() is self)
        try:
            if not self._queue_now(line, len(self._peer.pending) == 1):
                await self._send(line)  # waits for room, or raises ConnectionClosed
            response = await future
        except asyncio.CancelledError:
            cancel = self._peer.give_up(id)
            if cancel is not None and not self._closing:
                self._queue(cancel)  # (a small protocol message: it does not wait)
            raise
        if type(response) is ErrorResponse:
            raise RpcError.from_error_object(response.error)
        return cast("SuccessResponse[msgspec.Raw]", response).result

    async def notify(self, method: NotificationType[P], params: P) -> None:
        await self.notify_raw(method.method, params)

    async def notify_raw(self, method: str, params: object = None) -> None:
        waiting = self.queue_notification(method, params)
        if waiting is not None:
            await waiting

    def queue_notification(self, method: str, params: object = None) -> Awaitable[None] | None:
        """`notify_raw` without a coroutine of its own: None when the notification is
        queued already, else what to await until it is (raises `ConnectionClosed`)."""
        return self._queue_notification(self._peer.notification(method, params))

    def notifier(self, method: str) -> Callable[[object], Awaitable[None] | None]:
        """`queue_notification` of `method`, with params (not None), as one call."""
        head = self._peer.notification_head(method)
        encode = self.codec.encode
        queue = self._queue_notification

        def notify(params: object) -> Awaitable[None] | None:
            return queue(head + encode(params) + b"}\n")

        return notify

    def _queue_notification(self, line: bytes) -> Awaitable[None] | None:
        if self._gathering:  # (the hot path of an agent's updates: `_queue_now`'s case,
            # while the queue stays under its bounds: the line that reaches one goes there)
            outq = self._outq
            out_bytes = self._out_bytes + len(line)
            if out_bytes < self._max_outgoing_bytes and len(outq) < self._max_outgoing - 1:
                outq.append(line)
                self._out_bytes = out_bytes
                return None
        if self._queue_now(line):
            return None
        return self._send(line)  # waits for room, or raises ConnectionClosed

    def _queue_now(self, line: bytes, alone: bool = False) -> bool:
        """Queue our line if it fits now (False: it must wait, see `_send`)."""
        size = len(line)
        out_bytes = self._out_bytes
        if (
            self._closing
            or self._senders
            or len(self._outq) >= self._max_outgoing
            or (out_bytes and out_bytes + size > self._max_outgoing_bytes)
        ):
            return False
        if not self._writing:
            raise ConnectionClosed(self._close_reason)
        if self._flushing and not alone and self._parked and not self._undrained:
            # (the common case, as `_queue` has it: lines gather for the flush scheduled)
            self._outq.append(line)
            self._out_bytes = out_bytes = out_bytes + size
            if out_bytes >= self._max_outgoing_bytes or len(self._outq) >= self._max_outgoing:
                self._out_room.clear()
            return True
        self._queue(line, alone)
        return True

    def _fits(self, size: int) -> bool:
        """Whether a line of `size` bytes may be queued now (one larger than the byte
        bound goes alone)."""
        return len(self._outq) < self._max_outgoing and (
            self._out_bytes == 0 or self._out_bytes + size <= self._max_outgoing_bytes
        )

    def _queue(self, line: bytes, alone: bool = False) -> None:
        """Queue a line; past the bound, the reader pauses. While the writer is idle,
        what is queued goes to the transport without it: a line `alone` at once with
        what is queued ahead of it, others together once this loop iteration is over
        (what the transport holds of them is the writer's to drain)."""
        outq = self._outq
        outq.append(line)
        self._out_bytes += len(line)
        if self._parked and not self._undrained and not self._senders:
            if alone:
                self._write_idle()
                return
            if not self._flushing:
                self._flushing = True
                self._gathering = True
                self._loop.call_soon(self._flush, context=self._flush_context)
        elif len(outq) == 1:  # (the writer waits only on an empty queue)
            self._out_ready.set()
        if self._out_bytes >= self._max_outgoing_bytes or len(outq) >= self._max_outgoing:
            self._out_room.clear()

    def _flush(self) -> None:
        self._flushing = self._gathering = False
        if not self._outq:
            return
        if self._parked and not self._undrained and not self._senders:
            self._write_idle()
        else:
            self._out_ready.set()

    def _write_idle(self) -> None:
        """Hand what is queued to the transport while the writer is idle (`_out_bytes`
        counts only these then)."""
        self._gathering = False
        outq = self._outq
        data = outq[0] if len(outq) == 1 else b"".join(outq)
        outq.clear()
        writer = self._writer
        try:
            writer.write(data)
        except (OSError, RuntimeError) as exc:
            self._transport_lost(f"write failed: {exc!r}")
            return
        if (
            isinstance(writer, asyncio.StreamWriter)
            and not writer.transport.get_write_buffer_size()
        ):
            self._out_bytes = 0
            self._out_room.set()
        else:
            self._undrained = self._out_bytes
            self._out_ready.set()

    async def _send(self, line: bytes) -> None:
        """Queue a line once there is room for it, behind the senders waiting already."""
        if self._closing or not self._writing:
            raise ConnectionClosed(self._close_reason)
        if not self._senders and self._fits(len(line)):
            self._queue(line)
            return
        room: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        waiter = (room, line)
        self._gathering = False
        self._senders.append(waiter)
        try:
            queued = await room
        except asyncio.CancelledError:
            if waiter in self._senders:  # (once let in, the line is on its way)
                self._senders.remove(waiter)
                self._let_senders_in()  # the next one may fit where this did not
            raise
        if not queued:
            raise ConnectionClosed(self._close_reason)

    def _let_senders_in(self) -> None:
        """Queue the lines of waiting senders, in order, while they fit (when closing,
        wake them all to fail)."""
        senders = self._senders
        while senders:
            room, line = senders[0]
            if room.done():  # cancelled; its sender removes it
                senders.popleft()
                continue
            if self._closing:
                senders.popleft()
                room.set_result(False)
            elif self._fits(len(line)):
                senders.popleft()
                self._queue(line)
                room.set_result(True)
            else:
                break

    async def _write_loop(self) -> None:
        outq = self._outq
        writer = self._writer
        try:
            while True:
                if not outq and not self._undrained:
                    if self._closing or (
                        not self._reading and not self._in_flight and self._inbox_finished
                    ):
                        break
                    self._out_ready.clear()
                    self._parked = True
                    await self._out_ready.wait()
                    self._parked = self._gathering = False
                    continue
                lines = list(outq)
                outq.clear()
                self._undrained = 0  # (a line written at once, held by the transport)
                writing = self._out_bytes  # (counted until drained, see the module doc)
                if self._senders:
                    self._let_senders_in()
                if lines:
                    writer.write(lines[0] if len(lines) == 1 else b"".join(lines))
                del lines
                await writer.drain()
                self._drains += 1
                self._out_bytes -= writing
                if self._senders:
                    self._let_senders_in()
                if self._out_bytes <= self._max_outgoing_bytes // 2 and (
                    len(outq) < self._max_outgoing // 2 or not outq
                ):
                    self._out_room.set()
        except (OSError, RuntimeError) as exc:
            self._transport_lost(f"write failed: {exc!r}")
        finally:
            self._writing = self._gathering = False
            self._closing = True
            self._let_senders_in()
            self._out_room.set()
            writer.close()
            with contextlib.suppress(OSError, RuntimeError):
                await writer.wait_closed()
            self._closed.set()

    # -- receiving --------------------------------------------------------------------

    async def _read_loop(self) -> None:
        """Read, feed the peer, act on what it says: the one path every message takes."""
        peer = self._peer
        reason = "peer closed the connection"
        room = self._out_room
        inbox = self._inbox
        step, step_note = self._step_decoded, self._step_note
        peer.step_notifications(step, step_note)  # (most are handled as they are read)
        started = 0  # requests started since the reader last let them run
        try:
            while True:
                data = await self._reader.read(_READ_CHUNK)
                stepped = 0  # notifications handled here (the peer is told once)
                for event in peer.receive(data) if data else peer.receive_eof():
                    kind = type(event)
                    if kind is Decoded or kind is Notification:
                        if (
                            step(event.method, event.params)  # type: ignore[union-attr]
                            if kind is Decoded
                            else step_note(event)  # type: ignore[arg-type]
                        ):  # (it was next up: it counts as handled, or as `handling` again)
                            stepped += 1
                            continue
                        params = event.params  # type: ignore[union-attr]
                        size = event.size if kind is Decoded else len(params or b"")  # type: ignore[union-attr,arg-type]
                        await self._enqueue(event, 64 + size)  # type: ignore[arg-type]
                    elif kind is Request:
                        if not room.is_set():  # the peer does not read: neither do we
                            await room.wait()
                            started = 0
                        self._start(event)  # type: ignore[arg-type]
                        started += 1
                        if started >= _YIELD_EVERY:  # their answers count before we read on
                            await asyncio.sleep(0)
                            started = 0
                    elif kind is SuccessResponse or kind is ErrorResponse:
                        self._resolve(event)  # type: ignore[arg-type]
                    elif kind is Queued:
                        response = event.response  # type: ignore[union-attr]
                        if not inbox and not self._inbox_busy:  # nothing ahead of it
                            self._resolve(response)
                            peer.handled()
                            continue
                        size = len(getattr(response, "result", b""))
                        await self._enqueue(response, 64 + size)
                    elif kind is CancelRequested:
                        self._cancel_request(event.id)  # type: ignore[union-attr]
                    else:
                        reply = cast(Reply, event)
                        if reply.error is not None:
                            self._report_invalid(reply.head, reply.size, reply.error)
                        await self._send(reply.line)
                if stepped:
                    peer.handled(stepped)
                if not data:
                    break
        except (OSError, RuntimeError) as exc:
            reason = f"read failed: {exc!r}"
        except ConnectionClosed as exc:
            reason = exc.reason
        finally:
            peer.step_notifications(None)  # (no cycle left through the peer)
            self._input_ended(reason)

    def _step_decoded(self, method: str, params: object) -> bool:
        """In the reader: a notification decoded with its envelope, if it is next up
        (nothing ahead of it waits), handled as far as its handler goes without waiting
        (most go all the way; the rest goes to the inbox worker, the peer told it is
        `handling` it); False: it is not next up. Stepped with `next`, one that ends
        raises no `StopIteration` (which costs more than its step)."""
        if self._inbox or self._inbox_busy or self._unstarted:
            return False
        try:
            handling = self._notifications[method].handler(params).__await__()
            waits_on = next(handling, _STEPPED)
        except Exception as exc:
            self._failed(method, exc)
            return True
        except asyncio.CancelledError:  # (it awaited what was cancelled: it is over)
            return True
        if waits_on is not _STEPPED:
            self._handle_later(method, handling, waits_on)
        return True

    async def _enqueue(self, item: _InboxItem, size: int) -> None:
        """Queue for the inbox worker, waiting while the inbox is full (in items or
        bytes; an item larger than the byte bound goes in alone)."""
        inbox = self._inbox
        while inbox and (
            len(inbox) >= self._max_inbox or self._inbox_bytes + size > self._max_inbox_bytes
        ):
            self._inbox_space.clear()
            await self._inbox_space.wait()
        inbox.append(item)
        self._inbox_sizes.append(size)
        self._inbox_bytes += size
        self._inbox_ready.set()

    def _resolve(self, message: _Response) -> None:
        future = self._peer.resolve(message)
        if future is None:
            logger.warning("%s: response to unknown request id %r ignored", self.name, message.id)
        elif not future.done():
            future.set_result(message)

    async def _inbox_loop(self) -> None:
        inbox, sizes, ready = self._inbox, self._inbox_sizes, self._inbox_ready
        space = self._inbox_space
        handled = self._peer.handled
        while True:
            if not inbox:
                if not self._reading:
                    break
                ready.clear()
                await ready.wait()
                continue
            item = inbox.popleft()
            self._inbox_bytes -= sizes.popleft()
            space.set()
            self._inbox_busy = True
            kind = type(item)
            if kind is Notification or kind is Decoded:
                await self._handle(cast(_Note, item))
            elif kind is SuccessResponse or kind is ErrorResponse:
                self._resolve(cast(_Response, item))
            else:  # a handler the reader started
                await cast("Awaitable[None]", item)
            self._inbox_busy = False
            handled()
        self._fail_pending(self._close_reason)
        self._inbox_finished = True
        self._wake_writer()

    def _step_note(self, note: Notification[msgspec.Raw]) -> bool:
        """`_step_decoded` for a notification not decoded with its envelope."""
        if self._inbox or self._inbox_busy or self._unstarted:
            return False
        handling = self._handle(note).__await__()  # (`_handle` raises no Exception)
        try:
            waits_on = next(handling, _STEPPED)
        except asyncio.CancelledError:  # (it awaited what was cancelled: it is over)
            return True
        if waits_on is not _STEPPED:
            self._handle_later(note.method, handling, waits_on)
        return True

    def _handle_later(
        self, method: str, handling: Generator[object, object, object], waits_on: object
    ) -> None:
        """The rest of a notification's handler, which waits on `waits_on`, goes to the
        inbox worker, ahead of what follows (the peer counts it as handed out until the
        worker is done with it)."""
        self._peer.handling()
        self._inbox.append(self._handle_rest(method, _resume(handling, waits_on)))
        self._inbox_sizes.append(0)
        self._inbox_ready.set()

    async def _handle(self, note: _Note) -> None:
        try:
            entry = self._notifications.get(note.method)
            if entry is not None:
                params = note.params
                if type(note) is Notification:  # (not `Decoded` by the peer)
                    params = decode_params(note.params, entry.params, self.codec)
                await entry.handler(params)
            elif self._fallback_notification is not None:
                await self._fallback_notification(note.method, note.params)  # type: ignore[arg-type]
        except Exception as exc:
            self._failed(note.method, exc)

    async def _handle_rest(self, method: str, rest: Awaitable[None]) -> None:
        try:
            await rest
        except Exception as exc:
            self._failed(method, exc)

    def _failed(self, method: str, exc: Exception) -> None:
        if isinstance(exc, RpcError):
            logger.warning("%s: notification %s rejected: %s", self.name, method, exc)
        else:
            logger.error("%s: notification handler for %s failed", self.name, method, exc_info=exc)

    # -- serving requests -------------------------------------------------------------

    def _start(self, request: AnyRequest) -> None:
        release = None
        if self._admit is not None:
            try:
                release = self._admit(request.method)
            except RpcError as exc:
                self._answered(self._peer.refuse(request.id, exc))
                return
        task = asyncio.create_task(self._serve(request), context=self._request_context.copy())
        self._unstarted += 1
        if release is not None:
            task.add_done_callback(lambda _: release())
        self._in_flight[request.id] = task

    async def _serve(self, request: AnyRequest) -> None:
        """Run the handler and answer; a peer's cancel answers -32800."""
        self._unstarted -= 1
        id = request.id
        try:
            entry = self._requests.get(request.method)
            if entry is not None:
                result = await entry.handler(
                    decode_params(request.params, entry.params, self.codec)
                )
            elif self._fallback_request is not None:
                result = await self._fallback_request(request.method, request.params)
            else:
                raise RpcError.method_not_found(request.method)
            line = self._peer.answer(id, result)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is None or task not in self._cancelled_by_peer:
                self._peer.refuse(id, RequestCancelled())  # (no longer in flight; not sent)
                self._wake_writer()
                raise
            self._cancelled_by_peer.discard(task)
            task.uncancel()
            line = self._peer.refuse(id, RequestCancelled())
        except RpcError as exc:
            if exc.from_peer:  # not this request's answer: it becomes -32603
                logger.warning(
                    "%s: %s failed on a call to the peer: %r", self.name, request.method, exc
                )
            line = self._peer.refuse(id, exc)
        except Exception as exc:
            logger.exception("%s: handler for %s failed", self.name, request.method)
            line = self._peer.refuse(id, exc)
        if self._cancelled_by_peer:  # a handler that outlived the peer's cancel
            self._cancelled_by_peer.discard(cast("asyncio.Task[None]", asyncio.current_task()))
        self._answered(line)

    def _answered(self, line: bytes | None) -> None:
        # A finished handler cannot wait for room: the answer is queued past the bound,
        # and the reader stops reading until the output is down again (module doc).
        if line is not None and not self._closing:
            self._queue(line, not self._in_flight)
        self._wake_writer()

    def _cancelled_before_start(self, id: RequestId | None, task: asyncio.Task[None]) -> None:
        """Done callback set by a peer's cancel: a task cancelled before its coroutine
        ever ran has not answered (one that ran answered -32800 itself)."""
        if task.cancelled() and task in self._cancelled_by_peer:
            self._cancelled_by_peer.discard(task)
            self._unstarted -= 1
            self._answered(self._peer.refuse(id, RequestCancelled()))

    def _cancel_request(self, id: RequestId | None) -> None:
        """Cancel the handler of request `id`, which then answers -32800."""
        task = self._in_flight.get(id)
        if task is not None and not task.done() and task not in self._cancelled_by_peer:
            self._cancelled_by_peer.add(task)
            task.add_done_callback(lambda done: self._cancelled_before_start(id, done))
            task.cancel()

    def _cancel_at_eof(self) -> None:
        """`cancel_at_eof`: the handlers still running after their first step are
        cancelled (they answer -32800, should the peer still read)."""
        for id in list(self._in_flight):
            self._cancel_request(id)

    def _serving(self) -> list[asyncio.Task[None]]:
        return [task for task in self._in_flight.values() if task is not None]

    # -- closing ----------------------------------------------------------------------

    def _input_ended(self, reason: str) -> None:
        """No more input: what we await can no longer be answered; the rest finishes."""
        self._reading = False
        if not self._closing:
            self._close_reason = reason
        # an answer already read waits in the inbox behind notifications: it is delivered
        # (the inbox worker fails what is left once it has run dry)
        queued = frozenset(
            i.id for i in self._inbox if isinstance(i, SuccessResponse | ErrorResponse)
        )
        self._fail_pending(reason, queued)
        self._inbox_ready.set()
        self._inbox_space.set()
        if self.cancel_at_eof and self._in_flight and not self._closing:
            # after the first step of every handler started (those go first, in order):
            # one that answers without waiting still answers (a file as stdin)
            asyncio.get_running_loop().call_soon(self._cancel_at_eof)
        if self.cancel_at_eof:
            self._watch_output(-1)
        self._wake_writer()

    def _watch_output(self, drains: int) -> None:
        """`cancel_at_eof`, after EOF: drop the output (abort the transport) once it has
        made no progress for `_EOF_STALL` seconds; look again meanwhile."""
        if self._closed.is_set():
            return
        writer = self._writer
        if drains == self._drains and self._out_bytes and isinstance(writer, asyncio.StreamWriter):
            logger.warning(
                "%s: the peer closed our input and does not read: %d bytes of output dropped",
                self.name,
                self._out_bytes,
            )
            writer.transport.abort()  # (the writer then ends; nothing is waiting on it)
            return
        asyncio.get_running_loop().call_later(_EOF_STALL, self._watch_output, self._drains)

    def _wake_writer(self) -> None:
        if self._closing or not self._reading:
            self._out_ready.set()

    def _shut_down(self, reason: str) -> None:
        """Stop everything but the writer, which flushes what is queued and closes."""
        self._gathering = False
        if not self._closing:
            self._closing = True
            self._close_reason = reason
        self._fail_pending(reason)
        for task in (self._tasks[0], self._tasks[1], *self._serving()):
            if not task.done():
                task.cancel()
        self._let_senders_in()
        self._out_ready.set()

    def _transport_lost(self, reason: str) -> None:
        self._outq.clear()
        self._out_bytes = 0
        self._shut_down(reason)

    def _fail_pending(self, reason: str, keep: frozenset[RequestId | None] = frozenset()) -> None:
        for future in self._peer.pending.drain(keep):
            if not future.done():
                future.set_exception(ConnectionClosed(reason))
