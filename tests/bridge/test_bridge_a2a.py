"""`interlink bridge a2a`: ACP agents (the example agent, the test agent) served as A2A
agents, as real subprocesses on loopback, called by interlink's A2A client."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import msgspec
import pytest

from interlink.a2a import (
    A2AClient,
    A2AError,
    ContentTypeNotSupported,
    StreamEvent,
    clear_card_cache,
)
from interlink.a2a import types as t
from tests.bridge.conftest import EXAMPLE_AGENT, ROOT, TEST_AGENT, bridge, connected

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

S = t.TaskState


def text_of(task: t.Task) -> str:
    return "".join(
        part.text
        for artifact in task.artifacts
        for part in artifact.parts
        if isinstance(part.text, str)
    )


def status_data(events: list[StreamEvent]) -> list[object]:
    """The ACP objects the stream's status messages carried."""
    found = []
    for event in events:
        payload = event.payload
        if isinstance(payload, t.TaskStatusUpdateEvent) and payload.status.message is not None:
            found += [p.data for p in payload.status.message.parts if p.data is not msgspec.UNSET]
    return found


def notes(events: list[StreamEvent]) -> list[str]:
    """The texts of the stream's status messages."""
    return [
        str(part.text)
        for event in events
        if isinstance(event.payload, t.TaskStatusUpdateEvent) and event.payload.status.message
        for part in event.payload.status.message.parts
        if isinstance(part.text, str)
    ]


def task_of(result: t.Task | t.Message) -> t.Task:
    assert isinstance(result, t.Task), result
    return result


async def collect(stream: object) -> list[StreamEvent]:
    events = []
    async for event in stream:  # type: ignore[attr-defined]
        events.append(event)
    return events


async def test_the_card_comes_from_initialize(tmp_path: Path) -> None:
    async with bridge(tmp_path, [*TEST_AGENT, "--image"]) as served:
        async with await A2AClient.connect(served.url) as client:
            card = client.card
            assert card.name == "bridge-test-agent"
            assert card.version == "7"
            assert "Bridge test" in card.description
            assert card.capabilities.streaming is True
            assert card.capabilities.push_notifications is True
            assert card.default_input_modes == ["text/plain", "application/json", "image/*"]
            assert [skill.id for skill in card.skills] == ["prompt"]
            # a session announces its slash commands: a skill each, on the card served next
            task = task_of(await client.send_message("commands"))
            assert task.status.state == S.TASK_STATE_COMPLETED
        clear_card_cache()  # (the client keeps a card it resolved)
        async with await A2AClient.connect(served.url) as client:
            skills = {skill.id: skill for skill in client.card.skills}
            assert sorted(skills) == ["/review", "/test", "prompt"]
            assert skills["/test"].examples == ["/test <pattern>"]
            assert skills["/review"].description == "Review the changes"


async def test_a_text_turn_streams_into_one_artifact(tmp_path: Path) -> None:
    prompt = "hello through the bridge, in several chunks of text"
    async with connected(tmp_path, EXAMPLE_AGENT) as client:
        events = await collect(client.stream_message(prompt))
        chunks = [e.payload for e in events if isinstance(e.payload, t.TaskArtifactUpdateEvent)]
        # (the chunks the bridge has at once go out as one update, a part each)
        assert sum(len(c.artifact.parts) for c in chunks) > 2
        assert len({c.artifact.artifact_id for c in chunks}) == 1
        assert [c.append for c in chunks] == [False] + [True] * (len(chunks) - 1)
        plans = [d for d in status_data(events) if isinstance(d, dict)]
        assert plans[0]["sessionUpdate"] == "plan"
        last = events[-1].payload
        assert isinstance(last, t.TaskStatusUpdateEvent)
        assert last.status.state == S.TASK_STATE_COMPLETED
        assert last.metadata == {"stopReason": "end_turn"}
        task = await client.get_task(last.task_id)
        assert text_of(task) == prompt
        # the next message of the context is the next turn of the same session
        again = task_of(await client.send_message("second", context_id=task.context_id))
        assert again.status.state == S.TASK_STATE_COMPLETED
        assert text_of(again) == "second"
        sessions = (tmp_path / "ws" / ".interlink-sessions.json").read_text()
        assert task.context_id in sessions
        assert (tmp_path / "ws" / task.context_id).is_dir()


