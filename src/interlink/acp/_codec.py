"""Decoding and encoding of the generated ACP types, forward compatible.

Theory of operation. Every generated type is a frozen ``msgspec.Struct`` that forbids
unknown fields, and every tagged union is a native msgspec union of tagged structs. So the
common message decodes in one strict C pass (the *fast path*). When that pass fails with a
``ValidationError`` the message is decoded again into plain JSON values and converted by
:func:`_convert` (the *slow path*), which follows the same types but

- keeps unknown fields of known objects in the struct's ``extra`` field (wire key
  :data:`EXTRA_KEY`); :func:`encode` writes them back at the root of their object;
- turns an unknown union tag into the union's ``Unknown*`` value (an :class:`UnknownVariant`
  holding the whole wire object), and an unknown string of a closed enum into an
  :class:`UnknownEnumValue`;
- applies the schema's leniency marks (``x-deserialize-default-on-error``,
  ``-skip-invalid-items``, ``-default-on-null``); the raw wire value it could not type is
  kept in ``extra`` so that encoding reproduces it;
- raises ``msgspec.ValidationError`` with msgspec's ``- at `$.path``` message for anything
  else, in particular a *known* tag with malformed content.

Unions that msgspec cannot decode natively (a variant without a tag, variants told apart by
their fields) are :class:`UntaggedUnion` subclasses; both paths decode them through
:func:`dec_hook`. Invariant: whenever the fast path succeeds, the slow path would have
returned an equal value.

Encoding must go through :func:`encode` / :func:`encode_raw` / :func:`to_builtins` (or pass
:func:`enc_hook` to a msgspec encoder and accept that ``extra`` is then nested): only they
write ``extra`` back at the root of its object.
"""

from __future__ import annotations

import sys
import types
import typing
from collections.abc import Mapping
from typing import ClassVar, Final, Literal, TypeVar, Union, cast, overload

import msgspec

__all__ = [
    "EXTRA_KEY",
    "TaggedUnion",
    "UnknownEnumValue",
    "UnknownVariant",
    "UntaggedUnion",
    "convert",
    "dec_hook",
    "decode",
    "enc_hook",
    "encode",
    "encode_raw",
    "to_builtins",
]

T = TypeVar("T")

#: Wire name of the ``extra`` field of every generated struct. Never a protocol field; it
#: starts with DEL, which JSON text seldom holds, so that looking for it costs a memchr.
EXTRA_KEY: Final = "\x7finterlink_extra"
_EXTRA_MARK: Final = b'"\x7finterlink_extra":'
_DEL: Final = 0x7F

#: Leniency flags of a struct field, from the schema's ``x-deserialize-*`` marks.
DEFAULT_ON_ERROR: Final = 1
SKIP_INVALID_ITEMS: Final = 2
DEFAULT_ON_NULL: Final = 4


class UnknownVariant:
    """A union member whose tag this schema does not know.

    ``data`` is the whole wire object, tag included; encoding writes it back unchanged.
    Subclasses (one per union, generated) set :attr:`tag_field`.
    """

    __slots__ = ("data",)
    tag_field: ClassVar[str] = ""
    data: dict[str, object]

    def __init__(self, data: dict[str, object]) -> None:
        object.__setattr__(self, "data", data)

    @property
    def tag(self) -> str | None:
        """The unknown tag value, or ``None`` when the object carries none."""
        value = self.data.get(self.tag_field)
        return value if isinstance(value, str) else None

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.data == other.data

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.data!r})"


