"""ACP over real pipes: the example agent under bad input and load, and `spawn_agent`
against a badly behaved agent."""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import json
import os
import random
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interlink.acp import AgentExited, Client, spawn_agent

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = [sys.executable, str(ROOT / "examples" / "acp_agent.py")]
NOISY = [sys.executable, str(Path(__file__).with_name("agents") / "noisy_agent.py")]
pytestmark = [pytest.mark.e2e, pytest.mark.any_loop]

INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'


class Wire:
    """The example agent as a child process, spoken to in raw lines."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None
        assert proc.stdout is not None
        self.proc = proc
        self.stdin = proc.stdin
        self.stdout = proc.stdout

    async def send(self, line: bytes) -> None:
        self.stdin.write(line + b"\n")
        await self.stdin.drain()

    async def recv(self) -> dict[str, object]:
        line = await asyncio.wait_for(self.stdout.readline(), 30)
        assert line, "the agent closed stdout"
        value = json.loads(line)
        assert isinstance(value, dict)
        return value

    async def still_answers(self, id: int) -> None:
        await self.send(b'{"jsonrpc":"2.0","id":%d,"method":"session/list","params":{}}' % id)
        answer = await self.recv()
        assert answer["id"] == id
        assert "result" in answer


@pytest.fixture
async def wire() -> AsyncIterator[Wire]:
    proc = await asyncio.create_subprocess_exec(
        *EXAMPLE,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=64 * 1024 * 1024,
    )
    wire = Wire(proc)
    await wire.send(INIT)
    assert (await wire.recv())["id"] == 0
    yield wire
    wire.stdin.close()
    try:
        assert await asyncio.wait_for(proc.wait(), 10) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"{this is not json", -32700),
        (b'[{"jsonrpc":"2.0","id":1,"method":"session/list"}]', -32600),
        (b"12345", -32600),
        (b'{"id":1,"method":"session/list"}', -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":["session/list"]}', -32600),
        # invalid UTF-8 inside the params: not JSON, whichever way the params are decoded
        (b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/\xff\xfe"}}', -32700),
        (b'{"jsonrpc":"2.0","id":1,"method":"_x.y/z","params":{"a":"\xff\xfe"}}', -32700),
    ],
)
async def test_bad_lines_get_their_error_and_the_agent_still_answers(
    wire: Wire, line: bytes, code: int
) -> None:
    await wire.send(line)
    answer = await wire.recv()
    error = answer["error"]
    assert isinstance(error, dict)
    assert error["code"] == code
    assert answer["id"] == (None if code == -32700 or line.startswith((b"[", b"1")) else 1)
    await wire.still_answers(2)


def words_8_mib() -> str:
    """8 MiB of short words (1.5 million of them), multibyte ones among them, and one
    run of 100 000 characters with no whitespace at all."""
    rng = random.Random(11)
    words = ["alpha", "béta", "日本語", "🙂ok", "x", "\n"]
    text = " ".join(rng.choice(words) for _ in range(1_500_000))
    text += " " + "é" * 100_000 + " and a tail"
    size = len(text.encode())
    assert size > 8 * 1024 * 1024
    return text


async def test_an_8_mib_prompt_is_echoed_exactly_in_a_few_hundred_bounded_chunks(
    wire: Wire,
) -> None:
    await wire.send(
        b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}'
    )
    session = (await wire.recv())["result"]
    assert isinstance(session, dict)
    text = words_8_mib()
    prompt = {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": text}]}
    await wire.send(
        json.dumps(
            {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt}
        ).encode()
    )
    echoed: list[str] = []
    while True:
        message = await wire.recv()
        if message.get("id") == 2:
            assert message["result"] == {"stopReason": "end_turn"}
            break
        update = cast("dict[str, dict[str, str]]", message["params"])["update"]
        if update["sessionUpdate"] == "agent_message_chunk":
            echoed.append(cast("dict[str, str]", update["content"])["text"])
    assert "".join(echoed) == text, "the echo differs"
    assert max(len(chunk.encode()) for chunk in echoed) <= 16 * 1024
    # (a chunk and the next one hold more than 16 KiB together)
    assert 500 <= len(echoed) <= 2 * len(text.encode()) // (16 * 1024) + 1


@functools.cache
def example_chunks() -> Callable[[str, int], Iterator[str]]:
    spec = importlib.util.spec_from_file_location("acp_agent_example", EXAMPLE[1])
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    chunks: Callable[[str, int], Iterator[str]] = module.chunks
    return chunks


@settings(max_examples=300)
@given(text=st.text(), most=st.integers(min_value=1, max_value=64))
def test_echo_chunks_join_back_exactly_and_keep_their_bound(text: str, most: int) -> None:
    pieces = list(example_chunks()(text, most))
    assert "".join(pieces) == text
    for piece in pieces:
        assert piece
        # over the bound only when one character alone is bigger than it
        assert len(piece.encode()) <= most or len(piece) == 1


def test_echo_chunks_cut_after_whitespace_where_they_can() -> None:
    chunks = example_chunks()
    assert list(chunks("hello interop world", 16 * 1024)) == ["hello ", "interop ", "world"]
    assert list(chunks("ab cd\tef\ngh", 6)) == ["ab cd\t", "ef\ngh"]
    assert list(chunks("日本語", 4)) == ["日", "本", "語"]  # (3 bytes each: never split)


async def test_a_100_mib_line_is_refused_and_the_agent_still_answers(wire: Wire) -> None:
    big = (
        b'{"jsonrpc":"2.0","id":1,"method":"session/list","params":{"cwd":"'
        + b"a" * (100 * 1024 * 1024)
        + b'"}}'
    )
    await wire.send(big)
    answer = await wire.recv()
    error = answer["error"]
    assert isinstance(error, dict)
    assert error["code"] == -32600
    assert answer["id"] is None
    assert cast("dict[str, int]", error["data"])["limit"] == 64 * 1024 * 1024
    await wire.still_answers(2)


async def test_1000_pipelined_requests_get_1000_answers_with_their_ids(wire: Wire) -> None:
    lines = b"".join(
        b'{"jsonrpc":"2.0","id":"r%d","method":"session/list","params":{}}\n' % i
        for i in range(1000)
    )
    wire.stdin.write(lines)
    await wire.stdin.drain()
    ids = [(await wire.recv())["id"] for _ in range(1000)]
    assert sorted(ids) == sorted(f"r{i}" for i in range(1000))  # type: ignore[type-var]


def test_stdout_can_be_a_file(tmp_path: Path) -> None:
    requests = tmp_path / "in.jsonl"
    requests.write_bytes(
        INIT + b"\n" + b'{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}\n'
    )
    out = tmp_path / "out.jsonl"
    with requests.open("rb") as stdin, out.open("wb") as stdout:
        subprocess.run(EXAMPLE, stdin=stdin, stdout=stdout, timeout=30, check=True)
    answers = {a["id"]: a for a in map(json.loads, out.read_bytes().splitlines())}
    assert answers[0]["result"]["protocolVersion"] == 1
    # pipelined behind initialize: waits for it, then is served (DECISIONS.md)
    assert answers[1]["result"] == {"sessions": []}


def test_the_example_agent_serves_session_new_written_with_initialize() -> None:
    new = b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}'
    for _ in range(5):  # (issue #11: refused 5 of 5 times)
        done = subprocess.run(
            EXAMPLE, input=INIT + b"\n" + new + b"\n", capture_output=True, timeout=30, check=True
        )
        answers = [json.loads(raw) for raw in done.stdout.splitlines()]
        assert [answer["id"] for answer in answers] == [0, 1], done.stdout
        assert answers[1]["result"]["sessionId"].startswith("sess_")


def test_stray_prints_go_to_stderr_not_the_protocol_stream() -> None:
    done = subprocess.run(NOISY, input=INIT + b"\n", capture_output=True, timeout=30, check=True)
    lines = done.stdout.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["result"]["protocolVersion"] == 1
    assert b"a stray print" in done.stderr
    assert b"a raw write to fd 1" in done.stderr
    assert b"a log line" in done.stderr


class Quiet(Client):
    pass


async def test_spawned_agent_inherits_env_and_a_flood_of_stderr_does_not_stall() -> None:
    os.environ["INTERLINK_TEST_VAR"] = "inherited"
    try:
        async with (
            asyncio.timeout(30),
            spawn_agent(NOISY, Quiet(), extra_env={"EXTRA": "1"}) as proc,
        ):
            await proc.agent.initialize()
            value = await proc.agent.ext_method("_test/env", {"name": "INTERLINK_TEST_VAR"})
            assert value == {"value": "inherited"}
            assert await proc.agent.ext_method("_test/env", {"name": "EXTRA"}) == {"value": "1"}
            session = await proc.agent.new_session("/tmp")
            response = await proc.agent.prompt(session.session_id, "stderr")
            assert response.stop_reason == "end_turn"
            assert "x" * 100 in proc.stderr_tail(2)
        assert proc.returncode == 0
    finally:
        del os.environ["INTERLINK_TEST_VAR"]


async def test_a_forward_stderr_callback_that_raises_does_not_stall_the_agent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    forwarded: list[bytes] = []

    def forward(chunk: bytes) -> None:
        forwarded.append(chunk)
        raise RuntimeError("the editor's log panel is gone")

    async with asyncio.timeout(30), spawn_agent(NOISY, Quiet(), forward_stderr=forward) as proc:
        await proc.agent.initialize()
        session = await proc.agent.new_session("/tmp")
        response = await proc.agent.prompt(session.session_id, "stderr")  # a flood of it
        assert response.stop_reason == "end_turn"
        assert "x" * 100 in proc.stderr_tail(2)  # still kept
    assert len(forwarded) == 1  # not called again after it failed
    assert "forward_stderr failed" in caplog.text


async def test_an_agent_that_dies_fails_pending_requests_with_its_exit_code_and_stderr() -> None:
    async with asyncio.timeout(30), spawn_agent(NOISY, Quiet()) as proc:
        await proc.agent.initialize()
        session = await proc.agent.new_session("/tmp")
        with pytest.raises(AgentExited) as info:
            await proc.agent.prompt(session.session_id, "die")
    assert info.value.returncode == 3
    assert "fatal: the agent gives up" in info.value.stderr_tail
    assert "exited with code 3" in str(info.value)


async def test_a_spawned_agent_runs_in_a_session_of_its_own_unless_told_otherwise() -> None:
    """So the Ctrl-C of the terminal an editor runs in does not kill its agents mid-turn
    (Node resets an inherited "ignore SIGINT"); closing still ends the agent."""
    async with asyncio.timeout(30), spawn_agent(EXAMPLE, Quiet()) as proc:
        await proc.agent.initialize()
        assert os.getsid(proc.pid) == proc.pid != os.getsid(0)
        assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)
    assert proc.returncode == 0  # ended by stdin EOF
    async with asyncio.timeout(30), spawn_agent(EXAMPLE, Quiet(), start_new_session=False) as proc:
        await proc.agent.initialize()
        assert os.getsid(proc.pid) == os.getsid(0)


BANNER = [
    sys.executable,
    "-c",
    "import runpy, sys; print('Starting v1.0', flush=True); sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')",
    EXAMPLE[1],
]


async def test_a_line_on_the_agents_stdout_that_is_not_json_rpc_is_reported() -> None:
    reported: list[str] = []
    async with (
        asyncio.timeout(30),
        spawn_agent(BANNER, Quiet(), on_bad_output=reported.append) as proc,
    ):
        await proc.agent.initialize()
    assert reported == [
        "the agent wrote a line on its stdout that is not JSON-RPC (Parse error (-32700)):"
        " 'Starting v1.0'; its stdout belongs to the protocol, anything else goes to stderr"
    ]


async def test_without_a_hook_the_agents_stray_stdout_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with asyncio.timeout(30), spawn_agent(BANNER, Quiet()) as proc:
        await proc.agent.initialize()
    [record] = [r for r in caplog.records if r.name == "interlink.acp"]
    assert record.levelname == "WARNING"
    assert "not JSON-RPC (Parse error (-32700)): 'Starting v1.0'" in record.getMessage()


async def test_a_stray_line_over_the_size_limit_is_reported_with_its_first_bytes() -> None:
    big = [
        sys.executable,
        "-c",
        "import runpy, sys; print('y' * 5000, flush=True); sys.argv = sys.argv[1:]; "
        "runpy.run_path(sys.argv[0], run_name='__main__')",
        EXAMPLE[1],
    ]
    reported: list[str] = []
    async with (
        asyncio.timeout(30),
        spawn_agent(big, Quiet(), max_message_size=1000, on_bad_output=reported.append) as proc,
    ):
        await proc.agent.initialize()
    [message] = reported
    assert "not JSON-RPC (Message too large (-32600))" in message
    assert f"'{'y' * 200}' … (5000 bytes in all)" in message


async def test_a_wire_tap_sees_both_directions_and_one_that_fails_stops_only_itself(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: dict[str, bytearray] = {"recv": bytearray(), "send": bytearray()}

    def tap(direction: str, data: bytes) -> None:
        seen[direction] += data

    async with asyncio.timeout(30), spawn_agent(EXAMPLE, Quiet(), wire_tap=tap) as proc:
        await proc.agent.initialize()
    [sent] = [json.loads(line) for line in seen["send"].splitlines()]
    [received] = [json.loads(line) for line in seen["recv"].splitlines()]
    assert sent["method"] == "initialize"
    assert received["id"] == sent["id"]
    assert received["result"]["protocolVersion"] == 1

    calls: list[str] = []

    def broken(direction: str, data: bytes) -> None:
        calls.append(direction)
        raise RuntimeError("the log window is gone")

    async with asyncio.timeout(30), spawn_agent(EXAMPLE, Quiet(), wire_tap=broken) as proc:
        await proc.agent.initialize()
        session = await proc.agent.new_session("/tmp")
        assert (await proc.agent.prompt(session.session_id, "hi")).stop_reason == "end_turn"
    assert calls == ["send"]
    assert "wire_tap failed" in caplog.text
