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


@pytest.mark.e2e
def test_acp_serve_runs_an_agent_object_on_stdio() -> None:
    request = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
    done = subprocess.run(
        [sys.executable, "-m", "interlink", "acp", "serve", "examples/acp_agent.py:ExampleAgent"],
        input=request,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = done.stdout.decode()
    assert '"id":1,"result":{"protocolVersion":1' in answer
    assert '"name":"interlink-example-agent"' in answer


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nope_module:Agent", "cannot import 'nope_module'"),
        ("examples/acp_agent.py:Missing", "has no attribute 'Missing'"),
        ("examples/acp_agent.py:Session", "failed"),
        ("examples/acp_agent.py", "expected MODULE:ATTR"),
    ],
)
def test_acp_serve_explains_a_bad_target_in_one_line(target: str, message: str) -> None:
    done = run("acp", "serve", target)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a2a_serve_explains_a_bad_store_in_one_line() -> None:
    done = run("a2a", "serve", "examples/a2a_agent.py:app", "--store", "mysql://x")
    assert done.returncode == 2
    assert "unknown task store 'mysql://x'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--store", "memory:", "--lease-ttl", "5s"], "--lease-ttl: for a PostgreSQL store"),
        (["--lease-ttl", "0"], "must be positive: '0'"),
        (["--retention", "7 days"], "not a duration: '7 days'"),
    ],
)
def test_a2a_serve_refuses_replica_options_it_cannot_honour(
    options: list[str], message: str
) -> None:
    done = run("a2a", "serve", "examples/a2a_agent.py:app", *options)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90.0),
        ("90s", 90.0),
        ("250ms", 0.25),
        ("15m", 900.0),
        ("12h", 43200.0),
        ("7d", 604800.0),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    from interlink.cli._a2a_serve import _seconds

    assert _seconds(text) == seconds


def test_every_extra_is_used_by_the_package() -> None:
    """An extra installs only what some module imports (a `cli` extra installed `rich`,
    which nothing used)."""
    import re
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    source = "\n".join(p.read_text() for p in (root / "src" / "interlink").rglob("*.py"))
    for extra, requirements in extras.items():
        if extra == "dev":
            continue
        for requirement in requirements:
            name = re.match(r"[A-Za-z0-9_.-]+", requirement)
            assert name is not None
            # (a distribution whose module has another name)
            modules = {
                "grpcio": "grpc",
                "protobuf": "google.protobuf",
                "googleapis_common_protos": "google.api",
            }
            module = name[0].lower().replace("-", "_")
            module = modules.get(module, module)
            assert re.search(rf"^\s*(import|from) {module}\b", source, re.M), (extra, module)
