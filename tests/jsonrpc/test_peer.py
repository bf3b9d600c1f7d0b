"""The peer's stream side, sans IO: bytes in, events out; our messages out as bytes.

The wire rules the asyncio driver once held: routing, duplicate in-flight ids, batches,
the peer's cancel, answers over the size limit, the order of answers behind
notifications, and what a request's answer or error is.
"""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from interlink.jsonrpc import (
    CancelRequested,
    Decoded,
    ErrorResponse,
    Event,
    InvalidParams,
    Notification,
    ParseError,
    Peer,
    Profile,
    Queued,
    Reply,
    Request,
    RequestCancelled,
    RpcError,
    SuccessResponse,
    answer_id,
)

PROFILE = Profile(cancel_method="$/cancel_request")

Server = Peer[str, str]


def json_of(line: bytes | None) -> object:
    assert line is not None
    assert line.endswith(b"\n")
    return json.loads(line)


def only(events: list[Event]) -> Event:
    assert len(events) == 1, events
    return events[0]


def reply_of(events: list[Event]) -> dict[str, object]:
    event = only(events)
    assert type(event) is Reply
    value = json_of(event.line)
    assert isinstance(value, dict)
    return value


def test_a_request_is_in_flight_until_answered() -> None:
    peer: Server = Peer(PROFILE)
    request = only(peer.receive(b'{"jsonrpc":"2.0","id":1,"method":"add","params":[1]}\n'))
    assert type(request) is Request
    assert (request.id, request.method) == (1, "add")
    assert 1 in peer.in_flight
    assert json_of(peer.answer(1, 3)) == {"jsonrpc": "2.0", "id": 1, "result": 3}
    assert peer.in_flight == {}


def test_duplicate_in_flight_id_is_refused() -> None:
    peer: Server = Peer(PROFILE)
    line = b'{"jsonrpc":"2.0","id":1,"method":"wait","params":{"text":"x"}}\n'
    assert type(only(peer.receive(line))) is Request
    duplicate = reply_of(peer.receive(line))
    assert duplicate["id"] == 1
    assert duplicate["error"]["code"] == -32600  # type: ignore[index]
    # the first is still in flight, and answers; then the id is free again
    assert json_of(peer.answer(1, "done"))["result"] == "done"  # type: ignore[index]
    assert type(only(peer.receive(line))) is Request


BAD_LINES = [
    (b"{not json", -32700),
    (b"[1,2]", -32600),
    (b"42", -32600),
    (b'{"id":9,"method":"add"}', -32600),
    (b'{"jsonrpc":"2.0","id":9,"method":9}', -32600),
]


@pytest.mark.parametrize(("line", "code"), BAD_LINES)
def test_bad_input_is_answered_and_reported(line: bytes, code: int) -> None:
    peer: Server = Peer(PROFILE)
    events = peer.receive(line + b"\n" + b'{"jsonrpc":"2.0","id":1,"method":"add"}\n')
    assert len(events) == 2
    reply, request = events
    assert type(reply) is Reply
    error = json_of(reply.line)
    assert error["error"]["code"] == code  # type: ignore[index]
    assert error["id"] == (9 if b"9" in line else None)  # type: ignore[index]
    assert (reply.error is not None, reply.head, reply.size) == (True, line, len(line))
    assert type(request) is Request  # the stream goes on


def test_notifications_are_never_answered() -> None:
    peer: Server = Peer(PROFILE)
    note = only(peer.receive(b'{"jsonrpc":"2.0","method":"unknown/notification"}\n'))
    assert type(note) is Notification
    assert note.method == "unknown/notification"


def test_oversize_line_is_refused_and_skipped() -> None:
    peer: Server = Peer(Profile(max_message_size=1000))
    big = b'{"jsonrpc":"2.0","id":1,"method":"add","params":{"x":"' + b"y" * 5000 + b'"}}'
    events = peer.receive(big + b"\n" + b'{"jsonrpc":"2.0","id":2,"method":"add"}\n')
    reply, request = events
    assert type(reply) is Reply
    error = json_of(reply.line)
    assert error["id"] is None  # type: ignore[index]
    assert error["error"]["code"] == -32600  # type: ignore[index]
    assert error["error"]["data"]["limit"] == 1000  # type: ignore[index]
    assert reply.size == len(big)
    assert type(request) is Request
    assert request.id == 2


