"""Fixtures for the A2A interop tests: interlink's server against the official A2A clients.

``a2a_server`` starts ``interlink a2a serve examples/a2a_agent.py:app --store memory:`` on
a free loopback port (one per test module) and stops it afterwards. ``a2a_py_sdk`` /
``a2a_js_sdk`` skip a test when that SDK is not installed, except under ``CI=true``
where a missing SDK fails the test (as in ``tests/interop/conftest.py``). ``run_peer``
runs a client peer from ``peers/`` and returns the JSON object it printed.
``a2a_v03_sdk`` installs ``a2a-sdk`` 0.3 (which cannot share the venv with 1.x) once into
``.cache/`` of the repository and gives the directory to put first on ``PYTHONPATH``.
``WebhookReceiver`` records push-notification POSTs on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any, Literal

import pytest

from tests.serving import card_served, free_port

ROOT = Path(__file__).resolve().parents[3]
PEERS = Path(__file__).resolve().parent / "peers"
AGENT_TARGET = "examples/a2a_agent.py:app"
PY_SDK_PIN = "a2a-sdk==1.3.0"
JS_SDK_PIN = "@a2a-js/sdk@1.3.0"
PY_V03_SDK_PIN = "a2a-sdk[http-server]==0.3.26"
PY_V03_SDK_DIR = ROOT / ".cache" / "a2a-sdk-0.3.26"
INSTALL_TIMEOUT = 240.0
JS_SDK_DIR = PEERS / "node_modules" / "@a2a-js" / "sdk"
STARTUP_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0

PeerKind = Literal["py", "js"]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (required under CI=true)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def a2a_py_sdk() -> PeerKind:
    """The client peer on the Python SDK; skips (fails under CI=true) without ``a2a-sdk``."""
    if importlib.util.find_spec("a2a") is None or importlib.util.find_spec("a2a.client") is None:
        _unavailable(f"Python A2A SDK not installed (pip install {PY_SDK_PIN})")
    version = importlib.metadata.version("a2a-sdk")
    if version != PY_SDK_PIN.split("==")[1]:
        _unavailable(f"a2a-sdk {version} installed, the peers are pinned to {PY_SDK_PIN}")
    return "py"


@pytest.fixture
def a2a_js_sdk() -> PeerKind:
    """The client peer on the JS SDK; skips (fails under CI=true) without node or the SDK."""
    if shutil.which("node") is None:
        _unavailable("node not found on PATH")
    if not (JS_SDK_DIR / "package.json").is_file():
        _unavailable(
            f"JS A2A SDK not installed ({JS_SDK_PIN}: npm ci --prefix tests/interop/a2a/peers)"
        )
    return "js"


@pytest.fixture(scope="session")
def a2a_v03_sdk() -> Path:
    """The directory holding ``a2a-sdk`` 0.3.26 and its dependencies, installed on first
    use (``pip install --target``, under a lock, into a temporary directory renamed into
    place, so a broken install never looks finished). Skips, failing under ``CI=true``,
    when pip cannot install it."""
    done = PY_V03_SDK_DIR / "a2a_sdk-0.3.26.dist-info"
    PY_V03_SDK_DIR.parent.mkdir(exist_ok=True)
    with open(PY_V03_SDK_DIR.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_dir():
            tmp = Path(tempfile.mkdtemp(prefix="a2a-sdk-0.3-", dir=PY_V03_SDK_DIR.parent))
            cmd = [sys.executable, "-m", "pip", "install", "-q", "--target", str(tmp)]
            try:
                subprocess.run(
                    [*cmd, "--disable-pip-version-check", PY_V03_SDK_PIN],
                    check=True,
                    capture_output=True,
                    timeout=INSTALL_TIMEOUT,
                )
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
                shutil.rmtree(tmp, ignore_errors=True)
                output = getattr(exc, "stderr", b"") or b""
                _unavailable(
                    f"Python A2A SDK 0.3 not installable ({exc}; {output.decode()[-500:]}); "
                    f"install it by hand: pip install --target {PY_V03_SDK_DIR} "
                    f"'{PY_V03_SDK_PIN}'"
                )
            shutil.rmtree(PY_V03_SDK_DIR, ignore_errors=True)
            tmp.rename(PY_V03_SDK_DIR)
    return PY_V03_SDK_DIR


def v03_env(sdk_dir: Path) -> dict[str, str]:
    """The environment of a peer on ``a2a-sdk`` 0.3: its directory first on the path."""
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(sdk_dir), path) if p)}


@contextlib.contextmanager
def peer_server(cmd: Sequence[str], url: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run the peer server `cmd` until its card answers at `url` (fail, with its output,
    when it does not); yield `url`; stop it (then kill it) on exit."""
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=log, stderr=log, start_new_session=True
        )
        try:
            if not card_served(proc, url):
                log.seek(0)
                pytest.fail(f"peer server did not start: {cmd}\n{log.read().decode()}")
            yield url
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=STOP_TIMEOUT)


