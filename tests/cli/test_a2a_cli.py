"""`interlink a2a card|send|tasks|task|cancel` as a person or a script runs them: real
subprocesses against a live `interlink a2a serve` of the example agent, non-interactively
(pipes, exit codes, `--json`) and interactively through a pseudo-terminal (see
`a2a_harness`)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.a2a_harness import (
    CLI,
    ROOT,
    TIMEOUT,
    a2a,
    env_without_credentials,
    free_port,
    header_ids,
    json_lines,
    one_error_line,
    read_until,
    serve,
)
from tests.terminal import Terminal

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve("examples/a2a_agent.py:app") as served:
        yield served


@pytest.fixture(scope="module")
def auth_url() -> Iterator[str]:
    with serve("tests/cli/a2a_auth_app.py:app") as served:
        yield served


@pytest.fixture(scope="module")
def fallback_url() -> Iterator[str]:
    with serve("tests/cli/a2a_fallback_app.py:app") as served:
        yield served


@pytest.fixture
def terminal() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for term in opened:
        term.close()


def run_on_terminal(opened: list[Terminal], *args: str) -> Terminal:
    term = Terminal([*CLI, *args], cwd=ROOT, env=env_without_credentials())
    opened.append(term)
    return term


# -- card ----------------------------------------------------------------------------------


def test_card_is_readable(url: str) -> None:
    done = a2a("card", url)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "\x1b[" not in out  # not a terminal: plain text
    assert out.startswith("interlink example agent  v")
    assert "Echoes text in chunks" in out
    assert "capabilities\n  streaming, push notifications\n" in out
    assert f"interfaces\n  JSONRPC 1.0  {url}\n" in out
    assert "  Echo (echo)\n    Echoes the text back as an artifact, in chunks.\n" in out
    assert "    e.g. echo hello world\n" in out
    assert "security\n  none: no credentials needed" in out


def test_card_json_is_the_cards_protojson(url: str) -> None:
    done = a2a("card", url, "--json")
    assert done.returncode == 0, done.stderr
    card = json.loads(done.stdout)
    assert card["name"] == "interlink example agent"
    assert card["capabilities"]["streaming"] is True
    assert card["supportedInterfaces"][0]["protocolBinding"] == "JSONRPC"
    assert card["skills"][0]["examples"][0] == "echo hello world"


def test_card_says_what_became_of_each_interface(fallback_url: str) -> None:
    done = a2a("card", fallback_url)
    assert done.returncode == 0, done.stderr
    assert (
        "interfaces\n"
        "  JSONRPC 1.0  http://127.0.0.1:1/\n"
        "      failed: did not answer: connection refused\n"
        "  JSONRPC 1.0  /\n"
        "    → picked: it answered\n"
        "  WEBSOCKET 1.0  /\n"
        "      skipped: this client has no WEBSOCKET binding\n"
    ) in done.stdout
    sent = a2a("send", fallback_url, "echo over the fallback", "--binding", "jsonrpc")
    assert sent.returncode == 0, sent.stderr
    assert "over the fallback" in sent.stdout
    pinned = a2a("card", fallback_url, "--binding", "rest")
    assert pinned.returncode == 5
    assert "      skipped: JSONRPC was not asked for (only HTTP+JSON)\n" in pinned.stdout
    assert "offers no interface this client can use" in one_error_line(pinned)
    # pinned to 0.3, the card is read as a 0.3 client reads it: our server's 0.3 form,
    # whose agent speaks 0.3, which has no ListTasks
    old = a2a("tasks", fallback_url, "--a2a-version", "0.3")
    assert old.returncode == 5
    assert "ListTasks has no A2A 0.3 form" in one_error_line(old)


def test_every_command_over_http_json(url: str) -> None:
    card = a2a("card", url, "--binding", "rest", "--a2a-version", "1.0")
    assert card.returncode == 0, card.stderr
    assert "    → picked: the only choice\n" in card.stdout
    sent = a2a("send", url, "echo over rest", "--binding", "rest")
    assert sent.returncode == 0, sent.stderr
    task_id, _ = header_ids(sent.stdout)
    assert sent.stdout.splitlines()[-2:] == ["over rest", "● completed"]
    listed = a2a("tasks", url, "--binding", "rest", "--json")
    assert task_id in {task["id"] for task in json_lines(listed.stdout)}
    shown = a2a("task", url, task_id, "--binding", "rest", "--follow")
    assert shown.returncode == 0, shown.stderr
    missing = a2a("cancel", url, "nope", "--binding", "rest")
    assert missing.returncode == 5
    assert one_error_line(missing) == "error: Task 'nope' not found (A2A error -32001)"


# -- send ----------------------------------------------------------------------------------


def test_send_streams_by_default(url: str) -> None:
    done = a2a("send", url, "echo hello streaming world")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    task_id, context_id = header_ids(done.stdout)
    assert lines == [
        f"task {task_id} · context {context_id}",
        "● submitted",
        "● working",
        "▸ echo",
        "hello streaming world",
        "● completed",
    ]


def test_send_stream_json_is_one_event_per_line_in_order(url: str) -> None:
    done = a2a("send", url, "echo one two three", "--json")
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    assert list(events[0]) == ["task"]
    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert [c["artifact"]["parts"][0]["text"] for c in chunks] == ["one ", "two ", "three"]
    assert [c.get("append", False) for c in chunks] == [False, True, True]
    assert chunks[-1]["lastChunk"] is True
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_send_blocking(url: str) -> None:
    done = a2a("send", url, "echo hello blocking world", "--no-stream")
    assert done.returncode == 0, done.stderr
    task_id, context_id = header_ids(done.stdout)
    assert done.stdout.splitlines() == [
        f"task {task_id} · context {context_id}",
        "▸ echo",
        "hello blocking world",
        "● completed",
    ]
    raw = a2a("send", url, "echo as json", "--no-stream", "--json")
    assert raw.returncode == 0, raw.stderr
    task = json.loads(raw.stdout)["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "".join(p["text"] for p in task["artifacts"][0]["parts"]) == "as json"


def test_send_with_a_file_and_a_context(url: str, tmp_path: Path) -> None:
    first = a2a("send", url, "echo first")
    _, context_id = header_ids(first.stdout)
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"file bytes\n")
    done = a2a("send", url, "echo with a file", "--file", str(notes), "--context", context_id)
    assert done.returncode == 0, done.stderr
    assert header_ids(done.stdout)[1] == context_id
    task_id = header_ids(done.stdout)[0]
    shown = a2a("task", url, task_id, "--json")
    parts = json.loads(shown.stdout)["history"][0]["parts"]
    assert parts[0] == {"text": "echo with a file"}
    assert parts[1] == {
        "raw": "ZmlsZSBieXRlcwo=",
        "filename": "notes.txt",
        "mediaType": "text/plain",
    }
    missing = a2a("send", url, "x", "--file", str(tmp_path / "nope.bin"))
    assert missing.returncode == 2
    assert one_error_line(missing).startswith("error: No such file or directory: ")


def test_a_direct_message_is_printed(url: str) -> None:
    for mode in ("--stream", "--no-stream"):
        done = a2a("send", url, "message", mode)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0] == "a direct message: no task was created"
        assert re.fullmatch(r"context \S+", lines[1]), lines


# -- input required ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["--stream", "--no-stream"])
def test_input_required_without_a_terminal_exits_3_then_the_answer_completes_it(
    url: str, mode: str
) -> None:
    asked = a2a("send", url, "ask", mode)
    assert asked.returncode == 3, asked.stderr
    assert "● input-required · What should I do?" in asked.stdout
    task_id, context_id = header_ids(asked.stdout)
    assert f'--task {task_id} "ANSWER"' in one_error_line(asked)
    answered = a2a("send", url, "--task", task_id, "paint it blue", mode)
    assert answered.returncode == 0, answered.stderr
    assert header_ids(answered.stdout) == (task_id, context_id)
    assert "thanks, you said: paint it blue" in answered.stdout
    assert answered.stdout.splitlines()[-1] == "● completed · done"


def test_input_required_prompt_on_a_terminal(url: str, terminal: list[Terminal]) -> None:
    term = run_on_terminal(terminal, "send", url, "ask")
    term.expect("● input-required · What should I do?")
    term.expect("your answer: ")
    term.send(b"make it green\r")
    term.expect("thanks, you said: make it green")
    term.expect("● completed · done")
    assert term.exit_code() == 0


def test_following_a_task_that_waits_for_input_asks_on_a_terminal(
    url: str, terminal: list[Terminal]
) -> None:
    task_id, _ = header_ids(a2a("send", url, "ask").stdout)
    term = run_on_terminal(terminal, "task", url, task_id, "--follow")
    term.expect("● input-required")
    term.expect("your answer: ")
    term.send(b"later\r")
    term.expect("thanks, you said: later")
    term.expect("● completed · done")
    assert term.exit_code() == 0


# -- cancelling ----------------------------------------------------------------------------


def test_ctrl_c_then_y_cancels_the_task(url: str, terminal: list[Terminal]) -> None:
    term = run_on_terminal(terminal, "send", url, "slow 30")
    term.expect("● working · 1/30 s done")
    term.send(b"\x03")
    term.expect("cancel task ")
    term.expect("? [y/N] ")
    term.send(b"y\r")
    term.expect("● canceled")
    assert term.exit_code() == 1


def test_ctrl_c_at_the_question_interrupts_without_cancelling(
    url: str, terminal: list[Terminal]
) -> None:
    term = run_on_terminal(terminal, "send", url, "slow 30")
    term.expect("1/30 s done")
    match = re.search(r"task (\S+) · context ", term.screen)  # (after the spinner's \r)
    assert match, term.screen
    task_id = match[1]
    term.send(b"\x03")
    term.expect("[y/N] ")
    term.send(b"\x03")
    term.expect(f"interrupted; task {task_id} goes on")
    assert term.exit_code() == 130  # the exit-code table: interrupted without cancelling
    shown = a2a("task", url, task_id, "--json")  # GetTask
    assert json.loads(shown.stdout)["status"]["state"] == "TASK_STATE_WORKING"
    assert a2a("cancel", url, task_id).returncode == 0


def test_ctrl_c_then_no_goes_on(url: str, terminal: list[Terminal]) -> None:
    term = run_on_terminal(terminal, "send", url, "slow 3")
    term.expect("1/3 s done")
    term.send(b"\x03")
    term.expect("[y/N] ")
    term.send(b"n\r")
    term.expect("worked 3 s")
    term.expect("● completed")
    assert term.exit_code() == 0


def test_ctrl_c_while_following_stops_following(url: str, terminal: list[Terminal]) -> None:
    task_id, _ = header_ids(a2a("send", url, "slow 30", "--no-wait").stdout)
    term = run_on_terminal(terminal, "task", url, task_id, "--follow")
    term.expect("● working · ")  # a streamed update (the shown task has a timestamp there)
    term.send(b"\x03")
    term.expect(f"stopped following; task {task_id} goes on")
    assert term.exit_code() == 130
    assert "● working" in a2a("task", url, task_id).stdout
    assert a2a("cancel", url, task_id).returncode == 0


def test_sigint_without_a_terminal_cancels(url: str) -> None:
    with subprocess.Popen(
        [*CLI, "send", url, "slow 30"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_without_credentials(),
    ) as proc:
        seen = read_until(proc, b"1/30 s done", 20)
        assert seen.endswith(b"1/30 s done"), seen
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 1
    assert (seen + out).decode().splitlines()[-1] == "● canceled"


def test_cancel_command_cancels_a_running_task(url: str) -> None:
    started = a2a("send", url, "slow 30", "--no-wait", "--json")
    assert started.returncode == 0, started.stderr
    task_id = json.loads(started.stdout)["task"]["id"]
    done = a2a("cancel", url, task_id)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith(f"task {task_id} · context ")
    assert done.stdout.splitlines()[1].startswith("● canceled")
    shown = a2a("task", url, task_id)
    assert shown.returncode == 1  # the task was canceled
    assert "● canceled" in shown.stdout
    assert "  user  slow 30" in shown.stdout


# -- tasks and task ------------------------------------------------------------------------


def test_tasks_table_and_json(url: str) -> None:
    done = a2a("send", url, "echo listed task")
    task_id, context_id = header_ids(done.stdout)
    table = a2a("tasks", url)
    assert table.returncode == 0, table.stderr
    head, *rows = table.stdout.splitlines()
    assert head.split() == ["ID", "STATE", "UPDATED", "CONTEXT", "TEXT"]
    row = next(r for r in rows if r.startswith(task_id))
    assert row.split()[1] == "completed"
    assert context_id in row
    assert row.endswith("echo listed task")
    mine = a2a("tasks", url, "--context", context_id, "--json")
    assert [t["id"] for t in json_lines(mine.stdout)] == [task_id]
    completed = json_lines(a2a("tasks", url, "--status", "completed", "--json").stdout)
    assert completed
    assert {t["status"]["state"] for t in completed} == {"TASK_STATE_COMPLETED"}
    limited = a2a("tasks", url, "--limit", "1")
    assert len(limited.stdout.splitlines()) == 2
    assert one_error_line(limited) == "(the 1 newest; --limit N for more, --limit 0 for all)"
    bad = a2a("tasks", url, "--status", "sleeping")
    assert bad.returncode == 2


def test_task_shows_status_artifacts_and_history(url: str) -> None:
    task_id, context_id = header_ids(a2a("send", url, "echo shown task").stdout)
    shown = a2a("task", url, task_id)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"task {task_id} · context {context_id}"
    assert re.fullmatch(r"● completed  \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ", lines[1])
    assert lines[2:] == ["▸ echo", "shown task", "history (1)", "  user  echo shown task"]
    assert json.loads(a2a("task", url, task_id, "--json").stdout)["id"] == task_id


def test_task_follow_subscribes_until_the_end(url: str) -> None:
    # long enough for `--follow` to start while it runs, on a loaded machine too (a CLI
    # start-up took up to ~4 s there)
    started = a2a("send", url, "slow 8", "--no-wait")
    assert started.returncode == 0, started.stderr
    task_id, _ = header_ids(started.stdout)
    assert "● working" in started.stdout
    followed = a2a("task", url, task_id, "--follow")
    assert followed.returncode == 0, followed.stderr
    out = followed.stdout
    assert "● working · 8/8 s done" in out
    assert out.index("8/8 s done") < out.index("▸ result\nworked 8 s") < out.index("● completed")
    again = a2a("task", url, task_id, "--follow")  # already over: shown, not followed
    assert again.returncode == 0
    assert "● completed" in again.stdout


def test_task_follow_json(url: str) -> None:
    # (long enough to be still running when followed, on a loaded machine too)
    task_id = json.loads(a2a("send", url, "slow 4", "--no-wait", "--json").stdout)["task"]["id"]
    followed = a2a("task", url, task_id, "--follow", "--json")
    assert followed.returncode == 0, followed.stderr
    events = json_lines(followed.stdout)
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


# -- auth and errors -----------------------------------------------------------------------


def test_auth_required_then_bearer(auth_url: str) -> None:
    card = a2a("card", auth_url)
    assert "security\n  bearer: HTTP Bearer\n  requires: bearer" in card.stdout
    missing = a2a("send", auth_url, "echo hi")
    assert missing.returncode == 4
    line = one_error_line(missing)
    assert line.startswith(f"error: {auth_url} requires authentication (HTTP 401, ")
    assert 'WWW-Authenticate: Bearer realm="a2a"' in line
    assert line.endswith("; give --bearer TOKEN or --api-key KEY")
    assert a2a("send", auth_url, "echo hi", "--bearer", "wrong").returncode == 4
    ok = a2a("send", auth_url, "echo hi", "--bearer", "secret")
    assert ok.returncode == 0, ok.stderr
    assert "● completed" in ok.stdout
    from_env = a2a("tasks", auth_url, INTERLINK_A2A_BEARER="secret")
    assert from_env.returncode == 0, from_env.stderr
    no_key = a2a("tasks", auth_url, "--api-key", "k")
    assert no_key.returncode == 2
    assert "declares no API key security scheme" in one_error_line(no_key)


def test_unknown_task_is_one_line_with_the_a2a_error(url: str) -> None:
    for args in (
        ["task", url, "nope"],
        ["cancel", url, "nope"],
        ["send", url, "x", "--task", "nope"],
    ):
        done = a2a(*args)
        assert done.returncode == 5, done
        assert one_error_line(done) == "error: Task 'nope' not found (A2A error -32001)"


def test_wrong_urls(url: str) -> None:
    nobody = f"http://127.0.0.1:{free_port()}/"
    closed = a2a("card", nobody, "--timeout", "5")
    assert closed.returncode == 6
    assert one_error_line(closed) == f"error: cannot reach {nobody}: connection refused"
    no_agent = a2a("send", url + "nowhere/", "hi")
    assert no_agent.returncode == 5
    assert "HTTP 404" in one_error_line(no_agent)


# -- the command line itself ---------------------------------------------------------------


def test_help_on_every_level_and_usage_errors() -> None:
    for args in ([], ["a2a"], *([c] for c in ("card", "send", "tasks", "task", "cancel"))):
        done = subprocess.run(
            [*CLI[:3], *(["a2a"] if args and args != ["a2a"] else []), *args, "--help"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
            cwd=ROOT,
        )
        assert done.returncode == 0, (args, done.stderr)
        assert "usage: interlink" in done.stdout
        if args and args != ["a2a"]:
            assert "exit codes:\n  0 " in done.stdout
            assert "  6    network error" in done.stdout
    assert a2a("send", "http://127.0.0.1:1/").returncode == 2  # no text, no file
    assert a2a("task", "http://127.0.0.1:1/").returncode == 2  # no id


def test_the_client_is_imported_lazily() -> None:
    code = "import sys, interlink.cli; print(sorted(m for m in ('httpx', 'interlink.a2a') if m in sys.modules))"  # noqa: E501
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT, check=True
    )
    assert done.stdout.strip() == "[]"
