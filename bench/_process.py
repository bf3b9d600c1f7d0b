"""A benchmarked server as a process of its own: started in its own process group,
waited for until it listens, measured (CPU time from /proc), stopped with its group."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["ServerProcess", "cpu_seconds", "free_port"]

_ROOT = Path(__file__).resolve().parent.parent
_HOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind((_HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    """User + system CPU of process `pid` (all its threads) so far; 0 once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ServerProcess:
    """`command` run from the repository's root with its output in `log`; a context
    manager that stops it (its whole process group) on exit."""

    def __init__(
        self,
        name: str,
        command: list[str],
        port: int,
        log: Path,
        *,
        env: dict[str, str] | None = None,
        start_timeout: float = 60.0,
        stop_timeout: float = 10.0,
    ) -> None:
        self.name = name
        self.port = port
        self.log = log
        self._timeouts = (start_timeout, stop_timeout)
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                command,
                cwd=_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def ready(self) -> None:
        """Until the server accepts connections; `RuntimeError` if it exits or does not
        listen within the start-up timeout."""
        deadline = time.monotonic() + self._timeouts[0]
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name}: exited at start-up: {self.log_tail()}")
            try:
                _, writer = await asyncio.open_connection(_HOST, self.port)
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.name}: not listening after start-up") from None
                await asyncio.sleep(0.05)
                continue
            writer.close()
            await writer.wait_closed()
            return

    def cpu_seconds(self) -> float:
        """User + system CPU of the server process (all its threads) so far."""
        return cpu_seconds(self.process.pid)

    def stop(self) -> None:
        """SIGTERM to the process group; SIGKILL when it has not exited in time."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(self._timeouts[1])
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def log_tail(self, lines: int = 3) -> str:
        text = self.log.read_text(errors="replace").strip().splitlines()
        return " | ".join(text[-lines:]) or "(no output)"
