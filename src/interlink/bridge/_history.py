"""What `bridge acp` makes of an A2A agent's past tasks: the sessions `session/list`
lists (a context each) and the updates `session/load` replays (a task's turn again).

Both read tasks as `ListTasks` gives them (newest first). A context's session info has
the title of its first prompt and the time of its latest status. A task replays as its
turn was told live (`A2AAgentBridge`): the user's messages as `user_message_chunk`s, the
agent's status messages before the last as the ACP updates they carry or as thoughts
(but a question, which a user's message follows, as the agent's message), the artifacts
as `agent_message_chunk`s, then the last status message as a thought when the task
completed (or still works), else (failed, canceled, rejected, a question) as the
agent's message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import cast

import msgspec

from interlink import acp
from interlink.a2a import types as t
from interlink.acp import schema as s
from interlink.bridge._content import part_block

__all__ = ["acp_update", "replay", "said", "session_infos", "text_of", "thoughts"]

_TITLE = 80  # characters of the first prompt a title keeps
_SAID = frozenset(
    {
        t.TaskState.TASK_STATE_FAILED,
        t.TaskState.TASK_STATE_CANCELED,
        t.TaskState.TASK_STATE_REJECTED,
        t.TaskState.TASK_STATE_INPUT_REQUIRED,
        t.TaskState.TASK_STATE_AUTH_REQUIRED,
    }
)


def acp_update(part: t.Part) -> s.SessionUpdate | None:
    """The ACP update a data part holds (`{"sessionUpdate": ...}`), else None."""
    data = part.data
    if not isinstance(data, dict) or not isinstance(data.get("sessionUpdate"), str):
        return None
    try:
        return cast(s.SessionUpdate, acp.convert(s.SessionUpdate, data))
    except Exception:
        return None


def thoughts(parts: Iterable[t.Part]) -> list[s.SessionUpdate]:
    """A status message's parts as the agent at work: ACP updates as themselves, text as
    thoughts (anything else is not told)."""
    updates: list[s.SessionUpdate] = []
    for part in parts:
        update = acp_update(part)
        if update is None and isinstance(part.text, str):
            update = s.AgentThoughtChunk(content=s.TextContent(text=part.text))
        if update is not None:
            updates.append(update)
    return updates


def said(parts: Iterable[t.Part]) -> list[s.SessionUpdate]:
    """Parts as the agent's message, a chunk each."""
    return [s.AgentMessageChunk(content=part_block(p, i)) for i, p in enumerate(parts)]


def replay(task: t.Task) -> list[s.SessionUpdate]:
    """The updates that tell `task`'s turn again (see the module)."""
    last = task.status.message
    history = [m for m in task.history if last is None or m.message_id != last.message_id]
    updates: list[s.SessionUpdate] = []  # (`last` is told at the end, as its state has it)
    for index, message in enumerate(history):
        if message.role == t.Role.ROLE_USER:
            updates += [
                s.UserMessageChunk(content=part_block(p, i)) for i, p in enumerate(message.parts)
            ]
        elif index + 1 < len(history) and history[index + 1].role == t.Role.ROLE_USER:
            updates += said(message.parts)  # a question (the user's follow-up answered it)
        else:
            updates += thoughts(message.parts)
    for artifact in task.artifacts:
        updates += said(artifact.parts)
    if last is not None:
        updates += said(last.parts) if task.status.state in _SAID else thoughts(last.parts)
    return updates


def text_of(message: t.Message) -> str:
    return " ".join(p.text for p in message.parts if isinstance(p.text, str))


def session_infos(tasks: Iterable[t.Task], cwd_of: dict[str, str], cwd: str) -> list[s.SessionInfo]:
    """A session per context of `tasks` (newest first, as `ListTasks` gives them), newest
    first; its cwd from `cwd_of` (the sessions opened here), else `cwd`."""
    latest: dict[str, t.Task] = {}
    first: dict[str, t.Task] = {}
    for task in tasks:
        latest.setdefault(task.context_id, task)
        first[task.context_id] = task  # (the oldest, once all are seen)
    infos = []
    for context_id, task in latest.items():
        prompt = next((m for m in first[context_id].history if m.role == t.Role.ROLE_USER), None)
        title = re.sub(r"\s+", " ", text_of(prompt)).strip() if prompt is not None else ""
        if len(title) > _TITLE:
            title = title[: _TITLE - 1] + "…"
        stamp = task.status.timestamp
        infos.append(
            s.SessionInfo(
                session_id=context_id,
                cwd=cwd_of.get(context_id, cwd),
                title=title or msgspec.UNSET,
                updated_at=msgspec.UNSET if stamp is None else _iso(stamp),
            )
        )
    return infos


def _iso(stamp: datetime) -> str:
    return stamp.astimezone(UTC).isoformat().replace("+00:00", "Z")
