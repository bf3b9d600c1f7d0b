"""The example agent behind a bearer token, for `tests/cli/test_a2a_cli.py`:
`interlink a2a serve tests/cli/a2a_auth_app.py:app` (the token is `secret`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from interlink.a2a import AgentExecutor, BearerAuth, create_app
from interlink.a2a import types as t

_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "a2a_agent.py"


def example() -> tuple[AgentExecutor, t.AgentCard]:
    """A fresh executor of the example agent, and its card."""
    spec = importlib.util.spec_from_file_location("_a2a_cli_example_agent", _EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    executor, card = module.ExampleExecutor(), module.card
    assert isinstance(executor, AgentExecutor)
    assert isinstance(card, t.AgentCard)
    return executor, card


_executor, _card = example()
app = create_app(_executor, _card, auth=[BearerAuth({"secret": "me"})])
