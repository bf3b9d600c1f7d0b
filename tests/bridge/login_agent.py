"""An ACP agent that wants a login, for `bridge a2a --login`'s tests, served on stdio.

`login_agent.py CREDENTIALS [--internal]`: its sessions open once the file CREDENTIALS
exists (or after `authenticate`); before that `session/new` answers -32000 (with
`--internal`, -32603 "Query closed before response received", as claude-agent-acp
does); a prompt answers -32000 once CREDENTIALS is gone, else echoes the prompt.

- To a client that advertises `clientCapabilities.auth.terminal` it offers the terminal
  method `terminal` (args `--terminal-login`, env `LOGIN_AGENT_TERMINAL=1`), the agent
  method `key` and `env`, of a type ACP v1 does not define; to others, `key` only.
- `key` (authenticate) wants `LOGIN_AGENT_KEY` in its environment (and no file
  CREDENTIALS.revoked), and writes CREDENTIALS with it.
- prompt `die`: exits with status 3.
- `login_agent.py CREDENTIALS --terminal-login`, with `LOGIN_AGENT_TERMINAL=1`: asks
  for a code on stdout, reads it from stdin and writes it to CREDENTIALS, exit 0; no
  code (or no `LOGIN_AGENT_TERMINAL`): exit 4.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

from interlink.acp import Agent, run_agent
from interlink.acp import schema as s
from interlink.jsonrpc import RpcError

TERMINAL = s.AuthMethodTerminal(
    id="terminal",
    name="Log in from the terminal",
    description="asks for a code",
    args=["--terminal-login"],
    env={"LOGIN_AGENT_TERMINAL": "1"},
)
KEY = s.AuthMethodAgent(id="key", name="API key")
#: (a type ACP v1 does not define, as codex-acp offers)
ENV = s.UnknownAuthMethod({"type": "env_var", "id": "env", "name": "Set LOGIN_AGENT_KEY"})


class LoginAgent(Agent):
    def __init__(self, credentials: Path, internal: bool) -> None:
        self.credentials = credentials
        self.internal = internal
        self.authenticated = False

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        caps = params.client_capabilities
        auth = caps.auth if isinstance(caps, s.ClientCapabilities) else None
        terminal = isinstance(auth, s.AuthCapabilities) and auth.terminal
        return s.InitializeResponse(
            protocol_version=params.protocol_version,
            auth_methods=[TERMINAL, KEY, ENV] if terminal else [KEY],
            agent_info=s.Implementation(name="login-test-agent", version="1"),
        )

    async def authenticate(self, params: s.AuthenticateRequest) -> s.AuthenticateResponse:
        if params.method_id != KEY.id:
            raise RpcError(f"no auth method {params.method_id!r}", code=-32602)
        key = os.environ.get("LOGIN_AGENT_KEY")
        if not key:
            raise RpcError("Authentication failed: LOGIN_AGENT_KEY is not set", code=-32000)
        if self.credentials.with_suffix(".revoked").exists():
            raise RpcError("Authentication failed: the key was revoked", code=-32000)
        self.credentials.write_text(key, encoding="utf-8")
        self.authenticated = True
        return s.AuthenticateResponse()

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        if not (self.authenticated or self.credentials.exists()):
            if self.internal:
                raise RpcError("Internal error", code=-32603, data={"details": "Query closed"})
            raise RpcError("Authentication required: not logged in", code=-32000)
        return s.NewSessionResponse(session_id=f"sess_{uuid.uuid4().hex[:12]}")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        if not self.credentials.exists():
            raise RpcError("Authentication required: the login expired", code=-32000)
        text = "".join(b.text for b in params.prompt if isinstance(b, s.TextContent))
        if text == "die":
            os._exit(3)
        await self.client.send_text(params.session_id, text)
        return s.PromptResponse(stop_reason="end_turn")


def terminal_login(credentials: Path) -> int:
    if os.environ.get("LOGIN_AGENT_TERMINAL") != "1":
        print("not run as the terminal method says", file=sys.stderr)
        return 4
    print("code: ", end="", flush=True)
    code = sys.stdin.readline().strip()
    if not code:
        print("no code given", file=sys.stderr)
        return 4
    credentials.write_text(code, encoding="utf-8")
    print("logged in")
    return 0


if __name__ == "__main__":
    where = Path(sys.argv[1])
    if "--terminal-login" in sys.argv:
        sys.exit(terminal_login(where))
    run_agent(LoginAgent(where, internal="--internal" in sys.argv))
