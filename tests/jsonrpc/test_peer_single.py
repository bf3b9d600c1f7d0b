"""The peer's single-message side (HTTP bindings): one body in, what it is; the reply out."""

from __future__ import annotations

import msgspec
import pytest

from interlink.jsonrpc import (
    ErrorResponse,
    InternalError,
    InvalidParams,
    Notification,
    ParseError,
    Profile,
    Request,
    RpcError,
    answer_body,
    error_answer,
    read_body,
)


def test_a_request_and_a_notification_come_back_as_decoded() -> None:
    request = read_body(b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"a":1}}')
    assert type(request) is Request
    assert (request.id, request.method, bytes(request.params)) == (7, "m", b'{"a":1}')  # type: ignore[arg-type]
    note = read_body(b'{"jsonrpc":"2.0","method":"n"}')
    assert type(note) is Notification
    assert note.method == "n"


def test_invalid_json_is_a_parse_error_with_id_null() -> None:
    error = read_body(b'{"jsonrpc":"2.0","id":1,')
    assert type(error) is ErrorResponse
    assert (error.id, error.error.code) == (None, -32700)


@pytest.mark.parametrize(
    ("body", "id"),
    [
        (b'{"jsonrpc":"2.0","id":3,"result":{}}', 3),
        (b'{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}', "x"),
    ],
)
def test_a_response_is_not_a_request(body: bytes, id: object) -> None:
    error = read_body(body)
    assert type(error) is ErrorResponse
    assert (error.id, error.error.code) == (id, -32600)
    assert error.error.data == {"detail": "a response is not a request"}


def test_not_a_message_is_invalid_request_with_the_id_it_shows() -> None:
    error = read_body(b'{"jsonrpc":"1.0","id":5,"method":"m"}')
    assert type(error) is ErrorResponse
    assert (error.id, error.error.code) == (5, -32600)


def test_an_array_is_one_error_without_batches() -> None:
    error = read_body(b'[{"jsonrpc":"2.0","method":"n"}]')
    assert type(error) is ErrorResponse
    assert error.error.code == -32600


def test_a_batch_gives_one_entry_per_item_with_batches() -> None:
    body = b'[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":1,"result":1},2]'
    entries = read_body(body, Profile(batches=True))
    assert isinstance(entries, list)
    assert [type(e) for e in entries] == [Notification, ErrorResponse, ErrorResponse]
    assert [e.error.code for e in entries[1:]] == [-32600, -32600]  # type: ignore[union-attr]
    empty = read_body(b"[]", Profile(batches=True))
    assert type(empty) is ErrorResponse
    assert empty.error.code == -32600


def test_answer_body_wraps_encoded_json() -> None:
    body = answer_body("a", b'{"x":[1]}')
    assert msgspec.json.decode(body) == {"jsonrpc": "2.0", "id": "a", "result": {"x": [1]}}


def test_error_answer_rules() -> None:
    assert error_answer(1, InvalidParams()).error.code == -32602
    assert error_answer(1, InvalidParams()).id == 1
    assert error_answer(1, ParseError()).id is None  # the params were not JSON
    assert error_answer(1, ValueError("boom")) == InternalError().to_response(1)
    from_peer = RpcError.from_error_object(InvalidParams().to_error_object())
    answer = error_answer(2, from_peer)
    assert (answer.id, answer.error.code) == (2, -32603)
    assert "a request this handler made failed" in answer.error.data["detail"]  # type: ignore[index]
