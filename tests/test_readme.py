"""The README's Python snippets run as written, against real peers.

A block fenced ```` ```python run ```` is a program: it is run in a subprocess, from the
repository root, with a timeout. A ```` ```python ```` block whose first line is
`# name.py` is a module the text refers to: it is saved under that name, and the tests
below serve it as the README says. The one liberty taken: a snippet that talks to
`127.0.0.1:9999` gets the port of the server started for it (9999 may be taken).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.serving import card_served, free_port

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS: list[tuple[str, str]] = re.findall(r"^```python( run)?\n(.*?)^```$", README, re.M | re.S)
PROGRAMS = [code for run, code in BLOCKS if run]
MODULES = {
    m[1]: code for run, code in BLOCKS if not run and (m := re.match(r"# (\w+\.py)\b", code))
}
TIMEOUT = 60


def program(marker: str) -> str:
    found = [code for code in PROGRAMS if marker in code]
    assert len(found) == 1, f"one runnable README snippet with {marker!r}"
    return found[0]


def env(*paths: Path) -> dict[str, str]:
    python_path = [str(ROOT / "src"), *map(str, paths)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(python_path)}


def run(code: str, *paths: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-c", code],
        cwd=ROOT,
        env=env(*paths),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@contextmanager
def served(cmd: list[str], url: str, cwd: Path) -> Iterator[str]:
    """`cmd` running until the card at `url` answers; stopped afterwards."""
    proc = subprocess.Popen(
        [sys.executable, "-W", "error::UserWarning", *cmd],
        cwd=cwd,
        env=env(cwd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        if not card_served(proc, url):
            proc.kill()
            _, err = proc.communicate(timeout=10)
            pytest.fail(f"{cmd} did not serve {url}:\n{err.decode()}")
        yield url
    finally:
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate(timeout=10)
        assert b"Warning" not in err, err.decode()  # e.g. an incomplete agent card


@pytest.fixture
def modules(tmp_path: Path) -> Path:
    for name, code in MODULES.items():
        (tmp_path / name).write_text(code)
    return tmp_path


def test_the_readme_marks_its_programs_and_modules() -> None:
    assert len(PROGRAMS) >= 3
    assert {"my_a2a_agent.py", "host_app.py"} <= set(MODULES)


def test_json_rpc_core_snippet() -> None:
    out = run(program("RequestType("))
    assert out.splitlines() == ["3", "-32602 {'detail': 'b must not be negative'}"]


def test_signed_card_snippet() -> None:
    pytest.importorskip("joserfc")
    assert run(program("sign_card(")).splitlines() == ["True", "invalid"]


def test_local_client_snippet_allows_the_tool_call() -> None:
    out = run(program("allow_first"))
    assert "Read README.md (read): completed" in out
    assert "# interlink" in out  # the file the agent read through the client


def test_a2a_agent_served_and_called_by_the_client_snippet(modules: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    serve = ["-m", "interlink", "a2a", "serve", "my_a2a_agent.py:app", "--port", str(port)]
    with served([*serve, "--store", "memory:", "--log-level", "warning"], url, modules):
        out = run(program("agent.list_tasks(").replace("127.0.0.1:9999", f"127.0.0.1:{port}"))
    lines = out.splitlines()
    assert lines[0] == f"shouter {url}"
    assert lines[1] == "TASK_STATE_COMPLETED HELLO"
    assert lines[2:6] == [
        "1 Task",
        "2 TaskStatusUpdateEvent",
        "3 TaskArtifactUpdateEvent",
        "4 TaskStatusUpdateEvent",
    ]
    assert lines[6] == "2 tasks"


def test_one_agent_called_over_each_binding(modules: Path) -> None:
    port, grpc_port = free_port(), free_port()
    url = f"http://127.0.0.1:{port}/"
    serve = ["-m", "interlink", "a2a", "serve", "my_a2a_agent.py:app", "--port", str(port)]
    serve += ["--grpc-port", str(grpc_port), "--store", "memory:", "--log-level", "warning"]
    assert "--port 9999 --grpc-port 50051" in README
    with served(serve, url, modules):
        out = run(program("for binding in").replace("127.0.0.1:9999", f"127.0.0.1:{port}"))
    assert out.splitlines() == [
        "JSONRPC HELLO OVER JSONRPC",
        "HTTP+JSON HELLO OVER REST",
        "GRPC HELLO OVER GRPC",
    ]


@pytest.mark.parametrize(
    ("target", "path"), [("my_a2a_agent:app", "/"), ("host_app:app", "/agents/shout/")]
)
def test_under_plain_uvicorn_alone_and_mounted(modules: Path, target: str, path: str) -> None:
    assert f"uvicorn {target} --port 9999" in README
    port = free_port()
    url = f"http://127.0.0.1:{port}{path}"
    uvicorn = ["-m", "uvicorn", target, "--port", str(port), "--log-level", "warning"]
    with served(uvicorn, url, modules):
        client = program("agent.list_tasks(").replace("http://127.0.0.1:9999/", url)
        out = run(client, modules)
    assert out.splitlines()[:2] == [f"shouter {url}", "TASK_STATE_COMPLETED HELLO"]
