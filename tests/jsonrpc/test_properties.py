"""Properties: encode/decode round trips, and classification of arbitrary JSON values
against a reference written straight from the rules."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from interlink.jsonrpc import (
    ErrorObject,
    ErrorResponse,
    Invalid,
    Notification,
    Request,
    SuccessResponse,
    decode,
    encode,
    encode_line,
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
structured = st.dictionaries(st.text(), json_values, max_size=4) | st.lists(json_values, max_size=4)
ids = st.integers() | st.text()
methods = st.text()


def _with_params(cls: type[Request[object]] | type[Notification[object]]) -> object:
    return cls


messages = st.one_of(
    st.builds(lambda i, m, p: Request(id=i, method=m, params=p), ids, methods, structured),
    st.builds(lambda i, m: Request(id=i, method=m), ids, methods),
    st.builds(lambda m, p: Notification(method=m, params=p), methods, structured),
    st.builds(lambda i, r: SuccessResponse(id=i, result=r), ids, json_values),
    st.builds(
        lambda i, c, m, d: ErrorResponse(id=i, error=ErrorObject(code=c, message=m, data=d)),
        ids | st.none(),
        st.integers(min_value=-(2**63), max_value=2**63 - 1),
        st.text(),
        json_values,
    ),
)


def _plain(message: object) -> object:
    """A message as plain JSON values (Raw members decoded) for comparison."""
    return msgspec.json.decode(encode(message))


@settings(max_examples=400)
@given(messages)
def test_round_trip(message: object) -> None:
    line = encode_line(message)
    assert line.count(b"\n") == 1
    decoded = decode(line[:-1])
    assert not isinstance(decoded, Invalid), decoded
    assert type(decoded) is type(message)
    assert _plain(decoded) == _plain(message)


def reference(value: object) -> tuple[str, object]:
    """The rules of DECISIONS.md over a JSON value: (kind, id)."""

    def is_id(v: object) -> bool:
        return isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))

    if not isinstance(value, dict):
        return ("invalid", None)
    readable = value.get("id") if is_id(value.get("id")) else None
    if "id" in value and value["id"] is not None and not is_id(value["id"]):
        return ("invalid", None)
    if value.get("jsonrpc") != "2.0":
        return ("invalid", readable)
    params = value.get("params")
    if "params" in value and params is not None and not isinstance(params, dict | list):
        return ("invalid", readable)
    if "method" in value:
        if not isinstance(value["method"], str) or "result" in value or "error" in value:
            return ("invalid", readable)
        return ("notification", None) if "id" not in value else ("request", readable)
    error = value.get("error")
    well_formed_error = (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and not isinstance(error.get("code"), bool)
        and isinstance(error.get("message"), str)
    )
    if "result" in value and "error" in value:
        return ("invalid", readable)
    if "error" in value and not well_formed_error:
        return ("invalid", readable)
    if "result" in value or "error" in value:
        if "id" not in value:
            return ("invalid", None)
        return ("success" if "result" in value else "error", readable)
    return ("invalid", readable)


KINDS = {Request: "request", Notification: "notification", SuccessResponse: "success"}
KINDS[ErrorResponse] = "error"

envelope_like = st.dictionaries(
    st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "x"]),
    st.one_of(
        json_values,
        st.just("2.0"),
        st.builds(
            dict,
            code=st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.text(),
            message=st.text() | st.integers(),
        ),
    ),
)


@settings(max_examples=1000)
@given(st.one_of(envelope_like, json_values))
def test_classification_of_arbitrary_json_values(value: object) -> None:
    result = decode(msgspec.json.encode(value))
    kind, id = reference(value)
    if kind == "invalid":
        assert isinstance(result, Invalid), (value, result)
        assert result.response().error.code == -32600
        assert result.id == id
    else:
        assert KINDS[type(result)] == kind, (value, result)
        if kind != "notification":
            assert getattr(result, "id", None) == id


@settings(max_examples=500)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    result = decode(data, batches=True)
    if isinstance(result, Invalid):
        assert result.response().error.code in (-32700, -32600)
