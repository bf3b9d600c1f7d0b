"""`interlink bridge a2a` in front of the production ACP agents on npm, offline.

The agents of `tests/check/peers` (about 400 MB installed, so not installed by CI): set
`INTERLINK_CHECK_PRODUCTION=1` after `npm ci --prefix tests/check/peers` to run these.
Each runs with a fresh `HOME` and no API key in its environment: its card must be
served (from its `initialize`), and a message must fail the task with the agent's own
error (`REFUSALS`: -32000 and its words where it says authentication is required), in
bounded time, never hang.
"""

from __future__ import annotations

import os
import re
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
            reason = str(task.status.message.parts[0].text)
            assert re.fullmatch(f"the agent answered {REFUSALS[name]}", reason), reason
            print(f"{name}: card {card.name!r} {card.version}; task failed: {reason}")
