"""A badly behaved agent for tests: prints to stdout, floods stderr, dies on request."""

from __future__ import annotations

import logging
import os
import sys

from interlink.acp import Agent, run_agent
from interlink.acp import schema as s


class NoisyAgent(Agent):
    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        print("a stray print that must not reach the protocol stream")
        logging.getLogger("noisy").warning("a log line")
        os.write(1, b"a raw write to fd 1\n")
        return s.InitializeResponse(protocol_version=1)

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(session_id="noisy")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        text = "".join(b.text for b in params.prompt if isinstance(b, s.TextContent))
        if text == "stderr":
            for _ in range(1024):
                sys.stderr.write("x" * 1023 + "\n")
            sys.stderr.flush()
        elif text == "die":
            sys.stderr.write("fatal: the agent gives up\n")
            sys.stderr.flush()
            os._exit(3)
        await self.client.send_text(params.session_id, f"got {len(text)} characters")
        return s.PromptResponse(stop_reason="end_turn")

    async def ext_method(self, method: str, params: object) -> object:
        if method == "_test/env" and isinstance(params, dict):
            return {"value": os.environ.get(str(params.get("name")))}
        return await super().ext_method(method, params)


if __name__ == "__main__":
    run_agent(NoisyAgent())
