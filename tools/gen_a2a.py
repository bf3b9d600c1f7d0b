"""Generate the A2A 1.0 types and method table from the normative `a2a.proto`.

Run from anywhere: `python tools/gen_a2a.py` rewrites `src/interlink/a2a/_types.py` and
`src/interlink/a2a/_methods.py`; `--check` exits 1 when the committed files differ from
what would be generated. The proto is read where it lies (`<spec>/a2a/a2a.proto`, where
`<spec>` is `../shared/spec` beside the repository or `$INTERLINK_SPEC_DIR`); nothing
from the spec is copied into the repository except what the generated code says.

The parser covers the proto3 subset the spec uses: messages (nested ones are flattened),
enums, `oneof`, `optional`, `repeated`, `map<,>`, field options, `service`/`rpc` and
`//` doc comments. Anything else is an error here rather than a silent mis-generation.

Mapping to msgspec (ProtoJSON on the wire):

- field names: snake_case in Python, the proto `json_name` (lowerCamelCase) on the wire;
- implicit-presence scalars, enums, repeated and map fields: the proto3 zero value as
  default, omitted on encode when equal to it (`omit_defaults`), accepted when absent;
- `optional` scalars and `oneof` members: `T | UnsetType = UNSET`, so unset, zero and a
  value stay distinct and a set member is always written (even `""` or `0`);
- singular message fields: `T | None = None`; with `field_behavior = REQUIRED` they have
  no default, so constructing or decoding without them fails;
- `oneof`: flat members; `__post_init__` rejects two set members (on decode too), and
  `which_<oneof>` / `<oneof>` properties name and return the member that is set;
- well-known types: `Timestamp` -> aware `datetime` normalised to UTC, `Struct` ->
  `dict[str, object]`, `Value` -> `object`, `Empty` -> an empty struct;
- messages in `ALWAYS_WRITTEN` encode every field, zero values included.
"""

from __future__ import annotations

import argparse
import keyword
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TYPES_OUT = REPO / "src" / "interlink" / "a2a" / "_types.py"
METHODS_OUT = REPO / "src" / "interlink" / "a2a" / "_methods.py"

#: Messages whose zero values are meaningful answers (an empty last page: no tasks, token
#: "", total 0); every field is REQUIRED and always written (reference §5, §19.4).
ALWAYS_WRITTEN = frozenset({"ListTasksResponse"})

SCALARS = {"string": ("str", '""'), "bool": ("bool", "False"), "int32": ("_Int32", "0")}
SCALARS["bytes"] = ("bytes", 'b""')
WELL_KNOWN = {
    "google.protobuf.Timestamp": "_Timestamp",
    "google.protobuf.Struct": "dict[str, object]",
    "google.protobuf.Value": "object",
    "google.protobuf.Empty": "Empty",
}
BUILTIN_NAMES = {"list", "dict", "str", "bool", "bytes", "object", "int"}
LINE = 100


def spec_dir() -> Path:
    """The `shared/spec` directory: `$INTERLINK_SPEC_DIR` or the one beside the repo."""
    env = os.environ.get("INTERLINK_SPEC_DIR")
    return Path(env) if env else REPO.parent / "shared" / "spec"


# ---------------------------------------------------------------------------- model


@dataclass
class Field:
    name: str
    type: str
    number: int
    doc: str
    label: str = ""  # "", "optional" or "repeated"
    map_key: str | None = None
    oneof: str | None = None
    required: bool = False
    deprecated: bool = False
    json_name: str = ""


@dataclass
class Oneof:
    name: str
    doc: str
    members: list[Field] = field(default_factory=list)


@dataclass
class Message:
    name: str
    doc: str
    fields: list[Field] = field(default_factory=list)
    oneofs: list[Oneof] = field(default_factory=list)


@dataclass
class Enum:
    name: str
    doc: str
    values: list[tuple[str, int, str]] = field(default_factory=list)


@dataclass
class HttpRule:
    """One `google.api.http` binding: the verb, the path template, the body field."""

    verb: str
    path: str
    body: str


@dataclass
class Rpc:
    name: str
    request: str
    response: str
    streaming: bool
    doc: str
    #: the `google.api.http` rule, then its `additional_bindings`
    http: list[HttpRule] = field(default_factory=list)


