"""The interlink ACP agent of the benchmark, written on interlink's ACP API.

`python -m bench.acp_peers.interlink_agent --updates K` answers `initialize`,
`session/new` and `session/prompt` (K `agent_message_chunk` updates, then `end_turn`)
on stdin/stdout.
"""

from __future__ import annotations

import argparse
import itertools

from interlink.acp import Agent, run_agent
from interlink.acp import schema as s


class BenchAgent(Agent):
    def __init__(self, updates: int) -> None:
        self.updates = updates
        self.session_ids = (f"sess-{n}" for n in itertools.count(1))

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(protocol_version=params.protocol_version)

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(session_id=next(self.session_ids))

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        for i in range(self.updates):
            chunk = s.AgentMessageChunk(content=s.TextContent(text=f"chunk {i} "))
            await self.client.session_update(params.session_id, chunk)
        return s.PromptResponse(stop_reason="end_turn")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--updates", type=int, default=20)
    run_agent(BenchAgent(parser.parse_args().updates))


if __name__ == "__main__":
    main()