def test_an_answer_over_the_limit_fails_its_request_and_is_not_answered() -> None:
    peer: Server = Peer(Profile(max_message_size=1000))
    id, _ = peer.request("big", {}, "waiter")
    huge = b'{"jsonrpc":"2.0","id":%d,"result":"' % id + b"y" * 5000 + b'"}\n'
    answer = only(peer.receive(huge))
    assert type(answer) is ErrorResponse  # for our caller, not a line to send
    assert answer.id == id
    assert answer.error.code == -32600
    assert answer.error.data["limit"] == 1000  # type: ignore[index]
    assert peer.resolve(answer) == "waiter"
    # one we do not await is an oversize line like any other
    again = only(peer.receive(huge))
    assert type(again) is Reply


@pytest.mark.parametrize(
    ("head", "id"),
    [
        (b'{"jsonrpc":"2.0","id":7,"result":"', 7),
        (b'{"id":"a\\"b","jsonrpc":"2.0","error":{', 'a"b'),
        (b'{"jsonrpc":"2.0","id":7,"method":"x","params":"', None),  # a request
        (b'{"jsonrpc":"2.0","params":{"id":7,"result":1}', None),  # not top level
        (b'{"jsonrpc":"2.0","id":7', None),  # no result or error seen
    ],
)
def test_answer_id_reads_a_response_head(head: bytes, id: object) -> None:
    assert answer_id(head) == id


def test_batches_when_the_profile_allows_them() -> None:
    peer: Server = Peer(Profile(batches=True))
    events = peer.receive(
        b'[{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":1,"b":1}},'
        b'{"jsonrpc":"2.0","method":"note","params":{"text":"n"}},'
        b'7,{"jsonrpc":"2.0","id":2,"method":"nope"}]\n'
    )
    assert [type(e) for e in events] == [Request, Notification, Request]
    assert peer.answer(1, 2) is None  # the batch is not complete yet
    answer = json_of(peer.refuse(2, RpcError.method_not_found("nope")))
    assert isinstance(answer, list)
    by_id = {item["id"]: item for item in answer}
    assert by_id[1]["result"] == 2
    assert by_id[2]["error"]["code"] == -32601
    assert by_id[None]["error"]["code"] == -32600
    # only notifications: no answer at all; only invalid entries: the reply at once
    assert [type(e) for e in peer.receive(b'[{"jsonrpc":"2.0","method":"n"}]\n')] == [Notification]
    invalid = only(peer.receive(b"[1,2]\n"))
    assert type(invalid) is Reply
    assert invalid.error is None  # (entries of a batch are not reported one by one)
    assert [e["error"]["code"] for e in json_of(invalid.line)] == [-32600, -32600]  # type: ignore[attr-defined]
    assert reply_of(peer.receive(b"[]\n"))["error"]["code"] == -32600  # type: ignore[index]


def test_without_batches_an_array_is_one_error() -> None:
    peer: Server = Peer(PROFILE)
    assert reply_of(peer.receive(b'[{"jsonrpc":"2.0","method":"n"}]\n'))["id"] is None


def test_a_duplicate_id_in_a_batch_is_answered_in_the_batch() -> None:
    peer: Server = Peer(Profile(batches=True))
    events = peer.receive(
        b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":1,"method":"b"}]\n'
    )
    assert [type(e) for e in events] == [Request]
    answer = json_of(peer.answer(1, "ok"))
    assert answer == [
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "Invalid request",
                                              "data": {"detail": "request id 1 is in flight"}}},
        {"jsonrpc": "2.0", "id": 1, "result": "ok"},
    ]  # fmt: skip


