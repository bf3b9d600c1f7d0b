"""The JSON-RPC peer's rules, sans IO: what an incoming message is and what answers it.

Two sides share the rules. The *single-message* side is for bindings that carry one
message per body (HTTP): `read_body` says what a body is (a request, a notification,
or the error response to send for it) and `answer_body` / `error_answer` build the
reply. The *stream* side (`Peer`, below) is for a byte stream carrying many messages
both ways (NDJSON on stdio or a socket).
"""

from __future__ import annotations

import functools
import logging
import operator
import re
from collections.abc import Callable
from typing import Generic, Literal, TypeAlias, TypeVar

import msgspec

from ._codec import (
    DEFAULT_CODEC,
    Batch,
    Invalid,
    ValueCodec,
    decode,
    decode_message,
    decode_params,
    encode_line,
    oversize,
)
from ._errors import InvalidRequest, ParseError, RpcError
from ._framing import LineFramer, Oversize
from ._messages import ErrorResponse, Notification, Request, RequestId, SuccessResponse
from ._methods import Profile
from ._pending import BatchReply, PendingRequests

__all__ = [
    "CancelRequested",
    "Decoded",
    "Event",
    "Incoming",
    "Peer",
    "Queued",
    "Reply",
    "answer_body",
    "answer_id",
    "error_answer",
    "read_body",
]

Answer: TypeAlias = SuccessResponse[object] | ErrorResponse

Incoming: TypeAlias = Request[msgspec.Raw] | Notification[msgspec.Raw] | ErrorResponse
"""What one body (or one batch entry) is: a message to serve, or the error to send."""

_DEFAULT_PROFILE = Profile()
_UNSET = msgspec.UNSET
_ID_AT = len(b'{"jsonrpc":"2.0","')  # where a request's or a response's "id" starts
_I = ord("i")


def _not_a_request(message: object) -> ErrorResponse:
    """A response where a request was expected: -32600 with the response's id."""
    refusal = InvalidRequest(data={"detail": "a response is not a request"})
    return refusal.to_response(getattr(message, "id", None))


def _incoming(message: object) -> Incoming:
    kind = type(message)
    if kind is Request or kind is Notification:
        return message  # type: ignore[return-value]
    if kind is Invalid:
        return message.response()  # type: ignore[attr-defined,no-any-return]
    return _not_a_request(message)


def read_body(data: bytes, profile: Profile = _DEFAULT_PROFILE) -> Incoming | list[Incoming]:
    """What one whole message body is.

    A request or a notification comes back as decoded (params left raw); anything else
    comes back as the `ErrorResponse` to send: invalid JSON is -32700 with id null, a
    JSON value that is not a message is -32600 with its id when one can be read, and a
    response is -32600 "a response is not a request" with its id. With
    `profile.batches`, a non-empty array gives a list with one entry per item, each as
    above (an empty array is one -32600); without, an array is one -32600. The size
    limit is the binding's to apply before reading (see `oversize`).
    """
    message = decode(data, batches=profile.batches)
    if type(message) is Batch:
        return [_incoming(item) for item in message.items]
    return _incoming(message)


def answer_body(id: RequestId | None, result: bytes) -> bytes:
    """The success response to request `id` around `result`, already encoded JSON."""
    return b'{"jsonrpc":"2.0","id":' + msgspec.json.encode(id) + b',"result":' + result + b"}"


def error_answer(id: RequestId | None, exc: BaseException) -> ErrorResponse:
    """The error response to request `id` whose handler raised `exc`.

    An `RpcError` answers with itself, except that one the handler got from the peer it
    called (`from_peer`) is -32603 (passing the peer's code on would mislead), and a
    `ParseError` (params that turned out not to be JSON) has id null (DECISIONS.md:
    invalid JSON -> id null). Any other exception is -32603 with no detail (the
    caller logs it).
    """
    if isinstance(exc, RpcError):
        if exc.from_peer:
            detail = {"detail": f"a request this handler made failed: {exc}"}
            return RpcError.internal_error(detail).to_response(id)
        return exc.to_response(None if type(exc) is ParseError else id)
    return RpcError.internal_error().to_response(id)


