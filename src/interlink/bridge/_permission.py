"""Permission requests across the bridge: the policy that answers some without asking,
the question an A2A client reads, and its answer.

The policy goes by the tool call's kind (`read`, `edit`, `delete`, `move`, `search`,
`execute`, `think`, `fetch`, `switch_mode`, `other`; `terminal` means `execute`): a kind
denied picks the first reject option, a kind allowed (or `allow_all`) the first allow
option; denial wins. Anything else is asked: the task goes to input-required with the
options, and the follow-up message picks one by its option id (a data part
`{"optionId": ...}`, or the id as text), its number (1-based) or its name.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from interlink.a2a import types as t
from interlink.acp import schema as s
from interlink.bridge._content import acp_json

__all__ = ["KINDS", "PermissionPolicy", "chosen_option", "question_parts"]

KINDS = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode"}
    | {"other", "terminal"}
)
_ALIASES = {"terminal": "execute"}
_ALLOW = ("allow_once", "allow_always")
_REJECT = ("reject_once", "reject_always")


def _kinds(names: Collection[str]) -> frozenset[str]:
    unknown = sorted(set(names) - KINDS)
    if unknown:
        raise ValueError(f"unknown tool kind {unknown[0]!r} (one of {', '.join(sorted(KINDS))})")
    return frozenset(_ALIASES.get(name, name) for name in names)


@dataclass(frozen=True)
class PermissionPolicy:
    """Which permission requests are answered without asking the A2A client."""

    allow: frozenset[str] = frozenset()
    deny: frozenset[str] = frozenset()
    allow_all: bool = False

    @classmethod
    def of(
        cls, allow: Collection[str] = (), deny: Collection[str] = (), allow_all: bool = False
    ) -> PermissionPolicy:
        """From tool kinds (ValueError naming one that is not a kind)."""
        return cls(_kinds(allow), _kinds(deny), allow_all)

    def answer(self, request: s.RequestPermissionRequest) -> str | None:
        """The option id to answer with, or None: ask."""
        kind = request.tool_call.kind
        kind = kind if isinstance(kind, str) else "other"
        if kind in self.deny:
            return _first(request.options, _REJECT)
        if self.allow_all or kind in self.allow:
            return _first(request.options, _ALLOW)
        return None


def _first(options: Sequence[s.PermissionOption], kinds: tuple[str, ...]) -> str | None:
    return next((option.option_id for option in options if option.kind in kinds), None)


def question_parts(request: s.RequestPermissionRequest) -> list[t.Part]:
    """The question as an A2A client reads it: a text listing the options by number, and
    a data part with the ACP tool call and the options (ids and kinds)."""
    call = request.tool_call
    title = call.title if isinstance(call.title, str) and call.title else call.tool_call_id
    lines = [f"The agent asks permission: {title}"]
    lines += [
        f"{number}. {option.name} ({option.kind})"
        for number, option in enumerate(request.options, 1)
    ]
    lines.append('Answer with the option\'s number or name, or a data part {"optionId": ...}.')
    data = {
        "permission": {
            "toolCall": acp_json(call),
            "options": [
                {"optionId": o.option_id, "name": o.name, "kind": o.kind} for o in request.options
            ],
        }
    }
    return [t.Part(text="\n".join(lines)), t.Part(data=data, media_type="application/json")]


def chosen_option(
    request: s.RequestPermissionRequest, parts: Sequence[t.Part]
) -> s.PermissionOption | None:
    """The option a follow-up message picks, or None if it picks none of them."""
    by_id = {option.option_id: option for option in request.options}
    for part in parts:
        data = part.data
        if isinstance(data, dict) and isinstance(data.get("optionId"), str):
            return by_id.get(data["optionId"])
    text = "".join(part.text for part in parts if isinstance(part.text, str)).strip()
    if not text:
        return None
    if text in by_id:
        return by_id[text]
    if text.isdigit() and 1 <= int(text) <= len(request.options):
        return request.options[int(text) - 1]
    folded = text.casefold()
    return next((o for o in request.options if o.name.casefold() == folded), None)
