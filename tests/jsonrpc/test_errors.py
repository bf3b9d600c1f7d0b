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
