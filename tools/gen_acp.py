"""Generate the ACP v1 types and method tables from the JSON schema where it lies.

Run from anywhere: ``python tools/gen_acp.py`` writes ``src/interlink/acp/_schema.py``,
``_schema_unstable.py``, ``_methods.py`` and ``_methods_unstable.py``;
``python tools/gen_acp.py --check`` exits 1 when the committed files differ.
The schema is read from ``<repo>/../shared/spec`` (override with ``INTERLINK_SPEC_DIR``).

Mapping (see ``interlink/acp/_codec.py`` for the runtime half):
object -> frozen ``msgspec.Struct`` (strict, ``extra`` keeps unknown fields); union with a
const tag property -> native tagged union + ``Unknown*`` class; union with a default or
key-told members -> :class:`UntaggedUnion` marker; string enum -> ``Literal`` (open enums
``str``); optional field -> ``UNSET`` default (``None`` only where the schema allows
``null``), omitted on encode.
"""

from __future__ import annotations

import argparse
import json
import keyword
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEC_DIR = Path(os.environ.get("INTERLINK_SPEC_DIR", REPO.parent / "shared" / "spec"))
SCHEMA_DIR = SPEC_DIR / "acp" / "schema-from-ts-sdk-2.4.0" / "v1"
OUT_DIR = REPO / "src" / "interlink" / "acp"

# JSON-RPC envelopes: the jsonrpc layer owns them; they only feed the method table.
CONTAINERS = {
    f"{side}{kind}"
    for side in ("Agent", "Client", "Proxy")
    for kind in ("Request", "Response", "Notification")
}
# Variant class names the mechanical rule would make clumsy.
VARIANT_NAMES = {
    ("SessionUpdate", "tool_call_update"): "ToolCallUpdated",
    ("RequestPermissionOutcome", "cancelled"): "CancelledPermissionOutcome",
}
# Capability gates (acp.md 4.2/5): any-of paths of wire names into the capabilities.
_A, _C = "agentCapabilities", "clientCapabilities"
_S = (_A, "sessionCapabilities")
GATES: dict[str, tuple[tuple[str, ...], ...]] = {
    "session/load": ((_A, "loadSession"),),
    "logout": ((_A, "auth", "logout"),),
    "session/list": ((*_S, "list"),),
    "session/delete": ((*_S, "delete"),),
    "session/resume": ((*_S, "resume"),),
    "session/close": ((*_S, "close"),),
    "session/fork": ((*_S, "fork"),),
    "session/archive": ((*_S, "archive"),),
    "session/unarchive": ((*_S, "archive"),),
    "session/status": ((*_S, "status"),),
    "session/set_title": ((*_S, "title"),),
    "providers/list": ((_A, "providers"),),
    "providers/set": ((_A, "providers"),),
    "providers/disable": ((_A, "providers"),),
    "auth/status": ((_A, "auth", "status"),),
    "fs/read_text_file": ((_C, "fs", "readTextFile"),),
    "fs/write_text_file": ((_C, "fs", "writeTextFile"),),
    "elicitation/create": ((_C, "elicitation", "form"), (_C, "elicitation", "url")),
    **{f"terminal/{m}": ((_C, "terminal"),) for m in ("create", "output", "release")},
    **{f"terminal/{m}": ((_C, "terminal"),) for m in ("wait_for_exit", "kill")},
}
INT_FORMATS = {
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**63 - 1),  # msgspec bounds must fit an int64
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
LENIENCY_FLAGS = {
    "x-deserialize-default-on-error": 1,
    "x-deserialize-skip-invalid-items": 2,
    "x-deserialize-default-on-null": 4,
}
SHADOWED = {"list", "dict", "str", "int", "float", "bool", "object", "extra", "msgspec"}
Json = dict[str, object]


@dataclass
class Field:
    py: str
    wire: str
    annotation: str
    default: str | None  # None: required
    doc: str
    flags: int


@dataclass
class StructDef:
    name: str
    doc: str
    base: str = "_Struct"
    tag_field: str | None = None
    tag: str | None = None
    fields: list[Field] = field(default_factory=list)


@dataclass
class UnionDef:
    name: str
    doc: str
    tag_field: str | None
    tagged: dict[str, str]  # tag -> class
    default: str | None = None
    by_keys: list[tuple[list[str], str]] = field(default_factory=list)
    unknown: str | None = None
    static_members: list[str] = field(default_factory=list)


