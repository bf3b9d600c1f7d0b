"""`interlink bridge a2a` in front of the production ACP agents on npm, offline.

The agents of `tests/check/peers` (about 400 MB installed, so not installed by CI): set
`INTERLINK_CHECK_PRODUCTION=1` after `npm ci --prefix tests/check/peers` to run these.
Each runs with a fresh `HOME` and no API key in its environment: its card must be
served (from its `initialize`), and a message must fail the task with the agent's own
error (`REFUSALS`: -32000 and its words where it says authentication is required), in
bounded time, never hang, and a line on how to log in (`HINTS`). `--login --list` lists
the login methods each offers a client that runs terminal logins (`LOGINS`); no login
is run (it would want the network).
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

import pytest

from interlink.a2a import A2AClient
from interlink.a2a import types as t
from tests.bridge.conftest import bridge
from tests.check.test_production_agents import AGENTS, OPT_IN

pytestmark = [pytest.mark.e2e, pytest.mark.interop, OPT_IN]

#: what each agent's card is named (its `agentInfo.name`)
NAMES = {
    "claude-agent-acp": "claude",
    "codex-acp": "codex",
    "gemini-cli": "gemini",
}
#: how each fails a message without a login, in its own words: codex and gemini answer
#: -32000 (authentication required); claude-agent-acp offers no auth method to a client
#: without terminal auth and fails `session/new` with -32603, its Claude Code process
#: having quit (it says "Not logged in" to the SDK, which does not pass it on)
REFUSALS = {
    "claude-agent-acp": r"-32603: Internal error \(Query closed before response received\)",
    "codex-acp": r"-32000: Authentication required",
    "gemini-cli": r"-32000: Gemini API key is missing or not configured\.",
}
#: how the hint after the refusal starts: claude-agent-acp offers the bridge no method
#: (its terminal one only to a client that advertises terminal logins, as `--login` does)
HINTS = {
    "claude-agent-acp": "hint: if the agent wants a login, run ",
    "codex-acp": "hint: to log in, run ",
    "gemini-cli": "hint: to log in, run ",
}
#: the first line `--login --list` prints (ID, type, name, description)
LOGINS = {
    "claude-agent-acp": "claude-login\tterminal\tLog in with Claude — Run `claude /login` in "
    "the terminal",
    "codex-acp": "codex-api-key\tenv_var\tUse CODEX_API_KEY — Requires setting the "
    "`CODEX_API_KEY` environment variable.",
    "gemini-cli": "oauth-personal\tagent\tLog in with Google — Log in with your Google account",
}
#: the credentials an agent would find in this machine's environment
_KEYS = re.compile(r"(API_KEY|TOKEN|SECRET|CREDENTIALS|ANTHROPIC|OPENAI|GEMINI|GOOGLE|CODEX)")


def offline_env(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not _KEYS.search(k)}
    return {**env, "HOME": home, "XDG_CONFIG_HOME": f"{home}/.config", "NO_BROWSER": "1"}


@pytest.fixture(params=sorted(AGENTS))
def name(request: pytest.FixtureRequest) -> str:
    """The agent's name, once it is installed."""
    agent: str = request.param
    if not Path(AGENTS[agent][0]).exists():
        pytest.fail(f"{agent} is not installed: npm ci --prefix tests/check/peers")
    return agent


@pytest.mark.timeout(300)
async def test_a_production_agent_behind_the_bridge_fails_with_its_auth_error(
    name: str, tmp_path: Path
) -> None:
    with tempfile.TemporaryDirectory() as home:  # no login, no config of this machine
        async with (
            bridge(tmp_path, AGENTS[name], env=offline_env(home)) as served,
            await A2AClient.connect(served.url, timeout=120) as client,
        ):
            card = client.card
            assert NAMES[name] in card.name.lower()
            assert card.capabilities.streaming is True
            task = await client.send_message("hello")
            assert isinstance(task, t.Task)
            assert task.status.state == t.TaskState.TASK_STATE_FAILED, task.status
            assert task.status.message is not None
            reason, hint = str(task.status.message.parts[0].text).splitlines()
            assert re.fullmatch(f"the agent answered {REFUSALS[name]}", reason), reason
            login = f"`interlink bridge a2a --login [METHOD_ID] -- {shlex.join(AGENTS[name])}`"
            assert hint.startswith(HINTS[name] + login), hint
            assert "or serve with --auth METHOD_ID" in hint
            print(f"{name}: card {card.name!r} {card.version}; task failed: {reason}\n{hint}")


@pytest.mark.timeout(120)
async def test_a_production_agent_lists_its_login_methods(name: str) -> None:
    with tempfile.TemporaryDirectory() as home:
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "interlink", "bridge", "a2a", "--login", "--list"),
            *("--", *AGENTS[name]),
            cwd=home,
            env=offline_env(home),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,  # (their start-up chatter)
        )
        async with asyncio.timeout(100):
            out, _ = await proc.communicate()
    assert proc.returncode == 0
    lines = out.decode().splitlines()
    assert lines[0] == LOGINS[name], lines
    print(f"{name} --login --list:", *lines, sep="\n  ")
