"""ProtoJSON in and out for the generated A2A types: one entry point each way.

`decode` validates while it decodes and raises one exception type, `ValidationError`,
whose `violations` are `(field, description)` pairs ready for a -32602 reply
(`google.rpc.BadRequest.fieldViolations`). Field paths use the JSON (camelCase) names.

snake_case keys are accepted as ProtoJSON parsers do, without slowing camelCase input:
a cached typed decoder reads the bytes directly unless a regex finds something that could
be a snake_case key (`_...":`); only then are the bytes decoded to builtins, the keys
renamed along the schema (never inside `Struct`/`Value`/map values, which are user data),
and the result converted with the same validation. Giving one field under both names is
a violation.
"""

import enum
import re
import types
from collections.abc import Mapping
from typing import (
    Annotated,
    Final,
    NamedTuple,
    TypeGuard,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
)

import msgspec

from interlink.a2a._types import REQUIRED_FIELDS, Empty

__all__ = [
    "FieldViolation",
    "ValidationError",
    "decode",
    "encode",
    "from_query",
    "to_query",
    "missing_required",
    "to_builtins",
]

T = TypeVar("T", bound=msgspec.Struct)


class FieldViolation(NamedTuple):
    """One invalid field: its JSON path (`message.parts[0].text`, "" for the whole body)."""

    field: str
    description: str


class ValidationError(ValueError):
    """A body that does not decode into the requested type; the caller answers -32602."""

    def __init__(self, violations: tuple[FieldViolation, ...]) -> None:
        self.violations = violations
        super().__init__("; ".join(f"{v.field or '<body>'}: {v.description}" for v in violations))


_ENCODER: Final = msgspec.json.Encoder()
_DECODERS: dict[type[msgspec.Struct], msgspec.json.Decoder[msgspec.Struct]] = {}
# What may end a snake_case key: `_`, name characters, `":`. Enum values (`"ROLE_USER",`)
# and escaped quotes inside strings never match. Two patterns, because sre only skips
# ahead fast (memchr) to a literal first byte: one alternation costs 6x both together.
_SNAKE_KEY: Final = re.compile(rb'_[a-z0-9_]*"\s*:')
_ESCAPED_UNDERSCORE: Final = re.compile(rb"\\u005[fF]")


def decode(type_: type[T], data: bytes | msgspec.Raw, *, check_required: bool = False) -> T:
    """Decode ProtoJSON `data` (camelCase or snake_case keys) into `type_`.

    With `check_required`, fields marked REQUIRED in the proto must also be non-empty
    (see `missing_required`); every such violation is reported at once. `Empty` also
    accepts `null`, which the official SDKs send as the result of a delete.
    """
    if type_ is Empty and bytes(data).strip() == b"null":
        return cast(T, Empty())
    try:
        if _SNAKE_KEY.search(data) is None and _ESCAPED_UNDERSCORE.search(data) is None:
            decoder = _DECODERS.get(type_)
            if decoder is None:
                decoder = _DECODERS[type_] = msgspec.json.Decoder(type_)
            try:
                result = cast(T, decoder.decode(data))
            except msgspec.ValidationError:  # perhaps ProtoJSON's other forms
                result = _lenient(type_, data)
        else:
            result = _lenient(type_, data)
    except msgspec.DecodeError as exc:  # ValidationError is a DecodeError too
        raise ValidationError((_violation(type_, str(exc)),)) from None
    if check_required:
        missing = missing_required(result)
        if missing:
            raise ValidationError(missing)
    return result


