"""`interlink bridge a2a` as the tests run it: a real subprocess on a free loopback port,
known to serve once it printed its `serving on URL` line."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from interlink.a2a import A2AClient

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_AGENT = [sys.executable, str(ROOT / "examples" / "acp_agent.py")]
TEST_AGENT = [sys.executable, str(Path(__file__).with_name("agent.py"))]
START_TIMEOUT = 30.0
_runs = itertools.count()


@dataclass
class Bridge:
    url: str
    proc: asyncio.subprocess.Process
    log: Path

    def stderr(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@contextlib.asynccontextmanager
async def connected(
    tmp: Path, agent: Sequence[str], *options: str, store: str = "memory:"
) -> AsyncIterator[A2AClient]:
    """`bridge(...)`, and interlink's A2A client connected to it."""
    async with (
        bridge(tmp, agent, *options, store=store) as served,
        await A2AClient.connect(served.url) as client,
    ):
        yield client


@contextlib.asynccontextmanager
async def bridge(
    tmp: Path,
    agent: Sequence[str],
    *options: str,
    store: str = "memory:",
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[Bridge]:
    """`interlink bridge a2a --port 0 --store STORE --workspace TMP/ws OPTIONS -- AGENT`
    (in `env`, which the agent inherits, when given)."""
    log = tmp / f"bridge-{next(_runs)}.log"
    command = [
        *(sys.executable, "-m", "interlink", "bridge", "a2a", "--port", "0"),
        *("--store", store, "--workspace", str(tmp / "ws"), "--log-level", "warning"),
        *options,
        "--",
        *agent,
    ]
    with log.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            *command, cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=err, env=env
        )
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(START_TIMEOUT):
            line = (await proc.stdout.readline()).decode()
        assert line.startswith("serving on "), f"no start: {line!r}\n{log.read_text()}"
        yield Bridge(line.split()[-1], proc, log)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except TimeoutError:
                proc.kill()
                await proc.wait()
