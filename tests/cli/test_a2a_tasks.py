"""`interlink a2a tasks`: a table that fits the terminal's width (80 columns too), whole
cells on a pipe; `--limit`. Real subprocesses against a live server."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from interlink.a2a import types as t
from interlink.cli._a2a_table import task_table
from interlink.cli._terminal import Style
from tests.cli.a2a_harness import CLI, ROOT, env_without_credentials, header_ids, run_a2a, serve

LONG = "echo " + " ".join(f"word{n}" for n in range(40))


@pytest.fixture(scope="module")
def tasks() -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """A server with a long-texted task, one waiting for input and a short one."""
    with serve("examples/a2a_agent.py:app") as url:
        made = []
        for text in (LONG, "ask", "echo short"):
            done = subprocess.run(
                [*CLI, "send", url, text], cwd=ROOT, capture_output=True, text=True, timeout=60
            )
            made.append(header_ids(done.stdout))
        yield url, made


def table(url: str, columns: str | None) -> list[str]:
    env = {k: v for k, v in env_without_credentials().items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = columns
    done = run_a2a(["tasks", url], env)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.e2e
@pytest.mark.parametrize("columns", ["80", "100"])
def test_the_table_fits_the_width_and_keeps_the_ids(
    tasks: tuple[str, list[tuple[str, str]]], columns: str
) -> None:
    url, made = tasks
    lines = table(url, columns)
    assert all(len(line) <= int(columns) for line in lines), lines
    assert lines[0].split()[:3] == ["ID", "STATE", "UPDATED"]
    rows = lines[1:]
    assert len(rows) == 3
    for (task_id, _), row in zip(reversed(made), rows, strict=True):
        assert row.startswith(task_id + "  "), row  # whole: `task ID` takes it
        assert re.search(r"  \d+s ago  ", row), row  # relative times on a width
    long_row = rows[2]
    assert long_row.endswith("…")
    assert "input-required" in rows[1]


@pytest.mark.e2e
def test_a_wide_terminal_shows_whole_cells(tasks: tuple[str, list[tuple[str, str]]]) -> None:
    url, made = tasks
    rows = table(url, "400")[1:]
    for (task_id, context_id), row in zip(reversed(made), rows, strict=True):
        assert row.split()[0] == task_id
        assert context_id in row
    assert rows[2].endswith(LONG.removeprefix("echo "))


@pytest.mark.e2e
def test_a_pipe_gets_whole_cells_and_absolute_times(
    tasks: tuple[str, list[tuple[str, str]]],
) -> None:
    url, made = tasks
    rows = table(url, None)[1:]
    assert rows[2].endswith(LONG.removeprefix("echo "))
    assert made[0][1] in rows[2]
    assert re.search(r"  \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ  ", rows[0]), rows[0]


def test_narrow_widths_shrink_text_then_context_then_the_id() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    task = t.Task(
        id="0123456789abcdef0123456789abcdef0123",
        context_id="fedcba9876543210fedcba9876543210fedc",
        status=t.TaskStatus(
            state=t.TaskState.TASK_STATE_INPUT_REQUIRED,
            timestamp=now - timedelta(hours=3),
            message=t.Message(
                message_id="m", role=t.Role.ROLE_AGENT, parts=[t.Part(text="x" * 90)]
            ),
        ),
    )
    plain = Style(False)
    for width in (200, 120, 80, 70, 60, 50, 40):
        lines = task_table([task], plain, width, now)
        assert all(len(line) <= width for line in lines), (width, lines)
        assert "3h ago" in lines[1]
    assert task.id in task_table([task], plain, 70, now)[1]  # context dropped before the id
    assert task.context_id[:8] + "…" in task_table([task], plain, 80, now)[1]
    assert task.context_id not in task_table([task], plain, 60, now)[1]
    assert task_table([task], plain, 40, now)[1].startswith("01234567…  input-required")
    assert os.linesep not in "".join(task_table([task], plain, None, now))


def _columns(line: str) -> int:
    """The terminal columns `line` takes: East Asian wide and fullwidth characters two,
    combining marks none."""
    import unicodedata

    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in line
    )


@pytest.mark.parametrize("text", ["エージェントの答え" * 10, "🙂" * 60, "e\u0301" * 90])
def test_wide_and_combining_characters_fit_the_width_too(text: str) -> None:
    """Cells are measured in terminal columns, not characters: a Japanese text (two
    columns a character) made each line wrap; combining marks take none."""
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    task = t.Task(
        id="0123456789abcdef0123456789abcdef0123",
        context_id="ctx",
        status=t.TaskStatus(
            state=t.TaskState.TASK_STATE_COMPLETED,
            timestamp=now,
            message=t.Message(message_id="m", role=t.Role.ROLE_AGENT, parts=[t.Part(text=text)]),
        ),
    )
    for width in (120, 80, 60):
        lines = task_table([task, task], Style(False), width, now)
        assert all(_columns(line) <= width for line in lines), (width, lines)
        assert lines[1].endswith("…"), lines  # cut, with room used
        assert _columns(lines[1]) >= width - 2, (width, lines)