def from_query(type_: type[msgspec.Struct], query: Mapping[str, list[str]]) -> dict[str, object]:
    """The fields of `type_` that query parameters give (§11.5), by JSON name, as JSON
    values for `decode`: names in camelCase (snake_case accepted), booleans `true` /
    `false`, numbers in decimal, enums by name, timestamps in RFC 3339, repeated fields
    as repeated parameters or comma-separated lists. A parameter that names no field
    is left out (the service parameters travel there too); a message field or a value
    of the wrong form raises `ValidationError`."""
    schema = _schema(type_).by_key
    out: dict[str, object] = {}
    problems: list[FieldViolation] = []
    for key, values in query.items():
        entry = schema.get(key)
        if entry is None or not values:
            continue
        if entry.json in out:
            problems.append(FieldViolation(entry.json, f"given twice, also as {key!r}"))
            continue
        if entry.child is not None or entry.kind == "map":
            problems.append(FieldViolation(entry.json, "not a query parameter (a message)"))
            continue
        if entry.kind == "list":
            items = [v for value in values for v in value.split(",") if v]
            converted = [_query_scalar(v, entry.element) for v in items]
            bad = next((v for v in converted if isinstance(v, _Bad)), None)
            if bad is not None:
                problems.append(FieldViolation(entry.json, bad.description))
                continue
            out[entry.json] = converted
            continue
        if len(values) > 1:
            problems.append(FieldViolation(entry.json, "given more than once"))
            continue
        one = _query_scalar(values[0], entry.element)
        if isinstance(one, _Bad):
            problems.append(FieldViolation(entry.json, one.description))
            continue
        out[entry.json] = one
    if problems:
        raise ValidationError(tuple(problems))
    return out


def to_query(values: Mapping[str, object]) -> list[tuple[str, str]]:
    """Query parameters of a request's ProtoJSON fields (`to_builtins`), the inverse of
    `from_query`: a list as one parameter per item, booleans `true` / `false`, the rest
    as their text (enums by name, timestamps in RFC 3339). A message field cannot be a
    query parameter (`ValueError`)."""
    out: list[tuple[str, str]] = []
    for key, value in values.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict):
                raise ValueError(f"{key}: a message is not a query parameter")
            text = ("true" if item else "false") if isinstance(item, bool) else str(item)
            out.append((key, text))
    return out


class _Bad(NamedTuple):
    description: str


def _query_scalar(value: str, type_: object) -> object:
    """A query parameter's value as the JSON value of a field of `type_`."""
    if type_ is bool:
        if value not in ("true", "false"):
            return _Bad(f"expected true or false, got {value!r}")
        return value == "true"
    if type_ is int:
        if not _INTEGER.fullmatch(value):
            return _Bad(f"expected an integer, got {value!r}")
        return int(value)
    return value  # strings, enum names, timestamps: the decoder checks them


def encode(obj: msgspec.Struct) -> bytes:
    """ProtoJSON bytes: camelCase names, zero values of non-`optional` fields omitted."""
    return _ENCODER.encode(obj)


def to_builtins(obj: msgspec.Struct) -> dict[str, object]:
    """The ProtoJSON form as dicts, lists and scalars (e.g. to embed in another document)."""
    result: dict[str, object] = msgspec.to_builtins(obj)
    return result


def missing_required(obj: msgspec.Struct) -> tuple[FieldViolation, ...]:
    """Fields marked REQUIRED in the proto that are empty, in `obj` and all it contains.

    ProtoJSON cannot tell an absent string, enum or list from its zero value, so "empty"
    means `""`, `b""`, an `*_UNSPECIFIED` enum or an empty list or map. REQUIRED
    integers and booleans are not checked: zero is a valid value for them.
    """
    out: list[FieldViolation] = []
    _missing(obj, None, out)
    return tuple(out)


# ---------------------------------------------------------------------------- schema walk


class _Field(NamedTuple):
    name: str  # Python attribute
    json: str  # ProtoJSON name
    kind: str  # "one", "list" or "map": how a nested message sits in the field
    child: type[msgspec.Struct] | None  # the nested message type, if any
    type: object  # the field's value type, unwrapped
    element: object  # the type of a list's or map's items; `type` for a single value
    zero_enum: enum.Enum | None  # the `*_UNSPECIFIED` member if the field is an enum