@dataclass
class Proto:
    package: str = ""
    messages: dict[str, Message] = field(default_factory=dict)
    enums: dict[str, Enum] = field(default_factory=dict)
    rpcs: list[Rpc] = field(default_factory=list)


# ---------------------------------------------------------------------------- parser

TOKEN = re.compile(
    r'(?P<comment>//[^\n]*)|(?P<block>/\*.*?\*/)|(?P<ws>\s+)|(?P<str>"(?:\\.|[^"\\])*")'
    r"|(?P<word>[A-Za-z_][\w.]*)|(?P<num>-?\d+)|(?P<punct>[{}\[\]()<>;=,:])",
    re.S,
)


class ProtoSyntaxError(Exception):
    pass


def camel(name: str) -> str:
    """protoc's default `json_name`: drop each `_` and upper-case the letter after it."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class Parser:
    """Recursive descent over tokens; doc comments are the `//` lines right above a token."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, int]] = []
        self.comments: dict[int, str] = {}  # line -> text of a comment-only line
        line, line_has_code = 1, False
        for m in TOKEN.finditer(text):
            kind, value = m.lastgroup, m.group()
            if kind is None:  # pragma: no cover - every character matches some group
                raise ProtoSyntaxError(f"line {line}: cannot read {value!r}")
            if kind == "comment" and not line_has_code:
                self.comments[line] = value[2:].strip()
            elif kind not in ("comment", "block", "ws"):
                self.tokens.append((value, line))
                line_has_code = True
            newlines = value.count("\n")
            if newlines:
                line, line_has_code = line + newlines, False
        if sum(len(m.group()) for m in TOKEN.finditer(text)) != len(text):
            raise ProtoSyntaxError("unreadable characters in the proto")
        self.pos = 0

    def peek(self) -> str:
        return self.tokens[self.pos][0] if self.pos < len(self.tokens) else ""

    def next(self) -> str:
        if self.pos >= len(self.tokens):
            raise ProtoSyntaxError("unexpected end of file")
        self.pos += 1
        return self.tokens[self.pos - 1][0]

    def expect(self, value: str) -> None:
        got = self.next()
        if got != value:
            line = self.tokens[self.pos - 1][1]
            raise ProtoSyntaxError(f"line {line}: expected {value!r}, got {got!r}")

    def doc(self) -> str:
        """The comment block directly above the current token, minus linter directives."""
        line = self.tokens[self.pos][1] - 1
        lines: list[str] = []
        while line in self.comments:
            lines.append(self.comments[line])
            line -= 1
        lines.reverse()
        kept, in_aip = [], False
        for text in lines:
            if text.startswith("(--"):
                in_aip = True
            if not in_aip and not text.startswith(("protolint:", "Next ID:")):
                kept.append(text)
            if text.endswith("--)"):
                in_aip = False
        return "\n".join(kept).strip()

    def skip_statement(self) -> None:
        """Skip to the end of `option ...;` or `import ...;`, including `{...}` values."""
        depth = 0
        while True:
            tok = self.next()
            depth += (tok == "{") - (tok == "}")
            if depth == 0 and tok in (";", "}"):
                return

    def parse(self) -> Proto:
        proto = Proto()
        while self.peek():
            tok = self.peek()
            if tok == "syntax":
                self.next()
                self.expect("=")
                if self.next() != '"proto3"':
                    raise ProtoSyntaxError("only proto3 is supported")
                self.expect(";")
            elif tok == "package":
                self.next()
                proto.package = self.next()
                self.expect(";")
            elif tok in ("import", "option"):
                self.skip_statement()
            elif tok == "message":
                self.message(proto, "")
            elif tok == "enum":
                self.enum(proto, "")
            elif tok == "service":
                self.service(proto)
            else:
                raise ProtoSyntaxError(f"line {self.tokens[self.pos][1]}: unexpected {tok!r}")
        return proto

    def enum(self, proto: Proto, prefix: str) -> None:
        doc = self.doc()
        self.expect("enum")
        enum = Enum(prefix + self.next(), doc)
        self.expect("{")
        while self.peek() != "}":
            if self.peek() in ("option", "reserved"):
                self.skip_statement()
                continue
            value_doc = self.doc()
            name = self.next()
            self.expect("=")
            number = int(self.next())
            if self.peek() == "[":
                self.options()
            self.expect(";")
            enum.values.append((name, number, value_doc))
        self.expect("}")
        if not enum.values or enum.values[0][1] != 0:
            raise ProtoSyntaxError(f"enum {enum.name}: the first value must be 0")
        proto.enums[enum.name] = enum

    def message(self, proto: Proto, prefix: str) -> None:
        doc = self.doc()
        self.expect("message")
        msg = Message(prefix + self.next(), doc)
        self.expect("{")
        while self.peek() != "}":
            tok = self.peek()
            if tok == "message":
                self.message(proto, msg.name)
            elif tok == "enum":
                self.enum(proto, msg.name)
            elif tok in ("option", "reserved", "extensions"):
                self.skip_statement()
            elif tok == "oneof":
                oneof = Oneof("", self.doc())
                self.next()
                oneof.name = self.next()
                self.expect("{")
                while self.peek() != "}":
                    if self.peek() == "option":
                        self.skip_statement()
                        continue
                    member = self.field()
                    member.oneof = oneof.name
                    oneof.members.append(member)
                    msg.fields.append(member)
                self.expect("}")
                msg.oneofs.append(oneof)
            else:
                msg.fields.append(self.field())
        self.expect("}")
        proto.messages[msg.name] = msg

    def field(self) -> Field:
        doc = self.doc()
        label = self.next() if self.peek() in ("optional", "repeated") else ""
        map_key = None
        type_ = self.next()
        if type_ == "map":
            self.expect("<")
            map_key = self.next()
            self.expect(",")
            type_ = self.next()
            self.expect(">")
        name = self.next()
        self.expect("=")
        f = Field(name, type_, int(self.next()), doc, label, map_key)
        f.json_name = camel(name)
        if self.peek() == "[":
            for key, value in self.options():
                if key == "(google.api.field_behavior)" and value == "REQUIRED":
                    f.required = True
                elif key == "deprecated":
                    f.deprecated = value == "true"
                elif key == "json_name":
                    f.json_name = value.strip('"')
        self.expect(";")
        return f

    def options(self) -> list[tuple[str, str]]:
        self.expect("[")
        found = []
        while True:
            key = self.next()
            if key == "(":
                key = f"({self.next()})"
                self.expect(")")
            self.expect("=")
            found.append((key, self.next()))
            if self.next() == "]":
                return found

    def service(self, proto: Proto) -> None:
        self.expect("service")
        self.next()
        self.expect("{")
        while self.peek() != "}":
            if self.peek() == "option":
                self.skip_statement()
                continue
            doc = self.doc()
            self.expect("rpc")
            name = self.next()
            self.expect("(")
            if self.peek() == "stream":
                raise ProtoSyntaxError(f"rpc {name}: client streaming has no JSON-RPC form")
            request = self.next()
            self.expect(")")
            self.expect("returns")
            self.expect("(")
            streaming = self.peek() == "stream"
            if streaming:
                self.next()
            response = self.next()
            self.expect(")")
            rpc = Rpc(name, request, response, streaming, doc)
            if self.peek() == "{":
                self.next()
                while self.peek() != "}":
                    ahead = [t for t, _ in self.tokens[self.pos : self.pos + 4]]
                    if ahead == ["option", "(", "google.api.http", ")"]:
                        self.pos += 4
                        self.expect("=")
                        rpc.http = self.http_rules(name)
                        self.expect(";")
                    else:
                        self.skip_statement()
                self.next()
            else:
                self.expect(";")
            proto.rpcs.append(rpc)
        self.expect("}")

    HTTP_VERBS = ("get", "put", "post", "delete", "patch")

    def http_rules(self, rpc: str) -> list[HttpRule]:
        """The `{ <verb>: "path" body: "field" additional_bindings: {...} }` value of a
        `google.api.http` option: the rule, then each additional binding."""
        self.expect("{")
        rule: HttpRule | None = None
        body = ""
        more: list[HttpRule] = []
        while self.peek() != "}":
            key = self.next()
            self.expect(":")
            if key == "additional_bindings":
                more.extend(self.http_rules(rpc))
                continue
            value = self.next()
            if not value.startswith('"'):
                raise ProtoSyntaxError(f"rpc {rpc}: google.api.http {key} is not a string")
            if key in self.HTTP_VERBS:
                if rule is not None:
                    raise ProtoSyntaxError(f"rpc {rpc}: two verbs in one google.api.http rule")
                rule = HttpRule(key.upper(), value.strip('"'), "")
            elif key == "body":
                body = value.strip('"')
            else:
                raise ProtoSyntaxError(f"rpc {rpc}: google.api.http {key!r} is not supported")
        self.expect("}")
        if rule is None:
            raise ProtoSyntaxError(f"rpc {rpc}: a google.api.http rule without a verb")
        rule.body = body
        return [rule, *more]


