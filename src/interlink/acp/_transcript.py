"""A turn's updates, collected into what a person reads: the agent's text, its thoughts,
tool calls with their latest status, and the plan."""

from __future__ import annotations

from dataclasses import dataclass, field

from interlink.acp import _schema as s

__all__ = ["ToolCallState", "Transcript", "content_text"]


@dataclass
class ToolCallState:
    """A tool call as last reported: `tool_call` then any `tool_call_update`s merged."""

    id: str
    title: str = ""
    kind: str = ""
    status: str = "pending"
    content: list[object] = field(default_factory=list)

    def text(self) -> str:
        parts = []
        for item in self.content:
            if isinstance(item, s.Content):
                parts.append(content_text(item.content))
            elif isinstance(item, s.Diff):
                parts.append(f"diff {item.path}")
            elif isinstance(item, s.Terminal):
                parts.append(f"terminal {item.terminal_id}")
        return "\n".join(p for p in parts if p)


def content_text(block: object) -> str:
    """The text of a content block; a short placeholder for other kinds."""
    if isinstance(block, s.TextContent):
        return block.text
    if isinstance(block, s.ResourceLink):
        return f"[{block.name}]({block.uri})"
    if isinstance(block, s.ImageContent):
        return "[image]"
    if isinstance(block, s.AudioContent):
        return "[audio]"
    if isinstance(block, s.EmbeddedResource):
        return "[resource]"
    return "[unknown content]"


@dataclass
class Transcript:
    """Collects `session/update`s; `render()` gives the turn as plain text."""

    text: str = ""
    thoughts: str = ""
    user_text: str = ""
    tool_calls: dict[str, ToolCallState] = field(default_factory=dict)
    plan: list[s.PlanEntry] = field(default_factory=list)
    updates: list[object] = field(default_factory=list)
    stop_reason: str | None = None

    def add(self, update: object) -> None:
        self.updates.append(update)
        if isinstance(update, s.AgentMessageChunk):
            self.text += content_text(update.content)
        elif isinstance(update, s.AgentThoughtChunk):
            self.thoughts += content_text(update.content)
        elif isinstance(update, s.UserMessageChunk):
            self.user_text += content_text(update.content)
        elif isinstance(update, s.ToolCall):
            self.tool_calls[update.tool_call_id] = ToolCallState(
                id=update.tool_call_id,
                title=update.title,
                kind=_str(update.kind, "other"),
                status=_str(update.status, "pending"),
                content=list(update.content) if isinstance(update.content, list) else [],
            )
        elif isinstance(update, s.ToolCallUpdated):
            call = self.tool_calls.setdefault(
                update.tool_call_id, ToolCallState(id=update.tool_call_id)
            )
            if isinstance(update.title, str):
                call.title = update.title
            if isinstance(update.kind, str):
                call.kind = update.kind
            if isinstance(update.status, str):
                call.status = update.status
            if isinstance(update.content, list):
                call.content = list(update.content)
        elif isinstance(update, s.Plan):
            self.plan = list(update.entries)

    def render(self) -> str:
        lines: list[str] = []
        if self.plan:
            lines.append("Plan:")
            lines += [f"  [{entry.status}] {entry.content}" for entry in self.plan]
        if self.thoughts:
            lines.append(f"Thoughts: {self.thoughts}")
        for call in self.tool_calls.values():
            lines.append(f"Tool call {call.title or call.id} ({call.kind}): {call.status}")
            body = call.text()
            if body:
                lines += [f"  {line}" for line in body.splitlines()]
        if self.text:
            lines.append(self.text)
        if self.stop_reason is not None:
            lines.append(f"[stop: {self.stop_reason}]")
        return "\n".join(lines)


def _str(value: object, default: str) -> str:
    return value if isinstance(value, str) else default