class _Schema(NamedTuple):
    by_key: dict[str, _Field]  # by Python name and by JSON name
    nested: tuple[_Field, ...]  # fields that hold messages
    required: tuple[_Field, ...]  # fields marked REQUIRED


_SCHEMAS: dict[type[msgspec.Struct], _Schema] = {}


def _schema(type_: type[msgspec.Struct]) -> _Schema:
    schema = _SCHEMAS.get(type_)
    if schema is None:
        fields = []
        for info in msgspec.structs.fields(type_):
            value_type = _unwrap(info.type)
            kind, element = "one", value_type
            origin = get_origin(value_type)
            if origin is list:
                kind, element = "list", _unwrap(get_args(value_type)[0])
            elif origin is dict:
                kind, element = "map", _unwrap(get_args(value_type)[1])
            child = element if _is_struct(element) else None
            zero = next(iter(value_type)) if _is_enum(value_type) else None
            fields.append(
                _Field(info.name, info.encode_name, kind, child, value_type, element, zero)
            )
        required = REQUIRED_FIELDS.get(type_, ())
        schema = _SCHEMAS[type_] = _Schema(
            by_key={key: f for f in fields for key in (f.name, f.json)},
            nested=tuple(f for f in fields if f.child is not None),
            required=tuple(f for f in fields if f.name in required),
        )
    return schema


def _is_enum(tp: object) -> TypeGuard[type[enum.Enum]]:
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


def _is_struct(tp: object) -> TypeGuard[type[msgspec.Struct]]:
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


def _unwrap(tp: object) -> object:
    """`X | None`, `X | UnsetType` and `Annotated[X, ...]` -> `X`."""
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            rest = [a for a in get_args(tp) if a not in (type(None), msgspec.UnsetType)]
            if len(rest) != 1:
                return tp
            tp = rest[0]
        else:
            return tp


def _lenient(type_: type[T], data: bytes | msgspec.Raw) -> T:
    """Decode what the typed decoder refused for its form, not its content: snake_case
    keys, and the other forms a ProtoJSON parser accepts (`null` for a field's default,
    integers as strings, `NaN`/`Infinity`, URL-safe or unpadded base64)."""
    return msgspec.convert(_normalized(msgspec.json.decode(data), type_, ""), type_)


def _normalized(value: object, type_: type[msgspec.Struct], path: str) -> object:
    """`value` with the keys of `type_` (and nested messages) renamed to their JSON names
    and its scalars in the one form each type takes (see `_lenient`)."""
    if not isinstance(value, dict):
        return value  # the conversion reports the type error
    schema = _schema(type_).by_key
    out: dict[object, object] = {}
    given: dict[str, str] = {}
    for key, item in value.items():
        entry = schema.get(key) if isinstance(key, str) else None
        if entry is None:
            out[key] = item  # unknown: ignored by the conversion, as in the fast path
            continue
        if entry.json in given:
            where = f"{path}.{entry.json}".lstrip(".")
            problem = f"given twice, as {given[entry.json]!r} and {key!r}"
            raise ValidationError((FieldViolation(where, problem),))
        given[entry.json] = key
        if item is None and entry.type is not object:
            continue  # ProtoJSON: null is the field's default (but a Value may be null)
        child = entry.child
        here = f"{path}.{entry.json}"
        if entry.kind == "one":
            item = _scalar(item, entry.element) if child is None else _normalized(item, child, here)
        elif entry.kind == "list" and isinstance(item, list):
            if child is None:
                item = [_scalar(v, entry.element) for v in item]
            else:
                item = [_normalized(v, child, f"{here}[{i}]") for i, v in enumerate(item)]
        elif entry.kind == "map" and isinstance(item, dict):
            if child is None:
                item = {k: _scalar(v, entry.element) for k, v in item.items()}
            else:
                item = {k: _normalized(v, child, f"{here}[{k!r}]") for k, v in item.items()}
        out[entry.json] = item
    return out


