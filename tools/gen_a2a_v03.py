"""Generate the A2A 0.3 types and method table from the legacy JSON schema.

Run from anywhere: `python tools/gen_a2a_v03.py` rewrites
`src/interlink/a2a/compat/_v03_types.py`; `--check` exits 1 when the committed file
differs from what would be generated. The schema is read where it lies
(`<spec>/a2a/legacy-v0.3.0/a2a.json`, `<spec>` as for `tools/gen_a2a.py`).

Mapping to msgspec (0.3 JSON on the wire, as the schema spells it):

- field names: snake_case in Python, the schema's camelCase on the wire;
- required properties have no default; optional ones are `T | UnsetType = UNSET`, so
  absent and present stay distinct (a schema `default` is only named in the docstring);
- a `const` property named `kind` or `type` is the msgspec tag of its struct: `anyOf`
  unions of such structs (`Part`, `SecurityScheme`, the send and stream results) are
  tagged unions;
- an `anyOf` of untagged objects becomes one struct with every member's fields, required
  where every member requires them, and a check that exactly one member matches
  (`FileWithBytes | FileWithUri` -> `FilePartFile`); when one member holds every other
  member's fields it is used as is;
- string enums are `StrEnum`s (`TaskState.INPUT_REQUIRED == "input-required"`);
  properties with an inline enum get one named after the property (`Role`, `In`);
- `*Error` definitions with a `const` code become `ERROR_CODES` (name -> code, default
  message); `*Request` definitions with a `const` method become `METHODS`, each with
  its params type, result type (from `*SuccessResponse.result`) and whether it streams.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_a2a import LINE, REPO, dunder_all, ruff_format, spec_dir
from gen_a2a import docstring as _docstring

OUT = REPO / "src" / "interlink" / "a2a" / "compat" / "_v03_types.py"
TAG_FIELDS = ("kind", "type")
#: The schema does not say which methods stream; the 0.3 spec (§7.2, §7.9) does.
STREAMING = frozenset({"message/stream", "tasks/resubscribe"})
#: `tasks/resubscribe` has no response definition; it answers like `message/stream`.
RESULT_OF = {"TaskResubscriptionRequest": "SendStreamingMessageSuccessResponse"}

Schema = dict[str, Any]


class SchemaError(Exception):
    pass


def docstring(text: str, indent: int) -> list[str]:
    """gen_a2a's docstrings, wrapped so that ruff never joins one past the line length."""
    width = LINE - indent - 8
    lines = [textwrap.fill(raw, width, break_long_words=False) for raw in text.splitlines()]
    return _docstring("\n".join(lines), indent)


def snake(name: str) -> str:
    out = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    return out + "_" if keyword.iskeyword(out) else out


def ref_name(node: Schema) -> str:
    return str(node["$ref"]).rsplit("/", 1)[-1]


@dataclass
class Prop:
    name: str  # wire name
    annotation: str
    required: bool
    doc: str


@dataclass
class Struct:
    name: str
    doc: str
    tag: tuple[str, str] | None = None  # (tag field, tag value)
    props: list[Prop] = field(default_factory=list)
    deps: set[str] = field(default_factory=set)
    #: (members' required wire names, wire names only other members have), per member
    one_of: list[tuple[list[str], list[str]]] = field(default_factory=list)


