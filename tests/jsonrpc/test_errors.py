"""The error model: codes, constructors, and the round trip through the wire."""

from __future__ import annotations

import msgspec
import pytest

from interlink.jsonrpc import (
    AuthRequired,
    ErrorObject,
    ErrorResponse,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    ParseError,
    RequestCancelled,
    ResourceNotFound,
    RpcError,
    decode,
    encode,
)

CODES: list[tuple[type[RpcError], int]] = [
    (ParseError, -32700),
    (InvalidRequest, -32600),
    (MethodNotFound, -32601),
    (InvalidParams, -32602),
    (InternalError, -32603),
    (RequestCancelled, -32800),
    (AuthRequired, -32000),
    (ResourceNotFound, -32002),
]


@pytest.mark.parametrize(("cls", "code"), CODES)
def test_each_class_knows_its_code_and_round_trips(cls: type[RpcError], code: int) -> None:
    error = cls(data={"k": [1, 2]})
    assert error.code == code
    response = error.to_response(7)
    wire = encode(response)
    received = decode(wire)
    assert isinstance(received, ErrorResponse)
    assert received.id == 7
    rebuilt = RpcError.from_response(received)
    assert type(rebuilt) is cls
    assert rebuilt.code == code
    assert rebuilt.message == cls.MESSAGE
    assert rebuilt.data == {"k": [1, 2]}


def test_constructors_build_the_documented_data() -> None:
    assert RpcError.method_not_found("x/y").data == {"method": "x/y"}
    assert RpcError.resource_not_found("file:///a").data == {"uri": "file:///a"}
    assert RpcError.resource_not_found().data is msgspec.UNSET
    assert RpcError.invalid_params({"detail": "bad"}).code == -32602
    assert RpcError.parse_error("oops").data == {"detail": "oops"}
    assert isinstance(RpcError.request_cancelled(), RequestCancelled)
    assert isinstance(RpcError.auth_required(), AuthRequired)
    assert isinstance(RpcError.internal_error(), InternalError)
    assert isinstance(RpcError.invalid_request(), InvalidRequest)


def test_data_is_omitted_when_unset() -> None:
    assert encode(RequestCancelled().to_response("a")) == (
        b'{"jsonrpc":"2.0","id":"a","error":{"code":-32800,"message":"Request cancelled"}}'
    )


def test_unknown_code_is_kept_as_a_generic_failure() -> None:
    error = RpcError.from_error_object(ErrorObject(code=-31999, message="custom", data=[1]))
    assert type(error) is RpcError
    assert (error.code, error.message, error.data) == (-31999, "custom", [1])
    assert error.to_error_object() == ErrorObject(code=-31999, message="custom", data=[1])


def test_a_peer_message_is_kept_over_the_default() -> None:
    error = RpcError.from_error_object(ErrorObject(code=-32601, message="no such thing"))
    assert isinstance(error, MethodNotFound)
    assert error.message == "no such thing"
    assert str(error) == "no such thing (-32601)"
    assert "MethodNotFound(code=-32601" in repr(error)


def test_protocol_codes_register_on_the_same_mechanism() -> None:
    class TeapotError(RpcError):
        CODE = -32098
        MESSAGE = "I am a teapot"

    rebuilt = RpcError.from_error_object(ErrorObject(code=-32098, message="short and stout"))
    assert type(rebuilt) is TeapotError
    assert TeapotError().to_error_object().code == -32098


def test_a_code_cannot_be_claimed_twice() -> None:
    with pytest.raises(TypeError, match="already registered"):

        class Clash(RpcError):
            CODE = -32601


def test_each_protocol_has_its_own_code_table() -> None:
    class NotCancelable(RpcError):
        PROTOCOL = "test-protocol"
        CODE = -32002  # the core's ResourceNotFound code, another meaning here
        MESSAGE = "Task cannot be canceled"

    wire = ErrorObject(code=-32002, message="m")
    assert type(RpcError.from_error_object(wire)) is ResourceNotFound
    assert type(RpcError.from_error_object(wire, "test-protocol")) is NotCancelable
    # codes the protocol does not define fall back to the core's
    fallback = RpcError.from_error_object(ErrorObject(code=-32601, message="m"), "test-protocol")
    assert type(fallback) is MethodNotFound


# -- what str() says: the reason too ----------------------------------------------------

A2A_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
A2A_BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"


def from_wire(code: int, message: str, data: object) -> RpcError:
    return RpcError.from_response(
        ErrorResponse(id=1, error=ErrorObject(code=code, message=message, data=data))
    )


@pytest.mark.parametrize(
    ("data", "shown"),
    [
        ({"detail": "$.cwd: Expected `str`, got `int`"}, "$.cwd: Expected `str`, got `int`"),
        ({"detail": "too big", "limit": 10}, "too big"),  # the detail says it
        ("a plain string", "a plain string"),
        ({"sessionId": "nope"}, "sessionId=nope"),
        ({"method": "x/y", "tries": [1, 2]}, "method=x/y, tries=[1,2]"),
        # A2A: `[ErrorInfo, ...]`; a core error's fields are the ErrorInfo's metadata
        (
            [{"@type": A2A_INFO, "reason": "INVALID_PARAMS", "metadata": {"detail": "no id"}}],
            "no id",
        ),
        (
            [
                {"@type": A2A_INFO, "reason": "INVALID_PARAMS", "domain": "a2a-protocol.org"},
                {
                    "@type": A2A_BAD_REQUEST,
                    "fieldViolations": [
                        {"field": "message.parts", "description": "required"},
                        {"field": "id", "description": "not a string"},
                    ],
                },
            ],
            "message.parts: required; id: not a string",
        ),
        ([{"@type": A2A_INFO, "reason": "TASK_NOT_FOUND", "metadata": {}}], "TASK_NOT_FOUND"),
        ([1, "two"], "1; two"),
        (42, "42"),
    ],
)
def test_str_shows_the_reason_data_gives(data: object, shown: str) -> None:
    assert str(from_wire(-32602, "Invalid params", data)) == f"Invalid params (-32602): {shown}"


def test_str_without_data_is_the_message_and_code() -> None:
    assert str(InvalidParams()) == "Invalid params (-32602)"
    assert str(from_wire(-32602, "Invalid params", None)) == "Invalid params (-32602)"


def test_str_does_not_repeat_a_reason_the_message_already_gives() -> None:
    # (A2A's bad_request puts the violations in the message too)
    violations = [
        {"@type": A2A_BAD_REQUEST, "fieldViolations": [{"field": "a", "description": "b"}]}
    ]
    assert (
        str(from_wire(-32602, "Invalid params: a: b", violations))
        == "Invalid params: a: b (-32602)"
    )


def test_str_is_one_line_and_bounded_whatever_the_peer_sent() -> None:
    error = from_wire(-32603, "boom\n" * 10_000, {"detail": "line\n" * 100_000})
    text = str(error)
    assert "\n" not in text
    assert len(text) < 1000
    assert text.startswith("boom boom")
    assert text.endswith("\u2026")
    assert "(-32603): line line" in text
    many = from_wire(-32000, "m", list(range(1_000_000)))
    assert str(many).startswith("m (-32000): 0; 1; 2")
    assert len(str(many)) < 1000


def test_str_of_data_that_is_not_json_falls_back_to_repr() -> None:
    marker = object()
    assert repr(marker) in str(RpcError("odd", {"k": marker}, code=-31000))
