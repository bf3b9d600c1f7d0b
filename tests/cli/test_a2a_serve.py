"""`interlink a2a serve` as a person or a script starts it: real subprocesses. The
`serving on URL` line once it listens; a failed start says why at once; one server per
SQLite file, and a file of its own for each agent by default."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.cli.a2a_harness import TIMEOUT, a2a, env_without_credentials, run_a2a, serving

pytestmark = pytest.mark.e2e

EXAMPLE = "examples/a2a_agent.py:app"


def data_env(directory: Path) -> dict[str, str]:
    return env_without_credentials(INTERLINK_DATA_DIR=str(directory))


def serve_once(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_a2a(["serve", *args], env or env_without_credentials())


def test_the_serving_line_comes_once_the_socket_listens(tmp_path: Path) -> None:
    with serving(EXAMPLE, "--store", "memory:") as (url, proc):
        host, port = url.removeprefix("http://").rstrip("/").split(":")
        with socket.create_connection((host, int(port)), timeout=10):
            pass  # bound and listening when the line was written
        card = a2a("card", url, "--json")
        assert card.returncode == 0, card.stderr
        assert json.loads(card.stdout)["supportedInterfaces"][0]["url"] == url  # port 0's
        assert proc.poll() is None


def test_a_port_in_use_fails_at_once_with_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = serve_once(EXAMPLE, "--port", str(port), "--store", "memory:")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        f"interlink a2a serve: cannot listen on 127.0.0.1:{port}: address already in use\n"
    )


def test_a_second_server_on_the_same_file_refuses_and_names_the_first(tmp_path: Path) -> None:
    env = data_env(tmp_path)
    with serving(EXAMPLE, env=env) as (url, first):
        started = a2a("send", url, "slow 30", "--no-wait", "--json")
        assert started.returncode == 0, started.stderr
        task_id = json.loads(started.stdout)["task"]["id"]

        second = serve_once(EXAMPLE, "--port", "0", env=env)
        assert second.returncode == 2
        assert second.stdout == ""  # never said it serves
        (line,) = second.stderr.splitlines()
        database = tmp_path / "a2a" / "interlink-example-agent.db"
        assert line.startswith(f"interlink a2a serve: {database} is in use by pid {first.pid} ")
        assert "serve examples/a2a_agent.py:app --port 0" in line  # the holder's command

        # the first server's running task is untouched
        shown = a2a("task", url, task_id, "--json")
        assert shown.returncode == 0, shown.stderr
        task = json.loads(shown.stdout)
        assert task["status"]["state"] == "TASK_STATE_WORKING"
        assert "server stopped" not in shown.stdout
        assert a2a("cancel", url, task_id).returncode == 0


def test_each_agent_has_its_own_file_by_default(tmp_path: Path) -> None:
    env = data_env(tmp_path)
    with (
        serving(EXAMPLE, env=env) as (one, _),
        serving("tests/cli/a2a_other_app.py:app", env=env) as (other, _),
    ):
        for url in (one, other):
            assert a2a("send", url, "echo kept").returncode == 0
        assert len(a2a("tasks", one, "--json").stdout.splitlines()) == 1
        assert len(a2a("tasks", other, "--json").stdout.splitlines()) == 1
    files = sorted(p.name for p in (tmp_path / "a2a").iterdir() if p.suffix == ".db")
    assert files == ["another-agent.db", "interlink-example-agent.db"]


def test_a_killed_server_does_not_block_the_next(tmp_path: Path) -> None:
    env = data_env(tmp_path)
    with serving(EXAMPLE, env=env) as (url, first):
        started = a2a("send", url, "slow 30", "--no-wait", "--json")
        task_id = json.loads(started.stdout)["task"]["id"]
        first.kill()  # no shutdown: the OS drops its lock
        first.wait(timeout=TIMEOUT)
    with serving(EXAMPLE, env=env) as (url, _):
        shown = json.loads(a2a("task", url, task_id, "--json").stdout)
        assert shown["status"]["state"] == "TASK_STATE_FAILED"  # recovered by the next
    assert os.path.exists(tmp_path / "a2a" / "interlink-example-agent.db.lock")


@pytest.mark.parametrize(
    ("host", "shown"), [("0.0.0.0", "http://127.0.0.1:"), ("::", "http://[::1]:")]
)
def test_the_serving_line_on_every_address_names_one_to_call(host: str, shown: str) -> None:
    """`--host 0.0.0.0` (or `::`) is never advertised, in the `serving on` line either:
    a script calls the URL it gives (0.0.0.0 is no address to connect to everywhere)."""
    with serving(EXAMPLE, "--store", "memory:", "--host", host) as (url, _):
        assert url.startswith(shown), url
        sent = a2a("send", url, "echo hi")
        assert sent.returncode == 0, sent.stderr