class Generator:
    def __init__(self, defs: dict[str, Schema]) -> None:
        self.defs = defs
        self.structs: dict[str, Struct] = {}
        self.enums: dict[str, tuple[str, list[str]]] = {}  # name -> (doc, values)
        self.unions: dict[str, str] = {}  # alias name -> annotation

    # -------------------------------------------------------------- classification

    def tag_of(self, name: str) -> tuple[str, str] | None:
        props = self.defs[name].get("properties", {})
        for key in TAG_FIELDS:
            if "const" in props.get(key, {}):
                return key, str(props[key]["const"])
        return None

    def is_object(self, name: str) -> bool:
        return self.defs[name].get("type") == "object"

    def skipped(self, name: str) -> bool:
        """JSON-RPC envelopes and errors: described by METHODS and ERROR_CODES instead."""
        props = self.defs[name].get("properties", {})
        envelope = (
            name.endswith(("Request", "Response")) or name == "A2AError" or "jsonrpc" in props
        )
        return envelope or (name.endswith("Error") and name != "JSONRPCError" and "code" in props)

    # -------------------------------------------------------------- types

    def annotation(self, node: Schema, owner: str, prop: str) -> tuple[str, set[str]]:
        if "$ref" in node:
            name = ref_name(node)
            self.visit(name)
            return name, {name}
        if "anyOf" in node or "oneOf" in node:
            return self.union(
                node.get("anyOf") or node["oneOf"], owner + prop[:1].upper() + prop[1:]
            )
        kind = node.get("type")
        if isinstance(kind, list):
            names = {"string": "str", "integer": "int", "null": "None"}
            return " | ".join(names[k] for k in kind), set()
        if "enum" in node:
            enum = prop[:1].upper() + prop[1:]
            self.enums[enum] = (node.get("description", enum), list(node["enum"]))
            return enum, {enum}
        if kind == "array":
            inner, deps = self.annotation(node["items"], owner, prop)
            return f"list[{inner}]", deps
        if kind == "object":
            extra = node.get("additionalProperties")
            if isinstance(extra, dict):
                inner, deps = self.annotation(extra, owner, prop)
                return f"dict[str, {inner}]", deps
            return "dict[str, object]", set()
        scalars = {"string": "str", "integer": "int", "boolean": "bool", "null": "None"}
        if kind in scalars:
            return scalars[kind], set()
        if kind is None:
            return "object", set()
        raise SchemaError(f"{owner}.{prop}: unsupported schema {node}")

    def union(self, members: list[Schema], name: str) -> tuple[str, set[str]]:
        names = [ref_name(m) for m in members]
        for member in names:
            self.visit(member)
        if all(self.tag_of(m) for m in names):
            return " | ".join(names), set(names)
        fields = [set(self.defs[m].get("properties", {})) for m in names]
        for member, own in zip(names, fields, strict=True):
            if all(other <= own for other in fields):
                return member, {member}
        self.merged(name, names)
        return name, {name}

    def merged(self, name: str, members: list[str]) -> None:
        """One struct for an untagged union of objects (see the module docstring)."""
        nodes = [self.defs[m] for m in members]
        required = [set(n.get("required", [])) for n in nodes]
        doc = f"One of {', '.join(f'`{m}`' for m in members)} (an untagged union in 0.3)."
        struct = Struct(name, doc)
        seen: dict[str, Schema] = {}
        for node in nodes:
            for key, value in node.get("properties", {}).items():
                seen.setdefault(key, value)
        for key, value in seen.items():
            ann, deps = self.annotation(value, name, key)
            struct.deps |= deps
            needed = all(key in r for r in required)
            struct.props.append(Prop(key, ann, needed, value.get("description", "")))
        for node, req in zip(nodes, required, strict=True):
            own = set(node.get("properties", {}))
            others = set(seen) - own
            struct.one_of.append((sorted(req - set.intersection(*required)), sorted(others)))
        self.structs[name] = struct

    def visit(self, name: str) -> None:
        if name in self.structs or name in self.enums or name in self.unions:
            return
        node = self.defs[name]
        if "enum" in node:
            self.enums[name] = (node.get("description", name), list(node["enum"]))
            return
        if "anyOf" in node or "oneOf" in node:
            self.unions[name] = ""  # placeholder against recursion
            self.unions[name] = self.union(node.get("anyOf") or node["oneOf"], name)[0]
            return
        if not self.is_object(name):
            raise SchemaError(f"{name}: unsupported definition")
        tag = self.tag_of(name)
        struct = Struct(name, node.get("description", name), tag)
        self.structs[name] = struct
        required = set(node.get("required", []))
        for key, value in node.get("properties", {}).items():
            if tag and key == tag[0]:
                continue
            ann, deps = self.annotation(value, name, key)
            struct.deps |= deps
            doc = value.get("description", "")
            if "default" in value and key not in required:
                doc += f"\nAbsent means {json.dumps(value['default'])}."
            struct.props.append(Prop(key, ann, key in required, doc.strip()))

    # -------------------------------------------------------------- emission

    def order(self) -> list[Struct]:
        done: dict[str, Struct] = {}

        def walk(struct: Struct) -> None:
            if struct.name in done:
                return
            for dep in sorted(struct.deps):
                if dep in self.structs:
                    walk(self.structs[dep])
                elif dep in self.unions:
                    for member in self.unions[dep].split(" | "):
                        if member in self.structs:
                            walk(self.structs[member])
            done[struct.name] = struct

        for struct in list(self.structs.values()):
            walk(struct)
        return list(done.values())

    def emit_struct(self, struct: Struct) -> list[str]:
        opts = "msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True"
        if struct.tag:
            opts += f', tag_field="{struct.tag[0]}", tag="{struct.tag[1]}"'
        out = [f"class {struct.name}({opts}):", *docstring(struct.doc, 4), ""]
        for prop in struct.props:
            py = snake(prop.name)
            ann = prop.annotation
            rename = f', name="{prop.name}"' if py != prop.name else ""
            if prop.required:
                line = f"    {py}: {ann}" + (f" = field(name={prop.name!r})" if rename else "")
            else:
                line = f"    {py}: {ann} | UnsetType = " + (
                    f"field(default=UNSET{rename})" if rename else "UNSET"
                )
            out.append(line.replace("'", '"'))
            if prop.doc:
                out.extend(docstring(prop.doc, 4))
            out.append("")
        if struct.one_of:
            out.extend(self.emit_one_of(struct))
        return [*out, "", ""]

    def emit_one_of(self, struct: Struct) -> list[str]:
        def is_set(wire: str) -> str:
            return f"(self.{snake(wire)} is not UNSET)"

        tests = []
        for required, foreign in struct.one_of:
            parts = [is_set(w) for w in required] + [f"not {is_set(w)}" for w in foreign]
            tests.append("(" + " and ".join(parts or ["True"]) + ")")
        members = " | ".join(" + ".join(sorted(r)) or "-" for r, _ in struct.one_of)
        return [
            "    def __post_init__(self) -> None:",
            f"        if {' + '.join(tests)} != 1:",
            f'            raise ValueError("{struct.name}: exactly one of {members} must be set")',
            "",
        ]

    def emit_enum(self, name: str, doc: str, values: list[str]) -> list[str]:
        out = [f"class {name}(enum.StrEnum):", *docstring(doc, 4), ""]
        for value in values:
            member = re.sub(r"\W+", "_", value).upper()
            out.append(f'    {member} = "{value}"')
        return [*out, "", ""]

    def methods(self) -> list[tuple[str, str, str, bool]]:
        """(wire name, params annotation, result annotation, streaming) per method."""
        found = []
        for name, node in self.defs.items():
            props = node.get("properties", {})
            method = props.get("method", {}).get("const")
            if not name.endswith("Request") or method is None:
                continue
            params = (
                self.annotation(props["params"], name, "params")[0] if "params" in props else "None"
            )
            response = RESULT_OF.get(name, name.removesuffix("Request") + "SuccessResponse")
            result = self.annotation(
                self.defs[response]["properties"]["result"], response, "result"
            )[0]
            found.append((str(method), params, result, method in STREAMING))
        return found

    def errors(self) -> list[tuple[str, int, str]]:
        found = []
        for name, node in self.defs.items():
            props = node.get("properties", {})
            if name.endswith("Error") and "const" in props.get("code", {}):
                message = props.get("message", {}).get("default", "")
                found.append((name, int(props["code"]["const"]), str(message)))
        return found

    def generate(self) -> str:
        for name in self.defs:
            if not self.skipped(name):
                self.visit(name)
        methods, errors = self.methods(), self.errors()
        structs = self.order()
        names = [*self.enums, *(s.name for s in structs), *self.unions]
        out = [
            HEADER,
            PRELUDE.replace("{all}", dunder_all([*names, "ERROR_CODES", "METHODS", "Method"])),
        ]
        for name, (doc, values) in self.enums.items():
            out.extend(self.emit_enum(name, doc, values))
        emitted: set[str] = set()
        pending = dict(self.unions)
        for struct in structs:
            out.extend(self.emit_struct(struct))
            emitted.add(struct.name)
            for alias, ann in list(pending.items()):
                if all(m in emitted for m in ann.split(" | ")):
                    out += [
                        f"{alias} = {ann}",
                        *docstring(self.defs[alias].get("description", alias), 0),
                        "",
                    ]
                    del pending[alias]
        if pending:
            raise SchemaError(f"unions never completed: {pending}")
        out.append(
            "ERROR_CODES: Final[MappingProxyType[str, tuple[int, str]]] = MappingProxyType({"
        )
        out += [f'    "{name}": ({code}, "{message}"),' for name, code, message in errors]
        out += ["})", '"""Each 0.3 error by its schema name: (code, default message)."""', ""]
        out.append("METHODS: Final[MappingProxyType[str, Method]] = MappingProxyType({")
        for wire, params, result, streaming in methods:
            out.append(
                f'    "{wire}": Method("{wire}", {params}, {result}, streaming={streaming}),'
            )
        out += ["})", '"""Every 0.3 JSON-RPC method by its name, in schema order."""', ""]
        return "\n".join(out)