def parse_proto(path: Path) -> Proto:
    return Parser(path.read_text(encoding="utf-8")).parse()


# ---------------------------------------------------------------------------- emitter


def docstring(text: str, indent: int) -> list[str]:
    """A `\"\"\"...\"\"\"` block whose lines fit the line length (proto line breaks kept)."""
    pad = " " * indent
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    width = LINE - indent - 3  # room for the opening quotes on the first line
    lines: list[str] = []
    for raw in text.splitlines() or [""]:
        lines.extend(
            textwrap.wrap(raw, width, break_long_words=False, break_on_hyphens=False) or [""]
        )
    if len(lines) == 1 and len(lines[0]) + 6 <= width:
        return [f'{pad}"""{lines[0]}"""']
    return [f'{pad}"""{lines[0]}', *[f"{pad}{s}" if s else "" for s in lines[1:]], f'{pad}"""']


def python_type(proto: Proto, type_: str, shadowed: set[str]) -> str:
    if type_ in SCALARS:
        result = SCALARS[type_][0]
    elif type_ in WELL_KNOWN:
        result = WELL_KNOWN[type_]
    elif type_ in proto.messages or type_ in proto.enums:
        result = type_
    else:
        raise ProtoSyntaxError(f"unsupported field type {type_!r}; extend tools/gen_a2a.py")
    # A field named like a builtin shadows it in the rest of the class body.
    return re.sub(r"\b(list|dict|str|bool|bytes|object)\b", _builtin(shadowed), result)


