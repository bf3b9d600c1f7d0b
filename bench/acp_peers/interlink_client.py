"""The interlink ACP client of the benchmark, written on interlink's ACP API.

`python -m bench.acp_peers.interlink_client [options]` spawns `interlink_agent` with
`spawn_agent` and runs the workload of `bench.acp_peers._measure`; interlink delivers
the `session/prompt` answer only after every `session/update` before it was handled.
"""

from __future__ import annotations

import sys
from contextlib import AsyncExitStack

from bench.acp_peers import _measure
from interlink.acp import AgentProcess, Client, spawn_agent
from interlink.acp import schema as s


class CountingClient(Client):
    def __init__(self) -> None:
        self.handled = 0

    async def session_update(self, params: s.SessionNotification) -> None:
        if isinstance(params.update, s.AgentMessageChunk):
            self.handled += 1


class InterlinkAgent:
    def __init__(self, stack: AsyncExitStack, process: AgentProcess, client: CountingClient):
        self._stack = stack
        self._process = process
        self._client = client
        self._session = ""

    @property
    def pid(self) -> int:
        return self._process.pid

    async def initialize(self) -> None:
        await self._process.agent.initialize()

    async def new_session(self) -> None:
        self._session = (await self._process.agent.new_session(cwd="/")).session_id

    async def prompt(self, text: str) -> int:
        self._client.handled = 0
        await self._process.agent.prompt(self._session, text)
        return self._client.handled

    async def aclose(self) -> None:
        await self._stack.aclose()


async def spawn(updates: int, agent: str) -> InterlinkAgent:
    client = CountingClient()
    stack = AsyncExitStack()
    command = [sys.executable, "-m", agent, "--updates", str(updates)]
    process = await stack.enter_async_context(spawn_agent(command, client))
    return InterlinkAgent(stack, process, client)


if __name__ == "__main__":
    _measure.run(spawn, "bench.acp_peers.interlink_agent")
