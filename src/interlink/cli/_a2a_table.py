"""The table of `interlink a2a tasks`: id, state, status time, context, first text.

On a terminal (or with `COLUMNS` set) it fits the width, like the tables of `gh`: times
are relative ("5m ago"), then the text, then the context are cut with an ellipsis, the
context column goes next, and the id is cut only as the last resort (it is the handle
`task` and `cancel` take). Without a width (a pipe) every cell is whole and times are
absolute, for `grep` and `awk`. Widths are terminal columns: an East Asian wide or
fullwidth character takes two, a combining mark none.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from datetime import UTC, datetime

from interlink.a2a import types as t
from interlink.cli._a2a_render import part_text, short_state, state_label
from interlink.cli._terminal import Style

__all__ = ["task_table"]

_HEADER = ("ID", "STATE", "UPDATED", "CONTEXT", "TEXT")
_ID, _STATE, _UPDATED, _CONTEXT, _TEXT = range(5)
_GAP = 2
# (column, width it may shrink to) in the order the table gives room back; 0 drops it
_SHRINK = ((_TEXT, 16), (_CONTEXT, 9), (_TEXT, 6), (_CONTEXT, 0), (_ID, 9), (_TEXT, 0))


def task_table(
    tasks: Iterable[t.Task], style: Style, width: int | None, now: datetime | None = None
) -> list[str]:
    """The lines of the table (see the module); `width` None: no width to fit."""
    now = now or datetime.now(UTC)
    rows = [_row(task, relative=width is not None, now=now) for task in tasks]
    widths = [max(len(_HEADER[i]), *(_columns(row[i]) for row in rows)) for i in range(5)]
    if width is not None:
        widths = _fit(widths, width)
    return [style(_line(_HEADER, widths), "1")] + [_line(row, widths, style) for row in rows]


def _row(task: t.Task, *, relative: bool, now: datetime) -> tuple[str, ...]:
    last = task.status.message or (task.history[-1] if task.history else None)
    first = next((part_text(p) for p in last.parts if part_text(p)), "") if last else ""
    stamp = task.status.timestamp
    if stamp is None:
        when = "-"
    elif relative:
        when = _ago(stamp, now)
    else:
        when = stamp.strftime("%Y-%m-%d %H:%M:%SZ")
    text = " ".join(first.split())
    return (task.id, short_state(task.status.state), when, task.context_id, text)


def _ago(stamp: datetime, now: datetime) -> str:
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    seconds = max(int((now - stamp).total_seconds()), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def _total(widths: list[int]) -> int:
    shown = [w for w in widths if w > 0]
    return sum(shown) + _GAP * (len(shown) - 1)


def _fit(widths: list[int], width: int) -> list[int]:
    widths = list(widths)
    for column, floor in _SHRINK:
        excess = _total(widths) - width
        if excess <= 0:
            break
        if widths[column] > floor:
            widths[column] = max(floor, widths[column] - excess)
    return widths


def _column_width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _columns(text: str) -> int:
    """The terminal columns `text` takes."""
    return sum(_column_width(c) for c in text)


def _cut(text: str, width: int) -> str:
    """`text` in at most `width` columns: cut with an ellipsis when it takes more."""
    if _columns(text) <= width:
        return text
    kept, used = [], 0
    for char in text:
        used += _column_width(char)
        if used > width - 1:
            break
        kept.append(char)
    return "".join(kept) + "…"


def _line(cells: Iterable[str], widths: list[int], style: Style | None = None) -> str:
    """The cells, cut and padded to `widths` (0: left out); `style`: the state coloured."""
    out = []
    for i, (cell, w) in enumerate(zip(cells, widths, strict=True)):
        if w <= 0:
            continue
        text = _cut(cell, w)
        padded = text + " " * (w - _columns(text))
        if i == _STATE and style is not None:
            padded = state_label(text, style) + padded[len(text) :]
        out.append(padded)
    return (" " * _GAP).join(out).rstrip()