async def test_stop_reasons_and_updates_map_to_states(tmp_path: Path) -> None:
    async with connected(tmp_path, TEST_AGENT) as client:
        refused = task_of(await client.send_message("refuse"))
        assert refused.status.state == S.TASK_STATE_REJECTED
        capped = task_of(await client.send_message("max"))
        assert capped.status.state == S.TASK_STATE_COMPLETED
        assert capped.status.message is not None
        assert capped.status.message.parts[0].text == "the agent stopped: max_tokens"
        assert text_of(capped) == "and so on"
        events = await collect(client.stream_message("think"))
        thoughts = [d for d in status_data(events) if isinstance(d, dict)]
        assert thoughts == [
            {
                "sessionUpdate": "agent_thought_chunk",
                "content": {"type": "text", "text": "pondering"},
            }
        ]


async def test_a_part_the_agent_does_not_take_is_refused_naming_it(tmp_path: Path) -> None:
    png = t.Part(raw=b"\x89PNG\r\n", media_type="image/png", filename="x.png")
    async with connected(tmp_path, TEST_AGENT) as client:
        message = t.Message(
            message_id="m1", role=t.Role.ROLE_USER, parts=[t.Part(text="look"), png]
        )
        with pytest.raises(ContentTypeNotSupported, match=r"parts\[1\] is image/png"):
            await client.send_message(message)
    async with connected(tmp_path, [*TEST_AGENT, "--image"]) as client:
        message = t.Message(message_id="m2", role=t.Role.ROLE_USER, parts=[png])
        task = task_of(await client.send_message(message))
        assert text_of(task) == "an image of image/png"


async def test_a_turn_waiting_for_input_does_not_hold_up_the_other_sessions(
    tmp_path: Path,
) -> None:
    """What the agent sends a session whose task waits for input is held up to the
    bridge's queue (1 MiB); past it the turn is given up (its question answered
    `cancelled`) and the agent's other sessions go on: the follow-up is told why."""
    async with connected(tmp_path, TEST_AGENT) as client:
        asked = task_of(await client.send_message("ask", context_id="waits"))
        assert asked.status.state == S.TASK_STATE_INPUT_REQUIRED
        async with asyncio.timeout(30):
            other = task_of(await client.send_message("flood", context_id="other"))
        assert other.status.state == S.TASK_STATE_COMPLETED
        assert text_of(other) == "flooded"
        ended = task_of(await client.send_message("yes", task_id=asked.id))
        assert ended.status.state == S.TASK_STATE_FAILED
        assert ended.status.message is not None
        reason = str(ended.status.message.parts[0].text)
        assert "while the task waited for input" in reason
        again = task_of(await client.send_message("again", context_id="waits"))
        assert text_of(again) == "again"  # (the context takes its next turn)


async def test_a_permission_request_is_a_question_the_follow_up_answers(tmp_path: Path) -> None:
    async with connected(tmp_path, EXAMPLE_AGENT) as client:
        folder = tmp_path / "ws" / "ctx1"
        folder.mkdir(parents=True)
        (folder / "notes.txt").write_text("twelve chars")
        asked = task_of(await client.send_message("tool notes.txt", context_id="ctx1"))
        assert asked.status.state == S.TASK_STATE_INPUT_REQUIRED
        assert asked.status.message is not None
        text, data = asked.status.message.parts
        assert "1. Allow (allow_once)" in str(text.text)
        assert data.data == {
            "permission": {
                "toolCall": {"toolCallId": "call_1", "kind": "read", "title": "Read notes.txt"},
                "options": [
                    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                ],
            }
        }
        # an answer that picks nothing asks again; the option's number picks it
        again = task_of(await client.send_message("maybe", task_id=asked.id))
        assert again.status.state == S.TASK_STATE_INPUT_REQUIRED
        done = task_of(await client.send_message("1", task_id=asked.id))
        assert done.status.state == S.TASK_STATE_COMPLETED
        assert text_of(done) == "read 12 characters"  # through fs/read_text_file, confined
        # by option id in a data part, over a stream: rejected, the turn still ends well
        first = await collect(client.stream_message("tool notes.txt", context_id="ctx1"))
        task_id = first[0].payload.id  # type: ignore[union-attr]
        answer = t.Message(
            message_id="a2",
            role=t.Role.ROLE_USER,
            task_id=task_id,
            parts=[t.Part(data={"optionId": "reject"})],
        )
        rest = await collect(client.stream_message(answer))
        last = rest[-1].payload
        assert isinstance(last, t.TaskStatusUpdateEvent)
        assert last.status.state == S.TASK_STATE_COMPLETED
        failed = [d for d in status_data(rest) if isinstance(d, dict)]
        assert failed[-1]["status"] == "failed"  # the tool call, refused


