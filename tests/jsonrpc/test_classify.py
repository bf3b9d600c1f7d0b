"""The classification rules of DECISIONS.md, one case per rule, as pure functions."""

from __future__ import annotations

import msgspec
import pytest

from interlink.jsonrpc import (
    Batch,
    ErrorResponse,
    Invalid,
    InvalidParams,
    InvalidResult,
    Notification,
    Request,
    SuccessResponse,
    decode,
    decode_message,
    decode_params,
    decode_result,
    encode,
    encode_line,
    is_error,
    is_notification,
    is_request,
    is_response,
    is_success,
    oversize,
)

# (input, expected code, expected id)
INVALID: list[tuple[bytes, int, object]] = [
    (b"{", -32700, None),
    (b"[1", -32700, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"a"} x', -32700, None),
    (b"\xff\xfe", -32700, None),
    (b"", -32700, None),
    (b"[]", -32600, None),
    (b'[{"jsonrpc":"2.0","id":1,"method":"a"}]', -32600, None),
    (b"5", -32600, None),
    (b'"text"', -32600, None),
    (b"null", -32600, None),
    (b"true", -32600, None),
    (b'{"id":1,"method":"a"}', -32600, 1),
    (b'{"jsonrpc":"1.0","id":"a","method":"a"}', -32600, "a"),
    (b'{"jsonrpc":2.0,"id":"a","method":"a"}', -32600, "a"),
    (b'{"jsonrpc":"2.0","id":1,"method":5}', -32600, 1),
    (b'{"jsonrpc":"2.0","id":"x","method":null}', -32600, "x"),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"a"}', -32600, None),
    (b'{"jsonrpc":"2.0","id":true,"method":"a"}', -32600, None),
    (b'{"jsonrpc":"2.0","id":{},"method":"a"}', -32600, None),
    (b'{"jsonrpc":"2.0","id":[1],"method":"a"}', -32600, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"a","params":5}', -32600, 1),
    (b'{"jsonrpc":"2.0","id":1,"method":"a","params":"s"}', -32600, 1),
    (b'{"jsonrpc":"2.0","id":1}', -32600, 1),
    (b"{}", -32600, None),
    (b'{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}', -32600, 1),
    (b'{"jsonrpc":"2.0","result":1}', -32600, None),
    (b'{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}', -32600, None),
    (b'{"jsonrpc":"2.0","id":3,"error":"boom"}', -32600, 3),
    (b'{"jsonrpc":"2.0","id":3,"error":{"message":"m"}}', -32600, 3),
    (b'{"jsonrpc":"2.0","id":3,"error":{"code":"x","message":"m"}}', -32600, 3),
    (b'{"jsonrpc":"2.0","id":3,"method":"a","result":1}', -32600, 3),
]


@pytest.mark.parametrize(("data", "code", "id"), INVALID)
def test_invalid_input_gets_its_code_and_id(data: bytes, code: int, id: object) -> None:
    result = decode(data)
    assert isinstance(result, Invalid), result
    response = result.response()
    assert response.error.code == code
    assert response.id == id
    # the answer is readable: the detail says what was wrong
    assert isinstance(response.error.data, dict)
    assert response.error.data["detail"]


def test_ids_are_echoed_exactly() -> None:
    for raw_id, expected in [(b'"1"', "1"), (b"1", 1), (b"0", 0), (b"-4", -4)]:
        message = decode(b'{"jsonrpc":"2.0","method":"m","id":' + raw_id + b"}")
        assert isinstance(message, Request)
        assert message.id == expected
        assert type(message.id) is type(expected)
    big = decode(b'{"jsonrpc":"2.0","method":"m","id":123456789012345678901234567890}')
    assert isinstance(big, Request)
    assert big.id == 123456789012345678901234567890
    bad = decode(b'{"jsonrpc":"2.0","method":5,"id":"07"}')
    assert isinstance(bad, Invalid)
    assert bad.id == "07"