def test_the_peers_cancel_names_a_request_in_flight() -> None:
    peer: Server = Peer(PROFILE)
    peer.receive(b'{"jsonrpc":"2.0","id":"r","method":"wait"}\n')
    cancel = b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"r"}}\n'
    assert only(peer.receive(cancel)) == CancelRequested("r")
    answer = json_of(peer.refuse("r", RequestCancelled()))
    assert answer["error"]["code"] == -32800  # type: ignore[index]
    # once answered, a cancel for it is nothing; so is one we cannot read
    assert peer.receive(cancel) == []
    assert peer.receive(b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"id":1}}\n') == []


def test_without_a_cancel_method_a_cancel_is_a_notification() -> None:
    peer: Server = Peer(Profile())
    peer.receive(b'{"jsonrpc":"2.0","id":1,"method":"wait"}\n')
    event = only(
        peer.receive(b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}\n')
    )
    assert type(event) is Notification


def test_an_answer_waits_behind_the_notifications_before_it() -> None:
    peer: Server = Peer(PROFILE)
    first, _ = peer.request("a", None, "first")
    second, _ = peer.request("b", None, "second")
    events = peer.receive(
        b'{"jsonrpc":"2.0","method":"update"}\n{"jsonrpc":"2.0","id":%d,"result":1}\n' % first
    )
    assert [type(e) for e in events] == [Notification, Queued]
    peer.handled()  # the notification
    peer.handled()  # the queued answer
    assert (
        type(only(peer.receive(b'{"jsonrpc":"2.0","id":%d,"result":2}\n' % second)))
        is SuccessResponse
    )


def test_handled_at_once_counts_as_one_at_a_time() -> None:
    peer: Server = Peer(PROFILE)
    first, _ = peer.request("a", None, "first")
    second, _ = peer.request("b", None, "second")
    note = b'{"jsonrpc":"2.0","method":"update"}\n'
    events = peer.receive(note + note + b'{"jsonrpc":"2.0","id":%d,"result":1}\n' % first)
    assert [type(e) for e in events] == [Notification, Notification, Queued]
    peer.handled(2)  # the notifications, told once
    assert type(only(peer.receive(note))) is Notification  # (the queued answer still counts)
    peer.handled(2)  # that notification and the queued answer
    assert (
        type(only(peer.receive(b'{"jsonrpc":"2.0","id":%d,"result":2}\n' % second)))
        is SuccessResponse
    )


def test_a_direct_request_skips_the_queue() -> None:
    peer: Server = Peer(PROFILE)
    id, _ = peer.request("a", None, "w", direct=True)
    events = peer.receive(
        b'{"jsonrpc":"2.0","method":"update"}\n{"jsonrpc":"2.0","id":%d,"result":1}\n' % id
    )
    note, response = events
    assert type(note) is Notification
    assert type(response) is SuccessResponse
    assert peer.resolve(response) == "w"


def test_a_response_to_an_unknown_id_resolves_nothing() -> None:
    peer: Server = Peer(PROFILE)
    response = only(peer.receive(b'{"jsonrpc":"2.0","id":77,"result":1}\n'))
    assert type(response) is SuccessResponse
    assert peer.resolve(response) is None


def test_our_requests_notifications_and_cancels() -> None:
    peer: Server = Peer(PROFILE)
    id, line = peer.request("m", {"a": 1}, "w")
    assert json_of(line) == {"jsonrpc": "2.0", "id": id, "method": "m", "params": {"a": 1}}
    assert json_of(peer.request("m", None, "w")[1]) == {
        "jsonrpc": "2.0",
        "id": id + 1,
        "method": "m",
    }
    assert json_of(peer.notification("n", None)) == {"jsonrpc": "2.0", "method": "n"}
    assert json_of(peer.give_up(id)) == {
        "jsonrpc": "2.0",
        "method": "$/cancel_request",
        "params": {"requestId": id},
    }
    assert peer.give_up(id) is None  # no longer pending
    assert Peer[str, str](Profile()).give_up(1) is None  # no cancel method
    with pytest.raises(TypeError):
        peer.request("m", object(), "w")
    assert len(peer.pending) == 1  # the one that failed to encode is not pending


