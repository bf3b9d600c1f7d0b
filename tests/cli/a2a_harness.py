"""Running `interlink a2a ...` for the tests: a live server of an app, the command as a
subprocess, and the command on a pseudo-terminal that is its controlling terminal (so
`\\x03` is a real Ctrl-C). Every wait is bounded."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.serving import free_port as free_port  # (for the tests that import it here)

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "interlink", "a2a"]
TIMEOUT = 60


# -- the server ----------------------------------------------------------------------------


def read_until(proc: subprocess.Popen[bytes], end: bytes, timeout: float = 30) -> bytes:
    """What `proc` writes on stdout up to and with `end` (less if it closes stdout first);
    read a byte at a time, so nothing after `end` is taken."""
    assert proc.stdout is not None
    fd, got = proc.stdout.fileno(), b""
    deadline = time.monotonic() + timeout
    while not got.endswith(end):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"{end!r} not seen from {proc.args!r} in {timeout} s: {got!r}")
        if select.select([fd], [], [], remaining)[0]:
            chunk = os.read(fd, 1)
            if not chunk:
                break
            got += chunk
    return got


def read_line(proc: subprocess.Popen[bytes], timeout: float = 30) -> str:
    """The first line `proc` writes on stdout ("" if it closes stdout first)."""
    return read_until(proc, b"\n", timeout).decode()


@contextlib.contextmanager
def serving(
    target: str, *options: str, env: dict[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`interlink a2a serve TARGET --port 0 OPTIONS` until its `serving on URL` line:
    the URL and the process (stopped with SIGINT at the end)."""
    cmd = [*CLI, "serve", target, "--port", "0", *options]
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, env=env
        )
        try:
            line = read_line(proc)
            if not line.startswith("serving on "):
                proc.wait(timeout=10)
                log.seek(0)
                pytest.fail(f"{cmd} did not serve: {line!r}\n{log.read().decode()}")
            yield line.removeprefix("serving on ").strip(), proc
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
            assert proc.stdout is not None
            proc.stdout.close()


@contextlib.contextmanager
def json_server(body: bytes) -> Iterator[str]:
    """An HTTP server on loopback answering every GET with the JSON `body`: its URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@contextlib.contextmanager
def serve(target: str) -> Iterator[str]:
    """A server of `target` keeping nothing (`--store memory:`): its URL."""
    with serving(target, "--store", "memory:") as (url, _):
        yield url


# -- running the command -------------------------------------------------------------------


def env_without_credentials(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLINK_A2A_")}
    return env | extra


def a2a(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`interlink a2a ARGS`, without credentials from the environment, plus `env`."""
    return run_a2a(list(args), env_without_credentials(**env))


def run_a2a(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`interlink a2a ARGS` in exactly the environment `env`."""
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def header_ids(out: str) -> tuple[str, str]:
    match = re.search(r"^task (\S+) · context (\S+)$", out, re.M)
    assert match, out
    return match[1], match[2]


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]