# -- the stream side ------------------------------------------------------------------

W = TypeVar("W")
T = TypeVar("T")

logger = logging.getLogger("interlink.jsonrpc")

Response: TypeAlias = SuccessResponse[msgspec.Raw] | ErrorResponse


class Queued(msgspec.Struct, frozen=True):
    """Event: a response that arrived behind notifications not yet handled; deliver it
    once they are (`Peer.handled` after each), not before (DECISIONS.md "Ordering")."""

    response: Response


class Decoded(msgspec.Struct, frozen=True):
    """Event: a notification of a method in `Peer.decode_notifications`, its params
    decoded with the envelope; `size` is its line's (handle it as any notification)."""

    method: str
    params: object
    size: int


class CancelRequested(msgspec.Struct, frozen=True):
    """Event: the peer cancelled its request `id`, which is in flight (its handler is
    to stop and answer -32800, see `Peer.refuse`)."""

    id: RequestId | None


class Reply(msgspec.Struct, frozen=True):
    """Event: a line to send at once, the error answer to input that is not a message
    (`error`, `head` its first bytes and `size` its size, to report it) or to a batch
    whose entries are all answered already (`error` None)."""

    line: bytes
    error: RpcError | None = None
    head: bytes = b""
    size: int = 0


Event: TypeAlias = (
    Request[msgspec.Raw]
    | Notification[msgspec.Raw]
    | Decoded
    | Response
    | Queued
    | CancelRequested
    | Reply
)
"""What `Peer.receive` yields, in the order the input said it. A request is to be
served (it is in flight until answered); a notification is to be handled in order (then
`Peer.handled`); a response is for `Peer.resolve` now; the others are above."""


class _Cancel(msgspec.Struct, frozen=True):
    request_id: RequestId = msgspec.field(name="requestId")


_ANSWER_ID = re.compile(rb'^\s*\{(?:[^{}\[\]]*?,)?\s*"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")\s*,')
_ANSWER_KEY = re.compile(rb'"(?:result|error)"\s*:')
_REQUEST_KEY = re.compile(rb'"method"\s*:')


def answer_id(head: bytes) -> RequestId | None:
    """The id of the response a too-large line starts, when its head shows one: a
    top-level `"id"` before its `"result"`/`"error"` and no `"method"` (None otherwise:
    the line is answered as any oversize message is)."""
    match = _ANSWER_ID.match(head)
    if match is None or _REQUEST_KEY.search(head):
        return None
    if _ANSWER_KEY.search(head, match.end()) is None:
        return None
    raw = match.group(1)
    if raw.startswith(b'"'):
        value = msgspec.json.decode(raw)
        return value if isinstance(value, str) else None
    return int(raw)


