"""The bridge between ACP and A2A: the one package that imports both.

`AcpBridge` serves an ACP agent (a command speaking ACP on stdio) as an A2A agent: an
`AgentExecutor` for `interlink.a2a.create_app`, whose card comes from the agent's
`initialize` (`interlink bridge a2a -- AGENT_CMD` runs it over HTTP); `login` logs in to
such an agent (`bridge a2a --login`). `A2AAgentBridge` serves an A2A agent (a URL) as an
ACP agent (`interlink bridge acp URL`, on stdio).
"""

from interlink.bridge._a2a import AcpBridge
from interlink.bridge._acp import A2AAgentBridge
from interlink.bridge._card import agent_card
from interlink.bridge._content import (
    content_part,
    input_modes,
    part_block,
    prompt_blocks,
    prompt_capabilities,
)
from interlink.bridge._login import (
    LoginError,
    LoginMethod,
    choose_login_method,
    login,
    login_hint,
    login_methods,
    offered_login_methods,
)
from interlink.bridge._permission import KINDS, PermissionPolicy, chosen_option, question_parts
from interlink.bridge._pool import AgentUnavailable

__all__ = [
    "A2AAgentBridge",
    "AcpBridge",
    "AgentUnavailable",
    "KINDS",
    "LoginError",
    "LoginMethod",
    "PermissionPolicy",
    "agent_card",
    "choose_login_method",
    "chosen_option",
    "content_part",
    "input_modes",
    "login",
    "login_hint",
    "login_methods",
    "offered_login_methods",
    "part_block",
    "prompt_blocks",
    "prompt_capabilities",
    "question_parts",
]
