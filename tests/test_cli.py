"""The `interlink` command as a person runs it: a real subprocess."""

from __future__ import annotations

import subprocess
import sys

import pytest

import interlink


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "interlink", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_version() -> None:
    done = run("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"interlink {interlink.__version__}"


def test_no_command_prints_help_and_fails() -> None:
    done = run()
    assert done.returncode == 2
    assert "demo" in done.stderr


@pytest.mark.e2e
def test_demo_talks_to_a_child_process() -> None:
    done = run("demo", "--requests", "200")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "add(2, 40)          -> 42" in out
    assert "notifications [3, 2, 1], then 'liftoff'" in out
    assert "InvalidParams -32602: {'detail': 'b must not be 0'}" in out
    assert "MethodNotFound -32601: {'method': 'multiply'}" in out
    assert '"id":null,"error":{"code":-32700' in out
    assert '{"jsonrpc":"2.0","id":1,"result":2.0}' in out
    assert "children exited with [0, 0]" in out