def test_the_error_answers() -> None:
    peer: Server = Peer(PROFILE)
    for id in (1, 2, 3, 4):
        peer.receive(b'{"jsonrpc":"2.0","id":%d,"method":"m"}\n' % id)
    assert json_of(peer.refuse(1, InvalidParams()))["error"]["code"] == -32602  # type: ignore[index]
    assert json_of(peer.refuse(2, ParseError()))["id"] is None  # type: ignore[index]
    from_peer = RpcError.from_error_object(InvalidParams().to_error_object())
    assert json_of(peer.refuse(3, from_peer))["error"]["code"] == -32603  # type: ignore[index]
    crash = json_of(peer.refuse(4, ValueError("secret internals")))
    assert crash["error"] == {"code": -32603, "message": "Internal error"}  # type: ignore[index]


def test_an_unencodable_result_is_32603() -> None:
    peer: Server = Peer(PROFILE)
    peer.receive(b'{"jsonrpc":"2.0","id":1,"method":"fail"}\n')
    answer = json_of(peer.answer(1, object()))
    assert answer == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32603, "message": "Internal error"},
    }


def test_a_last_line_without_newline_counts_at_eof() -> None:
    peer: Server = Peer(PROFILE)
    assert peer.receive(b'{"jsonrpc":"2.0","method":"n"}') == []
    assert type(only(peer.receive_eof())) is Notification


lines = st.sampled_from(
    [
        b'{"jsonrpc":"2.0","id":1,"method":"a"}',
        b'{"jsonrpc":"2.0","method":"n","params":{"x":"\\n"}}',
        b'{"jsonrpc":"2.0","id":5,"result":[1]}',
        b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}',
        b"{not json",
        b"[]",
        b'{"jsonrpc":"2.0","id":2,"method":"b","params":"' + b"z" * 300 + b'"}',
    ]
)


def _summary(events: list[Event]) -> list[object]:
    out: list[object] = []
    for event in events:
        if type(event) is Reply:
            out.append(("reply", event.line))
        else:
            out.append(msgspec.json.encode(event))
    return out


