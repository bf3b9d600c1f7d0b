"""What `interlink a2a` shows a person: agent cards, tasks and live task streams (the
table of `tasks` is `_a2a_table`).

`Screen` writes to the terminal: inline text, whole lines, a spinner on the line below
the output while the agent works (only when it is enabled, i.e. on a terminal), and a
hold that buffers output while the person answers a question. `TaskView` follows one
task through the events of a stream (or snapshots) and renders each change once: state
changes with the status message, artifact chunks appended inline. Plain ANSI through
`Style` (no colour when it is off).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Final, TextIO

import msgspec

from interlink.a2a import Candidate, Negotiation, StreamPayload
from interlink.a2a import types as t
from interlink.cli._terminal import Style

__all__ = [
    "Screen",
    "TaskView",
    "card_lines",
    "part_text",
    "parts_text",
    "short_state",
    "state_label",
    "task_lines",
]

_STATE_CODES = {
    "completed": "32",
    "failed": "31",
    "rejected": "31",
    "canceled": "33",
    "input-required": "35",
    "auth-required": "35",
    "working": "36",
    "submitted": "2",
}
_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def short_state(state: str) -> str:
    """`TASK_STATE_INPUT_REQUIRED` → `input-required`."""
    return str(state).removeprefix("TASK_STATE_").lower().replace("_", "-") or "unspecified"


def state_label(state: str, style: Style) -> str:
    name = short_state(state)
    return style(name, _STATE_CODES.get(name, "1"))


def _timestamp(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%SZ") if value is not None else "-"


def part_text(part: t.Part) -> str:
    """A part as text: its text, its data as JSON, a file as a short note."""
    kind = part.which_content
    if kind == "text":
        return str(part.text)
    if kind == "data":
        return json.dumps(part.data, ensure_ascii=False)
    if kind == "raw":
        size = len(part.raw) if isinstance(part.raw, bytes) else 0
        media = f", {part.media_type}" if part.media_type else ""
        return f"[file {part.filename or '(unnamed)'}{media}, {size} bytes]"
    if kind == "url":
        return f"[file {part.url}]"
    return ""


def parts_text(parts: Sequence[t.Part], *, joined: bool = False) -> str:
    """The parts' text, a line each; `joined`: text parts run together (streamed chunks
    appended to an artifact become its parts)."""
    out = ""
    for i, part in enumerate(parts):
        text = part_text(part)
        together = joined and part.which_content == "text" and parts[i - 1].which_content == "text"
        out += text if i == 0 or together else "\n" + text
    return out


def _message_text(message: t.Message | None) -> str:
    return parts_text(message.parts) if message is not None else ""


# -- the terminal --------------------------------------------------------------------------


class Screen:
    """Output with an optional spinner line and a hold (see the module)."""

    def __init__(self, out: TextIO, style: Style, *, spinner: bool = False) -> None:
        self.out = out
        self.style = style
        self.spinner = spinner
        self.line_start = True
        self._held: list[str] | None = None
        self._held_start = True
        self._spin_label = ""
        self._spin_since = 0.0
        self._spin_shown = False
        self._frame = 0

    def write(self, text: str) -> None:
        if not text:
            return
        if self._held is not None:
            self._held.append(text)
            self._held_start = text.endswith("\n")
            return
        self._clear_spinner()
        self.out.write(text)
        self.out.flush()
        self.line_start = text.endswith("\n")

    def line(self, text: str = "") -> None:
        """A line of its own (ending what was written inline first)."""
        self.end_line()
        self.write(text + "\n")

    def end_line(self) -> None:
        if not (self._held_start if self._held is not None else self.line_start):
            self.write("\n")

    def typed(self) -> None:
        """The person ended a line on the terminal; its echo moved the cursor down."""
        self.line_start = True

    # -- holding output while a question is asked

    def hold(self) -> None:
        """Buffer output (as if it went on from here) until `release`."""
        self._clear_spinner()
        if self._held is None:
            self._held = []
            self._held_start = self.line_start

    def ask(self, question: str) -> None:
        """A question outside the hold, on a line of its own."""
        held, self._held = self._held, None
        self.end_line()
        self.write(question)
        self._held = held

    def release(self) -> None:
        held, self._held = self._held or [], None
        self.end_line()  # the question's line, if no answer ended it
        for text in held:
            self.write(text)

    # -- the spinner

    def spin(self, label: str) -> None:
        """Show `label` with a spinner until `stop_spin` (only if enabled)."""
        if label != self._spin_label:
            self._spin_since = time.monotonic()
        self._spin_label = label

    def stop_spin(self) -> None:
        self._spin_label = ""
        self._clear_spinner()

    def tick(self) -> None:
        """Redraw the spinner (called about ten times a second)."""
        if not (self.spinner and self._spin_label and self.line_start and self._held is None):
            return
        self._frame = (self._frame + 1) % len(_FRAMES)
        seconds = int(time.monotonic() - self._spin_since)
        frame = self.style(_FRAMES[self._frame], "36")
        self.out.write(f"\r{frame} {self.style.dim(f'{self._spin_label} {seconds}s')}\x1b[K")
        self.out.flush()
        self._spin_shown = True

    def _clear_spinner(self) -> None:
        if self._spin_shown:
            self.out.write("\r\x1b[K")
            self._spin_shown = False


# -- one task, live -----------------------------------------------------------------------


class TaskView:
    """The task a stream is about; `apply` takes each payload and renders what changed."""

    def __init__(self, screen: Screen | None) -> None:
        self.screen = screen  # None: track only (the output is JSON)
        self.task_id = ""
        self.context_id = ""
        self.state = t.TaskState.TASK_STATE_UNSPECIFIED
        self.status_text = ""
        self.message: t.Message | None = None
        self._shown_ids: tuple[str, str] = ("", "")
        self._artifacts: set[str] = set()
        self._inline = ""  # the artifact whose text is being written inline

    def seed(self, task: t.Task) -> None:
        """Know `task` as already shown (its ids, state and artifacts)."""
        self.task_id, self.context_id = task.id, task.context_id
        self._shown_ids = (task.id, task.context_id)
        self.state = task.status.state
        self.status_text = _message_text(task.status.message)
        self._artifacts.update(a.artifact_id for a in task.artifacts)

    def apply(self, payload: StreamPayload) -> None:
        if isinstance(payload, t.Message):
            self.message = payload
            self.context_id = payload.context_id or self.context_id
            self.task_id = payload.task_id or self.task_id
            self._direct(payload)
        elif isinstance(payload, t.Task):
            self._ids(payload.id, payload.context_id)
            for artifact in payload.artifacts:
                if artifact.artifact_id not in self._artifacts:
                    self._artifact(artifact, append=False, last=True)
            self._status(payload.status)
        elif isinstance(payload, t.TaskStatusUpdateEvent):
            self._ids(payload.task_id, payload.context_id)
            self._status(payload.status)
        else:
            self._ids(payload.task_id, payload.context_id)
            self._artifact(payload.artifact, payload.append, payload.last_chunk)

    def _ids(self, task_id: str, context_id: str) -> None:
        self.task_id = task_id or self.task_id
        self.context_id = context_id or self.context_id
        ids = (self.task_id, self.context_id)
        if self.screen is not None and ids != self._shown_ids and self.task_id:
            self._shown_ids = ids
            style = self.screen.style
            self.screen.line(
                style.dim("task ")
                + style(self.task_id, "1")
                + style.dim(" · context ")
                + self.context_id
            )

    def _status(self, status: t.TaskStatus) -> None:
        text = _message_text(status.message)
        changed = status.state != self.state
        new_text = bool(text) and text != self.status_text
        self.state = status.state
        if changed or text:
            self.status_text = text
        if self.screen is None or not (changed or new_text):
            return
        self._inline = ""
        style = self.screen.style
        line = f"{style('●', _STATE_CODES.get(short_state(status.state), '1'))} "
        line += state_label(status.state, style)
        if text:
            line += style.dim(" · ") + text
        self.screen.line(line)

    def _artifact(self, artifact: t.Artifact, append: bool, last: bool) -> None:
        self._artifacts.add(artifact.artifact_id)
        if self.screen is None:
            return
        text = parts_text(artifact.parts, joined=True)
        if not (append and self._inline == artifact.artifact_id):
            name = artifact.name or "artifact"
            self.screen.line(self.screen.style(f"▸ {name}", "1"))
        self.screen.write(text)
        self._inline = artifact.artifact_id
        if last:
            self.screen.end_line()
            self._inline = ""

    def _direct(self, message: t.Message) -> None:
        if self.screen is None:
            return
        self.screen.line(_message_text(message))
        if message.context_id:
            self.screen.line(self.screen.style.dim(f"context {message.context_id}"))


# -- whole documents ------------------------------------------------------------------------


def _scheme_text(scheme: t.SecurityScheme) -> str:
    which = scheme.scheme
    if isinstance(which, t.APIKeySecurityScheme):
        text = f"API key in {which.location or 'header'} {which.name!r}"
    elif isinstance(which, t.HTTPAuthSecurityScheme):
        text = f"HTTP {which.scheme}" + (f" ({which.bearer_format})" if which.bearer_format else "")
    elif isinstance(which, t.OAuth2SecurityScheme):
        text = f"OAuth 2 ({(which.flows.which_flow or 'no flow').replace('_', ' ')})"
    elif isinstance(which, t.OpenIdConnectSecurityScheme):
        text = f"OpenID Connect {which.open_id_connect_url}"
    elif isinstance(which, t.MutualTlsSecurityScheme):
        text = "mutual TLS"
    else:
        text = "unknown scheme"
    description = getattr(which, "description", "")
    return f"{text} — {description}" if description else text


def _flag(value: bool | msgspec.UnsetType) -> bool:
    return value is True


def card_lines(
    card: t.AgentCard, style: Style, negotiation: Negotiation | None = None
) -> list[str]:
    """An agent card, readably; with `negotiation`, what became of each interface."""
    head = style(card.name or "(unnamed agent)", "1")
    lines = [head + (style.dim(f"  v{card.version}") if card.version else "")]
    if card.description:
        lines.append(card.description)
    if card.provider is not None:
        lines.append(style.dim("provider: ") + f"{card.provider.organization} {card.provider.url}")
    if isinstance(card.documentation_url, str):
        lines.append(style.dim("docs: ") + card.documentation_url)
    caps = card.capabilities
    names = [
        name
        for name, on in (
            ("streaming", _flag(caps.streaming)),
            ("push notifications", _flag(caps.push_notifications)),
            ("extended card", _flag(caps.extended_agent_card)),
        )
        if on
    ]
    lines += ["", style("capabilities", "1"), "  " + (", ".join(names) or "none")]
    for ext in caps.extensions:
        required = style(" (required)", "33") if ext.required else ""
        lines.append(
            f"  extension {ext.uri}{required}"
            + (f" — {ext.description}" if ext.description else "")
        )
    modes = f"input {', '.join(card.default_input_modes) or '-'}"
    lines.append(f"  {modes} · output {', '.join(card.default_output_modes) or '-'}")
    lines += ["", style("interfaces", "1")]
    outcomes = {c.index: c for c in negotiation.candidates} if negotiation else {}
    for index, interface in enumerate(card.supported_interfaces):
        tenant = style.dim(f" (tenant {interface.tenant})") if interface.tenant else ""
        lines.append(
            f"  {interface.protocol_binding} {interface.protocol_version}  {interface.url}{tenant}"
        )
        if index in outcomes:
            lines.append(_outcome_line(outcomes[index], style))
    if not card.supported_interfaces:
        lines.append("  none")
    lines += ["", style("skills", "1")]
    for skill in card.skills:
        lines.append(f"  {style(skill.name or skill.id, '1')} {style.dim(f'({skill.id})')}")
        if skill.description:
            lines.append(f"    {skill.description}")
        if skill.tags:
            lines.append(style.dim(f"    tags: {', '.join(skill.tags)}"))
        for example in skill.examples:
            lines.append(f"    e.g. {example}")
    if not card.skills:
        lines.append("  none")
    lines += ["", style("security", "1")]
    for name, scheme in card.security_schemes.items():
        lines.append(f"  {name}: {_scheme_text(scheme)}")
    if not card.security_schemes:
        lines.append("  none: no credentials needed")
    for requirement in card.security_requirements:
        lines.append(style.dim(f"  requires: {' + '.join(requirement.schemes) or 'nothing'}"))
    return lines


_OUTCOME_CODES: Final = {"picked": "32", "failed": "31", "skipped": "2", "not tried": "2"}


def _outcome_line(candidate: Candidate, style: Style) -> str:
    outcome = str(candidate.outcome)
    mark = "→ " if outcome == "picked" else "  "
    return "    " + style(f"{mark}{outcome}", _OUTCOME_CODES[outcome]) + f": {candidate.reason}"


def task_lines(task: t.Task, style: Style) -> list[str]:
    """One task: ids, status, artifacts' text, history."""
    lines = [style.dim("task ") + style(task.id, "1") + style.dim(" · context ") + task.context_id]
    status = f"{style('●', _STATE_CODES.get(short_state(task.status.state), '1'))} "
    status += state_label(task.status.state, style)
    status += style.dim(f"  {_timestamp(task.status.timestamp)}")
    text = _message_text(task.status.message)
    lines.append(status + (style.dim(" · ") + text if text else ""))
    for artifact in task.artifacts:
        lines.append(style(f"▸ {artifact.name or 'artifact'}", "1"))
        lines.extend(parts_text(artifact.parts, joined=True).splitlines() or [""])
    if task.history:
        lines.append(style(f"history ({len(task.history)})", "1"))
        for message in task.history:
            role = "agent" if message.role == t.Role.ROLE_AGENT else "user"
            body = _message_text(message).splitlines() or [""]
            lines.append(f"  {style(f'{role:<5}', '2')} {body[0]}")
            lines.extend(f"        {more}" for more in body[1:])
    return lines
