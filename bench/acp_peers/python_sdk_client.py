"""The Python SDK ACP client of the benchmark: PyPI `agent-client-protocol` 0.12.1.

`python -m bench.acp_peers.python_sdk_client [options]` spawns `python_sdk_agent` with
`acp.spawn_agent_process` and runs the workload of `bench.acp_peers._measure`. The
helper would otherwise pass a trimmed environment and pipe the agent's stderr without
ever reading it, so the environment is passed in full and stderr is inherited. The SDK
waits for in-flight `session/update` handlers before `prompt()` returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from typing import Any

import acp
from acp.schema import AgentMessageChunk, ClientCapabilities, FileSystemCapabilities

from bench.acp_peers import _measure

_CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=False, write_text_file=False)
)


class BenchClient(acp.Client):
    """Handles `session/update` only. The SDK's `Client` protocol declares every client
    method, so mypy calls this class abstract; the SDK routes what is implemented."""

    def __init__(self) -> None:
        self.handled = 0

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, AgentMessageChunk):
            self.handled += 1


class PythonSdkAgent:
    def __init__(
        self,
        stack: contextlib.AsyncExitStack,
        conn: acp.Agent,
        process: asyncio.subprocess.Process,
        client: BenchClient,
    ) -> None:
        self._stack = stack
        self._conn = conn
        self._process = process
        self._client = client
        self._session = ""

    @property
    def pid(self) -> int:
        return self._process.pid

    async def initialize(self) -> None:
        await self._conn.initialize(protocol_version=1, client_capabilities=_CAPABILITIES)

    async def new_session(self) -> None:
        self._session = (await self._conn.new_session(cwd="/", mcp_servers=[])).session_id

    async def prompt(self, text: str) -> int:
        self._client.handled = 0
        await self._conn.prompt(session_id=self._session, prompt=[acp.text_block(text)])
        return self._client.handled

    async def aclose(self) -> None:
        await self._stack.aclose()  # closes stdin, waits, then terminates and kills


async def spawn(updates: int, agent: str) -> PythonSdkAgent:
    client = BenchClient()  # type: ignore[abstract, unused-ignore]  # see BenchClient
    stack = contextlib.AsyncExitStack()
    conn, process = await stack.enter_async_context(
        acp.spawn_agent_process(
            client,
            sys.executable,
            "-m",
            agent,
            "--updates",
            str(updates),
            env=dict(os.environ),
            transport_kwargs={"stderr": None},
        )
    )
    return PythonSdkAgent(stack, conn, process, client)


if __name__ == "__main__":
    _measure.run(spawn, "bench.acp_peers.python_sdk_agent")