async def test_the_policy_answers_without_asking(tmp_path: Path) -> None:
    for flag, text in (("--allow=read", "read 2 characters"), ("--deny=read", "")):
        async with connected(tmp_path, EXAMPLE_AGENT, flag) as client:
            folder = tmp_path / "ws" / "c"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "n").write_text("ab")
            task = task_of(await client.send_message("tool n", context_id="c"))
            assert task.status.state == S.TASK_STATE_COMPLETED, flag
            assert text_of(task) == text, flag


async def test_cancel_sends_session_cancel_and_the_turn_ends_canceled(tmp_path: Path) -> None:
    async with connected(tmp_path, EXAMPLE_AGENT) as client:
        stream = client.stream_message("slow")
        events = []
        async for event in stream:
            events.append(event)
            if isinstance(event.payload, t.TaskArtifactUpdateEvent):
                break
        task_id = events[0].payload.id  # type: ignore[union-attr]
        canceled = await client.cancel_task(task_id)
        assert canceled.status.state == S.TASK_STATE_CANCELED
        await stream.aclose()
        task = await client.get_task(task_id)
        assert task.status.state == S.TASK_STATE_CANCELED
        assert text_of(task).startswith("working")
        # the context takes its next turn
        after = task_of(await client.send_message("next", context_id=task.context_id))
        assert after.status.state == S.TASK_STATE_COMPLETED


async def test_a_cancel_while_asking_answers_the_request_cancelled(tmp_path: Path) -> None:
    async with connected(tmp_path, EXAMPLE_AGENT) as client:
        asked = task_of(await client.send_message("tool notes.txt"))
        assert asked.status.state == S.TASK_STATE_INPUT_REQUIRED
        canceled = await client.cancel_task(asked.id)
        assert canceled.status.state == S.TASK_STATE_CANCELED
        # the agent heard `cancelled` (it answers the turn so) and the session is free
        after = task_of(await client.send_message("next", context_id=asked.context_id))
        assert after.status.state == S.TASK_STATE_COMPLETED
        assert text_of(after) == "next"


async def test_a_cancel_racing_the_answer_to_a_question_ends_the_task_canceled(
    tmp_path: Path,
) -> None:
    # The answer starts the executor (its `working` waits for the SQLite store's thread)
    # and the cancel comes meanwhile: one of them drives the turn to its end, never both
    # (a second drive failed the task: "the agent failed").
    async with connected(tmp_path, TEST_AGENT, store=f"sqlite://{tmp_path}/tasks.db") as client:
        for i in range(8):
            asked = task_of(await client.send_message("ask", context_id=f"race-{i}"))
            assert asked.status.state == S.TASK_STATE_INPUT_REQUIRED
            answer, cancel = await asyncio.gather(
                client.send_message("yes", task_id=asked.id, context_id=asked.context_id),
                client.cancel_task(asked.id),
                return_exceptions=True,
            )
            final = await client.get_task(asked.id)
            assert final.status.state in (S.TASK_STATE_CANCELED, S.TASK_STATE_COMPLETED), (
                final.status
            )
            if final.status.state == S.TASK_STATE_CANCELED:
                assert isinstance(cancel, t.Task), cancel
                assert cancel.status.state == S.TASK_STATE_CANCELED
            else:  # the answer ended the turn first: too late to cancel
                assert isinstance(cancel, A2AError), cancel
                assert cancel.code == -32002
            assert not isinstance(answer, BaseException), answer


async def test_terminals_run_in_the_contexts_folder(tmp_path: Path) -> None:
    async with connected(tmp_path, TEST_AGENT) as client:
        task = task_of(await client.send_message("terminal pwd", context_id="box"))
        assert text_of(task).strip() == str((tmp_path / "ws" / "box").resolve())
    async with connected(tmp_path, TEST_AGENT, "--deny", "terminal") as client:
        task = task_of(await client.send_message("terminal pwd", context_id="box"))
        assert task.status.state == S.TASK_STATE_FAILED  # not offered: -32601 to the agent