HEADER = """\
# Generated by tools/gen_a2a_v03.py from the A2A 0.3 JSON schema (legacy-v0.3.0/a2a.json).
# DO NOT EDIT. Regenerate with `python tools/gen_a2a_v03.py`; CI runs it with `--check`.
"""

PRELUDE = '''\
"""A2A 0.3 data objects as msgspec Structs speaking the 0.3 JSON.

Python names are snake_case, JSON names the schema's camelCase. `kind` (and a security
scheme's `type`) is the msgspec tag: decode a `Part` with `msgspec.json.decode(data,
type=Part)`. Optional fields are `UNSET` when absent. States and roles are lower-case
`StrEnum`s. Translate to and from the 1.0 types with `interlink.a2a.compat`.
"""

import enum
from types import MappingProxyType
from typing import Final, NamedTuple

import msgspec
from msgspec import UNSET, UnsetType, field

{all}


class Method(NamedTuple):
    """One 0.3 JSON-RPC method: its name, params and result types, whether it streams.

    `params` is None for a method without params; `result` is a type for
    `msgspec.convert` (a union or `list[...]` for some methods, `None` for delete).
    """

    name: str
    params: object
    result: object
    streaming: bool

'''


def generate(spec: Path) -> str:
    source = spec / "a2a" / "legacy-v0.3.0" / "a2a.json"
    if not source.is_file():
        raise SystemExit(f"gen_a2a_v03: {source} not found; set INTERLINK_SPEC_DIR to the spec dir")
    defs = json.loads(source.read_text(encoding="utf-8"))["definitions"]
    return ruff_format(Generator(defs).generate(), OUT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="fail if the output is stale")
    args = parser.parse_args(argv)
    text = generate(spec_dir())
    stale = not OUT.exists() or OUT.read_text(encoding="utf-8") != text
    rel = OUT.relative_to(REPO)
    if args.check:
        if stale:
            print(
                f"gen_a2a_v03: {rel} is stale; run `python tools/gen_a2a_v03.py`", file=sys.stderr
            )
        return 1 if stale else 0
    if stale:
        OUT.write_text(text, encoding="utf-8")
        print(f"gen_a2a_v03: wrote {rel}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
