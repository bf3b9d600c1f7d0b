"""What crosses the bridge, without processes: parts to prompt blocks, content to parts,
the card, the permission policy and the answers that pick an option; past tasks as the
sessions `bridge acp` lists and the updates it replays."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from interlink.a2a import ContentTypeNotSupported, new_id
from interlink.a2a import types as t
from interlink.acp import schema as s
from interlink.bridge import (
    PermissionPolicy,
    agent_card,
    chosen_option,
    content_part,
    prompt_blocks,
    question_parts,
)
from interlink.bridge._content import acp_json
from interlink.bridge._history import replay, session_infos
from interlink.bridge._pool import describe
from interlink.jsonrpc import RpcError

ALL = s.PromptCapabilities(image=True, audio=True, embedded_context=True)


def test_each_part_becomes_the_block_the_agent_takes() -> None:
    parts = [
        t.Part(text="hi"),
        t.Part(data={"a": [1, 2]}),
        t.Part(url="https://example.com/docs/spec.md", media_type="text/markdown"),
        t.Part(raw=b"\x89PNG", media_type="image/png"),
        t.Part(raw=b"RIFF", media_type="audio/wav"),
        t.Part(raw=b"%PDF", media_type="application/pdf", filename="doc.pdf"),
    ]
    blocks = prompt_blocks(parts, ALL)
    assert blocks[0] == s.TextContent(text="hi")
    assert blocks[1] == s.TextContent(text='{"a":[1,2]}')
    assert blocks[2] == s.ResourceLink(
        uri="https://example.com/docs/spec.md", name="spec.md", mime_type="text/markdown"
    )
    assert blocks[3] == s.ImageContent(data="iVBORw==", mime_type="image/png")
    assert blocks[4] == s.AudioContent(data="UklGRg==", mime_type="audio/wav")
    assert blocks[5] == s.EmbeddedResource(
        resource=s.BlobResourceContents(blob="JVBERg==", uri="doc.pdf", mime_type="application/pdf")
    )


@pytest.mark.parametrize(
    ("part", "needs"),
    [
        (t.Part(raw=b"x", media_type="image/png"), "promptCapabilities.image"),
        (t.Part(raw=b"x", media_type="audio/ogg"), "promptCapabilities.audio"),
        (t.Part(raw=b"x", media_type="application/zip"), "promptCapabilities.embeddedContext"),
    ],
)
def test_a_part_not_advertised_is_refused_naming_it(part: t.Part, needs: str) -> None:
    with pytest.raises(ContentTypeNotSupported) as info:
        prompt_blocks([t.Part(text="see"), part], s.PromptCapabilities())
    assert info.value.code == -32005
    assert info.value.message.startswith("part 1 (file bytes, ")
    assert needs in info.value.message
    # (text, data and links are for every agent)
    assert len(prompt_blocks([t.Part(url="file:///x"), t.Part(data=1)], None)) == 2


def test_agent_content_becomes_parts() -> None:
    assert content_part(s.TextContent(text="a")) == t.Part(text="a")
    image = content_part(s.ImageContent(data="iVBORw==", mime_type="image/png"))
    assert image == t.Part(raw=b"\x89PNG", media_type="image/png")
    link = content_part(s.ResourceLink(uri="file:///w/a.py", name="a.py"))
    assert link == t.Part(url="file:///w/a.py", filename="a.py")
    text = s.TextResourceContents(text="x = 1", uri="file:///w/a.py", mime_type="text/x-python")
    assert content_part(s.EmbeddedResource(resource=text)) == t.Part(
        text="x = 1", media_type="text/x-python"
    )
    bad = content_part(s.ImageContent(data="not base64!", mime_type="image/png"))
    assert bad.data == {"type": "image", "data": "not base64!", "mimeType": "image/png"}


def test_the_card_names_the_agent_and_its_commands() -> None:
    info = s.InitializeResponse(
        protocol_version=1,
        agent_capabilities=s.AgentCapabilities(
            prompt_capabilities=s.PromptCapabilities(audio=True, embedded_context=True)
        ),
        agent_info=s.Implementation(name="coder", title="The Coder", version="2.1"),
    )
    commands = [s.AvailableCommand(name="plan", description="Make a plan")]
    card = agent_card(info, ["coder-acp"], commands)
    assert (card.name, card.version) == ("coder", "2.1")
    assert card.description.startswith("The Coder: an ACP agent")
    assert card.default_input_modes == [
        "text/plain",
        "application/json",
        "audio/*",
        "application/octet-stream",
    ]
    assert [(k.id, k.name, k.examples) for k in card.skills] == [
        ("prompt", "The Coder", []),
        ("/plan", "/plan", ["/plan"]),
    ]
    nameless = agent_card(s.InitializeResponse(protocol_version=1), ["/usr/bin/some-agent"])
    assert (nameless.name, nameless.version) == ("some-agent", "0")


def _request(kind: s.ToolKind | None) -> s.RequestPermissionRequest:
    return s.RequestPermissionRequest(
        session_id="s",
        tool_call=s.ToolCallUpdate(tool_call_id="c", title="Run ls", kind=kind),
        options=[
            s.PermissionOption(option_id="yes", name="Allow once", kind="allow_once"),
            s.PermissionOption(option_id="always", name="Always", kind="allow_always"),
            s.PermissionOption(option_id="no", name="Reject", kind="reject_once"),
        ],
    )


def test_the_policy_goes_by_the_tool_kind_and_denial_wins() -> None:
    policy = PermissionPolicy.of(allow=["read", "terminal"], deny=["edit"])
    assert policy.answer(_request("read")) == "yes"
    assert policy.answer(_request("execute")) == "yes"  # (terminal = execute)
    assert policy.answer(_request("edit")) == "no"
    assert policy.answer(_request("fetch")) is None  # asked
    assert policy.answer(_request(None)) is None  # (no kind: other)
    everything = PermissionPolicy.of(deny=["delete"], allow_all=True)
    assert everything.answer(_request("other")) == "yes"
    assert everything.answer(_request("delete")) == "no"
    with pytest.raises(ValueError, match="unknown tool kind 'write'"):
        PermissionPolicy.of(allow=["write"])


def test_a_follow_up_picks_an_option_by_id_number_or_name() -> None:
    request = _request("execute")
    text, data = question_parts(request)
    assert text.text == (
        "The agent asks permission: Run ls\n1. Allow once (allow_once)\n"
        "2. Always (allow_always)\n3. Reject (reject_once)\n"
        'Answer with the option\'s number or name, or a data part {"optionId": ...}.'
    )
    assert data.data == {
        "permission": {
            "toolCall": {"toolCallId": "c", "title": "Run ls", "kind": "execute"},
            "options": [
                {"optionId": "yes", "name": "Allow once", "kind": "allow_once"},
                {"optionId": "always", "name": "Always", "kind": "allow_always"},
                {"optionId": "no", "name": "Reject", "kind": "reject_once"},
            ],
        }
    }

    def pick(*parts: t.Part) -> str | None:
        option = chosen_option(request, parts)
        return None if option is None else option.option_id

    assert pick(t.Part(data={"optionId": "always"})) == "always"
    assert pick(t.Part(data={"optionId": "nope"})) is None
    assert pick(t.Part(text=" 3 ")) == "no"
    assert pick(t.Part(text="4")) is None
    assert pick(t.Part(text="allow ONCE")) == "yes"
    assert pick(t.Part(text="no")) == "no"  # (an option id as text)
    assert pick(t.Part(text="perhaps")) is None
    assert pick() is None


def _task(task_id: str, context_id: str, state: t.TaskState, *history: t.Message) -> t.Task:
    when = datetime(2026, 1, 2, 3, 4, int(task_id[-1]), tzinfo=UTC)
    last = history[-1] if history and history[-1].role == t.Role.ROLE_AGENT else None
    status = t.TaskStatus(state=state, message=last, timestamp=when)
    return t.Task(id=task_id, context_id=context_id, status=status, history=list(history))


def _message(role: t.Role, *parts: t.Part) -> t.Message:
    return t.Message(message_id=new_id(), role=role, parts=list(parts))


USER, AGENT = t.Role.ROLE_USER, t.Role.ROLE_AGENT
S = t.TaskState


def test_contexts_are_sessions_titled_by_their_first_prompt() -> None:
    long = "a prompt " * 20
    tasks = [  # (newest first, as ListTasks gives them)
        _task("t3", "c1", S.TASK_STATE_COMPLETED, _message(USER, t.Part(text="later"))),
        _task("t2", "c2", S.TASK_STATE_COMPLETED, _message(USER, t.Part(text=long))),
        _task("t1", "c1", S.TASK_STATE_COMPLETED, _message(USER, t.Part(text=" first\n one"))),
    ]
    infos = session_infos(tasks, {"c2": "/work/c2"}, "/bridge")
    assert [(i.session_id, i.cwd, i.title) for i in infos] == [
        ("c1", "/bridge", "first one"),
        ("c2", "/work/c2", long.strip()[:79] + "…"),
    ]
    assert infos[0].updated_at == "2026-01-02T03:04:03Z"


def test_a_task_replays_as_its_turn_was_told() -> None:
    question = _message(AGENT, t.Part(text="which?"))
    plan = s.Plan(entries=[s.PlanEntry(content="x", priority="low", status="completed")])
    task = _task(
        "t1",
        "c",
        S.TASK_STATE_FAILED,
        _message(USER, t.Part(text="go")),
        _message(AGENT, t.Part(data=acp_json(plan)), t.Part(text="thinking")),
        question,
        _message(USER, t.Part(text="that")),
        _message(AGENT, t.Part(text="it broke")),
    )
    task = msgspec.structs.replace(
        task, artifacts=[t.Artifact(artifact_id="a", parts=[t.Part(text="partial")])]
    )
    text = s.TextContent
    assert replay(task) == [
        s.UserMessageChunk(content=text(text="go")),
        plan,
        s.AgentThoughtChunk(content=text(text="thinking")),
        s.AgentMessageChunk(content=text(text="which?")),  # (the user answered it)
        s.UserMessageChunk(content=text(text="that")),
        s.AgentMessageChunk(content=text(text="partial")),
        s.AgentMessageChunk(content=text(text="it broke")),  # (failed: the reason is said)
    ]


def test_an_agents_error_is_told_with_the_detail_its_data_gives() -> None:
    closed = RpcError("Internal error", {"details": "Query closed"}, code=-32603)
    assert describe(closed) == "the agent answered -32603: Internal error (Query closed)"
    assert describe(RpcError("Auth required", code=-32000)) == (
        "the agent answered -32000: Auth required"
    )
    assert describe(RpcError("Bad", "why not", code=-32602)) == (
        "the agent answered -32602: Bad (why not)"
    )
    assert describe(RpcError("Bad", {"n": 1}, code=-32602)) == "the agent answered -32602: Bad"


async def test_message_chunks_queued_together_go_out_as_one_artifact_update() -> None:
    from interlink.bridge._a2a import _CHUNKS_BYTES, _Turn
    from interlink.bridge._pool import Launch, Member

    member: Member[_Turn] = Member(0, Launch(["true"], s.ClientCapabilities()))
    turn = _Turn("task", "ctx", "sess", 4 * _CHUNKS_BYTES, member)
    for word in ("a ", "b ", "c"):
        assert turn.put_chunk(t.Part(text=word), len(word))
    assert await turn.put(turn.status(t.TaskState.TASK_STATE_WORKING, [t.Part(text="x")]), 1)
    big = "y" * _CHUNKS_BYTES  # (past the bound: an update of its own)
    for word in ("d", big):
        assert turn.put_chunk(t.Part(text=word), len(word))
    got = [await turn.get() for _ in range(4)]
    first, status, third, fourth = got
    assert isinstance(first, t.TaskArtifactUpdateEvent)
    assert [p.text for p in first.artifact.parts] == ["a ", "b ", "c"]
    assert not first.append  # (it opens the turn's artifact)
    assert isinstance(status, t.TaskStatusUpdateEvent)
    assert isinstance(third, t.TaskArtifactUpdateEvent)
    assert isinstance(fourth, t.TaskArtifactUpdateEvent)
    assert [p.text for p in third.artifact.parts] == ["d"]
    assert [p.text for p in fourth.artifact.parts] == [big]
    assert third.append
    assert fourth.append
    ids = {e.artifact.artifact_id for e in (first, third, fourth)}
    assert ids == {first.artifact.artifact_id}


@pytest.mark.timeout(10)
async def test_a_turn_whose_prompt_is_stopped_before_it_starts_still_ends() -> None:
    """A prompt's task cancelled before its first step (as `aclose` may, in the loop pass
    that created it) never runs: its turn gets its end all the same, and the agent is
    never asked."""
    import asyncio

    from interlink.bridge._a2a import _End, _Turn
    from interlink.bridge._pool import Launch, Member

    member: Member[_Turn] = Member(0, Launch(["true"], s.ClientCapabilities()))
    turn = _Turn("task", "ctx", "sess", 1 << 20, member)

    class Agent:
        asked = 0

        async def prompt(self, session_id: str, blocks: object) -> s.PromptResponse:
            Agent.asked += 1
            raise AssertionError("not to be asked")

    prompt = asyncio.create_task(turn.run(Agent(), []))  # type: ignore[arg-type]
    prompt.add_done_callback(turn.prompt_over)
    prompt.cancel()
    with pytest.raises(asyncio.CancelledError):
        await prompt
    end = await turn.get()
    assert isinstance(end, _End)
    assert end.response is None
    assert "stopped" in str(end.error)
    assert Agent.asked == 0


@pytest.mark.timeout(10)
async def test_a_second_get_while_one_waits_is_refused_not_left_waiting() -> None:
    """A turn has one driver; a second `get` beside a waiting one would wait on a future
    nobody wakes: it fails at once instead, and the first still gets the next item."""
    import asyncio

    from interlink.bridge._a2a import _Turn
    from interlink.bridge._pool import Launch, Member

    member: Member[_Turn] = Member(0, Launch(["true"], s.ClientCapabilities()))
    turn = _Turn("task", "ctx", "sess", 1 << 20, member)
    first = asyncio.create_task(turn.get())
    await asyncio.sleep(0)  # (let it start waiting: no item is queued)
    with pytest.raises(RuntimeError, match="second get"):
        await turn.get()
    assert turn.put_chunk(t.Part(text="a"), 1)
    got = await asyncio.wait_for(first, 5)
    assert isinstance(got, t.TaskArtifactUpdateEvent)