async def test_an_agent_that_dies_fails_its_turn_and_is_started_again(tmp_path: Path) -> None:
    async with connected(tmp_path, TEST_AGENT) as client:
        task = task_of(await client.send_message("die", context_id="d"))
        assert task.status.state == S.TASK_STATE_FAILED
        assert task.status.message is not None
        reason = str(task.status.message.parts[0].text)
        assert "exited with code 3" in reason
        assert "dying on purpose" in reason
        # started again: the context's next message opens a new session, and says so
        events = await collect(client.stream_message("alive", context_id="d"))
        assert any("a new ACP session" in note for note in notes(events))
        last = events[-1].payload
        assert isinstance(last, t.TaskStatusUpdateEvent)
        assert last.status.state == S.TASK_STATE_COMPLETED


async def test_an_agent_that_needs_authentication_fails_the_task_with_its_words(
    tmp_path: Path,
) -> None:
    async with connected(tmp_path, [*TEST_AGENT, "--needs-auth"]) as client:
        task = task_of(await client.send_message("hi"))
        assert task.status.state == S.TASK_STATE_FAILED
        assert task.status.message is not None
        words, hint = str(task.status.message.parts[0].text).splitlines()
        assert words == (
            "the agent answered -32000: Authentication required: run `test-agent login` first"
        )
        assert hint.startswith("hint: to log in, run `interlink bridge a2a --login")
    async with connected(tmp_path, [*TEST_AGENT, "--needs-auth"], "--auth", "key") as client:
        assert task_of(await client.send_message("hi")).status.state == S.TASK_STATE_COMPLETED


async def test_a_turn_running_when_the_bridge_died_is_failed_after_restart(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    async with (
        bridge(tmp_path, EXAMPLE_AGENT, store=store) as served,
        await A2AClient.connect(served.url) as client,
    ):
        done = task_of(await client.send_message("kept", context_id="r"))
        stream = client.stream_message("slow", context_id="r")
        async for event in stream:  # until the turn runs: the agent said "working"
            if isinstance(event.payload, t.Task):
                running = event.payload
            if isinstance(event.payload, t.TaskArtifactUpdateEvent):
                break
        os.kill(served.proc.pid, signal.SIGKILL)
        await served.proc.wait()
    async with connected(tmp_path, EXAMPLE_AGENT, store=store) as client:
        assert text_of(await client.get_task(done.id)) == "kept"
        failed = await client.get_task(running.id)
        assert failed.status.state == S.TASK_STATE_FAILED
        assert failed.status.message is not None
        assert "stopped while this task was running" in str(failed.status.message.parts[0].text)
        # the example agent keeps its sessions in memory: it cannot load this one again
        events = await collect(client.stream_message("again", context_id="r"))
        assert any("a new ACP session" in note for note in notes(events))
        last = events[-1].payload
        assert isinstance(last, t.TaskStatusUpdateEvent)
        assert last.status.state == S.TASK_STATE_COMPLETED


async def test_a_context_runs_one_turn_at_a_time(tmp_path: Path) -> None:
    async with connected(tmp_path, EXAMPLE_AGENT) as client:
        asked = task_of(await client.send_message("tool x", context_id="one"))
        with pytest.raises(A2AError, match="has a turn unfinished") as info:
            await client.send_message("meanwhile", context_id="one")
        assert info.value.code == -32004
        other = task_of(await client.send_message("elsewhere", context_id="two"))
        assert other.status.state == S.TASK_STATE_COMPLETED
        await client.cancel_task(asked.id)


@pytest.mark.parametrize(
    ("agent", "says"),
    [
        (["false"], "the agent did not start: the agent closed its stdout and exited with code 1"),
        ([*TEST_AGENT, "--needs-auth"], "the agent did not start"),
    ],
)
async def test_an_agent_that_does_not_start_is_said_so(
    tmp_path: Path, agent: list[str], says: str
) -> None:
    auth = ["--auth", "wrong"] if "--needs-auth" in agent else []
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "interlink", "bridge", "a2a", "--port", "0", *auth, "--", *agent),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(30):
        out, err = await proc.communicate()
    assert proc.returncode == 1
    assert out == b""
    assert says in err.decode()
