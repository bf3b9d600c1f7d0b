"""The bridge between ACP and A2A: the one package that imports both.

`AcpBridge` serves an ACP agent (a command speaking ACP on stdio) as an A2A agent: an
`AgentExecutor` for `interlink.a2a.create_app`, whose card comes from the agent's
`initialize` (`interlink bridge a2a -- AGENT_CMD` runs it over HTTP).
"""

from interlink.bridge._a2a import AcpBridge, AgentUnavailable
from interlink.bridge._card import agent_card
from interlink.bridge._content import content_part, input_modes, prompt_blocks
from interlink.bridge._permission import KINDS, PermissionPolicy, chosen_option, question_parts

__all__ = [
    "AcpBridge",
    "AgentUnavailable",
    "KINDS",
    "PermissionPolicy",
    "agent_card",
    "chosen_option",
    "content_part",
    "input_modes",
    "prompt_blocks",
    "question_parts",
]
