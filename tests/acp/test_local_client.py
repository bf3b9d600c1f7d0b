"""`LocalClient` served to a real agent connection over a socket pair: files confined to
the root (`..` and symlink escapes refused), line/limit, writes, the missing-file error;
terminals as real processes (output, byte limit at a character boundary, exit status,
kill, release, unknown ids); the permission policies and the update callback."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from interlink.acp import (
    Agent,
    AgentSideConnection,
    ClientHandle,
    ClientSideConnection,
    TerminalHandle,
)
from interlink.acp import schema as s
from interlink.acp._local import LocalClient, allow_first
from interlink.jsonrpc import InternalError, InvalidParams, ResourceNotFound
from tests.aio.conftest import stream_pair

PY = sys.executable
pytestmark = pytest.mark.any_loop


class BareAgent(Agent):
    """Only sessions: the tests call the client through `self.client` directly."""

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(protocol_version=1)

    sessions = 0

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        self.sessions += 1
        return s.NewSessionResponse(session_id=f"s{self.sessions}")


@dataclass
class Setup:
    root: Path
    outside: Path
    local: LocalClient
    client: ClientHandle
    connection: ClientSideConnection
    session: str


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[Setup]:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "notes.txt").write_text("one\ntwo\r\nthree\nfour\n", encoding="utf-8")
    (outside / "secret.txt").write_text("secret\n", encoding="utf-8")
    (root / "escape").symlink_to(outside)
    (root / "escape.txt").symlink_to(outside / "secret.txt")
    (root / "inside.txt").symlink_to(root / "notes.txt")
    (r1, w1), (r2, w2) = await stream_pair()
    agent = BareAgent()
    local = LocalClient(root)
    connection = ClientSideConnection(local, r2, w2)
    async with (
        local,
        AgentSideConnection(agent, r1, w1),
        connection,
        asyncio.timeout(30),
    ):
        await connection.initialize(local.capabilities())
        session = await connection.new_session(str(root))
        yield Setup(root, outside, local, agent.client, connection, session.session_id)


async def read(
    setup: Setup, path: str | Path, *, line: int | None = None, limit: int | None = None
) -> str:
    return await setup.client.read_text_file(setup.session, str(path), line=line, limit=limit)


# -- files -------------------------------------------------------------------------------


async def test_capabilities_are_advertised(setup: Setup) -> None:
    caps = setup.client.capabilities
    assert caps["fs"] == {"readTextFile": True, "writeTextFile": True}
    assert caps["terminal"] is True


async def test_read_whole_file_and_line_limit(setup: Setup) -> None:
    notes = setup.root / "notes.txt"
    assert await read(setup, notes) == "one\ntwo\r\nthree\nfour\n"
    assert await read(setup, notes, line=2, limit=2) == "two\r\nthree\n"
    assert await read(setup, notes, line=3) == "three\nfour\n"
    assert await read(setup, notes, limit=1) == "one\n"
    assert await read(setup, notes, line=10) == ""
    assert await read(setup, notes, limit=0) == ""
    assert await read(setup, setup.root / "inside.txt", line=4) == "four\n"
    with pytest.raises(InvalidParams):
        await read(setup, notes, line=0)


@pytest.mark.parametrize(
    "path",
    [
        "notes.txt",  # relative
        "{root}/../outside/secret.txt",
        "{root}/sub/../../outside/secret.txt",
        "{root}/escape/secret.txt",  # symlinked directory pointing outside
        "{root}/escape.txt",  # symlinked file pointing outside
        "/etc/hostname",
    ],
)
async def test_paths_outside_the_root_are_refused(setup: Setup, path: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        await read(setup, path.format(root=setup.root))
    assert isinstance(caught.value.data, dict)
    assert "absolute" in caught.value.data["detail"] or "outside" in caught.value.data["detail"]
    with pytest.raises(InvalidParams):
        await setup.client.write_text_file(setup.session, path.format(root=setup.root), "x")
    assert (setup.outside / "secret.txt").read_text() == "secret\n"
    assert sorted(p.name for p in setup.outside.iterdir()) == ["secret.txt"]


async def test_missing_file_is_resource_not_found_with_uri(setup: Setup) -> None:
    missing = setup.root / "nope.txt"
    with pytest.raises(ResourceNotFound) as caught:
        await read(setup, missing)
    assert caught.value.code == -32002
    assert caught.value.data == {"uri": missing.as_uri(), "path": str(missing)}
    # outside the root, existence is never revealed
    with pytest.raises(InvalidParams):
        await read(setup, setup.outside / "nope.txt")


async def test_directories_and_binary_files_are_invalid_params(setup: Setup) -> None:
    (setup.root / "blob.bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InvalidParams):
        await read(setup, setup.root)
    with pytest.raises(InvalidParams):
        await read(setup, setup.root / "blob.bin")


async def test_unresolvable_paths_are_invalid_params(setup: Setup) -> None:
    (setup.root / "loop").symlink_to(setup.root / "loop")
    for path in [f"{setup.root}/loop", f"{setup.root}/nul\0byte"]:
        with pytest.raises(InvalidParams):
            await read(setup, path)


async def test_write_creates_overwrites_and_makes_parents(setup: Setup) -> None:
    target = setup.root / "new" / "dir" / "file.txt"
    await setup.client.write_text_file(setup.session, str(target), "héllo\r\n")
    assert target.read_bytes() == "héllo\r\n".encode()
    await setup.client.write_text_file(setup.session, str(target), "short")
    assert await read(setup, target) == "short"
    with pytest.raises(InvalidParams):  # a parent that is a file
        await setup.client.write_text_file(setup.session, str(target / "x"), "x")


# -- terminals ---------------------------------------------------------------------------


async def wait_output(terminal: TerminalHandle, text: str) -> s.TerminalOutputResponse:
    """Poll `terminal/output` until it contains `text` (bounded by the fixture's timeout)."""
    while True:
        output = await terminal.output()
        if text in output.output:
            return output
        await asyncio.sleep(0.02)


async def test_terminal_output_env_cwd_and_exit_status(setup: Setup) -> None:
    (setup.root / "sub").mkdir()
    code = (
        "import os, sys; print(os.environ['GREETING'], os.getcwd(), flush=True);"
        "sys.stderr.write('err\\n'); sys.exit(3)"
    )
    async with await setup.client.create_terminal(
        setup.session, PY, ["-c", code], env={"GREETING": "hi"}, cwd=str(setup.root / "sub")
    ) as terminal:
        done = await terminal.wait_for_exit()
        assert (done.exit_code, done.signal) == (3, None)
        output = await terminal.output()
    assert output.output.splitlines() == [f"hi {setup.root / 'sub'}", "err"]
    assert output.truncated is False
    assert output.exit_status == s.TerminalExitStatus(exit_code=3, signal=None)
    assert "PATH" in os.environ  # the inherited environment reached the child too


async def test_shell_command_line_without_args(setup: Setup) -> None:
    async with await setup.client.create_terminal(setup.session, "echo hi && echo there") as term:
        assert (await term.wait_for_exit()).exit_code == 0
        assert (await term.output()).output == "hi\nthere\n"


async def test_terminal_cwd_outside_root_and_missing_command_are_refused(setup: Setup) -> None:
    with pytest.raises(InvalidParams):
        await setup.client.create_terminal(setup.session, "true", cwd=str(setup.root / "notes.txt"))
    with pytest.raises(InvalidParams):
        await setup.client.create_terminal(setup.session, "true", cwd=str(setup.outside))
    with pytest.raises(InvalidParams):
        await setup.client.create_terminal(setup.session, "no-such-command-here", ["x"])


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("€" * 10, 7, "€€"),  # the cut lands on a continuation byte: dropped
        ("€" * 10 + "ab", 7, "€ab"),
        ("abcdef", 3, "def"),
        ("abc", 3, "abc"),
    ],
)
async def test_output_byte_limit_keeps_the_tail_on_a_char_boundary(
    setup: Setup, text: str, limit: int, expected: str
) -> None:
    code = f"import sys; sys.stdout.buffer.write({text.encode()!r})"
    async with await setup.client.create_terminal(
        setup.session, PY, ["-c", code], output_byte_limit=limit
    ) as terminal:
        await terminal.wait_for_exit()
        output = await terminal.output()
    assert output.output == expected
    assert len(output.output.encode()) <= limit
    assert output.truncated is (expected != text)


