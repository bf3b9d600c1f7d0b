"""The Python SDK ACP agent of the benchmark: PyPI `agent-client-protocol` 0.12.1.

`python -m bench.acp_peers.python_sdk_agent --updates K` answers `initialize`,
`session/new` and `session/prompt` (K `agent_message_chunk` updates, then `end_turn`)
on stdin/stdout through `acp.run_agent`, as the SDK's examples do.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
from typing import Any

import acp
from acp.schema import (
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
)


class BenchAgent(acp.Agent):
    """Implements what the workload calls. The SDK's `Agent` protocol declares every agent
    method, so mypy calls this class abstract; the SDK routes what is implemented."""

    def __init__(self, updates: int) -> None:
        self._updates = updates
        self._client: acp.Client | None = None
        self._session_ids = (f"sess-{n}" for n in itertools.count(1))

    def on_connect(self, conn: acp.Client) -> None:
        self._client = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(protocol_version=protocol_version)

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        return NewSessionResponse(session_id=next(self._session_ids))

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        assert self._client is not None
        for i in range(self._updates):
            await self._client.session_update(
                session_id, acp.update_agent_message_text(f"chunk {i} ")
            )
        return PromptResponse(stop_reason="end_turn")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--updates", type=int, default=20)
    agent = BenchAgent(parser.parse_args().updates)  # type: ignore[abstract, unused-ignore]  # see BenchAgent
    asyncio.run(acp.run_agent(agent))


if __name__ == "__main__":
    main()