def _builtin(shadowed: set[str]) -> Callable[[re.Match[str]], str]:
    def sub(m: re.Match[str]) -> str:
        return f"builtins.{m.group()}" if m.group() in shadowed else m.group()

    return sub


def is_message(proto: Proto, type_: str) -> bool:
    return type_ in proto.messages or type_ in WELL_KNOWN


def annotation(proto: Proto, msg: Message, f: Field, shadowed: set[str]) -> tuple[str, str]:
    """(annotation, default expression or "") for one field; see the module docstring."""
    inner = python_type(proto, f.type, shadowed)
    factory = "builtins.list" if "list" in shadowed else "list"
    if f.map_key is not None:
        key = python_type(proto, f.map_key, shadowed)
        mapping = "builtins.dict" if "dict" in shadowed else "dict"
        return f"{mapping}[{key}, {inner}]", f"field(default_factory={mapping})"
    if f.label == "repeated":
        return f"{factory}[{inner}]", f"field(default_factory={factory})"
    if f.oneof is not None or f.label == "optional" or f.type == "google.protobuf.Value":
        return f"{inner} | UnsetType", "UNSET"
    if is_message(proto, f.type):
        if f.required and msg.name not in ALWAYS_WRITTEN:
            return inner, ""
        return f"{inner} | None", "None"
    if f.type in proto.enums:
        return inner, f"{inner}.{proto.enums[f.type].values[0][0]}"
    return inner, SCALARS[f.type][1]


def order(proto: Proto) -> list[Message]:
    """Messages with every dependency first (proto order otherwise): no forward references."""
    done: dict[str, Message] = {}

    def visit(msg: Message, path: tuple[str, ...]) -> None:
        if msg.name in done:
            return
        if msg.name in path:
            raise ProtoSyntaxError(f"recursive messages are not supported: {path}")
        for f in msg.fields:
            dep = proto.messages.get(f.type)
            if dep is not None:
                visit(dep, (*path, msg.name))
        done[msg.name] = msg

    for msg in proto.messages.values():
        visit(msg, ())
    return list(done.values())


