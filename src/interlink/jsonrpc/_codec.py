"""Bytes <-> messages: the two-phase decoder, the classification rules, the encoder.

Phase one (`decode`) reads the envelope with `params` / `result` left as
`msgspec.Raw`; phase two (`decode_params`, `decode_result`) decodes those by the
method's type once the method is known. That is where validation happens.

Classification follows `DECISIONS.md`: invalid JSON is -32700 with id null; any JSON
value that is not a request, notification or response object is -32600 with the id if
one can be read (string or integer), else null; arrays are batches only when the
profile turns them on, and an empty batch is one -32600. The fast path decodes the
envelope with a typed decoder; only when that fails do we decode to plain Python values
to say precisely what is wrong. Nothing here raises on bad input: it returns `Invalid`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast

import msgspec

from . import _messages as msg
from ._errors import InvalidParams, InvalidRequest, ParseError, RpcError

T = TypeVar("T")

_UNSET = msgspec.UNSET


class Invalid(msgspec.Struct, frozen=True):
    """Input that is not a valid message, with the error to answer it with."""

    error: RpcError
    id: msg.RequestId | None = None

    def response(self) -> msg.ErrorResponse:
        return self.error.to_response(self.id)


class Batch(msgspec.Struct, frozen=True):
    """A JSON-RPC batch array (only when the profile allows batches); never empty."""

    items: list[msg.AnyMessage | Invalid]


class _Envelope(msgspec.Struct):
    jsonrpc: str | msgspec.UnsetType = _UNSET
    id: int | str | msgspec.UnsetType | None = _UNSET
    method: str | msgspec.UnsetType = _UNSET
    params: msgspec.Raw | msgspec.UnsetType = _UNSET
    result: msgspec.Raw | msgspec.UnsetType = _UNSET
    error: msg.ErrorObject | msgspec.UnsetType = _UNSET


_envelope_decoder = msgspec.json.Decoder(_Envelope)
_envelopes_decoder = msgspec.json.Decoder(list[_Envelope])
_encoder = msgspec.json.Encoder()
_NULL = b"null"
_STRUCTURED_STARTS = frozenset(b"{[")
_N = ord("n")
_WHITESPACE = b" \t\r\n"


def _invalid(detail: str, id: msg.RequestId | None = None) -> Invalid:
    return Invalid(RpcError.invalid_request(detail), id)


def _classify(env: _Envelope) -> msg.AnyMessage | Invalid:
    """The envelope rules, over a well-typed envelope."""
    id = env.id
    readable_id = None if id is _UNSET else id
    if env.jsonrpc != "2.0":
        return _invalid('"jsonrpc" must be "2.0"', readable_id)
    params = env.params
    if params is not _UNSET:
        first = memoryview(params)[0]  # Raw holds the value without surrounding space
        if first == _N:  # "params": null is taken as no params
            params = _UNSET
        elif first not in _STRUCTURED_STARTS:
            return _invalid('"params" must be an object or an array', readable_id)
    method = env.method
    if method is not _UNSET:
        if env.result is not _UNSET or env.error is not _UNSET:
            return _invalid(
                "a message cannot have both a method and a result or error", readable_id
            )
        if id is _UNSET:
            return msg.Notification(method=method, params=params)
        return msg.Request(id=readable_id, method=method, params=params)
    if env.result is not _UNSET:
        if env.error is not _UNSET:
            return _invalid("a response cannot have both result and error", readable_id)
        if id is _UNSET:
            return _invalid('a response must have an "id"')
        return msg.SuccessResponse(id=readable_id, result=env.result)
    if env.error is not _UNSET:
        if id is _UNSET:
            return _invalid('a response must have an "id"')
        return msg.ErrorResponse(id=readable_id, error=env.error)
    return _invalid('a message needs a "method", or a "result" or "error"', readable_id)


def _explain(value: object) -> Invalid:
    """Why a JSON value that failed the typed envelope is not a message."""
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else f"a JSON {_json_kind(value)}"
        return _invalid(f"a message must be an object, not {kind}")
    raw_id = value.get("id")
    id: msg.RequestId | None = None
    if "id" in value and not (raw_id is None or isinstance(raw_id, str) or _is_int(raw_id)):
        return _invalid(f'"id" must be a string, an integer or null, not {_json_kind(raw_id)}')
    if isinstance(raw_id, str) or _is_int(raw_id):
        id = cast("msg.RequestId", raw_id)
    if value.get("jsonrpc") != "2.0":
        return _invalid('"jsonrpc" must be "2.0"', id)
    if "method" in value and not isinstance(value["method"], str):
        return _invalid(f'"method" must be a string, not {_json_kind(value["method"])}', id)
    if "error" in value:
        return _invalid(
            '"error" must be an object with an integer "code" and a string "message"', id
        )
    # The typed envelope and this function disagree: a bug of ours, still answered.
    return _invalid("not a valid JSON-RPC message", id)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _parse_error(exc: msgspec.DecodeError | RecursionError) -> Invalid:
    if isinstance(exc, RecursionError):  # valid JSON, but deeper than the decoder goes
        return Invalid(RpcError.parse_error(f"JSON nested too deeply ({exc})"))
    return Invalid(RpcError.parse_error(str(exc)))


def decode_message(data: bytes) -> msg.AnyMessage | Invalid:
    """Decode one message that must not be a batch (batches off)."""
    try:
        return _classify(_envelope_decoder.decode(data))
    except msgspec.ValidationError:
        pass
    except (msgspec.DecodeError, RecursionError) as exc:
        return _parse_error(exc)
    try:
        value = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        return _parse_error(exc)
    if isinstance(value, list):
        return _invalid("batch arrays are not supported on this connection")
    return _explain(value)


def decode(data: bytes, *, batches: bool = False) -> msg.AnyMessage | Invalid | Batch:
    """Decode one frame: a message, a batch (when `batches`), or what is wrong with it."""
    if not batches or data.lstrip(_WHITESPACE)[:1] != b"[":
        return decode_message(data)
    try:
        envelopes = _envelopes_decoder.decode(data)
    except msgspec.ValidationError:
        pass
    except (msgspec.DecodeError, RecursionError) as exc:
        return _parse_error(exc)
    else:
        if not envelopes:
            return _invalid("an empty batch")
        return Batch([_classify(env) for env in envelopes])
    try:
        values = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        return _parse_error(exc)
    if not values:
        return _invalid("an empty batch")
    return Batch([decode_message(_encoder.encode(value)) for value in values])


def oversize(size: int, limit: int) -> Invalid:
    """The answer to a message over the size limit (it is skipped, not read)."""
    return Invalid(
        InvalidRequest(
            "Message too large",
            {"detail": f"message of {size} bytes exceeds the limit", "limit": limit},
        )
    )


# -- phase two ------------------------------------------------------------------------

_decoders: dict[object, msgspec.json.Decoder[object]] = {}


def _decoder(type_: object) -> msgspec.json.Decoder[object]:
    decoder = _decoders.get(type_)
    if decoder is None:
        decoder = _decoders[type_] = msgspec.json.Decoder(type_)
    return decoder


class ValueCodec:
    """How a protocol's params and results become JSON and back.

    The default decodes with one cached msgspec decoder per type and encodes with
    msgspec. A protocol whose types need more (ACP keeps unknown fields and variants)
    subclasses it; `decode` raises `msgspec.ValidationError` on values that do not fit
    the type, and `encode` takes a whole message (envelope and values) as well as a
    value alone, in one pass either way.
    """

    def decode(self, type_: object, data: bytes | msgspec.Raw) -> object:
        return _decoder(type_).decode(data)

    def decoder(self, type_: object) -> Callable[[bytes], object]:
        """`decode` of `type_` as one call, for the common case: it may raise
        `msgspec.ValidationError` where `decode` would not (then `decode` decides)."""
        return _decoder(type_).decode

    def encode(self, obj: object) -> bytes:
        """Compact JSON of a message or of the protocol's values, with no raw newline."""
        return _encoder.encode(obj)


