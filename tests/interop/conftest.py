"""Fixtures and helpers for interop tests against peers on the official ACP SDKs.

The peers live in ``tests/interop/peers`` (see its README.md). ``py_sdk`` / ``ts_sdk``
skip a test when the SDK is not installed, except under ``CI=true`` where a missing SDK
fails the test. ``run_client`` runs a client peer against any agent command and returns
the JSON object it printed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

PEERS = Path(__file__).resolve().parent / "peers"
PY_SDK_PIN = "agent-client-protocol==0.12.1"
TS_SDK_DIR = PEERS / "node_modules" / "@agentclientprotocol" / "sdk"

PeerKind = Literal["py", "ts"]


@dataclass(frozen=True)
class SdkPeers:
    """Commands that start the agent and the client peer written on one SDK."""

    kind: PeerKind
    agent_cmd: list[str]
    client_cmd: list[str]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (required under CI=true)", pytrace=False)
    pytest.skip(reason)


def _node() -> str | None:
    return shutil.which("node")


def py_peers() -> SdkPeers:
    return SdkPeers(
        kind="py",
        agent_cmd=[sys.executable, str(PEERS / "py_agent.py")],
        client_cmd=[sys.executable, str(PEERS / "py_client.py")],
    )


def ts_peers() -> SdkPeers:
    node = _node() or "node"
    return SdkPeers(
        kind="ts",
        agent_cmd=[node, str(PEERS / "ts_agent.mjs")],
        client_cmd=[node, str(PEERS / "ts_client.mjs")],
    )


@pytest.fixture
def py_sdk() -> SdkPeers:
    """Peers on the Python SDK; skips (fails under CI=true) when ``acp`` is missing."""
    if importlib.util.find_spec("acp") is None:
        _unavailable(f"Python ACP SDK not installed (pip install {PY_SDK_PIN})")
    return py_peers()


@pytest.fixture
def ts_sdk() -> SdkPeers:
    """Peers on the TypeScript SDK; skips (fails under CI=true) without node or the SDK."""
    if _node() is None:
        _unavailable("node not found on PATH")
    if not (TS_SDK_DIR / "package.json").is_file() or not (PEERS / "node_modules" / "zod").is_dir():
        _unavailable("TypeScript ACP SDK not installed (npm ci --prefix tests/interop/peers)")
    return ts_peers()


class PeerRunError(AssertionError):
    """A client peer failed; the message carries its exit code, stdout and stderr."""


def run_client(
    kind: PeerKind,
    agent_cmd: Sequence[str],
    scenario: str,
    cwd: Path,
    timeout: float = 60,
    extra_args: Sequence[str] = (),
) -> dict[str, Any]:
    """Run the ``kind`` client peer against ``agent_cmd``; return the JSON it printed.

    ``cwd`` is the session cwd and the processes' working directory. ``extra_args`` go
    before ``--`` (e.g. ``["--prompt", "hi"]``, ``["--no-fs"]``). The client and the
    agent run in their own process group, which is killed on timeout.
    """
    peers = py_peers() if kind == "py" else ts_peers()
    cmd = [
        *peers.client_cmd,
        "--cwd",
        str(cwd),
        "--scenario",
        scenario,
        *extra_args,
        "--",
        *agent_cmd,
    ]
    with subprocess.Popen(
        cmd,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate(timeout=10)
            raise PeerRunError(
                f"{kind} client timed out after {timeout} s: {cmd}\n"
                f"--- stdout\n{stdout}\n--- stderr\n{stderr}"
            ) from None
        finally:
            # Leave no agent behind (the client normally reaps it).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    if proc.returncode != 0:
        raise PeerRunError(
            f"{kind} client exited {proc.returncode}: {cmd}\n"
            f"--- stdout\n{stdout}\n--- stderr\n{stderr}"
        )
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        if len(lines) != 1:
            raise ValueError(f"expected one JSON line, got {len(lines)}")
        result = json.loads(lines[0])
        if not isinstance(result, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        raise PeerRunError(
            f"{kind} client printed no single JSON object ({exc}): {cmd}\n"
            f"--- stdout\n{stdout}\n--- stderr\n{stderr}"
        ) from None
    return result
