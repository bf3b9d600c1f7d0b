"""A bidirectional JSON-RPC connection over a byte stream pair.

Theory of operation. Three tasks per connection:

- the *reader* reads chunks, frames them into lines (`LineFramer`), decodes them
  (`jsonrpc.decode`) and dispatches: a request starts its own handler task (requests
  run concurrently); a notification or a response goes to the ordered inbox; bad input
  is answered at once with its error.
- the *inbox worker* handles notifications one at a time in arrival order and delivers
  responses to their awaiting callers in the same order, so a caller never sees a
  response before the notifications that arrived ahead of it were handled. When the
  inbox is empty and idle, a response is delivered directly (no extra hop).
- the *writer* drains the outgoing queue: everything queued goes out in one write, then
  it awaits `drain()`. Every queue is bounded in items and bytes; a full outgoing queue
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
import functools
import logging
import re
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar, cast

import msgspec

from interlink.jsonrpc import (
    DEFAULT_CODEC,
    AnyMessage,
    AnyRequest,
    Batch,
    BatchReply,
    ConnectionClosed,
    ErrorResponse,
    Invalid,
    InvalidRequest,
    LineFramer,
    Notification,
    NotificationType,
    Oversize,
    ParseError,
    PendingRequests,
    Profile,
    ProtocolMisuse,
    Request,
    RequestCancelled,
    RequestId,
    RequestType,
    RpcError,
    SuccessResponse,
    ValueCodec,
    decode,
    decode_params,
    decode_result,
    encode_line,
    oversize,
)

__all__ = [
    "ByteReader",
    "ByteWriter",
    "Connection",
    "NotificationHandler",
    "RawNotificationHandler",
    "RawRequestHandler",
    "RequestHandler",
]

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
_Answer = SuccessResponse[object] | ErrorResponse
_InboxItem = Notification[msgspec.Raw] | SuccessResponse[msgspec.Raw] | ErrorResponse

_READ_CHUNK = 256 * 1024
#: the reader lets the handlers it started run after this many requests in a row
_YIELD_EVERY = 64
#: `cancel_at_eof`: how long the output may go without progress once the input has ended
#: before what is left of it is dropped (the peer is gone and does not read)
_EOF_STALL = 0.5


class ByteReader(Protocol):
    """What the connection reads from (an `asyncio.StreamReader` fits)."""

    async def read(self, n: int = -1, /) -> bytes: ...


class ByteWriter(Protocol):
    """What the connection writes to (an `asyncio.StreamWriter` fits)."""

    def write(self, data: bytes, /) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...

    async def wait_closed(self) -> None: ...


class _Cancel(msgspec.Struct, frozen=True):
    request_id: RequestId = msgspec.field(name="requestId")


class _RequestEntry(msgspec.Struct, frozen=True):
    params: type[object]
    handler: Callable[[object], Awaitable[object]]


class _NotificationEntry(msgspec.Struct, frozen=True):
    params: type[object]
    handler: Callable[[object], Awaitable[None]]


_ANSWER_ID = re.compile(rb'^\s*\{(?:[^{}\[\]]*?,)?\s*"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")\s*,')
_ANSWER_KEY = re.compile(rb'"(?:result|error)"\s*:')
_REQUEST_KEY = re.compile(rb'"method"\s*:')


def _answer_id(head: bytes) -> RequestId | None:
    """The id of the response a too-large line starts, when its head shows one: a
    top-level `"id"` before its `"result"`/`"error"` and no `"method"` (None otherwise:
    the line is answered as any oversize message is)."""
    match = _ANSWER_ID.match(head)
    if match is None or _REQUEST_KEY.search(head):
        return None
    result = _ANSWER_KEY.search(head, match.end())
    if result is None:
        return None
    raw = match.group(1)
    if raw.startswith(b'"'):
        value = msgspec.json.decode(raw)
        return value if isinstance(value, str) else None
    return int(raw)


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
        self._pending: PendingRequests[asyncio.Future[_Response]] = PendingRequests()
        self._in_flight: dict[RequestId | None, asyncio.Task[None]] = {}
        self._batch_of: dict[RequestId | None, BatchReply] = {}
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
        self._inbox_busy = False
        self._inbox_finished = False
        #: ids of requests sent by a running notification handler (see `request_raw`)
        self._direct: set[object] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self._reading = False
        self._closing = False
        self.close_timeout = 5.0
        self._close_reason = "connection closed"
        self._closed = asyncio.Event()
        self._drains = 0  # writes drained so far (the `cancel_at_eof` watch looks at it)

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
        self._tasks = [
            asyncio.create_task(self._read_loop(), name=f"{self.name}-reader"),
            asyncio.create_task(self._inbox_loop(), name=f"{self.name}-inbox"),
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
            await asyncio.gather(
                reader, inbox, writer, *self._in_flight.values(), return_exceptions=True
            )
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
        id = self._pending.add(future)
        if _handling.get() is self:
            # Sent by a notification handler that waits for the answer: it is delivered
            # at once, not after the notifications behind that handler (a deadlock).
            self._direct.add(id)
        try:
            line = self.codec.encode_message(
                Request(id=id, method=method, params=msgspec.UNSET if params is None else params)
            )
        except BaseException:
            self._pending.forget(id)
            raise
        try:
            if self._closing or self._senders or not self._fits(len(line)):
                await self._send(line)  # waits for room, or raises ConnectionClosed
            elif self._writer_alive():
                self._queue(line)
            else:
                raise ConnectionClosed(self._close_reason)
            response = await future
        except asyncio.CancelledError:
            self._direct.discard(id)
            if self._pending.forget(id) and self.profile.cancel_method and not self._closing:
                self._send_control(
                    Notification(method=self.profile.cancel_method, params=_Cancel(id))
                )
            raise
        if type(response) is ErrorResponse:
            raise RpcError.from_error_object(response.error)
        return cast("SuccessResponse[msgspec.Raw]", response).result

    async def notify(self, method: NotificationType[P], params: P) -> None:
        await self.notify_raw(method.method, params)

    async def notify_raw(self, method: str, params: object = None) -> None:
        line = self.codec.encode_message(
            Notification(method=method, params=msgspec.UNSET if params is None else params)
        )
        if self._closing or self._senders or not self._fits(len(line)):
            await self._send(line)  # waits for room, or raises ConnectionClosed
        elif self._writer_alive():
            self._queue(line)
        else:
            raise ConnectionClosed(self._close_reason)

    def _writer_alive(self) -> bool:
        return bool(self._tasks) and not self._tasks[2].done()

    def _fits(self, size: int) -> bool:
        """Whether a line of `size` bytes may be queued now (one larger than the byte
        bound goes alone)."""
        return len(self._outq) < self._max_outgoing and (
            self._out_bytes == 0 or self._out_bytes + size <= self._max_outgoing_bytes
        )

    def _queue(self, line: bytes) -> None:
        """Queue a line for the writer; past the bound, the reader pauses."""
        self._outq.append(line)
        self._out_bytes += len(line)
        if self._out_bytes >= self._max_outgoing_bytes or len(self._outq) >= self._max_outgoing:
            self._out_room.clear()
        self._out_ready.set()

    async def _send(self, line: bytes) -> None:
        if self._closing or not self._writer_alive():
            raise ConnectionClosed(self._close_reason)
        if self._senders or not self._fits(len(line)):
            room: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            waiter = (room, line)
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
            return
        self._queue(line)

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

    def _send_control(self, message: object) -> None:
        """Queue a small protocol message without waiting for room (never from a loop)."""
        self._queue(encode_line(message))

    async def _write_loop(self) -> None:
        outq = self._outq
        writer = self._writer
        try:
            while True:
                if not outq:
                    if self._closing or (
                        not self._reading and not self._in_flight and self._inbox_finished
                    ):
                        break
                    self._out_ready.clear()
                    await self._out_ready.wait()
                    continue
                lines = list(outq)
                outq.clear()
                writing = self._out_bytes  # (counted until drained, see the module doc)
                if self._senders:
                    self._let_senders_in()
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
            self._closing = True
            self._let_senders_in()
            self._out_room.set()
            writer.close()
            with contextlib.suppress(OSError, RuntimeError):
                await writer.wait_closed()
            self._closed.set()

    # -- receiving --------------------------------------------------------------------

    async def _read_loop(self) -> None:
        framer = LineFramer(self.profile.max_message_size)
        reason = "peer closed the connection"
        batches = self.profile.batches
        cancel_method = self.profile.cancel_method
        inbox, max_inbox, ready = self._inbox, self._max_inbox, self._inbox_ready
        room = self._out_room
        started = 0  # requests started since the reader last let them run
        try:
            while True:
                data = await self._reader.read(_READ_CHUNK)
                if not data:
                    for frame in framer.close():
                        await self._receive(frame)
                    break
                for frame in framer.feed(data):
                    # the common cases without a coroutine per message; the rest below
                    message = decode(frame, batches=batches) if type(frame) is bytes else None
                    kind = type(message)
                    if (
                        kind is Notification
                        and len(inbox) < max_inbox
                        and self._inbox_bytes < self._max_inbox_bytes
                        and message.method != cancel_method  # type: ignore[union-attr]
                    ):
                        inbox.append(message)  # type: ignore[arg-type]
                        size = len(frame)  # type: ignore[arg-type]  # (a notification: bytes)
                        self._inbox_sizes.append(size)
                        self._inbox_bytes += size
                        ready.set()
                    elif kind is Request:
                        if not room.is_set():  # the peer does not read: neither do we
                            await room.wait()
                            started = 0
                        self._start_request(message, None)  # type: ignore[arg-type]
                        started += 1
                        if started >= _YIELD_EVERY:  # their answers count before we read on
                            await asyncio.sleep(0)
                            started = 0
                    elif (kind is SuccessResponse or kind is ErrorResponse) and not (
                        inbox or self._inbox_busy
                    ):
                        self._resolve(message)  # type: ignore[arg-type]
                    else:
                        await self._receive(frame, message)
        except (OSError, RuntimeError) as exc:
            reason = f"read failed: {exc!r}"
        except ConnectionClosed as exc:
            reason = exc.reason
        finally:
            self._input_ended(reason)

    async def _receive(
        self, frame: bytes | Oversize, decoded: AnyMessage | Invalid | Batch | None = None
    ) -> None:
        # isinstance narrows for the type checker; on this path it costs less than casts
        if isinstance(frame, Oversize):
            limit = self.profile.max_message_size
            answered = _answer_id(frame.head)
            future = None if answered is None else self._pending.pop(answered)
            if future is not None:  # an answer too large for us: its caller is told
                self._direct.discard(answered)
                if not future.done():
                    error = InvalidRequest(
                        "Message too large",
                        {"detail": f"the answer of {frame.size} bytes exceeds the limit",
                         "limit": limit},
                    )  # fmt: skip
                    future.set_result(error.to_response(answered))
                return  # (an answer is never answered)
            skipped = oversize(frame.size, limit)
            self._report_invalid(frame.head, frame.size, skipped.error)
            await self._send(encode_line(skipped.response()))
            return
        message = decode(frame, batches=self.profile.batches) if decoded is None else decoded
        if isinstance(message, Notification):
            if message.method == self.profile.cancel_method:
                self._cancel_in_flight(message.params)
            else:
                await self._enqueue(message)
        elif isinstance(message, Request):
            await self._out_room.wait()
            self._start_request(message, None)
        elif isinstance(message, SuccessResponse | ErrorResponse):
            await self._receive_response(message)
        elif isinstance(message, Invalid):
            self._report_invalid(frame, len(frame), message.error)
            await self._send(encode_line(message.response()))
        else:
            await self._receive_batch(message)

    async def _receive_batch(self, batch: Batch) -> None:
        expected = sum(1 for item in batch.items if type(item) is Request or type(item) is Invalid)
        reply = BatchReply(expected)
        for item in batch.items:
            kind = type(item)
            if kind is Request:
                await self._out_room.wait()
                self._start_request(cast(AnyRequest, item), reply)
            elif kind is Invalid and reply.add(cast(Invalid, item).response()):
                await self._send(encode_line(reply.responses))
            elif kind is Notification:
                await self._receive_notification(cast("Notification[msgspec.Raw]", item))
            elif kind is SuccessResponse or kind is ErrorResponse:
                await self._receive_response(cast(_Response, item))

    async def _receive_notification(self, message: Notification[msgspec.Raw]) -> None:
        if message.method == self.profile.cancel_method:
            self._cancel_in_flight(message.params)
            return
        await self._enqueue(message)

    async def _receive_response(self, message: _Response) -> None:
        if (self._inbox or self._inbox_busy) and message.id not in self._direct:
            await self._enqueue(message)
        else:
            self._resolve(message)

    async def _enqueue(self, item: _InboxItem) -> None:
        """Queue for the inbox worker, waiting while the inbox is full (in items or
        bytes; an item larger than the byte bound goes in alone)."""
        raw = item.params if type(item) is Notification else getattr(item, "result", b"")
        size = 64 + (0 if raw is msgspec.UNSET else len(cast(bytes, raw)))
        while self._inbox and (
            len(self._inbox) >= self._max_inbox or self._inbox_bytes + size > self._max_inbox_bytes
        ):
            self._inbox_space.clear()
            await self._inbox_space.wait()
        self._inbox.append(item)
        self._inbox_sizes.append(size)
        self._inbox_bytes += size
        self._inbox_ready.set()

    def _resolve(self, message: _Response) -> None:
        if self._direct:
            self._direct.discard(message.id)
        future = self._pending.pop(message.id)
        if future is None:
            logger.warning("%s: response to unknown request id %r ignored", self.name, message.id)
        elif not future.done():
            future.set_result(message)

    async def _inbox_loop(self) -> None:
        inbox = self._inbox
        while True:
            if not inbox:
                if not self._reading:
                    break
                self._inbox_ready.clear()
                await self._inbox_ready.wait()
                continue
            item = inbox.popleft()
            self._inbox_bytes -= self._inbox_sizes.popleft()
            self._inbox_space.set()
            if type(item) is Notification:
                self._inbox_busy = True
                handling = _handling.set(self)
                notification = item
                entry = self._notifications.get(notification.method)
                try:
                    if entry is not None:  # inline: the common case, one coroutine less
                        params = decode_params(notification.params, entry.params, self.codec)
                        await entry.handler(params)
                    else:
                        await self._handle_notification(notification)
                except RpcError as exc:
                    logger.warning(
                        "%s: notification %s rejected: %s", self.name, notification.method, exc
                    )
                except Exception:
                    logger.exception(
                        "%s: notification handler for %s failed", self.name, notification.method
                    )
                finally:
                    _handling.reset(handling)
                    self._inbox_busy = False
            else:
                self._resolve(cast(_Response, item))
        self._inbox_finished = True
        self._wake_writer()

    async def _handle_notification(self, message: Notification[msgspec.Raw]) -> None:
        entry = self._notifications.get(message.method)
        try:
            if entry is not None:
                await entry.handler(decode_params(message.params, entry.params, self.codec))
            elif self._fallback_notification is not None:
                await self._fallback_notification(message.method, message.params)
        except RpcError as exc:
            logger.warning("%s: notification %s rejected: %s", self.name, message.method, exc)
        except Exception:
            logger.exception("%s: notification handler for %s failed", self.name, message.method)

    # -- serving requests -------------------------------------------------------------

    def _start_request(self, request: AnyRequest, batch: BatchReply | None) -> None:
        if request.id in self._in_flight:
            error = InvalidRequest(data={"detail": f"request id {request.id!r} is in flight"})
            self._finish_request(error.to_response(request.id), batch)
            return
        release = None
        if self._admit is not None:
            try:
                release = self._admit(request.method)
            except RpcError as exc:
                self._finish_request(exc.to_response(request.id), batch)
                return
        task = asyncio.create_task(self._serve(request, batch))
        if release is not None:
            task.add_done_callback(lambda _: release())
        self._in_flight[request.id] = task
        if batch is not None:
            self._batch_of[request.id] = batch

    async def _serve(self, request: AnyRequest, batch: BatchReply | None) -> None:
        """Run the handler and answer; a `$/cancel_request` answers -32800."""
        task = asyncio.current_task()
        answer: _Answer | None = None
        try:
            answer = await self._answer(request)
        except asyncio.CancelledError:
            if task is None or task not in self._cancelled_by_peer:
                raise
            task.uncancel()
            answer = RequestCancelled().to_response(request.id)
        finally:
            if task is not None:
                self._cancelled_by_peer.discard(task)
            if self._in_flight.get(request.id) is task:
                del self._in_flight[request.id]
            self._batch_of.pop(request.id, None)
            if answer is None:
                self._wake_writer()
        self._finish_request(answer, batch)

    async def _answer(self, request: AnyRequest) -> _Answer:
        try:
            result = await self._call_handler(request)
        except RpcError as exc:
            if exc.from_peer:
                # An error the handler got from one of its own requests to the peer is
                # not this request's answer: passing its code on would mislead.
                logger.warning(
                    "%s: %s failed on a call to the peer: %r", self.name, request.method, exc
                )
                detail = {"detail": f"a request this handler made failed: {exc}"}
                return RpcError.internal_error(detail).to_response(request.id)
            # params that are not JSON (invalid UTF-8 inside): the line was not JSON,
            # so its id is not one we read (DECISIONS.md: invalid JSON -> id null)
            return exc.to_response(None if type(exc) is ParseError else request.id)
        except Exception:
            logger.exception("%s: handler for %s failed", self.name, request.method)
            return RpcError.internal_error().to_response(request.id)
        return SuccessResponse(id=request.id, result=result)

    def _cancelled_before_start(
        self, id: RequestId | None, batch: BatchReply | None, task: asyncio.Task[None]
    ) -> None:
        """Done callback set by a peer's cancel: a task cancelled before its coroutine
        ever ran has not answered (one that ran answered -32800 itself)."""
        if not task.cancelled() or task not in self._cancelled_by_peer:
            return
        self._cancelled_by_peer.discard(task)
        if self._in_flight.get(id) is task:
            del self._in_flight[id]
        self._batch_of.pop(id, None)
        self._finish_request(RequestCancelled().to_response(id), batch)

    async def _call_handler(self, request: AnyRequest) -> object:
        entry = self._requests.get(request.method)
        if entry is not None:
            return await entry.handler(decode_params(request.params, entry.params, self.codec))
        if self._fallback_request is not None:
            return await self._fallback_request(request.method, request.params)
        raise RpcError.method_not_found(request.method)

    def _finish_request(
        self, response: SuccessResponse[object] | ErrorResponse, batch: BatchReply | None
    ) -> None:
        if batch is not None:
            if batch.add(response):
                self._send_encoded(batch.responses, batch=True)
        else:
            self._send_encoded(response, batch=False)
        self._wake_writer()

    def _send_encoded(self, payload: object, *, batch: bool) -> None:
        try:
            line = self.codec.encode_message(payload)
        except Exception:
            logger.exception("%s: result could not be encoded", self.name)
            if batch:
                return
            response = cast("SuccessResponse[object]", payload)
            line = encode_line(RpcError.internal_error().to_response(response.id))
        # A finished handler cannot wait for room: the answer is queued past the bound,
        # and the reader stops reading until the output is down again (module doc).
        if not self._closing:
            self._queue(line)
        self._out_ready.set()

    def _cancel_in_flight(self, params: msgspec.Raw | msgspec.UnsetType) -> None:
        try:
            cancel = decode_params(params, _Cancel)
        except RpcError:
            logger.warning("%s: malformed %s ignored", self.name, self.profile.cancel_method)
            return
        self._cancel_request(cancel.request_id)

    def _cancel_request(self, id: RequestId | None) -> None:
        """Cancel the handler of request `id`, which then answers -32800."""
        task = self._in_flight.get(id)
        if task is not None and not task.done() and task not in self._cancelled_by_peer:
            self._cancelled_by_peer.add(task)
            batch = self._batch_of.get(id)
            task.add_done_callback(functools.partial(self._cancelled_before_start, id, batch))
            task.cancel()

    def _cancel_at_eof(self) -> None:
        """`cancel_at_eof`: the handlers still running after their first step are
        cancelled (they answer -32800, should the peer still read)."""
        for id in list(self._in_flight):
            self._cancel_request(id)

    # -- closing ----------------------------------------------------------------------

    def _input_ended(self, reason: str) -> None:
        """No more input: what we await can no longer be answered; the rest finishes."""
        self._reading = False
        if not self._closing:
            self._close_reason = reason
        self._fail_pending(reason)
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
        if not self._closing:
            self._closing = True
            self._close_reason = reason
        self._fail_pending(reason)
        for task in (self._tasks[0], self._tasks[1], *self._in_flight.values()):
            if not task.done():
                task.cancel()
        self._let_senders_in()
        self._out_ready.set()

    def _transport_lost(self, reason: str) -> None:
        self._outq.clear()
        self._out_bytes = 0
        self._shut_down(reason)

    def _fail_pending(self, reason: str) -> None:
        for future in self._pending.drain():
            if not future.done():
                future.set_exception(ConnectionClosed(reason))
