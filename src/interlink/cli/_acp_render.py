"""What `interlink acp client` writes: a session's updates for a person (`Renderer`:
text inline, thoughts dimmed, tool calls with each status change, plans as a checklist,
diffs as unified diffs), the same as NDJSON for scripts (`JsonLines`: each line the ACP
wire form of what happened), and the JSON-RPC traffic for `--verbose` (`WireLog`: one
line per message, cut at a bounded length).
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Literal, TextIO

if TYPE_CHECKING:
    from interlink.acp import Transcript
    from interlink.acp import schema as s
    from interlink.cli._terminal import Style

__all__ = ["JsonLines", "Renderer", "WireLog"]

_CONTENT_LINES = 12
_DIFF_LINES = 80


_STATUS = {
    "pending": "33",
    "in_progress": "36",
    "completed": "32",
    "failed": "31",
    "cancelled": "33",
}
_PLAN = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}


class Renderer:
    """Writes a session's updates to `out` as they arrive."""

    def __init__(self, out: TextIO, style: Style) -> None:
        from interlink.acp import Transcript

        self.out = out
        self.style = style
        self.turn: Transcript = Transcript()
        self._stream: str | None = None  # the kind of text being streamed inline
        self._line_start = True
        self._plan: list[tuple[str, str]] = []

    def start_turn(self) -> None:
        from interlink.acp import Transcript

        self.turn = Transcript()
        self._plan = []

    def write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self._line_start = text.endswith("\n")

    def line(self, text: str = "") -> None:
        """A line of its own (ending what was streamed inline first)."""
        self.end_line()
        self._stream = None
        self.write(text + "\n")

    def typed(self) -> None:
        """The person ended a line on the terminal, whose echo moved to a new line."""
        self._line_start = True
        self._stream = None

    def end_line(self) -> None:
        if not self._line_start:
            self.write("\n")

    async def on_update(self, notification: s.SessionNotification) -> None:
        self.update(notification.update)

    def update(self, update: object) -> None:
        from interlink.acp import content_text
        from interlink.acp import schema as s

        if isinstance(update, s.AgentMessageChunk | s.AgentThoughtChunk | s.UserMessageChunk):
            kind = type(update).__name__
            if kind != self._stream:
                self.end_line()
                if isinstance(update, s.UserMessageChunk):
                    self.write(self.style("> ", "1"))
            self._stream = kind
            text = content_text(update.content)
            self.write(text if isinstance(update, s.AgentMessageChunk) else self.style.dim(text))
        elif isinstance(update, s.ToolCall | s.ToolCallUpdated):
            self._tool_call(update)  # adds it to the turn itself
            return
        elif isinstance(update, s.Plan):
            self._show_plan(update.entries)
        elif isinstance(update, s.CurrentModeUpdate):
            self.line(self.style.dim(f"mode: {update.current_mode_id}"))
        elif isinstance(update, s.SessionInfoUpdate) and isinstance(update.title, str):
            self.line(self.style.dim(f"title: {update.title}"))
        elif isinstance(update, s.AvailableCommandsUpdate) and update.available_commands:
            names = " ".join(f"/{command.name}" for command in update.available_commands)
            self.line(self.style.dim(f"commands: {names}"))
        self.turn.add(update)

    def _status(self, status: str) -> str:
        return self.style(status, _STATUS.get(status, "0"))

    def _tool_call(self, update: s.ToolCall | s.ToolCallUpdated) -> None:
        from interlink.acp import schema as s

        before = self.turn.tool_calls.get(update.tool_call_id)
        old_status, old_title = (before.status, before.title) if before else (None, None)
        self.turn.add(update)
        call = self.turn.tool_calls[update.tool_call_id]
        title = self.style(call.title or call.id, "1")
        if isinstance(update, s.ToolCall) or old_status is None:
            self.line(f"⏺ {title} … {self._status(call.status)}")
        elif call.status != old_status:
            self.line(f"⏺ {title} … {self._status(old_status)} → {self._status(call.status)}")
        elif call.title != old_title:
            self.line(f"⏺ {title} … {self._status(call.status)}")
        if isinstance(update.content, list):
            for item in update.content:
                self._tool_content(item)

    def _tool_content(self, item: object) -> None:
        from interlink.acp import content_text
        from interlink.acp import schema as s

        if isinstance(item, s.Content):
            lines = content_text(item.content).splitlines()
            for text in lines[:_CONTENT_LINES]:
                self.line(self.style.dim(f"  │ {text}"))
            if len(lines) > _CONTENT_LINES:
                self.line(self.style.dim(f"  │ … {len(lines) - _CONTENT_LINES} more lines"))
        elif isinstance(item, s.Diff):
            old = item.old_text if isinstance(item.old_text, str) else None
            diff = list(
                difflib.unified_diff(
                    (old or "").splitlines(),
                    item.new_text.splitlines(),
                    "/dev/null" if old is None else f"a/{item.path}",
                    f"b/{item.path}",
                    lineterm="",
                )
            )
            for text in diff[:_DIFF_LINES]:
                code = {"+": "32", "-": "31", "@": "36"}.get(text[:1], "0")
                self.line("  " + self.style(text, code))
            if len(diff) > _DIFF_LINES:
                self.line(self.style.dim(f"  … {len(diff) - _DIFF_LINES} more diff lines"))
        elif isinstance(item, s.Terminal):
            self.line(self.style.dim(f"  [terminal {item.terminal_id}]"))

    def _show_plan(self, entries: list[s.PlanEntry]) -> None:
        plan = [(str(entry.status), entry.content) for entry in entries]
        if plan == self._plan:
            return
        self._plan = plan
        self.line(self.style("Plan", "1"))
        for status, content in plan:
            mark = _PLAN.get(status, "[?]")
            self.line(f"  {self.style(mark, _STATUS.get(status, '0'))} {content}")

    def unfinished(self, status: str) -> None:
        """The turn ended, maybe without the agent saying so: mark calls still running."""
        for call in self.turn.tool_calls.values():
            if call.status in ("pending", "in_progress"):
                title = self.style(call.title or call.id, "1")
                self.line(f"⏺ {title} … {self._status(call.status)} → {self._status(status)}")
                call.status = status

    def stop(self, reason: str) -> None:
        if reason == "cancelled":
            self.unfinished("cancelled")
        code = "2" if reason == "end_turn" else "33"
        self.line(self.style(f"── {reason}", code))

    def permission(self, request: s.RequestPermissionRequest) -> None:
        call = self.turn.tool_calls.get(request.tool_call.tool_call_id)
        title = request.tool_call.title
        name = title if isinstance(title, str) else (call.title if call else "a tool call")
        self.line(
            self.style("? ", "1;35") + f"The agent asks permission for {self.style(name, '1')}"
        )
        for number, option in enumerate(request.options, 1):
            self.line(f"  {number}) {option.name} {self.style.dim(f'({option.kind})')}")


