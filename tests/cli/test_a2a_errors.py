"""How `interlink a2a` fails and how it takes what a person types: one line in words,
the agent's URL once, no exception class names or HTTP-library internals; a URL without
a scheme; "did you mean" for a mistyped subcommand. Real subprocesses and sockets."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest

from tests.cli.a2a_harness import a2a, free_port, json_server, one_error_line, serve

pytestmark = pytest.mark.e2e

CLASS_NAME = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception|Timeout|Interrupted|Required)\b")


def plain(line: str, url: str) -> None:
    """No class names, no httpx, the URL once."""
    assert "httpx" not in line, line
    assert "httpcore" not in line, line
    assert not CLASS_NAME.search(line), line
    assert "Error:" not in line, line
    assert line.count(url.rstrip("/")) == 1, line


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve("examples/a2a_agent.py:app") as served:
        yield served


@pytest.fixture
def bad_card() -> Iterator[str]:
    with json_server(b'{"name": 42, "capabilities": "many"}') as url:
        yield url


def test_connection_refused() -> None:
    where = f"http://127.0.0.1:{free_port()}/"
    for command in ("card", "tasks"):
        done = a2a(command, where)
        assert done.returncode == 6
        line = one_error_line(done)
        assert line == f"error: cannot reach {where}: connection refused"
        plain(line, where)


def test_timeout() -> None:
    with socket.socket() as silent:  # accepts (the backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        where = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        done = a2a("card", where, "--timeout", "0.5")
    assert done.returncode == 6
    line = one_error_line(done)
    assert line == f"error: cannot reach {where}: no answer within 0.5 s (--timeout)"
    plain(line, where)


def test_a_bad_card(bad_card: str) -> None:
    done = a2a("card", bad_card)
    assert done.returncode == 5
    line = one_error_line(done)
    assert line.startswith(f"error: invalid agent card at {bad_card}")
    plain(line, bad_card)


def test_a2a_errors_and_http_errors_in_words(url: str) -> None:
    done = a2a("task", url, "nope")
    assert done.returncode == 5
    line = one_error_line(done)
    assert line == "error: Task 'nope' not found (A2A error -32001)"
    assert not CLASS_NAME.search(line)
    missing = a2a("send", url + "nowhere/", "hi")
    assert missing.returncode == 5
    line = one_error_line(missing)
    assert "HTTP 404" in line
    plain(line, url + "nowhere/")


def test_a_url_without_a_scheme(url: str) -> None:
    authority = url.removeprefix("http://").rstrip("/")
    port = authority.split(":")[1]
    for given in (authority, f"localhost:{port}", authority + "/"):
        done = a2a("card", given)
        assert done.returncode == 0, (given, done.stderr)
        assert done.stdout.startswith("interlink example agent")
    sent = a2a("send", authority, "echo no scheme")
    assert sent.returncode == 0, sent.stderr
    assert "no scheme" in sent.stdout


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["a2a", "sned"], "did you mean 'send'?"),
        (["a2a", "tsaks"], "did you mean 'tasks'"),
        (["a2", "serve"], "did you mean 'a2a'?"),
        (["acp", "clinet"], "did you mean 'client'?"),
    ],
)
def test_a_mistyped_subcommand_gets_a_suggestion(args: list[str], hint: str) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "interlink", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert hint in done.stderr.splitlines()[-1], done.stderr