@given(st.lists(lines, max_size=12), st.lists(st.integers(1, 40), max_size=30))
def test_how_the_bytes_are_cut_does_not_change_the_events(
    chosen: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(line + b"\n" for line in chosen)
    whole: Server = Peer(Profile(cancel_method="$/cancel_request", max_message_size=200))
    expected = _summary(whole.receive(stream) + whole.receive_eof())
    pieces: Server = Peer(Profile(cancel_method="$/cancel_request", max_message_size=200))
    got: list[Event] = []
    pos = 0
    for cut in cuts:
        got += pieces.receive(stream[pos : pos + cut])
        pos += cut
    got += pieces.receive(stream[pos:]) + pieces.receive_eof()
    assert _summary(got) == expected


class Text(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    text: str


def test_notifications_of_the_methods_given_come_decoded_else_as_before() -> None:
    peer: Server = Peer(PROFILE)
    peer.decode_notifications({"note": Text})
    note = b'{"params":{"text":"a"},"jsonrpc":"2.0","method":"note"}'
    lines = [
        note,  # the first of a streak is decoded as before
        note,
        b'{"jsonrpc":"2.0","method":"note","params":{"text":"b","more":1}}',  # does not fit
        note,  # (a streak again)
        b'{"jsonrpc":"2.0","id":1,"method":"note","params":{"text":"c"}}',  # a request
        note,  # (not tried on the request, whose "id" shows first: the streak goes on)
        b'{"jsonrpc":"2.0","method":"note","params":{"text":"c"},"id":2}',  # a request too
        note,
        b'{"jsonrpc":"1.0","method":"note","params":{"text":"d"}}',  # not a message
        b'{"jsonrpc":"2.0","method":"other","params":{"text":"e"}}',
        note,
    ]
    events = peer.receive(b"\n".join(lines) + b"\n")
    kinds = [type(event).__name__ for event in events]
    assert kinds == [
        "Notification",
        "Decoded",
        "Notification",
        "Decoded",
        "Request",
        "Decoded",
        "Request",
        "Notification",
        "Reply",
        "Notification",
        "Decoded",
    ]
    assert events[1] == Decoded("note", Text("a"), len(note))
    assert isinstance(events[2], Notification)
    assert isinstance(events[2].params, msgspec.Raw)
    assert msgspec.json.decode(events[2].params) == {"text": "b", "more": 1}
    assert isinstance(events[4], Request)
    assert events[4].id == 1


def test_a_decoded_notification_nothing_precedes_goes_to_the_step_given() -> None:
    peer: Server = Peer(PROFILE)
    peer.decode_notifications({"note": Text})
    stepped: list[str] = []

    def step(method: str, params: object) -> bool:
        assert method == "note"
        assert isinstance(params, Text)
        stepped.append(params.text)
        if params.text == "later":
            peer.handling()  # (taken, handled later)
        return params.text != "not taken"

    peer.step_notifications(step)
    first, _ = peer.request("a", None, "first")
    second, _ = peer.request("b", None, "second")

    def note(text: str) -> bytes:
        return b'{"jsonrpc":"2.0","method":"note","params":{"text":"%s"}}\n' % text.encode()

    def answer(id: int) -> bytes:
        return b'{"jsonrpc":"2.0","id":%d,"result":1}\n' % id

    assert type(only(peer.receive(note("first")))) is Notification  # (not decoded whole)
    peer.handled()
    assert peer.receive(note("done")) == []  # handled: no event, nothing queued
    assert type(only(peer.receive(answer(first)))) is SuccessResponse
    assert peer.receive(note("later")) == []  # being handled: it counts as queued
    assert type(only(peer.receive(answer(second)))) is Queued
    peer.handled(2)
    events = peer.receive(note("not taken") + b'{"jsonrpc":"2.0","id":7,"method":"m"}\n')
    assert [type(e) for e in events] == [Decoded, Request]
    events = peer.receive(b'{"jsonrpc":"2.0","id":8,"method":"m"}\n' + note("done"))
    assert [type(e) for e in events] == [Request, Decoded]  # (the request comes first)
    assert stepped == ["done", "later", "not taken"]


def test_a_notification_not_decoded_whole_goes_to_the_other_step() -> None:
    peer: Server = Peer(PROFILE)
    peer.decode_notifications({"note": Text})
    notes: list[Notification[msgspec.Raw]] = []

    def step_note(note: Notification[msgspec.Raw]) -> bool:
        notes.append(note)
        return len(notes) <= 2

    peer.step_notifications(lambda method, params: True, step_note)
    note = b'{"jsonrpc":"2.0","method":"note","params":{"text":"a"}}\n'
    assert peer.receive(note) == []  # (the first of a streak: not decoded whole)
    assert peer.receive(note) == []  # decoded whole: the first step
    assert peer.receive(b'{"jsonrpc":"2.0","method":"other"}\n') == []
    assert type(only(peer.receive(b'{"jsonrpc":"2.0","method":"other"}\n'))) is Notification
    assert [n.method for n in notes] == ["note", "other", "other"]


def test_a_step_that_registers_notifications_leaves_the_rest_of_the_read_whole() -> None:
    """A handler's first step runs mid-read: one that registers notification types (which
    makes new ones) does not break the frames after it in the same read."""
    peer: Server = Peer(PROFILE)
    peer.decode_notifications({"note": Text})
    stepped: list[str] = []

    def step(method: str, params: object) -> bool:
        assert isinstance(params, Text)
        stepped.append(params.text)
        peer.decode_notifications({"note": Text, "other": Text})
        return True

    peer.step_notifications(step)
    note = b'{"jsonrpc":"2.0","method":"note","params":{"text":"%s"}}\n'
    assert type(only(peer.receive(note % b"0"))) is Notification  # (a streak's first)
    peer.handled()
    assert peer.receive(note % b"1" + note % b"2" + note % b"3") == []
    assert stepped == ["1", "2", "3"]