HEADER = """\
# Generated by tools/gen_a2a.py from the A2A 1.0 `a2a.proto` (package {package}).
# DO NOT EDIT. Regenerate with `python tools/gen_a2a.py`; CI runs it with `--check`.
"""

TYPES_PRELUDE = '''\
"""A2A 1.0 data objects as msgspec Structs speaking ProtoJSON.

Python names are the proto's snake_case names; JSON names are lowerCamelCase (use
`interlink.a2a._codec`, which also accepts snake_case keys). Enums are `StrEnum`s whose
values are the proto names. Invariants: proto3 zero values are omitted on encode unless
the field is `optional` (then `UNSET` means absent); at most one member of a `oneof` is
set; timestamps are aware `datetime`s in UTC.
"""

import builtins
import enum
from datetime import UTC, datetime
from typing import Annotated, Final, Literal

import msgspec
from msgspec import UNSET, UnsetType, field

{all}

_Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
_Timestamp = Annotated[datetime, msgspec.Meta(tz=True)]


def _utc(value: datetime) -> datetime:
    if value.tzinfo is UTC:
        return value
    if value.tzinfo is None:
        raise ValueError("timestamp must carry a UTC offset (RFC 3339)")
    return value.astimezone(UTC)


def _too_many(oneof: str, members: tuple[str, ...], values: tuple[object, ...]) -> None:
    given = [name for name, value in zip(members, values, strict=True) if value is not UNSET]
    raise ValueError(
        f"only one of {', '.join(members)} (oneof `{oneof}`) may be set, got {', '.join(given)}"
    )


class Empty(msgspec.Struct, frozen=True):
    """`google.protobuf.Empty`: no fields; its JSON form is `{}`."""
'''


def emit_enum(enum: Enum) -> list[str]:
    out = [f"class {enum.name}(enum.StrEnum):", *docstring(enum.doc or enum.name, 4), ""]
    for name, _number, doc in enum.values:
        out.append(f'    {name} = "{name}"')
        if doc:
            out.extend(docstring(doc, 4))
    return [*out, "", ""]


def field_doc(f: Field) -> str:
    flags = ((f.required, "Required."), (f.deprecated, "Deprecated."))
    notes = [note for flag, note in flags if flag]
    return "\n".join([f.doc, *notes]).strip()


def emit_message(proto: Proto, msg: Message) -> list[str]:
    # Options are spelled out per class: msgspec does not carry kw_only over to subclasses
    # and mypy's dataclass_transform does not carry frozen over. kw_only lets REQUIRED
    # fields without a default follow defaulted ones in proto order.
    omit = "False" if msg.name in ALWAYS_WRITTEN else "True"
    options = f"msgspec.Struct, kw_only=True, omit_defaults={omit}, frozen=True"
    doc = msg.doc or msg.name
    for oneof in msg.oneofs:
        names = ", ".join(f"`{m.name}`" for m in oneof.members)
        doc += f"\n\nAt most one of {names} is set (oneof `{oneof.name}`)."
    if msg.name in ALWAYS_WRITTEN:
        doc += "\n\nEvery field is always written, zero values included."
    out = [f"class {msg.name}({options}):", *docstring(doc, 4), ""]
    shadowed = {f.name for f in msg.fields} & BUILTIN_NAMES
    field_names = {f.name for f in msg.fields}
    for f in msg.fields:
        if keyword.iskeyword(f.name) or f.name.startswith("_"):
            raise ProtoSyntaxError(f"{msg.name}.{f.name}: not a usable Python attribute name")
        ann, default = annotation(proto, msg, f, shadowed)
        if f.json_name != f.name:
            default = (
                f'field(name="{f.json_name}")'
                if not default
                else f'field(default={default}, name="{f.json_name}")'
                if not default.startswith("field(")
                else default[:-1] + f', name="{f.json_name}")'
            )
        out.append(f"    {f.name}: {ann}" + (f" = {default}" if default else ""))
        if f.doc or f.required:
            out.extend(docstring(field_doc(f), 4))
        out.append("")
    out.extend(emit_post_init(msg))
    for oneof in msg.oneofs:
        if oneof.name in field_names or f"which_{oneof.name}" in field_names:
            raise ProtoSyntaxError(f"{msg.name}: oneof {oneof.name} clashes with a field")
        out.extend(emit_oneof_accessors(proto, oneof, shadowed))
    return [*out, "", ""]


