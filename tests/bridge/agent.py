"""An ACP agent for the bridge's tests, served on stdio: what the example agent does not.

- `--needs-auth`: `session/new` refuses with -32000 until `authenticate` (method `key`);
- `--image`: advertises `promptCapabilities.image` and answers an image prompt with the
  image's media type;
- prompt `commands`: announces two slash commands, then answers `ok`;
- prompt `think`: a thought, then `ok`;
- prompt `refuse` / `max`: stop reason `refusal` / `max_tokens`;
- prompt `die`: says so on stderr and exits with status 3, mid-turn;
- prompt `pid`: answers its process id;
- prompt `ask`: asks permission (`yes` or `no`), answers the option picked;
- prompt `flood`: sends 1.25 MiB of message chunks (20 of 64 KiB) to the session whose
  `ask` waits for its answer, then answers `flooded`;
- prompt `terminal CMD`: runs CMD in a terminal of the client, answers its output;
- anything else: echoed back in one chunk.
"""

from __future__ import annotations

import os
import sys
import uuid

from interlink.acp import Agent, run_agent
from interlink.acp import schema as s
from interlink.jsonrpc import RpcError


class TestAgent(Agent):
    def __init__(self, needs_auth: bool, image: bool) -> None:
        self.needs_auth = needs_auth
        self.image = image
        self.authenticated = False
        self.asking: str | None = None  # the session whose `ask` waits

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        methods: list[s.AuthMethod] = []
        if self.needs_auth:
            methods = [s.AuthMethodAgent(id="key", name="API key")]
        return s.InitializeResponse(
            protocol_version=params.protocol_version,
            agent_capabilities=s.AgentCapabilities(
                prompt_capabilities=s.PromptCapabilities(image=self.image)
            ),
            auth_methods=methods,
            agent_info=s.Implementation(name="bridge-test-agent", title="Bridge test", version="7"),
        )

    async def authenticate(self, params: s.AuthenticateRequest) -> s.AuthenticateResponse:
        if params.method_id != "key":
            raise RpcError(f"no auth method {params.method_id!r}", code=-32602)
        self.authenticated = True
        return s.AuthenticateResponse()

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        if self.needs_auth and not self.authenticated:
            raise RpcError("Authentication required: run `test-agent login` first", code=-32000)
        return s.NewSessionResponse(session_id=f"sess_{uuid.uuid4().hex[:12]}")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        sid = params.session_id
        text = "".join(b.text for b in params.prompt if isinstance(b, s.TextContent))
        images = [b for b in params.prompt if isinstance(b, s.ImageContent)]
        if images:
            await self.client.send_text(sid, f"an image of {images[0].mime_type}")
        elif text == "commands":
            commands = [
                s.AvailableCommand(name="review", description="Review the changes"),
                s.AvailableCommand(
                    name="test",
                    description="Run the tests",
                    input=s.UnstructuredCommandInput(hint="pattern"),
                ),
            ]
            await self.client.session_update(
                sid, s.AvailableCommandsUpdate(available_commands=commands)
            )
            await self.client.send_text(sid, "ok")
        elif text == "think":
            thought = s.AgentThoughtChunk(content=s.TextContent(text="pondering"))
            await self.client.session_update(sid, thought)
            await self.client.send_text(sid, "ok")
        elif text == "refuse":
            return s.PromptResponse(stop_reason="refusal")
        elif text == "max":
            await self.client.send_text(sid, "and so on")
            return s.PromptResponse(stop_reason="max_tokens")
        elif text == "pid":
            await self.client.send_text(sid, str(os.getpid()))
        elif text == "flood" and self.asking is not None:
            for _ in range(20):
                await self.client.send_text(self.asking, "x" * 65536)
            await self.client.send_text(sid, "flooded")
        elif text == "ask":
            self.asking = sid
            answer = await self.client.request_permission(
                sid,
                s.ToolCallUpdate(tool_call_id="call_1", title="Do it", kind="other"),
                [
                    s.PermissionOption(option_id="yes", name="Yes", kind="allow_once"),
                    s.PermissionOption(option_id="no", name="No", kind="reject_once"),
                ],
            )
            self.asking = None
            outcome = answer.outcome
            picked = outcome.option_id if isinstance(outcome, s.SelectedPermissionOutcome) else ""
            await self.client.send_text(sid, picked or "cancelled")
        elif text == "die":
            await self.client.send_text(sid, "going")
            print("dying on purpose", file=sys.stderr, flush=True)
            os._exit(3)
        elif text.startswith("terminal "):
            terminal = await self.client.create_terminal(sid, "sh", ["-c", text[9:]])
            await terminal.wait_for_exit()
            output = await terminal.output()
            await terminal.release()
            await self.client.send_text(sid, output.output)
        else:
            await self.client.send_text(sid, text)
        return s.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    run_agent(TestAgent(needs_auth="--needs-auth" in sys.argv, image="--image" in sys.argv))
