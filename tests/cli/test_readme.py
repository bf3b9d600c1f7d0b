"""The README's first command, as written there (its part after the install, run by bash
in the current environment): it prints the agent's answer; when `serve` fails (a port in
use, a bad target) it stops at once with serve's error instead of waiting forever or
talking to whatever else answers on that port."""

from __future__ import annotations

import fcntl
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.a2a_harness import ROOT, env_without_credentials

pytestmark = pytest.mark.e2e

INSTALL = "python3 -m venv .venv && . .venv/bin/activate && pip install -q -e '.[a2a]' && "


def first_command() -> str:
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("# 1. install") :]
    line = next(line for line in block.splitlines() if line.startswith(INSTALL))
    return line.removeprefix(INSTALL)


def run(command: str, data: Path) -> subprocess.CompletedProcess[str]:
    # The install left its venv active: this interpreter's `interlink` comes first on
    # PATH, also when the tests run as `.venv/bin/python -m pytest` without activating it.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,  # "at once": it used to wait here forever
        check=False,
        env=env_without_credentials(INTERLINK_DATA_DIR=str(data), PATH=path),
    )


def test_the_command_is_what_the_test_changes() -> None:
    command = first_command()
    assert command.count("--port 9999") == 1
    assert command.count("examples/a2a_agent.py:app") == 1


def test_it_prints_the_answer_and_stops_the_server(tmp_path: Path) -> None:
    done = run(first_command().replace("--port 9999", "--port 0"), tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert re.fullmatch(r"task \S+ · context \S+", lines[0]), lines
    assert lines[1:] == ["● submitted", "● working", "▸ echo", "hello world", "● completed"]
    assert "Traceback" not in done.stderr
    # the server is gone: its store's lock is free
    lock = tmp_path / "a2a" / "interlink-example-agent.db.lock"
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # (blocks, bounded by the test's timeout)
    finally:
        os.close(fd)


def test_a_port_in_use_fails_at_once_with_serves_error(tmp_path: Path) -> None:
    with socket.socket() as taken:  # listens, never answers: a client would hang here
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run(first_command().replace("--port 9999", f"--port {port}"), tmp_path)
    assert done.returncode != 0
    assert done.stdout == ""
    assert done.stderr == (
        f"interlink a2a serve: cannot listen on 127.0.0.1:{port}: address already in use\n"
    )


def test_a_bad_target_fails_at_once_with_serves_error(tmp_path: Path) -> None:
    command = first_command().replace("--port 9999", "--port 0")
    done = run(command.replace("examples/a2a_agent.py:app", "examples/a2a_agent.py:nope"), tmp_path)
    assert done.returncode != 0
    assert done.stdout == ""
    assert "interlink a2a serve: " in done.stderr
    assert "'nope'" in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
