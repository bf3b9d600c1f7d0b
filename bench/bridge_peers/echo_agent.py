"""The bridge bench's ACP agent, on stdio: a prompt is answered with a plan, then its
words echoed back one `agent_message_chunk` each (a word and the space after it), as
the A2A example agent (`examples/a2a_agent.py`) echoes them one artifact chunk each; so
both bridges carry one event per word, and a long prompt is a turn of many events."""

from __future__ import annotations

import re
import uuid

from interlink.acp import Agent, run_agent
from interlink.acp import schema as s

_WORDS = re.compile(r"\S+\s*|\s+")


class EchoAgent(Agent):
    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(
            protocol_version=params.protocol_version,
            agent_info=s.Implementation(name="bench-echo", version="1"),
        )

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(session_id=f"sess_{uuid.uuid4().hex[:12]}")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        text = "".join(b.text for b in params.prompt if isinstance(b, s.TextContent))
        plan = s.Plan(entries=[s.PlanEntry(content="Echo", priority="high", status="completed")])
        await self.client.session_update(params.session_id, plan)
        for word in _WORDS.findall(text.strip()):
            await self.client.send_text(params.session_id, word)
        return s.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    run_agent(EchoAgent())