def test_valid_shapes() -> None:
    request = decode(b' {"jsonrpc":"2.0","id":1,"method":"a","params":{"x":[1]}}\r\n')
    assert isinstance(request, Request)
    assert is_request(request)
    assert not is_response(request)
    assert isinstance(request.params, msgspec.Raw)
    assert msgspec.json.decode(request.params) == {"x": [1]}

    notification = decode(b'{"method":"n","jsonrpc":"2.0","params":[1,2]}')
    assert isinstance(notification, Notification)
    assert is_notification(notification)

    success = decode(b'{"jsonrpc":"2.0","id":"r","result":null}')
    assert isinstance(success, SuccessResponse)
    assert is_success(success)
    assert is_response(success)

    error = decode(b'{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m","data":{}}}')
    assert isinstance(error, ErrorResponse)
    assert is_error(error)
    assert error.id is None
    assert error.error.data == {}


def test_null_params_mean_no_params_and_unknown_members_are_ignored() -> None:
    message = decode(b'{"jsonrpc":"2.0","id":1,"method":"a","params":null,"x":1}')
    assert isinstance(message, Request)
    assert message.params is msgspec.UNSET
    assert encode(message) == b'{"jsonrpc":"2.0","id":1,"method":"a"}'


def test_batches_when_turned_on() -> None:
    empty = decode(b" [ ] ", batches=True)
    assert isinstance(empty, Invalid)
    assert empty.response().error.code == -32600
    assert empty.response().id is None

    batch = decode(
        b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},5,'
        b'{"jsonrpc":"2.0","id":"x","method":7}]',
        batches=True,
    )
    assert isinstance(batch, Batch)
    kinds = [type(item) for item in batch.items]
    assert kinds == [Request, Notification, Invalid, Invalid]
    third, fourth = batch.items[2], batch.items[3]
    assert isinstance(third, Invalid)
    assert isinstance(fourth, Invalid)
    assert fourth.id == "x"

    well_typed = decode(b'[{"jsonrpc":"2.0","id":1,"method":"a"}]', batches=True)
    assert isinstance(well_typed, Batch)
    assert isinstance(well_typed.items[0], Request)

    assert isinstance(decode(b"[1", batches=True), Invalid)
    assert isinstance(decode(b"[1,", batches=True), Invalid)
    bad_json = decode(b'[{"a":}]', batches=True)
    assert isinstance(bad_json, Invalid)
    assert bad_json.response().error.code == -32700
    # a single object is still a single message with batches on
    assert isinstance(decode(b'{"jsonrpc":"2.0","method":"n"}', batches=True), Notification)


def test_batches_off_reject_arrays_even_well_formed_ones() -> None:
    result = decode_message(b'[{"jsonrpc":"2.0","method":"n"}]')
    assert isinstance(result, Invalid)
    assert result.response().error.code == -32600
    assert "batch" in str(result.response().error.data)


def test_oversize_answer_names_the_limit() -> None:
    response = oversize(2000, 1024).response()
    assert response.error.code == -32600
    assert response.id is None
    assert isinstance(response.error.data, dict)
    assert response.error.data["limit"] == 1024


class Point(msgspec.Struct):
    x: int
    y: int = 0


def test_params_are_decoded_by_type_with_readable_errors() -> None:
    assert decode_params(msgspec.Raw(b'{"x":1}'), Point) == Point(1)
    with pytest.raises(InvalidParams) as info:
        decode_params(msgspec.Raw(b'{"x":"one"}'), Point)
    assert info.value.code == -32602
    assert info.value.data == {"detail": "Expected `int`, got `str` - at `$.x`"}
    with pytest.raises(InvalidParams, match="Invalid params"):
        decode_params(msgspec.UNSET, Point)  # x is required
    assert decode_params(msgspec.UNSET, type(None)) is None


def test_results_are_decoded_by_type_and_a_wrong_shape_is_the_peers_fault() -> None:
    assert decode_result(msgspec.Raw(b"[1,2]"), list[int]) == [1, 2]
    with pytest.raises(InvalidResult, match="Expected `int`"):
        decode_result(msgspec.Raw(b'["a"]'), list[int])


def test_encoded_lines_never_contain_a_raw_newline() -> None:
    line = encode_line(Request(id=1, method="a\nb", params={"text": "x\ny\r\n"}))
    assert line.endswith(b"\n")
    assert b"\n" not in line[:-1]
    assert b"\r" not in line
    decoded = decode(line[:-1])
    assert isinstance(decoded, Request)
    assert decoded.method == "a\nb"
    assert isinstance(decoded.params, msgspec.Raw)
    assert msgspec.json.decode(decoded.params) == {"text": "x\ny\r\n"}
