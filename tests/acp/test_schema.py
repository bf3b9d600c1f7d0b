"""The generated ACP types and their codec: round trips, forward compatibility, tables."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from interlink.acp import _codec as codec
from interlink.acp import _methods as methods
from interlink.acp import _methods_unstable as methods_unstable
from interlink.acp import _schema as s
from interlink.acp import _schema_unstable as su
from tests.spec import spec_dir

REPO = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ("acp", "schema-from-ts-sdk-2.4.0", "v1")


def load_schema(name: str) -> dict[str, dict[str, object]]:
    text = spec_dir(*SCHEMA_DIR, name).read_text()
    defs: dict[str, dict[str, object]] = json.loads(text)["$defs"]
    return defs


def variant_tags(defs: dict[str, dict[str, object]], union: str, field: str) -> set[str]:
    options = defs[union].get("oneOf") or defs[union].get("anyOf")
    assert isinstance(options, list)
    return {o["properties"][field]["const"] for o in options if "const" in str(o)}


def roundtrip(type_: object, wire: Mapping[str, object]) -> object:
    raw = json.dumps(wire, separators=(",", ":")).encode()
    value = codec.decode(type_, raw)
    assert json.loads(codec.encode(value)) == wire
    assert codec.to_builtins(value) == wire
    assert codec.convert(type_, wire) == value
    return value


TEXT = {"type": "text", "text": "hello"}
CONTENT_BLOCKS: dict[str, dict[str, object]] = {
    "text": {**TEXT, "annotations": {"audience": ["user"], "priority": 0.5}},
    "image": {"type": "image", "data": "aGk=", "mimeType": "image/png", "uri": "file:///a.png"},
    "audio": {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
    "resource_link": {"type": "resource_link", "uri": "file:///a", "name": "a", "size": 3},
    "resource": {
        "type": "resource",
        "resource": {"uri": "file:///a", "text": "x", "mimeType": "text/plain"},
    },
}
SESSION_UPDATES: dict[str, dict[str, object]] = {
    "user_message_chunk": {"content": TEXT},
    "agent_message_chunk": {"content": TEXT, "messageId": "m1"},
    "agent_thought_chunk": {"content": TEXT},
    "tool_call": {
        "toolCallId": "t1",
        "title": "Read",
        "kind": "read",
        "status": "pending",
        "content": [
            {"type": "content", "content": TEXT},
            {"type": "diff", "path": "/a", "oldText": None, "newText": "b"},
            {"type": "terminal", "terminalId": "term1"},
        ],
        "locations": [{"path": "/a", "line": 3}],
        "rawInput": {"path": "/a"},
    },
    "tool_call_update": {"toolCallId": "t1", "status": "completed", "rawOutput": [1, None]},
    "plan": {"entries": [{"content": "do", "priority": "high", "status": "pending"}]},
    "available_commands_update": {
        "availableCommands": [{"name": "web", "description": "d", "input": {"hint": "q"}}]
    },
    "current_mode_update": {"currentModeId": "ask"},
    "config_option_update": {
        "configOptions": [
            {
                "type": "select",
                "id": "model",
                "name": "Model",
                "category": "_custom",
                "currentValue": "a",
                "options": [{"value": "a", "name": "A"}],
            },
            {"type": "boolean", "id": "fast", "name": "Fast", "currentValue": True},
        ]
    },
    "session_info_update": {"title": None, "updatedAt": "2026-01-01T00:00:00Z"},
    "usage_update": {"used": 10, "size": 100, "cost": {"amount": 0.5, "currency": "EUR"}},
    "notice": {"severity": "warning", "title": "t"},
    "compaction_update": {"compactionId": "c", "status": "in_progress"},
    "compaction_summary_chunk": {"compactionId": "c", "content": TEXT},
}


def notification(update: dict[str, object]) -> dict[str, object]:
    return {"sessionId": "s1", "update": update}


def test_every_session_update_variant_round_trips() -> None:
    assert set(SESSION_UPDATES) == variant_tags(
        load_schema("schema.json"), "SessionUpdate", "sessionUpdate"
    )
    for tag, body in SESSION_UPDATES.items():
        value = roundtrip(s.SessionNotification, notification({"sessionUpdate": tag, **body}))
        assert isinstance(value, s.SessionNotification)
        assert not isinstance(value.update, codec.UnknownVariant), tag


def test_every_content_block_round_trips() -> None:
    assert set(CONTENT_BLOCKS) == variant_tags(load_schema("schema.json"), "ContentBlock", "type")
    for block in CONTENT_BLOCKS.values():
        value = roundtrip(s.PromptRequest, {"sessionId": "s1", "prompt": [block]})
        assert isinstance(value, s.PromptRequest)
        assert not isinstance(value.prompt[0], codec.UnknownVariant)
    blob = {"type": "resource", "resource": {"uri": "file:///b", "blob": "aGk="}}
    value = roundtrip(s.ContentBlock, blob)
    assert isinstance(value, s.EmbeddedResource)
    assert isinstance(value.resource, s.BlobResourceContents)


def test_typed_access_and_construction() -> None:
    update = s.AgentMessageChunk(content=s.TextContent(text="hi"), meta={"trace": 1})
    wire = codec.encode(s.SessionNotification(session_id="s1", update=update))
    assert json.loads(wire) == notification(
        {
            "sessionUpdate": "agent_message_chunk",
            "content": TEXT | {"text": "hi"},
            "_meta": {"trace": 1},
        }
    )
    assert isinstance(update, s.ContentChunk)
    decoded = codec.decode(s.SessionNotification, wire)
    assert decoded.update == update
    assert isinstance(decoded.update, s.AgentMessageChunk)
    assert decoded.update.meta == {"trace": 1}


@pytest.mark.parametrize(
    ("type_", "wire", "unknown"),
    [
        (s.SessionUpdate, {"sessionUpdate": "future", "x": {"y": [1]}}, s.UnknownSessionUpdate),
        (s.ContentBlock, {"type": "video", "url": "u", "_meta": None}, s.UnknownContentBlock),
        (s.ToolCallContent, {"type": "chart", "points": []}, s.UnknownToolCallContent),
        (s.RequestPermissionOutcome, {"outcome": "deferred"}, s.UnknownRequestPermissionOutcome),
        (s.McpServer, {"type": "acp", "name": "n", "serverId": "x"}, s.UnknownMcpServer),
        (s.AuthMethod, {"type": "env_var", "id": "k", "name": "Key"}, s.UnknownAuthMethod),
        (s.SessionConfigOption, {"type": "r", "id": "r"}, s.UnknownSessionConfigOption),
        (s.CreateElicitationRequest, {"mode": "_x"}, s.UnknownCreateElicitationRequest),
        (s.CreateElicitationResponse, {"action": "later"}, s.UnknownCreateElicitationResponse),
    ],
)  # fmt: skip
def test_unknown_variants_are_kept_whole(
    type_: object, wire: dict[str, object], unknown: type[codec.UnknownVariant]
) -> None:
    raw = json.dumps(wire).encode()
    value = codec.decode(type_, raw)
    assert type(value) is unknown
    assert isinstance(value, codec.UnknownVariant)
    assert value.data == wire
    assert value.tag == wire.get(unknown.tag_field)
    assert codec.encode(value) == json.dumps(wire, separators=(",", ":")).encode()
    nested = codec.decode(
        s.SessionNotification, json.dumps(notification({"sessionUpdate": "x9"})).encode()
    )
    assert codec.encode(nested) == b'{"sessionId":"s1","update":{"sessionUpdate":"x9"}}'


def test_unknown_fields_are_kept_and_written_back() -> None:
    wire = notification(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t",
            "title": "x",
            "future": {"a": [1, 2]},
            "content": [{"type": "content", "content": TEXT | {"newer": True}}],
        }
    ) | {"topLevel": "kept"}
    value = roundtrip(s.SessionNotification, wire)
    assert isinstance(value, s.SessionNotification)
    assert value.extra == {"topLevel": "kept"}
    assert isinstance(value.update, s.ToolCall)
    assert value.update.extra == {"future": {"a": [1, 2]}}
    assert isinstance(value.update.content, list)
    item = value.update.content[0]
    assert isinstance(item, s.Content)
    assert isinstance(item.content, s.TextContent)
    assert item.content.extra == {"newer": True}


def test_unknown_enum_values() -> None:
    wire = notification(
        {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", "kind": "browse"}
    )
    value = roundtrip(s.SessionNotification, wire)
    assert isinstance(value, s.SessionNotification)
    assert isinstance(value.update, s.ToolCall)
    assert value.update.kind == "browse"
    assert isinstance(value.update.kind, codec.UnknownEnumValue)
    response = roundtrip(s.PromptResponse, {"stopReason": "paused"})
    assert isinstance(response, s.PromptResponse)
    assert isinstance(response.stop_reason, codec.UnknownEnumValue)
    known = codec.decode(s.PromptResponse, b'{"stopReason":"end_turn"}')
    assert known.stop_reason == "end_turn"
    assert not isinstance(known.stop_reason, codec.UnknownEnumValue)


def test_open_enum_accepts_any_string() -> None:
    wire = {
        "type": "boolean",
        "id": "x",
        "name": "X",
        "category": "brand_new",
        "currentValue": False,
    }
    value = roundtrip(s.SessionConfigOption, wire)
    assert isinstance(value, s.SessionConfigOptionBoolean)
    assert value.category == "brand_new"


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        ({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": 5}},
         "Expected `str`, got `int` - at `$.update.content.text`"),
        ({"sessionUpdate": "agent_message_chunk"},
         "Object missing required field `content` - at `$.update`"),
        ({"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": "x"}},
         "Object missing required field `mimeType` - at `$.update.content`"),
        ({"sessionUpdate": "usage_update", "used": -1, "size": 1},
         "Expected `int` >= 0 - at `$.update.used`"),
        ({"sessionUpdate": 7}, "Expected `str`, got `int` - at `$.update.sessionUpdate`"),
        ({"sessionUpdate": "plan", "entries": []}, None),
    ],
)  # fmt: skip
def test_known_tag_with_bad_content_is_a_validation_error(
    wire: dict[str, object], message: str | None
) -> None:
    raw = json.dumps(notification(wire)).encode()
    if message is None:
        codec.decode(s.SessionNotification, raw)
        return
    with pytest.raises(msgspec.ValidationError) as info:
        codec.decode(s.SessionNotification, raw)
    assert str(info.value) == message


def test_bad_json_is_a_decode_error_not_a_validation_error() -> None:
    with pytest.raises(msgspec.DecodeError) as info:
        codec.decode(s.SessionNotification, b'{"sessionId":')
    assert not isinstance(info.value, msgspec.ValidationError)


def test_leniency_marks_keep_the_raw_value() -> None:
    # messageId is default-on-error: a malformed id does not reject the chunk.
    wire = notification({"sessionUpdate": "agent_message_chunk", "content": TEXT, "messageId": 5})
    value = roundtrip(s.SessionNotification, wire)
    assert isinstance(value, s.SessionNotification)
    assert isinstance(value.update, s.AgentMessageChunk)
    assert value.update.message_id is msgspec.UNSET
    assert value.update.extra == {"messageId": 5}
    # locations skips invalid items; the raw list survives for re-encoding.
    wire = notification(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t",
            "title": "x",
            "locations": [{"path": "/a"}, {"path": 1}],
        }
    )
    value = roundtrip(s.SessionNotification, wire)
    assert isinstance(value, s.SessionNotification)
    assert isinstance(value.update, s.ToolCall)
    assert value.update.locations == [s.ToolCallLocation(path="/a")]
    # mcpServers is default-on-null.
    new = roundtrip(s.NewSessionRequest, {"cwd": "/w", "mcpServers": None})
    assert isinstance(new, s.NewSessionRequest)
    assert new.mcp_servers == []


def test_meta_round_trips_as_meta() -> None:
    wire = {"sessionId": "s", "_meta": {"traceparent": "00-ab", "x": [1]}}
    value = roundtrip(s.CancelNotification, wire)
    assert isinstance(value, s.CancelNotification)
    assert value.meta == {"traceparent": "00-ab", "x": [1]}
    assert value.extra is msgspec.UNSET
    assert json.loads(codec.encode(s.CancelNotification(session_id="s", meta=None))) == {
        "sessionId": "s",
        "_meta": None,
    }


def test_null_and_omitted_stay_distinct() -> None:
    tag = {"sessionUpdate": "session_info_update"}
    cleared = roundtrip(s.SessionUpdate, tag | {"title": None})
    unchanged = roundtrip(s.SessionUpdate, tag)
    assert isinstance(cleared, s.SessionInfoUpdate)
    assert isinstance(unchanged, s.SessionInfoUpdate)
    assert cleared.title is None
    assert unchanged.title is msgspec.UNSET


def test_untagged_unions() -> None:
    new = roundtrip(
        s.NewSessionRequest,
        {
            "cwd": "/w",
            "mcpServers": [
                {"name": "a", "command": "x", "args": [], "env": [{"name": "K", "value": "v"}]},
                {"type": "http", "name": "b", "url": "https://h", "headers": []},
            ],
        },
    )
    assert isinstance(new, s.NewSessionRequest)
    assert [type(m) for m in new.mcp_servers] == [s.McpServerStdio, s.McpServerHttp]
    init = roundtrip(
        s.InitializeResponse,
        {
            "protocolVersion": 1,
            "authMethods": [{"id": "a", "name": "A"}, {"type": "terminal", "id": "t", "name": "T"}],
        },
    )
    assert isinstance(init, s.InitializeResponse)
    assert isinstance(init.auth_methods, list)
    assert [type(m) for m in init.auth_methods] == [s.AuthMethodAgent, s.AuthMethodTerminal]
    group = {"group": "g", "name": "G", "options": [{"value": "a", "name": "A"}]}
    grouped = {"type": "select", "id": "m", "name": "M", "currentValue": "a", "options": [group]}
    option = roundtrip(s.SessionConfigOption, grouped)
    assert isinstance(option, s.SessionConfigOptionSelect)
    assert isinstance(option.options[0], s.SessionConfigSelectGroup)
    value = roundtrip(
        s.SetSessionConfigOptionRequest, {"sessionId": "s", "configId": "c", "value": "v"}
    )
    assert isinstance(value, s.SetSessionConfigOptionRequestValueId)
    flag = {"sessionId": "s", "configId": "c", "type": "boolean", "value": True}
    assert isinstance(
        roundtrip(s.SetSessionConfigOptionRequest, flag), s.SetSessionConfigOptionRequestBoolean
    )
    with pytest.raises(msgspec.ValidationError, match=r"at `\$.mcpServers\[0\].args`"):
        codec.decode(
            s.NewSessionRequest,
            b'{"cwd":"/w","mcpServers":[{"name":"a","command":"x","args":5,"env":[]}]}',
        )


def test_permission_and_elicitation_shapes() -> None:
    for outcome in ({"outcome": "cancelled"}, {"outcome": "selected", "optionId": "allow"}):
        roundtrip(s.RequestPermissionResponse, {"outcome": outcome})
    properties = {
        "n": {"type": "string", "minLength": 1},
        "k": {"type": "array", "items": {"type": "string", "enum": ["a"]}},
    }
    schema = {"type": "object", "properties": properties}
    form = {"mode": "form", "message": "m", "sessionId": "s", "requestedSchema": schema}
    value = roundtrip(s.CreateElicitationRequest, form)
    assert isinstance(value, s.CreateElicitationRequestForm)
    assert isinstance(value.requested_schema.properties, dict)
    assert isinstance(value.requested_schema.properties["k"], s.MultiSelectPropertySchema)
    accept = roundtrip(
        s.CreateElicitationResponse, {"action": "accept", "content": {"n": "x", "k": ["a"], "i": 2}}
    )
    assert isinstance(accept, s.CreateElicitationResponseAccept)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    text=st.text(),
    message_id=st.none() | st.text(max_size=8),
    meta=st.none() | st.dictionaries(st.text(max_size=5), JSON, max_size=3),
    extra=st.dictionaries(
        st.text(min_size=1, max_size=8).map(lambda k: "x_" + k), JSON, max_size=3
    ),
)
def test_chunks_round_trip_with_unknown_fields(
    text: str, message_id: str | None, meta: dict[str, object] | None, extra: dict[str, object]
) -> None:
    update: dict[str, object] = {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text},
    }
    if message_id is not None:
        update["messageId"] = message_id
    if meta is not None:
        update["_meta"] = meta
    roundtrip(s.SessionNotification, notification(update | extra))


@given(
    tag=st.text(min_size=1, max_size=12),
    body=st.dictionaries(st.text(max_size=6), JSON, max_size=4),
)
def test_any_unknown_session_update_round_trips(tag: str, body: dict[str, object]) -> None:
    if tag in SESSION_UPDATES:
        return
    wire = notification({**body, "sessionUpdate": tag})
    value = roundtrip(s.SessionNotification, wire)
    assert isinstance(value, s.SessionNotification)
    assert isinstance(value.update, s.UnknownSessionUpdate)


def test_unstable_types_decode_unstable_variants() -> None:
    wire = notification({"sessionUpdate": "plan_removed", "planId": "p"})
    assert isinstance(roundtrip(su.SessionNotification, wire), su.SessionNotification)
    stable = roundtrip(s.SessionNotification, wire)
    assert isinstance(stable, s.SessionNotification)
    assert isinstance(stable.update, s.UnknownSessionUpdate)


def schema_methods(defs: dict[str, dict[str, object]]) -> set[tuple[str, str, str]]:
    out = set()
    for name, node in defs.items():
        if "x-method" in node:
            kind = "notification" if name.endswith("Notification") else "request"
            out.add((str(node["x-method"]), str(node["x-side"]), kind))
    return out


def table_methods(module: object) -> set[tuple[str, str, str]]:
    out = set()
    for table in (
        "AGENT_METHODS",
        "CLIENT_METHODS",
        "PROTOCOL_METHODS",
        "PROXY_METHODS",
        "PROXY_NOTIFICATIONS",
    ):
        for name, spec in getattr(module, table, {}).items():
            assert name == spec.name
            assert table.startswith(spec.handled_by.upper())
            out.add((spec.name, spec.handled_by, spec.kind))
    return out


def test_method_tables_cover_the_schema() -> None:
    stable = load_schema("schema.json")
    assert table_methods(methods) == schema_methods(stable)
    assert table_methods(methods_unstable) == schema_methods(load_schema("schema.unstable.json"))
    stable_names = {m for m, _, _ in schema_methods(stable)}
    for table in (methods_unstable.AGENT_METHODS, methods_unstable.CLIENT_METHODS):
        for spec in table.values():
            assert spec.stable == (spec.name in stable_names)


def test_method_specs() -> None:
    prompt = methods.AGENT_METHODS["session/prompt"]
    assert (prompt.params, prompt.result, prompt.kind) == (
        s.PromptRequest,
        s.PromptResponse,
        "request",
    )
    assert prompt.gate == ()
    update = methods.CLIENT_METHODS["session/update"]
    assert (update.params, update.result, update.kind) == (
        s.SessionNotification,
        None,
        "notification",
    )
    assert methods.AGENT_METHODS["session/load"].gate == (("agentCapabilities", "loadSession"),)
    assert methods.CLIENT_METHODS["fs/read_text_file"].gate == (
        ("clientCapabilities", "fs", "readTextFile"),
    )
    assert methods.CLIENT_METHODS["terminal/kill"].gate == (("clientCapabilities", "terminal"),)
    assert methods.AGENT_METHODS["session/close"].gate == (
        ("agentCapabilities", "sessionCapabilities", "close"),
    )
    assert methods.PROTOCOL_METHODS["$/cancel_request"].params is s.CancelRequestNotification
    decoded = codec.decode(
        prompt.params, b'{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}'
    )
    assert isinstance(decoded, s.PromptRequest)


def test_wire_names_match_the_schema() -> None:
    defs = load_schema("schema.json")
    for name, node in defs.items():
        cls = getattr(s, name, None)
        if not (isinstance(cls, type) and issubclass(cls, msgspec.Struct)):
            continue
        wire = {f.encode_name for f in msgspec.structs.fields(cls)} - {codec.EXTRA_KEY}
        properties = node.get("properties", {})
        assert isinstance(properties, dict)
        assert set(properties) - wire <= {cls.__struct_config__.tag_field}, name


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running `code`."""
    code += "\nimport sys; print(' '.join(sys.modules))"
    run = [sys.executable, "-c", code]
    out = subprocess.run(run, capture_output=True, text=True, check=True, timeout=60)
    return set(out.stdout.split())