DEFAULT_CODEC = ValueCodec()


def decode_params(
    params: msgspec.Raw | msgspec.UnsetType, type_: type[T], codec: ValueCodec = DEFAULT_CODEC
) -> T:
    """Decode a received message's params by the method's type; failures are -32602,
    or -32700 when the params are not JSON at all (invalid UTF-8 inside a string, which
    the envelope's decoding leaves for this one to find).

    Missing params decode as `{}` for struct types (so a struct whose fields are all
    optional accepts them) and as `null` otherwise.
    """
    if params is _UNSET:
        data = b"{}" if isinstance(type_, type) and issubclass(type_, msgspec.Struct) else _NULL
    else:
        data = params
    try:
        return cast(T, codec.decode(type_, data))
    except msgspec.ValidationError as exc:
        raise InvalidParams(data={"detail": str(exc)}) from None
    except msgspec.DecodeError as exc:  # what phase one leaves raw: invalid UTF-8 inside
        raise ParseError(data={"detail": str(exc)}) from None


def decode_result(result: msgspec.Raw, type_: type[T], codec: ValueCodec = DEFAULT_CODEC) -> T:
    """Decode a received success result by the method's result type.

    A peer that answers with the wrong shape raises `InvalidResult` (it is the peer's
    fault, and the caller's await is where it surfaces).
    """
    try:
        return cast(T, codec.decode(type_, result))
    except msgspec.ValidationError as exc:
        raise InvalidResult(str(exc)) from None
    except msgspec.DecodeError as exc:  # (invalid UTF-8 inside the result)
        raise InvalidResult(f"the result is not valid JSON: {exc}") from None


class InvalidResult(RpcError):
    """The peer answered a request with a result that does not fit the method's type.

    Never sent on the wire; raised locally to the caller that awaited the result.
    """

    MESSAGE = "Invalid result"

    def __init__(self, detail: str) -> None:
        super().__init__(f"Invalid result: {detail}", code=-32603)


def encode(message: object) -> bytes:
    """Compact JSON. msgspec escapes control characters, so no raw newline is emitted."""
    return _encoder.encode(message)


def encode_line(message: object) -> bytes:
    """One NDJSON frame: the compact message and a newline."""
    buf = bytearray()
    _encoder.encode_into(message, buf)
    buf += b"\n"
    return bytes(buf)