def emit_post_init(msg: Message) -> list[str]:
    stamps = [f.name for f in msg.fields if f.type == "google.protobuf.Timestamp"]
    if not stamps and not msg.oneofs:
        return []
    out = ["    def __post_init__(self) -> None:"]
    for oneof in msg.oneofs:
        # Summing booleans keeps the valid case (one member or none) to a few operations.
        count = " + ".join(f"(self.{m.name} is not UNSET)" for m in oneof.members)
        names = ", ".join(f'"{m.name}"' for m in oneof.members)
        values = ", ".join(f"self.{m.name}" for m in oneof.members)
        out.append(f"        if {count} > 1:")
        out.append(f'            _too_many("{oneof.name}", ({names}), ({values}))')
    for name in stamps:
        out.append(f"        if self.{name} is not None and self.{name}.tzinfo is not UTC:")
        out.append(f'            msgspec.structs.force_setattr(self, "{name}", _utc(self.{name}))')
    return [*out, ""]


def emit_oneof_accessors(proto: Proto, oneof: Oneof, shadowed: set[str]) -> list[str]:
    names = ", ".join(f'"{m.name}"' for m in oneof.members)
    kinds = []
    for m in oneof.members:
        kind = python_type(proto, m.type, shadowed)
        if kind not in kinds:
            kinds.append(kind)
    value_type = "object" if "object" in kinds else " | ".join([*kinds, "None"])
    out = [
        "    @property",
        f"    def which_{oneof.name}(self) -> Literal[{names}] | None:",
        f'        """The name of the `{oneof.name}` member that is set, or None."""',
    ]
    for m in oneof.members:
        out += [f"        if self.{m.name} is not UNSET:", f'            return "{m.name}"']
    out += [
        "        return None",
        "",
        "    @property",
        f"    def {oneof.name}(self) -> {value_type}:",
        f'        """The value of the `{oneof.name}` member that is set, or None."""',
    ]
    for m in oneof.members:
        out += [f"        if self.{m.name} is not UNSET:", f"            return self.{m.name}"]
    return [*out, "        return None", ""]


def required_table(proto: Proto, messages: list[Message]) -> list[str]:
    out = [
        "REQUIRED_FIELDS: Final[dict[type[msgspec.Struct], tuple[str, ...]]] = {",
    ]
    for msg in messages:
        names = [f.name for f in msg.fields if f.required]
        if names:
            inner = ", ".join(f'"{n}"' for n in names) + ("," if len(names) == 1 else "")
            out.append(f"    {msg.name}: ({inner}),")
    out += [
        "}",
        '"""Fields marked `field_behavior = REQUIRED`, by message (Python names)."""',
        "",
    ]
    return out


def dunder_all(names: list[str]) -> str:
    """`__all__` in the order ruff's RUF022 wants: CONSTANTS, Classes, then the rest."""

    def key(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)

    return "__all__ = [" + ", ".join(f'"{n}"' for n in sorted(names, key=key)) + "]"


def generate_types(proto: Proto) -> str:
    messages = order(proto)
    names = sorted(["Empty", *proto.enums, *(m.name for m in messages)])
    exports = dunder_all([*names, "REQUIRED_FIELDS"])
    out = [HEADER.format(package=proto.package) + TYPES_PRELUDE.replace("{all}", exports), ""]
    for enum in proto.enums.values():
        out.extend(emit_enum(enum))
    for msg in messages:
        out.extend(emit_message(proto, msg))
    out.extend(required_table(proto, messages))
    return "\n".join(out)


