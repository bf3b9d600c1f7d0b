"""`interlink acp client` as a person runs it: a real subprocess talking to the example
agent (and to the agent on the official TypeScript SDK), non-interactively (`-p`) and
interactively through a pseudo-terminal that is the client's controlling terminal, so
`\\x03` is a real Ctrl-C (SIGINT to the foreground process group, which the agent must
not be part of)."""

from __future__ import annotations

import io
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from interlink.acp import schema as s
from interlink.cli._acp_render import Renderer, WireLog
from interlink.cli._terminal import Style
from tests.interop.conftest import PEERS, TS_SDK_DIR, _unavailable
from tests.terminal import Terminal

AGENT = str(Path(__file__).resolve().parents[2] / "examples" / "acp_agent.py")
CLIENT = [sys.executable, "-m", "interlink", "acp", "client"]

pytestmark = pytest.mark.e2e


def run_client(*args: str, cwd: Path, stdin: int | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLIENT, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        stdin=stdin,
    )


def test_one_prompt_prints_the_echo_and_exits_0(tmp_path: Path) -> None:
    done = run_client("-p", "hello world", "--", sys.executable, AGENT, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stdout  # not a terminal: plain text
    assert done.stdout.splitlines() == [
        "Plan",
        "  [x] Read the prompt",
        "  [x] Answer",
        "hello world",
        "── end_turn",
    ]


def test_tool_call_with_yes_reads_the_file_in_cwd(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("first line\nsecond line\n")
    done = run_client(
        "--cwd",
        str(tmp_path),
        "-p",
        "tool notes.txt",
        "--yes",
        "--",
        sys.executable,
        AGENT,
        cwd=Path(AGENT).parent,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "→ Allow (--yes)" in out
    assert "⏺ Read notes.txt … in_progress → completed" in out
    assert "│ first line\n  │ second line" in out
    assert "read 23 characters" in out
    assert out.endswith("── end_turn\n")


def test_without_yes_and_without_a_terminal_permission_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("secret\n")
    done = run_client(
        "-p", "tool notes.txt", "--", sys.executable, AGENT, cwd=tmp_path, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr
    assert "→ Reject" in done.stdout
    assert "pending → failed" in done.stdout
    assert "secret" not in done.stdout


def test_an_agent_that_exits_is_a_one_line_error(tmp_path: Path) -> None:
    code = "import sys; print('agent boom', file=sys.stderr); sys.exit(3)"
    done = run_client("-p", "hi", "--", sys.executable, "-c", code, cwd=tmp_path)
    assert done.returncode == 1
    assert "agent boom" in done.stderr  # forwarded
    assert (
        done.stderr.splitlines()[-1] == "interlink acp client: error: the agent exited with code 3"
    )
    missing = run_client("-p", "hi", "--", str(tmp_path / "no-agent"), cwd=tmp_path)
    assert missing.returncode == 1
    assert len(missing.stderr.splitlines()) == 1
    assert run_client("-p", "hi", cwd=tmp_path).returncode == 2


def test_an_agent_printing_instead_of_answering_is_shown_and_initialize_times_out(
    tmp_path: Path,
) -> None:
    code = "import sys; print('hello'); print('x' * 1000, flush=True); sys.stdin.read()"
    done = run_client(
        "-p", "hi", "--init-timeout", "1.5", "--", sys.executable, "-c", code, cwd=tmp_path
    )
    assert done.returncode == 1
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 2, done.stderr
    assert "not JSON-RPC (Parse error (-32700)): 'hello';" in warnings[0]
    assert "stdout belongs to the protocol" in warnings[0]
    assert f"'{'x' * 200}' … (1000 bytes in all)" in warnings[1]  # its first 200 bytes
    assert done.stderr.splitlines()[-1].startswith(
        "interlink acp client: error: waited 1.5 s for the agent's answer to initialize, in"
        " vain; 2 line(s) on its stdout were not JSON-RPC"
    )


def test_an_agent_printing_before_it_answers_is_shown_and_still_served(tmp_path: Path) -> None:
    code = (
        "import runpy, sys; print('Starting agent v1.0', flush=True); "
        "sys.argv = [sys.argv[1]]; runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    done = run_client("-p", "hi", "--", sys.executable, "-c", code, AGENT, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("hi\n── end_turn\n")
    assert "not JSON-RPC (Parse error (-32700)): 'Starting agent v1.0'" in done.stderr


def test_a_silent_agent_times_out_saying_what_was_awaited(tmp_path: Path) -> None:
    code = "import sys; sys.stdin.read()"
    done = run_client(
        "-p", "hi", "--init-timeout", "0.5", "--", sys.executable, "-c", code, cwd=tmp_path
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "interlink acp client: error: waited 0.5 s for the agent's answer to initialize, in"
        " vain (an ACP agent answers on its stdout, one JSON-RPC message a line;"
        " --init-timeout waits longer)"
    ]


def json_lines(stdout: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in stdout.splitlines()]
    assert all(isinstance(line, dict) for line in lines)
    return lines


def test_json_writes_each_update_and_then_the_stop_reason_as_one_line(tmp_path: Path) -> None:
    done = run_client("--json", "-p", "hello world", "--", sys.executable, AGENT, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    *updates, end = json_lines(done.stdout)
    assert end == {"stopReason": "end_turn"}
    session_ids = {line["sessionId"] for line in updates}
    assert len(session_ids) == 1  # the wire form of session/update's params, camelCase
    kinds = [line["update"]["sessionUpdate"] for line in updates]
    assert kinds == ["plan", "agent_message_chunk", "agent_message_chunk"]
    assert "".join(line["update"]["content"]["text"] for line in updates[1:]) == "hello world"
    assert "Plan" not in done.stderr  # nothing rendered for a person on top


def test_json_shows_a_permission_request_and_its_answer_as_lines(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("first line\n")
    allowed = run_client(
        "--json", "-p", "tool notes.txt", "--yes", "--", sys.executable, AGENT, cwd=tmp_path
    )
    assert allowed.returncode == 0, allowed.stderr
    lines = json_lines(allowed.stdout)
    [asked] = [n for n, line in enumerate(lines) if "options" in line]
    assert lines[asked]["toolCall"]["toolCallId"] == "call_1"
    assert [o["optionId"] for o in lines[asked]["options"]] == ["allow", "reject"]
    assert lines[asked + 1] == {"outcome": {"outcome": "selected", "optionId": "allow"}}
    assert "first line" in json.dumps(lines[asked + 2 :])
    assert lines[-1] == {"stopReason": "end_turn"}
    assert "→ Allow (--yes)" in allowed.stderr  # what a person reads goes to stderr
    rejected = run_client(
        *("--json", "-p", "tool notes.txt", "--", sys.executable, AGENT),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert rejected.returncode == 0, rejected.stderr
    assert {"outcome": {"outcome": "selected", "optionId": "reject"}} in json_lines(rejected.stdout)


# answers initialize and session/new, and every prompt with an error
FAILING_AGENT = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" in message:
        result = {"initialize": {"protocolVersion": 1}, "session/new": {"sessionId": "f"}}
        answer = result.get(message["method"])
        error = {"code": -32050, "message": "the model is overloaded", "data": {"retryAfter": 5}}
        reply = {"error": error} if answer is None else {"result": answer}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], **reply}), flush=True)
"""


def test_json_writes_a_failed_turn_as_an_error_line(tmp_path: Path) -> None:
    done = run_client("--json", "-p", "hi", "--", sys.executable, "-c", FAILING_AGENT, cwd=tmp_path)
    assert done.returncode == 1
    assert json_lines(done.stdout) == [
        {"error": {"code": -32050, "message": "the model is overloaded", "data": {"retryAfter": 5}}}
    ]
    assert "the model is overloaded" in done.stderr.splitlines()[-1]


def test_verbose_shows_the_json_rpc_traffic_on_stderr(tmp_path: Path) -> None:
    done = run_client("--verbose", "-p", "hi", "--", sys.executable, AGENT, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("hi\n── end_turn\n")  # stdout as without --verbose
    trace = [line for line in done.stderr.splitlines() if line[:2] in ("→ ", "← ")]
    sent = [json.loads(line[2:]) for line in trace if line.startswith("→ ")]
    received = [json.loads(line[2:]) for line in trace if line.startswith("← ")]
    assert [m.get("method") for m in sent] == ["initialize", "session/new", "session/prompt"]
    assert received[0]["id"] == sent[0]["id"]
    assert received[0]["result"]["protocolVersion"] == 1
    assert received[-1] == {
        "jsonrpc": "2.0",
        "id": sent[2]["id"],
        "result": {"stopReason": "end_turn"},
    }
    assert any(m.get("method") == "session/update" for m in received)


def test_verbose_cuts_a_huge_line_and_says_so(tmp_path: Path) -> None:
    done = run_client("--verbose", "-p", "x" * 50_000, "--", sys.executable, AGENT, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    trace = [line for line in done.stderr.splitlines() if line[:2] in ("→ ", "← ")]
    assert all(len(line.encode()) < 2100 for line in trace)
    prompt = next(line for line in trace if '"method":"session/prompt"' in line)
    match = re.search(r" … \(cut: (\d+) bytes in all\)$", prompt)
    assert match is not None
    assert int(match[1]) > 50_000


def test_the_wire_log_frames_lines_across_chunks_and_bounds_each() -> None:
    out = io.StringIO()
    log = WireLog(out, limit=10)
    log("send", b'{"a":1}\n{"b"')
    log("recv", b"0123456789abcdef")
    log("send", b":2}\n")
    log("recv", b"ghij\n\n")
    assert out.getvalue().splitlines() == [
        '→ {"a":1}',
        '→ {"b":2}',
        "← 0123456789 … (cut: 20 bytes in all)",
        "← ",
    ]


def client_terminal(cwd: Path, agent: list[str] | None = None) -> Terminal:
    """The client, talking to `agent` (default: the example agent), on a terminal."""
    return Terminal([*CLIENT, "--", *(agent or [sys.executable, AGENT])], cwd=cwd)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    (tmp_path / "notes.txt").write_text("from the pty\n")
    term = client_terminal(tmp_path)
    try:
        term.expect("Ctrl-D quits")
        term.expect("> ")
        yield term
    finally:
        term.close()


def test_interactive_cancel_then_another_prompt_then_ctrl_d(terminal: Terminal) -> None:
    terminal.send(b"slow\r")
    terminal.expect("working .1")
    terminal.send(b"\x03")
    terminal.expect("cancelling — Ctrl-C again to quit")
    terminal.expect("── cancelled")
    terminal.expect("> ")
    terminal.send(b"hello again\r")
    terminal.expect("Plan")
    terminal.expect("hello again")  # the agent survived the Ctrl-C and answers
    terminal.expect("── end_turn")
    terminal.expect("> ")
    terminal.send(b"\x04")
    assert terminal.exit_code() == 0


def test_interactive_permission_is_asked(terminal: Terminal) -> None:
    terminal.send(b"tool notes.txt\r")
    terminal.expect("1) Allow (allow_once)")
    terminal.expect("choose 1-2: ")
    terminal.send(b"1\r")
    terminal.expect("in_progress → completed")
    terminal.expect("│ from the pty")
    terminal.expect("── end_turn")
    terminal.send(b"/quit\r")
    assert terminal.exit_code() == 0


def test_second_ctrl_c_quits(terminal: Terminal) -> None:
    terminal.send(b"slow\r")
    terminal.expect("working")
    terminal.send(b"\x03")
    terminal.expect("cancelling")
    terminal.send(b"\x03")
    assert terminal.exit_code() == 130


def test_ctrl_c_at_the_prompt_quits(terminal: Terminal) -> None:
    terminal.send(b"\x03")
    assert terminal.exit_code() == 130


def test_ctrl_c_during_a_permission_question_cancels_the_turn(terminal: Terminal) -> None:
    terminal.send(b"tool notes.txt\r")
    terminal.expect("choose 1-2: ")
    terminal.send(b"\x03")
    terminal.expect("⏺ Read notes.txt … pending → cancelled")
    terminal.expect("── cancelled")
    terminal.expect("> ")
    terminal.send(b"\x04")
    assert terminal.exit_code() == 0


# -- the agent on the official TypeScript SDK: Node resets an inherited "ignore SIGINT" ---


@pytest.fixture
def ts_agent() -> list[str]:
    node = shutil.which("node")
    if node is None or not (TS_SDK_DIR / "package.json").is_file():
        _unavailable("node or the TypeScript ACP SDK is missing (see tests/interop/peers)")
    return [str(node), str(PEERS / "ts_agent.mjs")]


def child_of(pid: int) -> int:
    """The one child process of `pid` (Linux: read from /proc)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def wait_gone(pid: int, timeout: float = 20) -> None:
    """Until process `pid` (not our child) has exited; bounded."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout)
        assert ready, f"process {pid} still runs {timeout} s later"
    finally:
        os.close(pidfd)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc")
def test_ctrl_c_cancels_a_node_agents_turn_through_the_protocol_only(
    tmp_path: Path, ts_agent: list[str]
) -> None:
    term = client_terminal(tmp_path, ts_agent)
    try:
        term.expect("Ctrl-D quits")
        term.expect("> ")
        agent = child_of(term.process.pid)
        client_sid = os.getsid(term.process.pid)
        assert os.getsid(agent) != client_sid  # not in the terminal's session
        assert os.getpgid(agent) != os.getpgid(term.process.pid)  # nor its process group
        term.send(b"slow\r")
        term.expect("working")
        term.send(b"\x03")  # the pty's INTR: SIGINT to the foreground process group
        term.expect("cancelling — Ctrl-C again to quit")
        term.expect("── cancelled")
        term.expect("> ")
        os.kill(agent, 0)  # still alive
        term.send(b"hello after the cancel\r")
        term.expect("hello after the cancel")  # echoed by the same agent
        term.expect("── end_turn")
        assert child_of(term.process.pid) == agent
        term.send(b"slow\r")
        term.expect("working")
        term.send(b"\x03")
        term.expect("cancelling")
        term.send(b"\x03")
        assert term.exit_code() == 130
        assert "Traceback" not in term.screen
        assert "exited with code" not in term.screen
        wait_gone(agent)  # the client ended it on its way out
    finally:
        term.close()


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc")
def test_a_client_killed_with_sigkill_leaves_no_agent_behind(
    tmp_path: Path, ts_agent: list[str]
) -> None:
    client = subprocess.Popen(
        [*CLIENT, "--", *ts_agent],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    try:
        assert client.stdout is not None
        assert b"Ctrl-D quits" in client.stdout.readline()  # initialized, session open
        agent = child_of(client.pid)
        client.kill()
        client.wait(timeout=20)
        wait_gone(agent)  # its stdin reached EOF with the client's death
    finally:
        if client.poll() is None:
            client.kill()
            client.wait(timeout=20)
        assert client.stdin is not None
        assert client.stdout is not None
        client.stdin.close()
        client.stdout.close()


# -- the renderer on its own: what the example agent never sends --------------------------


def test_renderer_streams_thoughts_text_tool_calls_and_diffs() -> None:
    out = io.StringIO()
    render = Renderer(out, Style(color=False))
    diff = s.Diff(path="app.py", old_text="a = 1\nb = 2\n", new_text="a = 1\nb = 3\n")
    for update in [
        s.AgentThoughtChunk(content=s.TextContent(text="let me ")),
        s.AgentThoughtChunk(content=s.TextContent(text="think")),
        s.AgentMessageChunk(content=s.TextContent(text="Editing ")),
        s.AgentMessageChunk(content=s.TextContent(text="now.")),
        s.ToolCall(tool_call_id="c1", title="Edit app.py", kind="edit", status="pending"),
        s.ToolCallUpdated(tool_call_id="c1", status="completed", content=[diff]),
        s.ToolCall(tool_call_id="c2", title="Run tests", kind="execute", status="in_progress"),
        s.Plan(entries=[s.PlanEntry(content="Fix", priority="high", status="in_progress")]),
    ]:
        render.update(update)
    render.stop("cancelled")
    assert out.getvalue().splitlines() == [
        "let me think",
        "Editing now.",
        "⏺ Edit app.py … pending",
        "⏺ Edit app.py … pending → completed",
        "  --- a/app.py",
        "  +++ b/app.py",
        "  @@ -1,2 +1,2 @@",
        "   a = 1",
        "  -b = 2",
        "  +b = 3",
        "⏺ Run tests … in_progress",
        "Plan",
        "  [~] Fix",
        "⏺ Run tests … in_progress → cancelled",
        "── cancelled",
    ]


def test_renderer_colours_only_when_asked() -> None:
    out = io.StringIO()
    render = Renderer(out, Style(color=True))
    render.update(s.AgentThoughtChunk(content=s.TextContent(text="hmm")))
    render.stop("end_turn")
    assert out.getvalue() == "\x1b[2mhmm\x1b[0m\n\x1b[2m── end_turn\x1b[0m\n"


# -- the client ended by a signal: the agent, in a session of its own, goes too ----------

DEAF = str(Path(__file__).resolve().parents[1] / "acp" / "agents" / "deaf_agent.py")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_client_ended_by_a_signal_closes_an_agent_that_outlives_stdin_eof(
    tmp_path: Path, signum: int
) -> None:
    """`kill`, or the terminal hung up: neither reaches the agent (its own session), so
    the client closes it as on a quit (EOF, then terminate); it was left running."""
    pid_file = tmp_path / "agent.pid"
    agent_pid = 0
    with subprocess.Popen(
        [*CLIENT, "--", sys.executable, DEAF, str(pid_file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
    ) as client:
        try:
            assert client.stdout is not None
            header = client.stdout.readline()  # (the session is open)
            assert b"sess_deaf" in header, header
            agent_pid = int(pid_file.read_text())
            client.send_signal(signum)
            assert client.wait(timeout=20) == 128 + signum
            wait_gone(agent_pid, timeout=5)  # (it is gone once the client has exited)
        finally:
            if client.poll() is None:
                client.kill()
            if agent_pid and _alive(agent_pid):
                os.kill(agent_pid, signal.SIGKILL)
