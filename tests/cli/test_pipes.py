"""Every command on a closed stdout (`... | head -1`): it ends quietly, status 141 (the
status of a process that SIGPIPE ended) or 0 when all its output was written before the
reader left, and writes no traceback. Real subprocesses, real pipes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.cli.a2a_harness import CLI, ROOT, TIMEOUT, env_without_credentials, serve

pytestmark = pytest.mark.e2e

ACP = [sys.executable, "-m", "interlink", "acp", "client"]
AGENT = ["--", sys.executable, "examples/acp_agent.py"]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve("examples/a2a_agent.py:app") as served:
        for n in range(3):  # a few lines for `tasks`
            subprocess.run([*CLI, "send", served, f"echo {n}"], cwd=ROOT, check=True, timeout=60)
        yield served


def commands(url: str) -> dict[str, list[str]]:
    return {
        "a2a send": [*CLI, "send", url, "slow 2"],  # writes again after the first line
        "a2a send --json": [*CLI, "send", url, "echo a b c", "--json"],
        "a2a tasks": [*CLI, "tasks", url],
        "a2a card": [*CLI, "card", url],
        "a2a task --follow": [*CLI, "task", url, "nope", "--follow"],  # an error, too
        "acp client": [*ACP, "-p", "tool README.md", "--yes", *AGENT],
        "acp client --json": [*ACP, "--json", "-p", "tool README.md", "--yes", *AGENT],
    }


NAMES = list(commands(""))


def run_into(command: list[str], lines: int) -> tuple[int, bytes, bytes]:
    """`command | head -n LINES`: its status, what the reader got, its stderr."""
    read, write = os.pipe()
    with subprocess.Popen(
        command,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=write,
        stderr=subprocess.PIPE,
        env=env_without_credentials(),
    ) as proc:
        os.close(write)
        got = b""
        with os.fdopen(read, "rb", buffering=0) as reader:
            while got.count(b"\n") < lines:
                chunk = reader.read(1)
                if not chunk:
                    break
                got += chunk
        # the reader is gone: every later write of the command fails with EPIPE
        assert proc.stderr is not None
        err = proc.stderr.read()
        return proc.wait(timeout=TIMEOUT), got, err


@pytest.mark.parametrize("name", NAMES)
def test_a_reader_that_leaves_after_one_line(url: str, name: str) -> None:
    status, got, err = run_into(commands(url)[name], 1)
    assert got.count(b"\n") == 1 or name == "a2a task --follow", got
    assert b"Traceback" not in err, err.decode()
    assert b"Broken pipe" not in err, err.decode()
    assert b"Exception ignored" not in err, err.decode()
    assert b"asynchronous generator" not in err, err.decode()
    if name == "a2a task --follow":
        assert status == 5, err  # its error still goes to stderr
    else:
        assert status in (0, 141), err


@pytest.mark.parametrize("name", NAMES)
def test_a_reader_that_is_gone_before_the_first_line(url: str, name: str) -> None:
    status, got, err = run_into(commands(url)[name], 0)
    assert got == b""
    assert err.count(b"\n") <= 1, err.decode()  # nothing, or the one error line
    assert b"Broken pipe" not in err, err.decode()
    assert status == (5 if name == "a2a task --follow" else 141), err


def test_help_into_a_closed_pipe_is_quiet() -> None:
    status, _, err = run_into([sys.executable, "-m", "interlink", "a2a", "send", "--help"], 0)
    assert status in (0, 141)  # (argparse writes help ignoring a closed stdout)
    assert err == b""
