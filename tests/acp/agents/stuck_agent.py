"""An agent whose prompt never ends by itself: it says it started, then waits forever;
its `finally` reports on stderr that the wait ended by cancellation."""

from __future__ import annotations

import asyncio
import sys

from interlink.acp import Agent, run_agent
from interlink.acp import schema as s


class StuckAgent(Agent):
    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(session_id="stuck")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        await self.client.send_text(params.session_id, "started")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            sys.stderr.write("prompt handler cancelled\n")
            raise
        finally:
            sys.stderr.write("prompt handler finally\n")
            sys.stderr.flush()
        return s.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    run_agent(StuckAgent())