class Peer(Generic[W, T]):
    """One end of a JSON-RPC stream, sans IO: bytes in, events out; messages out as bytes.

    `W` is what waits for the answer to one of our requests (a future), `T` what serves
    one of the peer's (a task): the peer keeps the tables, the driver the things in them.
    """

    __slots__ = (
        "_batch_of",
        "_cancel_method",
        "_decode",
        "_direct",
        "_framer",
        "_heads",
        "_queued",
        "_step",
        "_step_note",
        "_streak",
        "_typed",
        "_typed_methods",
        "batches",
        "codec",
        "in_flight",
        "pending",
        "profile",
    )

    def __init__(self, profile: Profile = _DEFAULT_PROFILE, codec: ValueCodec = DEFAULT_CODEC):
        self.profile = profile
        self.codec = codec
        self.batches = profile.batches
        self._cancel_method = profile.cancel_method
        self._framer = LineFramer(profile.max_message_size)
        self._decode: Callable[
            [bytes], Request[msgspec.Raw] | Notification[msgspec.Raw] | Response | Invalid | Batch
        ] = functools.partial(decode, batches=True) if self.batches else decode_message
        self.pending: PendingRequests[W] = PendingRequests()
        #: the peer's requests being served, by id, with what serves them once known
        self.in_flight: dict[RequestId | None, T | None] = {}
        self._batch_of: dict[RequestId | None, BatchReply] = {}
        #: notifications and queued responses handed out and not yet `handled`
        self._queued = 0
        #: ids of our requests whose answers skip the queue (see `request`)
        self._direct: set[RequestId] = set()
        #: decodes a notification of a method in `decode_notifications` whole, if the
        #: last message was a notification (one failed try after each streak)
        self._typed: Callable[[bytes], object] | None = None
        self._typed_methods: dict[type, str] = {}
        self._streak = False
        #: notifications' envelopes up to their params, by method (see `notification`)
        self._heads: dict[str, bytes] = {}
        #: handles a decoded notification as it is read (see `step_notifications`)
        self._step: Callable[[str, object], bool] | None = None
        self._step_note: Callable[[Notification[msgspec.Raw]], bool] | None = None

    # -- receiving --------------------------------------------------------------------

    def decode_notifications(self, params: dict[str, object]) -> None:
        """Decode the notifications of these methods (method -> params type) in one pass
        where that passes strictly (they come as `Decoded`); the last one tried that did
        not pass is decoded as before, and no more are tried until a notification comes.
        A line that starts `{"jsonrpc":"2.0","i` is not tried."""
        variants = {  # (what else a message has, an id, a result, fails: decoded as before)
            msgspec.defstruct(
                "_Typed",
                [("jsonrpc", Literal["2.0"]), ("params", type_)],
                tag_field="method",
                tag=method,
                forbid_unknown_fields=True,
                gc=False,  # (a wrapper only `_events` ever sees: it is in no cycle)
            ): method
            for method, type_ in params.items()
            if method != self._cancel_method
        }
        self._typed_methods = variants
        union = functools.reduce(operator.or_, variants) if variants else None
        self._typed = None if union is None else self.codec.decoder(union)

    def step_notifications(
        self,
        step: Callable[[str, object], bool] | None,
        step_note: Callable[[Notification[msgspec.Raw]], bool] | None = None,
    ) -> None:
        """Hand a notification that no event returned with it comes after to the driver
        as it is read, instead of returning it: one decoded with its envelope (see
        `decode_notifications`) to `step(method, params)`, any other to `step_note`.
        True: taken, handled already (or, if the driver said `handling`, once it says
        `handled`); False: not taken, it comes as an event. One that an event returned
        with it precedes comes as an event, so that the driver acts on what is ahead of
        it first."""
        self._step = step
        self._step_note = step_note

    def handling(self) -> None:
        """A notification a step took (see `step_notifications`) is not handled yet: it
        counts as one handed out until `handled`."""
        self._queued += 1

    def receive(self, data: bytes) -> list[Event]:
        """Take the next bytes of the stream; return what they complete, in order."""
        return self._events(self._framer.feed(data))

    def receive_eof(self) -> list[Event]:
        """The stream ended: what its last bytes complete."""
        return self._events(self._framer.close())

    def _events(self, frames: list[bytes | Oversize]) -> list[Event]:
        events: list[Event] = []
        decode = self._decode
        typed = self._typed if self._streak else None
        in_flight = self.in_flight
        cancel = self._cancel_method
        step, step_note = self._step, self._step_note
        for frame in frames:
            if type(frame) is not bytes:
                self._oversize(frame, events)  # type: ignore[arg-type]
                continue
            # (a request or a response whose "id" comes right after "jsonrpc", as a
            # rule, is not tried, nor does it end the streak)
            if typed is not None and (len(frame) <= _ID_AT or frame[_ID_AT] != _I):
                try:
                    note: object = typed(frame)
                except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
                    typed = None
                else:
                    # (by its tag: a handler stepped below may register others)
                    method = type(note).__struct_config__.tag  # type: ignore[attr-defined]
                    # (taken, when nothing is ahead of it here)
                    if step is not None and not events and step(method, note.params):  # type: ignore[attr-defined]
                        continue
                    self._queued += 1
                    events.append(Decoded(method, note.params, len(frame)))  # type: ignore[attr-defined]
                    continue
            message = decode(frame)
            kind = type(message)
            # the common cases inline; `_route` says the whole rule
            if kind is Notification and message.method != cancel:  # type: ignore[union-attr]
                typed = self._typed
                if step_note is not None and not events and step_note(message):  # type: ignore[arg-type]
                    continue
                self._queued += 1
                events.append(message)  # type: ignore[arg-type]
            elif kind is Request and message.id not in in_flight:  # type: ignore[union-attr]
                in_flight[message.id] = None  # type: ignore[union-attr]
                events.append(message)  # type: ignore[arg-type]
            elif (kind is SuccessResponse or kind is ErrorResponse) and not self._queued:
                events.append(message)  # type: ignore[arg-type]
            else:
                self._route(message, frame, events)
        self._streak = typed is not None
        return events

    def _route(self, message: object, frame: bytes, events: list[Event]) -> None:
        kind = type(message)
        if kind is Request:
            request: Request[msgspec.Raw] = message  # type: ignore[assignment]
            if request.id in self.in_flight:
                events.append(Reply(self._encode(_duplicate(request.id))))
            else:
                self.in_flight[request.id] = None
                events.append(request)
        elif kind is Notification:
            note: Notification[msgspec.Raw] = message  # type: ignore[assignment]
            if note.method == self._cancel_method:
                self._cancel(note.params, events)
            else:
                self._queued += 1
                events.append(note)
        elif kind is SuccessResponse or kind is ErrorResponse:
            self._response(message, events)  # type: ignore[arg-type]
        elif kind is Invalid:
            invalid: Invalid = message  # type: ignore[assignment]
            line = encode_line(invalid.response())
            events.append(Reply(line, invalid.error, frame, len(frame)))
        else:
            self._batch(message, events)  # type: ignore[arg-type]

    def _response(self, response: Response, events: list[Event]) -> None:
        if self._queued and response.id not in self._direct:
            self._queued += 1
            events.append(Queued(response))
        else:
            events.append(response)

    def _cancel(self, params: msgspec.Raw | msgspec.UnsetType, events: list[Event]) -> None:
        try:
            id = decode_params(params, _Cancel).request_id
        except RpcError:
            logger.warning("malformed %s ignored", self._cancel_method)
            return
        if id in self.in_flight:
            events.append(CancelRequested(id))

    def _batch(self, batch: Batch, events: list[Event]) -> None:
        items = batch.items
        reply = BatchReply(sum(1 for m in items if type(m) is Request or type(m) is Invalid))
        for item in items:
            kind = type(item)
            if kind is Request:
                request: Request[msgspec.Raw] = item  # type: ignore[assignment]
                if request.id in self.in_flight:
                    self._batch_add(reply, _duplicate(request.id), events)
                else:
                    self.in_flight[request.id] = None
                    self._batch_of[request.id] = reply
                    events.append(request)
            elif kind is Invalid:
                self._batch_add(reply, item.response(), events)  # type: ignore[union-attr]
            else:
                self._route(item, b"", events)

    def _batch_add(self, reply: BatchReply, answer: Answer, events: list[Event]) -> None:
        if reply.add(answer):
            events.append(Reply(self._encode(reply.responses)))

    def _oversize(self, frame: Oversize, events: list[Event]) -> None:
        limit = self.profile.max_message_size
        answered = answer_id(frame.head)
        if answered is not None and answered in self.pending:
            # an answer too large for us: its caller is told (an answer is never answered)
            error = InvalidRequest(
                "Message too large",
                {"detail": f"the answer of {frame.size} bytes exceeds the limit", "limit": limit},
            )
            self._response(error.to_response(answered), events)
            return
        skipped = oversize(frame.size, limit)
        line = encode_line(skipped.response())
        events.append(Reply(line, skipped.error, frame.head, frame.size))

    def handled(self, count: int = 1) -> None:
        """A notification or queued response handed out has been handled (`count` of
        them: the driver may say so once for those it handled as it went, before it
        feeds the next bytes)."""
        self._queued -= count

    def resolve(self, response: Response) -> W | None:
        """The waiter of one of our requests that `response` answers, forgotten (None:
        not one we await)."""
        if self._direct:
            self._direct.discard(response.id)
        return self.pending.pop(response.id)

    # -- answering the peer's requests --------------------------------------------------

    def answer(self, id: RequestId | None, result: object) -> bytes | None:
        """The line answering request `id` with `result` (None: part of a batch that
        is not complete yet); the request is no longer in flight."""
        return self._finish(id, SuccessResponse(id=id, result=result))

    def refuse(self, id: RequestId | None, exc: BaseException) -> bytes | None:
        """As `answer`, with the error answer for `exc` (see `error_answer`)."""
        return self._finish(id, error_answer(id, exc))

    def _finish(self, id: RequestId | None, answer: Answer) -> bytes | None:
        self.in_flight.pop(id, None)
        if self._batch_of:
            reply = self._batch_of.pop(id, None)
            if reply is not None:
                return self._encode(reply.responses) if reply.add(answer) else None
        return self._encode(answer)

    def _encode(self, payload: Answer | list[Answer]) -> bytes:
        try:
            return self.codec.encode(payload) + b"\n"
        except Exception:
            logger.exception("a result could not be encoded")
            internal = RpcError.internal_error()
            if type(payload) is list:  # a batch: every entry says so
                return encode_line([internal.to_response(a.id) for a in payload])
            return encode_line(internal.to_response(payload.id))  # type: ignore[union-attr]

    # -- our requests -------------------------------------------------------------------

    def request(
        self, method: str, params: object, waiter: W, *, direct: bool = False
    ) -> tuple[int, bytes]:
        """Our request's id and line; `waiter` gets its answer from `resolve`. `direct`:
        its answer skips the notifications queued ahead of it (one a notification
        handler awaits would otherwise wait for that handler: a deadlock)."""
        id = self.pending.add(waiter)
        try:
            head = b'{"jsonrpc":"2.0","id":%d,"method":%s' % (id, msgspec.json.encode(method))
            if params is None:
                line = head + b"}\n"
            else:  # (the params encoded straight after their envelope, as below)
                line = b"".join((head, b',"params":', self.codec.encode(params), b"}\n"))
        except BaseException:
            self.pending.forget(id)
            raise
        if direct:
            self._direct.add(id)
        return id, line

    def notification(self, method: str, params: object) -> bytes:
        """Our notification's line (its envelope up to the params kept per method, for a
        few methods: not for a caller that makes up names)."""
        if params is None:
            return b'{"jsonrpc":"2.0","method":%s}\n' % msgspec.json.encode(method)
        head = self._heads.get(method)
        if head is None:
            head = self.notification_head(method)
            if len(self._heads) < 64:
                self._heads[method] = head
        return head + self.codec.encode(params) + b"}\n"

    @staticmethod
    def notification_head(method: str) -> bytes:
        """A notification's line up to its params: the line is this, the params
        encoded, then `}` and the newline (see `notification`)."""
        return b'{"jsonrpc":"2.0","method":%s,"params":' % msgspec.json.encode(method)

    def give_up(self, id: int) -> bytes | None:
        """We no longer await request `id`: the cancel line to send, if the profile
        has one and the request was still pending."""
        self._direct.discard(id)
        if self.pending.forget(id) and self._cancel_method:
            return encode_line(Notification(method=self._cancel_method, params=_Cancel(id)))
        return None


def _duplicate(id: RequestId | None) -> ErrorResponse:
    return InvalidRequest(data={"detail": f"request id {id!r} is in flight"}).to_response(id)
