"""The agent card of an ACP agent, from its `initialize` answer and its slash commands.

Name, title and version come from `agentInfo` (an agent that sends none is named after
its command); input modes from `promptCapabilities`; one skill for a prompt turn plus
one per slash command the agent announced (`available_commands_update`, per session:
the card lists every command any session announced). Streaming and push are on: the
bridge serves both, whatever the agent.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from interlink.a2a import types as t
from interlink.acp import schema as s
from interlink.bridge._content import input_modes

__all__ = ["agent_card"]

_OUTPUT_MODES = ["text/plain", "application/json"]


def agent_card(
    info: s.InitializeResponse,
    command: Sequence[str],
    commands: Iterable[s.AvailableCommand] = (),
) -> t.AgentCard:
    """The card of the agent that answered `initialize` with `info`."""
    agent = info.agent_info if isinstance(info.agent_info, s.Implementation) else None
    name = agent.name if agent is not None else os.path.basename(command[0])
    title = agent.title if agent is not None and isinstance(agent.title, str) else ""
    version = agent.version if agent is not None else ""
    caps = info.agent_capabilities
    prompt = caps.prompt_capabilities if isinstance(caps, s.AgentCapabilities) else None
    prompt = prompt if isinstance(prompt, s.PromptCapabilities) else None
    who = title or name
    skills = [
        t.AgentSkill(
            id="prompt",
            name=who,
            description=f"A prompt turn of {who}: it answers, and works with the files and "
            "terminals of the conversation's workspace.",
            tags=["acp"],
        )
    ]
    for command_ in commands:
        hint = ""
        if isinstance(command_.input, s.UnstructuredCommandInput):
            hint = f" <{command_.input.hint}>"
        skills.append(
            t.AgentSkill(
                id=f"/{command_.name}",
                name=f"/{command_.name}",
                description=command_.description or f"the agent's /{command_.name} command",
                tags=["acp", "slash-command"],
                examples=[f"/{command_.name}{hint}"],
            )
        )
    return t.AgentCard(
        name=name,
        description=f"{who}: an ACP agent served over A2A by interlink bridge",
        version=version or "0",
        capabilities=t.AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=input_modes(prompt),
        default_output_modes=list(_OUTPUT_MODES),
        skills=skills,
    )