_INTEGER: Final = re.compile(r"-?[0-9]+")
_FLOAT_WORDS: Final = frozenset({"NaN", "Infinity", "-Infinity"})


def _scalar(item: object, type_: object) -> object:
    """A scalar in the form the typed decoder takes (anything else is left for the
    conversion to report)."""
    if not isinstance(item, str):
        return item
    if type_ is int and _INTEGER.fullmatch(item):
        return int(item)  # (64-bit integers travel as strings)
    if type_ is float and (item in _FLOAT_WORDS or _INTEGER.fullmatch(item)):
        return float(item)
    if type_ is bytes:  # standard base64 with padding, from the URL-safe or unpadded forms
        standard = item.replace("-", "+").replace("_", "/")
        return standard + "=" * (-len(standard) % 4)
    return item


_EMPTYABLE: Final = (str, bytes, list, dict)
_Path = tuple["_Path", str] | None  # built backwards, joined only for a violation


def _join(path: _Path, last: str) -> str:
    parts = [last]
    while path is not None:
        path, part = path
        parts.append(part)
    return "".join(reversed(parts)).lstrip(".")


def _missing(obj: msgspec.Struct, path: _Path, out: list[FieldViolation]) -> None:
    schema = _schema(type(obj))
    for entry in schema.required:
        value = getattr(obj, entry.name)
        if value is entry.zero_enum:
            where = _join(path, "." + entry.json)
            out.append(FieldViolation(where, f"required; {entry.zero_enum} is not allowed"))
        elif not value and isinstance(value, _EMPTYABLE):
            where = _join(path, "." + entry.json)
            out.append(FieldViolation(where, "required field is missing or empty"))
    for entry in schema.nested:
        value = getattr(obj, entry.name)
        if isinstance(value, msgspec.Struct):
            _missing(value, (path, "." + entry.json), out)
        elif isinstance(value, list):
            here = (path, "." + entry.json)
            for i, item in enumerate(value):
                _missing(item, (here, f"[{i}]"), out)
        elif isinstance(value, dict):
            here = (path, "." + entry.json)
            for key, item in value.items():
                _missing(item, (here, f"[{key!r}]"), out)


# ---------------------------------------------------------------------------- messages

_MSGSPEC_ERROR: Final = re.compile(r"(?P<text>.*?)(?: - at `\$(?P<path>[^`]*)`)?", re.S)
_MISSING: Final = re.compile(r"Object missing required field `(?P<name>[^`]+)`")
_BAD_ENUM: Final = re.compile(r"Invalid enum value (?P<value>.+)")


def _violation(type_: type[msgspec.Struct], message: str) -> FieldViolation:
    """Rewrite a msgspec error (`<text> - at `$.a.b[0]``) as a field violation."""
    match = _MSGSPEC_ERROR.fullmatch(message)
    assert match is not None  # the pattern matches any string
    text, path = match["text"], (match["path"] or "")
    if missing := _MISSING.fullmatch(text):
        return FieldViolation(f"{path}.{missing['name']}".lstrip("."), "required field is missing")
    if bad := _BAD_ENUM.fullmatch(text):
        enum_type = _type_at(type_, path)
        if _is_enum(enum_type):
            allowed = ", ".join(str(member.value) for member in enum_type)
            text = f"invalid {enum_type.__name__} value {bad['value']}; expected one of {allowed}"
    return FieldViolation(path.lstrip("."), text)


def _type_at(type_: type[msgspec.Struct], path: str) -> object:
    """The value type at a msgspec error path such as `.message.parts[0].text`."""
    current: object = type_
    for name, index in re.findall(r"\.([^.\[]+)|\[([^\]]*)\]", path):
        if name and _is_struct(current):
            entry = _schema(current).by_key.get(name)
            if entry is None:
                return None
            current = entry.type
        elif index:
            args = get_args(current)
            if not args:
                return None
            current = _unwrap(args[-1])
        else:
            return None
    return current