CLIENT_SIDE = {"interlink.acp._client", "interlink.acp._local", "interlink.acp._transcript"}


@pytest.mark.parametrize(
    "code",
    [
        "import interlink.acp._schema, interlink.acp._methods",
        "import interlink.acp",
        "from interlink.acp import Agent, run_agent, schema",
    ],
)
def test_an_agent_import_loads_neither_unstable_types_nor_the_client_side(code: str) -> None:
    loaded = loaded_after(code)
    assert "interlink.acp._schema" in loaded
    assert {m for m in loaded if "unstable" in m} == set()
    assert loaded & CLIENT_SIDE == set()


def test_the_client_side_loads_on_first_use() -> None:
    loaded = loaded_after("from interlink.acp import Client, LocalClient, Transcript")
    assert loaded >= CLIENT_SIDE
    assert {m for m in loaded if "unstable" in m} == set()


def test_every_export_resolves() -> None:
    import interlink.acp as acp

    for name in acp.__all__:
        assert getattr(acp, name) is not None, name
    assert acp.Client is acp._client.Client  # cached in the module once resolved
    with pytest.raises(AttributeError, match="no attribute 'Clientt'"):
        acp.Clientt  # noqa: B018


def test_generated_files_are_current() -> None:
    spec_dir()
    done = subprocess.run(
        [sys.executable, str(REPO / "tools" / "gen_acp.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
