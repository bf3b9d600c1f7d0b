"""A server restarted on the same SQLite file serves everything it acknowledged; tasks
that were running when its process died are failed with a reason. Real processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.a2a.conftest import VERSION
from tests.serving import free_port

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


@contextlib.asynccontextmanager
async def serving(db: Path) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        *[
            sys.executable,
            "-m",
            "interlink",
            "a2a",
            "serve",
            "examples/a2a_agent.py:app",
            "--port",
            str(port),
            "--store",
            f"sqlite:///{db}",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        stderr=asyncio.subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        async with httpx.AsyncClient(timeout=5) as client, asyncio.timeout(30):
            while True:
                try:
                    if (await client.get(url + ".well-known/agent-card.json")).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
        yield url, proc
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def rpc(url: str, method: str, params: object) -> dict[str, object]:
    async with httpx.AsyncClient(timeout=30) as client:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer = (await client.post(url, json=body, headers=VERSION)).json()
    assert "result" in answer, answer
    result = answer["result"]
    assert isinstance(result, dict)
    return result


def send(text: str, **configuration: object) -> dict[str, object]:
    message = {"messageId": text, "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"message": message, "configuration": configuration}


async def test_a_killed_server_restarts_with_everything_it_acknowledged(tmp_path: Path) -> None:
    db = tmp_path / "tasks.db"
    async with serving(db) as (url, proc):
        done = (await rpc(url, "SendMessage", send("echo kept across restarts")))["task"]
        running = (await rpc(url, "SendMessage", send("slow 60", returnImmediately=True)))["task"]
        assert isinstance(done, dict)
        assert isinstance(running, dict)
        os.kill(proc.pid, signal.SIGKILL)
        await asyncio.wait_for(proc.wait(), 10)
    async with serving(db) as (url, _):
        again = await rpc(url, "GetTask", {"id": done["id"]})
        assert again == done
        failed = await rpc(url, "GetTask", {"id": running["id"]})
        status = failed["status"]
        assert isinstance(status, dict)
        assert status["state"] == "TASK_STATE_FAILED"
        assert "server stopped" in str(status["message"])
        listed = await rpc(url, "ListTasks", {})
        assert {task["id"] for task in listed["tasks"]} == {done["id"], running["id"]}  # type: ignore[attr-defined]