class UnknownEnumValue(str):
    """A string value of a closed enum that this schema does not know."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"UnknownEnumValue({str.__repr__(self)})"


class TaggedUnion:
    """``Annotated`` metadata of a native msgspec union of tagged structs."""

    __slots__ = ("name", "tag_field", "unknown", "variants")

    def __init__(
        self,
        name: str,
        tag_field: str,
        variants: Mapping[str, type[msgspec.Struct]],
        unknown: type[UnknownVariant],
    ) -> None:
        self.name = name
        self.tag_field = tag_field
        self.variants = dict(variants)
        self.unknown = unknown


class UntaggedUnion:
    """Base of the runtime marker classes of unions that msgspec cannot decode itself.

    A subclass names its members: by tag (``tag_field``, ``tagged``, ``default`` for a
    missing tag), or by the keys each member requires (``by_keys``, tried in order; for
    unions of arrays the first item's keys decide). ``unknown`` receives what matches none.
    """

    name: ClassVar[str] = ""
    tag_field: ClassVar[str | None] = None
    tagged: ClassVar[dict[str, object]] = {}
    default: ClassVar[object | None] = None
    by_keys: ClassVar[tuple[tuple[frozenset[str], object], ...]] = ()
    unknown: ClassVar[type[UnknownVariant] | None] = None

    @classmethod
    def select(cls, value: object, path: str) -> object:
        """Return the member type for ``value``, or ``cls.unknown`` for an unknown one."""
        if cls.tag_field is not None:
            if not isinstance(value, dict):
                raise _error(f"Expected `object`, got `{_json_type(value)}`", path)
            if cls.tag_field not in value:
                if cls.default is None:
                    raise _error(f"Object missing required field `{cls.tag_field}`", path)
                return cls.default
            tag = value[cls.tag_field]
            if not isinstance(tag, str):
                raise _error(f"Expected `str`, got `{_json_type(tag)}`", _join(path, cls.tag_field))
            member = cls.tagged.get(tag)
            if member is not None:
                return member
            if cls.unknown is None:
                raise _error(f"Invalid value '{tag}'", _join(path, cls.tag_field))
            return cls.unknown
        probe = value
        if isinstance(value, list):
            probe = value[0] if value else {}
        elif not isinstance(value, dict):
            raise _error(f"Expected `object`, got `{_json_type(value)}`", path)
        if isinstance(probe, dict):
            for keys, member in cls.by_keys:
                if keys <= probe.keys():
                    return member
        if cls.unknown is None or not isinstance(value, dict):
            return cls.by_keys[-1][1]
        return cls.unknown


def untagged_union(name: str, **attrs: object) -> type[UntaggedUnion]:
    """Make the runtime marker class of one untagged union (used by generated code)."""
    return type(name, (UntaggedUnion,), {"name": name, "__module__": __name__, **attrs})


# --------------------------------------------------------------------------- fast path


def dec_hook(type_: type, obj: object) -> object:
    """msgspec ``dec_hook`` for :class:`UntaggedUnion` members (fast path)."""
    if isinstance(type_, type) and issubclass(type_, UntaggedUnion):
        member = type_.select(obj, "$")
        if isinstance(member, type) and issubclass(member, UnknownVariant):
            return member(cast(dict[str, object], obj))
        # Strict, like the surrounding decoder; a failure sends the whole message to
        # the slow path, which reports the error with its full path.
        return msgspec.convert(obj, member, dec_hook=dec_hook)
    if type_ is object:  # msgspec hands untyped values (``rawInput``) to the hook too
        return obj
    raise NotImplementedError(f"cannot decode type {type_!r}")


_decoders: dict[object, msgspec.json.Decoder[object]] = {}
_plain_decoder: Final = msgspec.json.Decoder()


def _decoder(type_: object) -> msgspec.json.Decoder[object]:
    decoder = _decoders.get(type_)
    if decoder is None:
        decoder = msgspec.json.Decoder(cast(type[object], type_), dec_hook=dec_hook)
        _decoders[type_] = decoder
    return decoder


@overload
def decode(type_: type[T], raw: bytes | bytearray | memoryview | msgspec.Raw) -> T: ...
@overload
def decode(type_: object, raw: bytes | bytearray | memoryview | msgspec.Raw) -> object: ...
def decode(type_: object, raw: bytes | bytearray | memoryview | msgspec.Raw) -> object:
    """Decode JSON ``raw`` into ``type_`` (a generated struct, union alias or any type).

    Raises ``msgspec.ValidationError`` (map it to -32602) for a value that does not fit
    and ``msgspec.DecodeError`` for bytes that are not JSON.
    """
    decoder = _decoders.get(type_) or _decoder(type_)
    try:
        return decoder.decode(raw)
    except msgspec.ValidationError:
        return _convert(_plain_decoder.decode(raw), type_, "$")


@overload
def convert(type_: type[T], value: object) -> T: ...
@overload
def convert(type_: object, value: object) -> object: ...
def convert(type_: object, value: object) -> object:
    """Like :func:`decode`, from already decoded JSON values (dicts, lists, str, ...)."""
    try:
        return msgspec.convert(value, cast(type[object], type_), dec_hook=dec_hook)
    except msgspec.ValidationError:
        return _convert(value, type_, "$")


# --------------------------------------------------------------------------- encoding


def enc_hook(obj: object) -> object:
    """msgspec ``enc_hook`` for the unknown values of the generated types."""
    if isinstance(obj, UnknownVariant):
        return obj.data
    if isinstance(obj, UnknownEnumValue):
        return str(obj)
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


_encoder: Final = msgspec.json.Encoder(enc_hook=enc_hook)


def encode(obj: object) -> bytes:
    """Encode a generated value (or any JSON-able value containing them) to JSON bytes."""
    out = _encoder.encode(obj)
    if _DEL in out and out.find(_EXTRA_MARK) >= 0:  # rare: an object has unknown fields
        out = _encoder.encode(_merge_extra(_plain_decoder.decode(out)))
    return out


def encode_raw(obj: object) -> msgspec.Raw:
    """:func:`encode` wrapped as ``msgspec.Raw``, to embed in an envelope unchanged."""
    return msgspec.Raw(encode(obj))


def to_builtins(obj: object) -> object:
    """Convert a generated value to plain JSON values (dict, list, str, ...)."""
    return _merge_extra(msgspec.to_builtins(obj, enc_hook=enc_hook))


def _merge_extra(value: object) -> object:
    if isinstance(value, dict):
        extra = value.pop(EXTRA_KEY, None)
        for key, item in value.items():
            value[key] = _merge_extra(item)
        if isinstance(extra, dict):
            value.update(extra)  # the raw wire values win over their typed defaults
        return value
    if isinstance(value, list):
        return [_merge_extra(item) for item in value]
    return value


# --------------------------------------------------------------------------- slow path

_NONE_TYPES: Final = (type(None), msgspec.UnsetType)


class _StructInfo:
    __slots__ = ("fields", "known", "leniency", "tag", "tag_field")

    def __init__(self, cls: type[msgspec.Struct]) -> None:
        self.fields = [f for f in msgspec.structs.fields(cls) if f.encode_name != EXTRA_KEY]
        self.known = {f.encode_name for f in self.fields}
        config = cls.__struct_config__
        self.tag_field = config.tag_field
        self.tag = config.tag
        if self.tag_field is not None:
            self.known.add(self.tag_field)
        table = getattr(sys.modules[cls.__module__], "LENIENCY", {})
        self.leniency: dict[str, int] = table.get(cls, {})


_struct_infos: dict[type[msgspec.Struct], _StructInfo] = {}


def _convert(value: object, tp: object, path: str) -> object:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        for item in typing.get_args(tp)[1:]:
            if isinstance(item, TaggedUnion):
                return _convert_tagged(value, item, path)
        return _convert_leaf(value, tp, path)
    if isinstance(tp, type):
        if issubclass(tp, msgspec.Struct):
            return _convert_struct(value, tp, path)
        if issubclass(tp, UntaggedUnion):
            member = tp.select(value, path)
            if isinstance(member, type) and issubclass(member, UnknownVariant):
                return member(cast(dict[str, object], value))
            return _convert(value, member, path)
        return _convert_leaf(value, tp, path)
    if origin is Union or origin is types.UnionType:
        members = [a for a in typing.get_args(tp) if a not in _NONE_TYPES]
        if value is None and type(None) in typing.get_args(tp):
            return None
        if len(members) == 1:
            return _convert(value, members[0], path)
        return _convert_leaf(value, tp, path)
    if origin is Literal:
        choices = typing.get_args(tp)
        if value in choices:
            return value
        if isinstance(value, str) and all(isinstance(c, str) for c in choices):
            return UnknownEnumValue(value)
        return _convert_leaf(value, tp, path)
    if origin is list:
        if not isinstance(value, list):
            raise _error(f"Expected `array`, got `{_json_type(value)}`", path)
        (item_type,) = typing.get_args(tp)
        return [_convert(item, item_type, f"{path}[{i}]") for i, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _error(f"Expected `object`, got `{_json_type(value)}`", path)
        _, value_type = typing.get_args(tp)
        return {k: _convert(v, value_type, _join(path, k)) for k, v in value.items()}
    return _convert_leaf(value, tp, path)


def _convert_leaf(value: object, tp: object, path: str) -> object:
    try:
        return msgspec.convert(value, cast(type[object], tp), dec_hook=dec_hook)
    except msgspec.ValidationError as exc:
        message, sep, where = str(exc).partition(" - at `$")
        raise _error(message, path + where[:-1] if sep else path) from None


def _convert_tagged(value: object, union: TaggedUnion, path: str) -> object:
    if not isinstance(value, dict):
        raise _error(f"Expected `object`, got `{_json_type(value)}`", path)
    if union.tag_field not in value:
        raise _error(f"Object missing required field `{union.tag_field}`", path)
    tag = value[union.tag_field]
    if not isinstance(tag, str):
        raise _error(f"Expected `str`, got `{_json_type(tag)}`", _join(path, union.tag_field))
    member = union.variants.get(tag)
    if member is None:
        return union.unknown(value)
    return _convert_struct(value, member, path)


def _convert_struct(value: object, cls: type[msgspec.Struct], path: str) -> object:
    if not isinstance(value, dict):
        raise _error(f"Expected `object`, got `{_json_type(value)}`", path)
    info = _struct_infos.get(cls)
    if info is None:
        info = _struct_infos[cls] = _StructInfo(cls)
    if info.tag_field is not None:
        tag = value.get(info.tag_field)
        if tag != info.tag:
            where = _join(path, info.tag_field)
            if info.tag_field not in value:
                raise _error(f"Object missing required field `{info.tag_field}`", path)
            raise _error(f"Invalid value {tag!r}", where)
    kwargs: dict[str, object] = {}
    extra: dict[str, object] = {k: v for k, v in value.items() if k not in info.known}
    for field in info.fields:
        name = field.encode_name
        if name not in value:
            if field.required:
                raise _error(f"Object missing required field `{name}`", path)
            continue
        raw = value[name]
        flags = info.leniency.get(name, 0)
        if raw is None and flags & DEFAULT_ON_NULL and not _accepts_none(field.type):
            _set_default(kwargs, field, extra, raw)
            continue
        try:
            if flags & SKIP_INVALID_ITEMS and isinstance(raw, list):
                kwargs[field.name] = _convert_items(raw, field.type, _join(path, name))
                if len(cast(list[object], kwargs[field.name])) != len(raw):
                    extra[name] = raw
            else:
                kwargs[field.name] = _convert(raw, field.type, _join(path, name))
        except msgspec.ValidationError:
            if not flags & DEFAULT_ON_ERROR:
                raise
            _set_default(kwargs, field, extra, raw)
    if extra:
        kwargs["extra"] = extra
    return cls(**kwargs)


def _convert_items(raw: list[object], tp: object, path: str) -> list[object]:
    item_type = _list_item_type(tp)
    out: list[object] = []
    for i, item in enumerate(raw):
        try:
            out.append(_convert(item, item_type, f"{path}[{i}]"))
        except msgspec.ValidationError:
            continue
    return out


def _list_item_type(tp: object) -> object:
    for member in typing.get_args(tp) or (tp,):
        if typing.get_origin(member) is list:
            return typing.get_args(member)[0]
    if typing.get_origin(tp) is list:
        return typing.get_args(tp)[0]
    raise TypeError(f"not a list type: {tp!r}")


def _accepts_none(tp: object) -> bool:
    return tp is type(None) or type(None) in typing.get_args(tp)


def _set_default(
    kwargs: dict[str, object],
    field: msgspec.structs.FieldInfo,
    extra: dict[str, object],
    raw: object,
) -> None:
    """Use the field's default for a malformed value, keeping the wire value in ``extra``."""
    extra[field.encode_name] = raw
    if field.required:  # a required list: its default is empty
        kwargs[field.name] = []


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return {str: "str", int: "int", float: "float"}.get(type(value), type(value).__name__)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]"


def _error(message: str, path: str) -> msgspec.ValidationError:
    if path == "$":
        return msgspec.ValidationError(message)
    return msgspec.ValidationError(f"{message} - at `{path}`")