class JsonLines:
    """`--json`: one JSON object a line on `out`, each the ACP wire form (camelCase) of
    what happened: a `session/update`'s params (`{"sessionId", "update"}`), a
    `session/request_permission`'s params (`{"sessionId", "toolCall", "options"}`) and
    the answer given (`{"outcome"}`), the end of a turn (the `session/prompt` result,
    `{"stopReason"}`) or its failure (`{"error": {"code", "message", "data"?}}`)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def write(self, value: object) -> None:
        from interlink.acp import encode

        self.out.write(encode(value).decode() + "\n")
        self.out.flush()

    async def on_update(self, notification: s.SessionNotification) -> None:
        self.write(notification)

    def answer(self, option_id: str | None) -> None:
        from interlink.acp import schema as s

        outcome = (
            s.CancelledPermissionOutcome()
            if option_id is None
            else s.SelectedPermissionOutcome(option_id=option_id)
        )
        self.write(s.RequestPermissionResponse(outcome=outcome))


Direction = Literal["recv", "send"]


class WireLog:
    """`--verbose`: each JSON-RPC line in either direction on `out`, `→ ` to the agent and
    `← ` from it, cut after `limit` bytes (saying how long it was). Fed the bytes as they
    are read and written; keeps at most `limit` bytes of a line per direction."""

    def __init__(self, out: TextIO, limit: int = 2000) -> None:
        self.out = out
        self.limit = limit
        self._head = {"recv": bytearray(), "send": bytearray()}
        self._size = {"recv": 0, "send": 0}

    def __call__(self, direction: Direction, data: bytes) -> None:
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            self._keep(direction, data[start:end])
            self._show(direction)
            start = end + 1
        if start < len(data):
            self._keep(direction, data[start:])

    def _keep(self, direction: Direction, piece: bytes) -> None:
        head = self._head[direction]
        head += piece[: max(0, self.limit - len(head))]
        self._size[direction] += len(piece)

    def _show(self, direction: Direction) -> None:
        head, size = self._head[direction], self._size[direction]
        text = bytes(head).decode("utf-8", "replace").rstrip("\r")
        cut = f" … (cut: {size} bytes in all)" if size > len(head) else ""
        arrow = "←" if direction == "recv" else "→"
        self.out.write(f"{arrow} {text}{cut}\n")
        self.out.flush()
        head.clear()
        self._size[direction] = 0