async def test_kill_keeps_the_id_and_reports_the_signal(setup: Setup) -> None:
    async with await setup.client.create_terminal(
        setup.session, "sh", ["-c", "echo started; exec sleep 60"]
    ) as terminal:
        first = await wait_output(terminal, "started")
        assert first.exit_status is None
        await terminal.kill()
        done = await terminal.wait_for_exit()
        assert (done.exit_code, done.signal) == (None, "SIGKILL")
        output = await terminal.output()
        assert output.output == "started\n"
        assert output.exit_status == s.TerminalExitStatus(exit_code=None, signal="SIGKILL")


def gone(pid: int) -> bool:
    """No such process, or only its zombie (a container's init may never reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


async def test_release_kills_and_forgets(setup: Setup) -> None:
    terminal = await setup.client.create_terminal(
        setup.session, "sh", ["-c", "echo $$; exec sleep 60"]
    )
    pid = int((await wait_output(terminal, "\n")).output)
    await terminal.release()
    assert gone(pid)
    with pytest.raises(ResourceNotFound):
        await terminal.output()
    with pytest.raises(ResourceNotFound):
        await terminal.kill()


async def test_a_background_grandchild_neither_blocks_exit_nor_outlives_release(
    setup: Setup,
) -> None:
    terminal = await setup.client.create_terminal(setup.session, "sh", ["-c", "sleep 60 & echo $!"])
    done = await terminal.wait_for_exit()  # the grandchild still holds the output pipe
    assert (done.exit_code, done.signal) == (0, None)
    grandchild = int((await terminal.output()).output)
    assert not gone(grandchild)
    await terminal.release()
    assert await wait_gone(grandchild)


async def wait_gone(pid: int) -> bool:
    """A killed grandchild is not our child: poll (bounded by the fixture) until it died."""
    while not gone(pid):  # noqa: ASYNC110 - nothing to await: another process's state
        await asyncio.sleep(0.02)
    return True


async def test_unknown_terminal_and_other_sessions_terminal(setup: Setup) -> None:
    other = await setup.connection.new_session(str(setup.root))
    async with await setup.client.create_terminal(setup.session, "true") as terminal:
        for session_id, terminal_id in [
            (setup.session, "term_nope"),
            (other.session_id, terminal.id),
        ]:
            with pytest.raises(ResourceNotFound) as caught:
                await TerminalHandle(setup.client, session_id, terminal_id).wait_for_exit()
            assert caught.value.data == {"terminalId": terminal_id}


async def test_close_kills_every_terminal(setup: Setup) -> None:
    pids = []
    for _ in range(2):
        terminal = await setup.client.create_terminal(
            setup.session, "sh", ["-c", "echo $$; exec sleep 60"]
        )
        pids.append(int((await wait_output(terminal, "\n")).output))
    await setup.local.aclose()
    assert all(gone(pid) for pid in pids)


# -- permission and updates --------------------------------------------------------------

OPTIONS = [
    s.PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
    s.PermissionOption(option_id="always", name="Always", kind="allow_always"),
    s.PermissionOption(option_id="no", name="Reject", kind="reject_once"),
]


async def ask(setup: Setup, options: list[s.PermissionOption]) -> object:
    answer = await setup.client.request_permission(
        setup.session, s.ToolCallUpdate(tool_call_id="t1", title="Edit"), options
    )
    return answer.outcome


async def test_default_permission_policy_rejects_or_cancels(setup: Setup) -> None:
    assert await ask(setup, OPTIONS) == s.SelectedPermissionOutcome(option_id="no")
    assert await ask(setup, OPTIONS[:2]) == s.CancelledPermissionOutcome()


async def test_permission_callback_decides(setup: Setup) -> None:
    seen: list[str] = []

    async def person(request: s.RequestPermissionRequest) -> str | None:
        seen.append(str(request.tool_call.title))
        return "always"

    setup.local.ask_permission = person
    assert await ask(setup, OPTIONS) == s.SelectedPermissionOutcome(option_id="always")
    assert seen == ["Edit"]
    setup.local.ask_permission = allow_first
    assert await ask(setup, OPTIONS) == s.SelectedPermissionOutcome(option_id="yes")


async def test_a_policy_choosing_an_option_not_offered_is_an_internal_error(
    setup: Setup,
) -> None:
    async def confused(request: s.RequestPermissionRequest) -> str | None:
        return "maybe"

    setup.local.ask_permission = confused
    with pytest.raises(InternalError):
        await ask(setup, OPTIONS)


async def test_updates_reach_the_callback_in_order(setup: Setup) -> None:
    got: list[str] = []
    all_in = asyncio.Event()

    async def on_update(notification: s.SessionNotification) -> None:
        await asyncio.sleep(0)
        update = notification.update
        assert isinstance(update, s.AgentMessageChunk)
        assert isinstance(update.content, s.TextContent)
        got.append(update.content.text)
        if len(got) == 20:
            all_in.set()

    setup.local.on_update = on_update
    for i in range(20):
        await setup.client.send_text(setup.session, str(i))
    await all_in.wait()
    assert got == [str(i) for i in range(20)]