@dataclass
class Module:
    aliases: list[tuple[str, str, str | None, str]] = field(default_factory=list)
    structs: dict[str, StructDef] = field(default_factory=dict)
    unions: list[UnionDef] = field(default_factory=list)
    unknowns: list[tuple[str, str, str]] = field(default_factory=list)


def snake(wire: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", wire.lstrip("_")).lower()
    return name + "_" if keyword.iskeyword(name) or name in SHADOWED else name


def pascal(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", text))


def ref_name(node: Json) -> str | None:
    if "$ref" in node:
        return str(node["$ref"]).rsplit("/", 1)[-1]
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        return str(all_of[0]["$ref"]).rsplit("/", 1)[-1]
    return None


def tag_of(variant: Json) -> tuple[str, str] | None:
    for key, prop in dict(variant.get("properties", {})).items():  # type: ignore[call-overload]
        if isinstance(prop, dict) and isinstance(prop.get("const"), str):
            return key, prop["const"]
    return None


class Generator:
    def __init__(self, schema: Json) -> None:
        self.defs: dict[str, Json] = schema["$defs"]  # type: ignore[assignment]
        body = json.dumps({k: v for k, v in self.defs.items() if k not in CONTAINERS})
        self.refs: dict[str, int] = {}
        for name in re.findall(r'"#/\$defs/([A-Za-z0-9]+)"', body):
            self.refs[name] = self.refs.get(name, 0) + 1
        self.mod = Module()
        self.done: set[str] = set()

    # ------------------------------------------------------------------ types
    def annotation(self, node: Json) -> tuple[str, bool]:
        """Python annotation of a property schema, and whether it admits null."""
        name = ref_name(node)
        if name is not None:
            return name, False
        for key in ("anyOf", "oneOf"):
            if key in node:
                options = [o for o in node[key] if o.get("type") != "null"]  # type: ignore[attr-defined]
                if len(options) == 1 and len(options) < len(node[key]):  # type: ignore[arg-type]
                    return self.annotation(options[0])[0], True
                raise ValueError(f"inline union not supported: {node}")
        types = node.get("type")
        nullable = isinstance(types, list) and "null" in types
        kinds = [t for t in (types if isinstance(types, list) else [types]) if t != "null"]
        if not kinds or kinds == [None]:
            return "object", False
        (kind,) = kinds
        if kind == "string":
            return "str", nullable
        if kind == "boolean":
            return "bool", nullable
        if kind == "number":
            return "float", nullable
        if kind == "integer":
            return self.int_alias(node), nullable
        if kind == "array":
            return f"list[{self.annotation(node['items'])[0]}]", nullable  # type: ignore[arg-type]
        if kind == "object":
            extra = node.get("additionalProperties")
            inner = self.annotation(extra)[0] if isinstance(extra, dict) else "object"
            return f"dict[str, {inner}]", nullable
        raise ValueError(f"unsupported type {kind!r}")

    def int_alias(self, node: Json) -> str:
        low, high = INT_FORMATS.get(str(node.get("format")), (None, None))
        if isinstance(node.get("minimum"), int):
            low = node["minimum"]  # type: ignore[assignment]
        if low is None and high is None:
            return "int"
        return f"_{str(node.get('format', 'int')).capitalize()}"

    def fields_of(
        self, node: Json, *, skip: str | None = None, optional: bool = False
    ) -> list[Field]:
        required = set(node.get("required", []))  # type: ignore[call-overload]
        out = []
        for wire, prop in dict(node.get("properties", {})).items():  # type: ignore[call-overload]
            if wire == skip or (isinstance(prop, dict) and "const" in prop):
                continue
            ann, nullable = self.annotation(prop)
            doc = str(prop.get("description", ""))
            default: str | None = None
            if wire not in required or optional:
                value = prop.get("default")
                if isinstance(value, bool | int | float | str) and not optional:
                    default = repr(value)
                else:
                    default = "UNSET"
                    ann += " | UnsetType"
                    if value is not None:
                        doc += f"\n\nDefault when omitted: ``{json.dumps(value)}``."
            if nullable:
                ann += " | None"
            flags = sum(f for k, f in LENIENCY_FLAGS.items() if prop.get(k))
            out.append(Field(snake(wire), wire, ann, default, doc, flags))
        # Untagged member objects (elicitation scopes): their fields, all optional.
        for key in ("anyOf", "oneOf"):
            for option in node.get(key, []):  # type: ignore[attr-defined]
                target = self.defs[ref_name(option) or ""] if ref_name(option) else option
                if option.get("title") != "other":
                    known = {f.wire for f in out}
                    out += [f for f in self.fields_of(target, optional=True) if f.wire not in known]
        return out

    # ------------------------------------------------------------------ defs
    def run(self) -> Module:
        for name, node in self.defs.items():
            if name not in CONTAINERS:
                self.define(name, node)
        return self.mod

    def define(self, name: str, node: Json) -> None:
        if name in self.done:
            return
        self.done.add(name)
        doc = str(node.get("description", ""))
        options: list[Json] = node.get("oneOf") or node.get("anyOf") or []  # type: ignore[assignment]
        if options and all(o.get("type") == "string" for o in options):
            known = [repr(o["const"]) for o in options if "const" in o]
            lit = f"Literal[{', '.join(known)}]"
            if len(known) < len(options):  # an "other" catch-all: an open enum
                self.mod.aliases.append((name, f"{lit} | str", "str", doc))
            else:
                self.mod.aliases.append((name, f"{lit} | UnknownEnumValue", lit, doc))
        elif options and all(o.get("type") == "integer" for o in options):
            self.mod.aliases.append((name, "int", None, doc))
        elif options and all(o.get("type") in ("null", "integer", "string", "number", "boolean")
                             or (o.get("type") == "array" and "$ref" not in o["items"])  # type: ignore[operator]
                             for o in options):  # fmt: skip
            members = [self.annotation(o)[0] for o in options if o.get("type") != "null"]
            members += ["None"] * (len(members) < len(options))
            self.mod.aliases.append((name, " | ".join(members), None, doc))
        elif options and any(tag_of(o) for o in options) and not self.tag_declared(node, options):
            self.define_union(name, node, options, doc)
        elif options and "properties" not in node:
            self.define_by_keys(name, options, doc)
        elif "properties" in node or node.get("type") == "object":
            self.struct(name, doc).fields += self.fields_of(node)
        elif "type" in node:
            self.mod.aliases.append((name, self.annotation(node)[0], None, doc))
        else:
            self.mod.aliases.append((name, "object", None, doc))

    def tag_declared(self, node: Json, options: list[Json]) -> bool:
        """A tag the object declares itself is optional: flatten, not a union."""
        tag_field = next(t[0] for o in options if (t := tag_of(o)))
        return tag_field in dict(node.get("properties", {}))  # type: ignore[call-overload]

    def struct(self, name: str, doc: str, base: str = "_Struct") -> StructDef:
        if name not in self.mod.structs:
            self.mod.structs[name] = StructDef(name, doc, base)
        return self.mod.structs[name]

    def unknown_class(self, name: str, tag_field: str | None, doc: str) -> str:
        unknown = f"Unknown{name}" if f"Unknown{name}" not in self.defs else f"Unrecognized{name}"
        text = f"A member of ``{name}`` that this schema does not know; ``data`` keeps it whole."
        self.mod.unknowns.append((unknown, tag_field or "", text))
        return unknown

    def define_union(self, name: str, node: Json, options: list[Json], doc: str) -> None:
        tag_field = next(t[0] for o in options if (t := tag_of(o)))
        union = UnionDef(name, doc, tag_field, {})
        base_fields = self.fields_of({k: v for k, v in node.items() if k not in ("anyOf", "oneOf")})
        for option in options:
            tag = tag_of(option)
            if option.get("title") == "other":
                continue
            payload = ref_name(option)
            own = self.fields_of(option, skip=tag_field)
            extra = base_fields + own
            label = tag[1] if tag else str(option.get("title"))
            cls = VARIANT_NAMES.get((name, label))
            if cls is None and payload and not extra and self.refs.get(payload) == 1:
                cls = payload  # the payload type is only ever this variant: tag it itself
            elif cls is None:
                plain = pascal(label)
                cls = plain if not extra and plain not in self.defs else name + plain
            base = payload if payload and cls != payload else "_Struct"
            struct = self.struct(cls, str(option.get("description", "")) or doc, base)
            if cls == payload:
                self.define(payload, self.defs[payload])
            struct.fields += extra
            if tag:
                struct.tag_field, struct.tag = tag
                union.tagged[tag[1]] = cls
            else:
                union.default = cls
            union.static_members.append(cls)
        union.unknown = self.unknown_class(name, tag_field, doc)
        union.static_members.append(union.unknown)
        self.mod.unions.append(union)

    def define_by_keys(self, name: str, options: list[Json], doc: str) -> None:
        union = UnionDef(name, doc, None, {})
        shapes: list[tuple[set[str], str]] = []
        for option in options:
            if option.get("type") == "array":
                item = ref_name(option["items"])  # type: ignore[arg-type]
                assert item is not None
                shapes.append((set(self.defs[item].get("required", [])), f"list[{item}]"))  # type: ignore[call-overload]
                continue
            cls = ref_name(option) or name + pascal(str(option.get("title")))
            if cls not in self.defs:
                struct = self.struct(cls, str(option.get("description", "")))
                struct.fields += self.fields_of(option)
            target = self.defs.get(cls, option)
            shapes.append((set(target.get("required", [])), cls))  # type: ignore[call-overload]
        common = set.intersection(*(keys for keys, _ in shapes)) if len(shapes) > 1 else set()
        for keys, cls in shapes:
            union.by_keys.append((sorted(keys - common), cls))
            union.static_members.append(cls)
        if all(not cls.startswith("list[") for _, cls in shapes):
            union.unknown = self.unknown_class(name, None, doc)
            union.static_members.append(union.unknown)
        self.mod.unions.append(union)


# ---------------------------------------------------------------------- emitting


def docstring(text: str, indent: str) -> str:
    text = text.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if not text:
        return ""
    lines: list[str] = []
    for line in text.splitlines():
        wrapped = textwrap.wrap(line, 96 - len(indent), break_long_words=False,
                                break_on_hyphens=False)  # fmt: skip
        lines += wrapped or [""]
    if len(lines) == 1:
        return f'{indent}"""{lines[0]}"""\n'
    body = "\n".join(f"{indent}{line}" if line else "" for line in lines)
    return f'{indent}"""\n{body}\n{indent}"""\n'


HEADER = '''\
# Generated by tools/gen_acp.py from
# {source}.
# Do not edit by hand: change the generator and run `python tools/gen_acp.py`.
# ruff: noqa: E501
"""{title}

Every object is a frozen ``msgspec.Struct``; decode and encode through
``interlink.acp._codec`` so that unknown fields and variants survive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from interlink.acp._codec import (
    EXTRA_KEY,
    TaggedUnion,
    UnknownEnumValue,
    UnknownVariant,
    untagged_union,
)

_Uint16 = Annotated[int, msgspec.Meta(ge=0, le=2**16 - 1)]
_Uint32 = Annotated[int, msgspec.Meta(ge=0, le=2**32 - 1)]
_Uint64 = Annotated[int, msgspec.Meta(ge=0)]  # msgspec bounds must fit an int64
_Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_Int = Annotated[int, msgspec.Meta(ge=0)]


class _Struct(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    extra: dict[str, object] | UnsetType = msgspec.field(default=UNSET, name=EXTRA_KEY)
    """Wire fields this schema does not know, or could not type; written back on encode."""

'''


def emit_schema(mod: Module, source: str, title: str) -> str:
    out = [HEADER.format(source=source, title=title)]
    for unknown, tag_field, text in mod.unknowns:
        out.append(f"\nclass {unknown}(UnknownVariant):\n{docstring(text, '    ')}\n")
        out.append(f"    __slots__ = ()\n    tag_field = {tag_field!r}\n\n")
    out.append("\nif TYPE_CHECKING:\n")
    for name, static, _, doc in mod.aliases:
        out.append(f"    {name}: TypeAlias = {static}\n{docstring(doc, '    ')}")
    out.append("else:\n")
    for name, static, runtime, _ in mod.aliases:
        out.append(f"    {name} = {runtime or static}\n")
    out.append("\n")
    emitted: set[str] = set()

    def emit(struct: StructDef) -> None:
        if struct.name in emitted:
            return
        if struct.base in mod.structs:
            emit(mod.structs[struct.base])
        emitted.add(struct.name)
        config = ", frozen=True, kw_only=True"  # kw_only covers only the fields a class adds
        if struct.tag:
            config += f", tag_field={struct.tag_field!r}, tag={struct.tag!r}"
        out.append(f"\nclass {struct.name}({struct.base}{config}):\n")
        out.append(docstring(struct.doc or struct.name, "    ") + "\n")
        for f in struct.fields:
            if f.py != f.wire:
                default = f"default={f.default}, " if f.default is not None else ""
                value = f" = msgspec.field({default}name={f.wire!r})"
            else:
                value = f" = {f.default}" if f.default is not None else ""
            out.append(f"    {f.py}: {f.annotation}{value}\n")
            out.append(docstring(f.doc, "    ") + "\n" if f.doc else "")
        out.append("\n")

    for struct in mod.structs.values():
        emit(struct)
    out.append("\nif TYPE_CHECKING:\n")
    for union in mod.unions:
        members = " | ".join(union.static_members)
        out.append(f"    {union.name}: TypeAlias = {members}\n{docstring(union.doc, '    ')}")
    out.append("else:\n")
    for union in mod.unions:
        if union.tag_field and union.default is None:
            runtime = " | ".join(union.static_members[:-1])
            variants = ", ".join(f"{t!r}: {c}" for t, c in union.tagged.items())
            meta = f"TaggedUnion({union.name!r}, {union.tag_field!r}, {{{variants}}}, "
            meta += f"{union.unknown})"
            out.append(f"    {union.name} = Annotated[{runtime}, {meta}]\n")
        else:
            attrs = [f"unknown={union.unknown}"]
            if union.tag_field:
                tagged = ", ".join(f"{t!r}: {c}" for t, c in union.tagged.items())
                attrs += [f"tag_field={union.tag_field!r}", f"tagged={{{tagged}}}"]
                attrs.append(f"default={union.default}")
            else:
                keys = ", ".join(f"(frozenset({k!r}), {c})" for k, c in union.by_keys)
                attrs.append(f"by_keys=({keys},)")
            out.append(f"    {union.name} = untagged_union({union.name!r}, {', '.join(attrs)})\n")
    out.append("\n#: Field leniency flags (see ``_codec``) by struct and wire name.\n")
    out.append("LENIENCY: dict[type[msgspec.Struct], dict[str, int]] = {\n")
    for struct in mod.structs.values():
        chain, flags = struct, dict[str, int]()
        while True:
            flags |= {f.wire: f.flags for f in chain.fields if f.flags}
            if chain.base not in mod.structs:
                break
            chain = mod.structs[chain.base]
        if flags:
            out.append(f"    {struct.name}: {flags!r},\n")
    out.append("}\n")
    return "".join(out)


# ---------------------------------------------------------------------- methods

METHODS_HEADER = '''\
# Generated by tools/gen_acp.py from
# {source}.
# Do not edit by hand: change the generator and run `python tools/gen_acp.py`.
"""{title}"""

from __future__ import annotations

{imports}
'''

METHOD_SPEC = '''
P = TypeVar("P")
R = TypeVar("R")
Side = Literal["agent", "client", "protocol", "proxy"]


class MethodSpec(msgspec.Struct, Generic[P, R], frozen=True, kw_only=True):
    """One ACP method: everything dispatch needs. Typed by its params ``P`` and result
    ``R`` (``None`` for a notification), so a call or a handler of the wrong shape is a
    type error."""

    name: str
    """Wire name, e.g. ``session/prompt``."""
    kind: Literal["request", "notification"]
    handled_by: Side
    """The side that receives and handles it (the schema's ``x-side``)."""
    handler: str
    """The name of the handling side's Python method, e.g. ``prompt``."""
    params: object
    """Params type, for ``_codec.decode``."""
    result: object
    """Result type for a request; ``None`` for a notification."""
    gate: tuple[tuple[str, ...], ...] = ()
    """Capability paths (wire names from the ``initialize`` exchange); the method is
    available when any one of them holds ``true`` or an object. Empty: ungated."""
    session_scoped: bool = False
    """Its ``sessionId`` must name a session active on the connection (else -32002)."""
    needs_auth: bool = False
    """Refused (-32000) until ``authenticate`` succeeded, by an agent that requires it."""
    stable: bool = True
    """False for methods only in ``schema.unstable.json``."""

'''
# Python method names the role rule (type name in snake case) does not give.
HANDLER_NAMES = {"session/update": "session_update"}
# Requests whose session must be active on the connection (acp.md: session-scoped).
SESSION_SCOPED = {
    "session/prompt",
    "session/set_mode",
    "session/set_config_option",
    "session/close",
}


def method_specs(defs: dict[str, Json], stable_names: set[str]) -> list[dict[str, object]]:
    specs: dict[tuple[str, str, str], dict[str, object]] = {}
    for name, node in defs.items():
        method, side = node.get("x-method"), node.get("x-side")
        if not isinstance(method, str) or not isinstance(side, str):
            continue
        role = next(r for r in ("Request", "Response", "Notification") if name.endswith(r))
        kind = "notification" if role == "Notification" else "request"
        spec = specs.setdefault((side, kind, method), {"name": method, "kind": kind})
        spec["side"] = side
        spec["result" if role == "Response" else "params"] = name
    out = []
    for (side, kind, method), spec in sorted(specs.items()):
        assert "params" in spec, spec
        assert ("result" in spec) == (kind == "request"), spec
        spec["gate"] = GATES.get(method, ())
        spec["stable"] = method in stable_names
        # stable methods are named after their params type (`NewSessionRequest` ->
        # `new_session`); unstable-only ones after their wire name (`session/fork`)
        role_name = str(spec["params"]).removesuffix("Request").removesuffix("Notification")
        default = snake(role_name) if spec["stable"] else method.replace("/", "_")
        spec["handler"] = HANDLER_NAMES.get(method, default)
        spec["session_scoped"] = method in SESSION_SCOPED
        # sessions are what authentication guards (acp.md: authenticate before session/new)
        spec["needs_auth"] = side == "agent" and kind == "request" and method.startswith("session/")
        out.append(spec)
    return out


def check_gates(defs: dict[str, Json]) -> None:
    """Fail when a gate path does not exist in the schema's capability objects."""
    roots = {_A: "AgentCapabilities", _C: "ClientCapabilities"}
    for method, paths in GATES.items():
        for path in paths:
            node = defs[roots[path[0]]]
            for key in path[1:]:
                prop = dict(node.get("properties", {})).get(key)  # type: ignore[call-overload]
                if prop is None:
                    raise SystemExit(f"gate of {method}: no {key!r} in {path}")
                name = ref_name(prop) or next(
                    (ref_name(o) for o in prop.get("anyOf", []) if ref_name(o)), None
                )
                node = defs[name] if name else prop


def constant_names(specs: list[dict[str, object]]) -> list[str]:
    """`PROMPT`, `NEW_SESSION`: the handler's name; one both sides handle (`mcp/message`)
    or that is a request and a notification (`proxy/successor`) says which."""
    names = [str(spec["handler"]).upper() for spec in specs]
    twins = [[s for s, n in zip(specs, names, strict=True) if n == name] for name in names]
    for i, (spec, same) in enumerate(zip(specs, twins, strict=True)):
        if len({str(s["side"]) for s in same}) > 1:
            names[i] = f"{str(spec['side']).upper()}_{names[i]}"
        elif len(same) > 1:
            names[i] += f"_{str(spec['kind']).upper()}"
    return names


def emit_methods(specs: list[dict[str, object]], source: str, title: str, schema: str) -> str:
    own = schema == "_schema"
    imports = "from typing import Any"
    imports += ", Generic, Literal, TypeVar\n\nimport msgspec\n\n" if own else "\n\n"
    imports += f"from interlink.acp import {schema} as s\n"
    if own:
        imports += "from interlink.jsonrpc import RpcError\n"
    if not own:
        imports += "from interlink.acp._methods import MethodSpec\n"
    out = [METHODS_HEADER.format(source=source, title=title, imports=imports)]
    if own:
        out.append(METHOD_SPEC)
    tables: dict[str, list[str]] = {}
    names = constant_names(specs)
    for spec, constant in zip(specs, names, strict=True):
        result = f"s.{spec['result']}" if "result" in spec else "None"
        args = [f"name={spec['name']!r}", f"kind={spec['kind']!r}"]
        args += [f"handled_by={spec['side']!r}", f"handler={spec['handler']!r}"]
        args += [f"params=s.{spec['params']}", f"result={result}"]
        if spec["gate"]:
            args.append(f"gate={spec['gate']!r}")
        args += [f"{flag}=True" for flag in ("session_scoped", "needs_auth") if spec[flag]]
        if not spec["stable"]:
            args.append("stable=False")
        typed = f"MethodSpec[s.{spec['params']}, {result}]"
        out.append(f"\n{constant}: {typed} = MethodSpec({', '.join(args)})\n")
        side = str(spec["side"]).upper()
        # proxy/successor is both a request and a notification on the proxy side
        proxy_note = side == "PROXY" and spec["kind"] == "notification"
        table = f"{side}_NOTIFICATIONS" if proxy_note else f"{side}_METHODS"
        tables.setdefault(table, []).append(f"    {spec['name']!r}: {constant},\n")
    public = [c for s, c in zip(specs, names, strict=True) if s["side"] in ("agent", "client")]
    out.insert(1, f"\n__all__ = {sorted(public)!r}\n")  # (re-exported by `methods`)
    for table in ("AGENT_METHODS", "CLIENT_METHODS", "PROTOCOL_METHODS", *sorted(tables)):
        if table in tables:
            entries = "".join(tables.pop(table))
            out.append(f"\n{table}: dict[str, MethodSpec[Any, Any]] = {{\n{entries}}}\n")
    if own:
        out += [handler_stubs(specs, side) for side in ("agent", "client")]
    return "".join(out)


def handler_stubs(specs: list[dict[str, object]], side: str) -> str:
    """`AgentMethods`/`ClientMethods`: one typed default per method the side handles, as
    the table names it; a request answers -32601 until overridden, a notification is
    ignored. `Agent` and `Client` inherit them, so their signatures are written once."""
    name = f"{side.capitalize()}Methods"
    out = [f"\n\nclass {name}:\n"]
    out.append(f'    """The {side} side\'s handlers: override what you implement."""\n')
    for spec in specs:
        if spec["side"] != side:
            continue
        head = f"    async def {spec['handler']}(self, params: s.{spec['params']})"
        if spec["kind"] == "notification":
            out.append(f"\n{head} -> None:\n        return None\n")
        else:
            body = f"raise RpcError.method_not_found({spec['name']!r})"
            out.append(f"\n{head} -> s.{spec['result']}:\n        {body}\n")
    return "".join(out)


# ---------------------------------------------------------------------- main


def ruff_format(text: str, name: str) -> str:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        raise SystemExit("gen_acp: ruff is needed to format the output")
    config = ["--config", str(REPO / "pyproject.toml"), "--stdin-filename", name, "-"]
    for command in (["check", "--fix-only", "--select", "I", *config], ["format", *config]):
        done = subprocess.run(
            [ruff, *command], input=text, capture_output=True, text=True, check=False
        )
        if done.returncode:
            raise SystemExit(f"gen_acp: ruff {command[0]} failed on {name}:\n{done.stderr}")
        text = done.stdout
    return text


def generate() -> dict[str, str]:
    stable = json.loads((SCHEMA_DIR / "schema.json").read_text())
    unstable = json.loads((SCHEMA_DIR / "schema.unstable.json").read_text())
    source = "shared/spec/acp/schema-from-ts-sdk-2.4.0/v1/{}"
    stable_methods = {str(d["x-method"]) for d in stable["$defs"].values() if "x-method" in d}
    check_gates(unstable["$defs"])
    files = {
        "_schema.py": emit_schema(
            Generator(stable).run(), source.format("schema.json"), "ACP v1 stable types."
        ),
        "_schema_unstable.py": emit_schema(
            Generator(unstable).run(),
            source.format("schema.unstable.json"),
            "ACP v1 types including unstable ones (opt-in; stable code never imports this).",
        ),
        "_methods.py": emit_methods(
            method_specs(stable["$defs"], stable_methods),
            source.format("schema.json"),
            "ACP v1 stable method table: method -> params, result, handling side, gate.",
            "_schema",
        ),
        "_methods_unstable.py": emit_methods(
            method_specs(unstable["$defs"], stable_methods),
            source.format("schema.unstable.json"),
            "ACP v1 method table including unstable methods (types from _schema_unstable).",
            "_schema_unstable",
        ),
    }
    return {name: ruff_format(text, str(OUT_DIR / name)) for name, text in files.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the output is stale")
    args = parser.parse_args(argv)
    stale = []
    for name, text in generate().items():
        path = OUT_DIR / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(f"gen_acp: stale generated files: {', '.join(stale)}; run python tools/gen_acp.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
