"""`interlink acp check` against the production ACP agents on npm, offline.

They are heavy (about 400 MB installed), so they are not installed by CI: set
`INTERLINK_CHECK_PRODUCTION=1` after `npm ci --prefix tests/check/peers` to run these.
Without a network or credentials each starts and answers `initialize`; what needs a model
or a login ends SKIP or FAIL with the agent's own error, and the run always ends.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from tests.check.test_acp_check import check, outcomes

BIN = Path(__file__).resolve().parent / "peers" / "node_modules" / ".bin"
AGENTS = {
    "claude-agent-acp": [str(BIN / "claude-agent-acp")],
    "codex-acp": [str(BIN / "codex-acp")],
    "gemini-cli": [str(BIN / "gemini"), "--experimental-acp"],
}

#: the production agents' tests run when asked (also `tests/bridge`'s)
OPT_IN = pytest.mark.skipif(
    os.environ.get("INTERLINK_CHECK_PRODUCTION") != "1",
    reason="heavy: set INTERLINK_CHECK_PRODUCTION=1 after npm ci --prefix tests/check/peers",
)
pytestmark = [pytest.mark.e2e, pytest.mark.interop, OPT_IN]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(AGENTS))
def test_a_production_agent_is_judged_offline_and_the_run_ends(name: str) -> None:
    if not Path(AGENTS[name][0]).exists():
        pytest.fail(f"{name} is not installed: npm ci --prefix tests/check/peers")
    with tempfile.TemporaryDirectory() as home:  # no login, no config of this machine
        args = ["--jobs", "2", "--env", f"HOME={home}", "--cwd", home, "--prompt", "hello"]
        status, report = check(
            *args, "--slow-prompt", "write an essay", agent=AGENTS[name], wait=560
        )
    seen = outcomes(report)
    assert seen["init.same-version"] == "PASS"
    assert seen["init.response-schema"] == "PASS"
    assert "ERROR" not in seen.values(), [c for c in report["cases"] if c["outcome"] == "ERROR"]
    # none answers invalid JSON: each FAILs JSON-RPC's -32700, a MUST
    assert seen["rpc.parse-error"] == "FAIL"
    assert status == 1
    print(name, report["summary"]["line"], file=sys.stderr)