# -- the server under test ------------------------------------------------------------------


@dataclass
class A2AServer:
    """A running ``interlink a2a serve``; ``url`` is its JSON-RPC endpoint (and card base)."""

    url: str
    proc: subprocess.Popen[bytes]
    stderr_file: IO[bytes]
    #: the gRPC interface's target (`host:port`), when it serves one (`--grpc-port`)
    grpc: str = ""

    def stderr_tail(self, limit: int = 8000) -> str:
        self.stderr_file.flush()
        with open(self.stderr_file.name, "rb") as fh:
            data = fh.read()
        return data[-limit:].decode("utf-8", "replace")


@contextlib.contextmanager
def serve(extra_args: Sequence[str] = (), *, grpc: bool = False) -> Iterator[A2AServer]:
    """Start the example agent with ``--store memory:`` (and gRPC beside it, with
    ``grpc``); stop (then kill) it on exit."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    grpc_target = ""
    if grpc:
        grpc_port = free_port()
        grpc_target = f"127.0.0.1:{grpc_port}"
        extra_args = [*extra_args, "--grpc-port", str(grpc_port)]
    cmd = [
        sys.executable,
        "-m",
        "interlink",
        "a2a",
        "serve",
        AGENT_TARGET,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--store",
        "memory:",
        *extra_args,
    ]
    with tempfile.NamedTemporaryFile(prefix="a2a-server-", suffix=".log") as stderr_file:
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=stderr_file,
            stderr=stderr_file,
            start_new_session=True,
        )
        server = A2AServer(url=url, proc=proc, stderr_file=stderr_file, grpc=grpc_target)
        try:
            if not card_served(proc, url, STARTUP_TIMEOUT):
                how = (
                    f"exited {proc.returncode} before serving its card"
                    if proc.poll() is not None
                    else f"card not up within {STARTUP_TIMEOUT} s"
                )
                pytest.fail(
                    f"server {how}: {cmd}\n--- server stderr\n{server.stderr_tail()}",
                    pytrace=False,
                )
            yield server
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=STOP_TIMEOUT)


@pytest.fixture(scope="module")
def a2a_server() -> Iterator[A2AServer]:
    """``interlink a2a serve examples/a2a_agent.py:app --store memory:`` on a free port."""
    with serve() as server:
        yield server


@pytest.fixture(scope="module")
def a2a_grpc_server() -> Iterator[A2AServer]:
    """The same, serving gRPC beside HTTP (``--grpc-port``; the card lists both)."""
    with serve(grpc=True) as server:
        yield server


# -- client peers ---------------------------------------------------------------------------


class PeerRunError(AssertionError):
    """A client peer failed; the message has its exit code, output and the server's stderr."""


def peer_cmd(kind: PeerKind) -> list[str]:
    if kind == "py":
        return [sys.executable, str(PEERS / "py_client.py")]
    return [shutil.which("node") or "node", str(PEERS / "js_client.mjs")]


def run_peer(
    kind: PeerKind,
    server: A2AServer,
    scenario: str,
    extra_args: Sequence[str] = (),
    timeout: float = 50,
) -> dict[str, Any]:
    """Run the ``kind`` client peer against ``server``; return the JSON object it printed."""
    cmd = [*peer_cmd(kind), server.url, scenario, *extra_args]
    with subprocess.Popen(
        cmd,
        cwd=ROOT,
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
                f"{kind} peer timed out after {timeout} s: {cmd}\n--- stdout\n{stdout}\n"
                f"--- stderr\n{stderr}\n--- server stderr\n{server.stderr_tail()}"
            ) from None
    if proc.returncode != 0:
        raise PeerRunError(
            f"{kind} peer exited {proc.returncode}: {cmd}\n--- stdout\n{stdout}\n"
            f"--- stderr\n{stderr}\n--- server stderr\n{server.stderr_tail()}"
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
            f"{kind} peer printed no single JSON object ({exc}): {cmd}\n"
            f"--- stdout\n{stdout}\n--- stderr\n{stderr}"
        ) from None
    return result


# -- push notifications ---------------------------------------------------------------------


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class WebhookReceiver:
    """An HTTP server on 127.0.0.1 that records every POST and answers 200."""

    url: str = ""
    deliveries: list[Delivery] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_for(self, predicate: Any, timeout: float = 15.0) -> list[Delivery]:
        """Wait until ``predicate(deliveries)`` is true; return a snapshot of them."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                snapshot = list(self.deliveries)
            if predicate(snapshot) or time.monotonic() > deadline:
                return snapshot
            time.sleep(0.05)


@pytest.fixture
def webhook() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            with receiver.lock:
                receiver.deliveries.append(
                    Delivery(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{httpd.server_address[1]}/hook"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