METHODS_PRELUDE = '''\
"""The methods of the A2A 1.0 service: params type, result type, handler, streaming,
HTTP routes.

Derived from `service A2AService`; the method name is the rpc name (the JSON-RPC
method). Every binding dispatches by this table alone: it decodes the params as
`params`, calls the `A2AServer` method named `handler` with them and the `Call`, and
answers with its `result` (or, for a streaming method, with a stream of `result`
objects: in JSON-RPC, SSE with one JSON-RPC response per event). The HTTP+JSON binding
routes by `http`: the rpc's `google.api.http` rule, then its additional bindings (the
same routes under `/{tenant}`).
"""

from types import MappingProxyType
from typing import Final, Generic, NamedTuple, TypeVar

import msgspec

from interlink.a2a._types import {imports}

{all}

P_co = TypeVar("P_co", bound=msgspec.Struct, covariant=True)
R_co = TypeVar("R_co", bound=msgspec.Struct, covariant=True)


class HttpRule(NamedTuple):
    """One route of the HTTP+JSON binding: the verb, the path template and the body.

    In `path`, `{field=*}` (or `{field}`) is one path segment holding the request field
    of that proto name, and a trailing `:word` is literal. `body` is `*` when the whole
    request is the body (path fields aside), `""` when there is none: the fields not in
    the path are then query parameters.
    """

    verb: str
    path: str
    body: str


class Method(NamedTuple, Generic[P_co, R_co]):
    """One method: its name, the params and result types, whether it streams, the name
    of its handler on `A2AServer` (the rpc name in snake case), and its HTTP routes
    (the `google.api.http` rule first, then its additional bindings)."""

    name: str
    params: type[P_co]
    result: type[R_co]
    streaming: bool
    handler: str
    http: tuple[HttpRule, ...]

'''


def constant_name(rpc: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", rpc).upper()


def generate_methods(proto: Proto) -> str:
    def py(type_: str) -> str:
        return WELL_KNOWN.get(type_, type_)

    imports = sorted({py(r.request) for r in proto.rpcs} | {py(r.response) for r in proto.rpcs})
    prelude = METHODS_PRELUDE.replace("{imports}", ", ".join(imports))
    out = [HEADER.format(package=proto.package) + prelude]
    for rpc in proto.rpcs:
        params, result = py(rpc.request), py(rpc.response)
        const = constant_name(rpc.name)
        out.append(f"{const}: Final[Method[{params}, {result}]] = Method(")
        handler = constant_name(rpc.name).lower()
        rules = "".join(f'HttpRule("{r.verb}", "{r.path}", "{r.body}"), ' for r in rpc.http)
        out.append(f'    "{rpc.name}", {params}, {result}, {rpc.streaming}, "{handler}",')
        out.append(f"    ({rules}),")
        out.append(")")
        out.extend(docstring(rpc.doc or rpc.name, 0))
    consts = ", ".join(constant_name(r.name) for r in proto.rpcs)
    out.append("")
    out.append(
        "METHODS: Final[MappingProxyType[str, Method[msgspec.Struct, msgspec.Struct]]] = "
        f"MappingProxyType({{m.name: m for m in ({consts},)}})"
    )
    out.append('"""Every method of the binding by its JSON-RPC name, in proto order."""')
    names = ["METHODS", "HttpRule", "Method", *(constant_name(r.name) for r in proto.rpcs)]
    return "\n".join(out).replace("{all}", dunder_all(names)) + "\n"


# ---------------------------------------------------------------------------- driver


def ruff_format(source: str, path: Path) -> str:
    """Format with the ruff next to this Python (the venv's), so output is stable."""
    ruff = Path(sys.executable).with_name("ruff")
    exe = str(ruff) if ruff.exists() else shutil.which("ruff")
    if exe is None:
        raise SystemExit("gen_a2a: ruff not found (install the dev extra)")
    done = subprocess.run(
        [exe, "format", "--stdin-filename", str(path), "-"],
        input=source,
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"gen_a2a: ruff format failed:\n{done.stderr}")
    return done.stdout


def generate(spec: Path) -> dict[Path, str]:
    source = spec / "a2a" / "a2a.proto"
    if not source.is_file():
        raise SystemExit(f"gen_a2a: {source} not found; set INTERLINK_SPEC_DIR to the spec dir")
    proto = parse_proto(source)
    return {
        TYPES_OUT: ruff_format(generate_types(proto), TYPES_OUT),
        METHODS_OUT: ruff_format(generate_methods(proto), METHODS_OUT),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="fail if the output is stale")
    args = parser.parse_args(argv)
    outputs = generate(spec_dir())
    stale = [p for p, text in outputs.items() if not p.exists() or p.read_text() != text]
    if args.check:
        for path in stale:
            rel = path.relative_to(REPO)
            print(f"gen_a2a: {rel} is stale; run `python tools/gen_a2a.py`", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(outputs[path], encoding="utf-8")
        print(f"gen_a2a: wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
