"""The media types a card declares, checked on every send (ContentTypeNotSupported,
-32005): a part of a type the agent does not take is refused (§13.4: agents SHOULD reject
unexpected media types), and so is a send whose `acceptedOutputModes` the agent can
produce none of (a2a.proto: agents SHOULD tailor their output to them).

What the agent takes is the card's `defaultInputModes` and every skill's `inputModes` (a
send names no skill, so any skill's widening counts); what it produces, the output modes
alike. A mode may be a wildcard (`image/*`, `*/*`); parameters (`; charset=utf-8`) and
case are ignored. A text part without a media type is `text/plain`, a data part
`application/json`; a file part without one is not judged. A card that declares no modes
takes and produces anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from msgspec import UnsetType

from interlink.a2a._errors import ContentTypeNotSupported
from interlink.a2a._types import AgentCard, Message, Part

__all__ = ["MediaModes"]


def _base(media_type: str) -> str:
    return media_type.split(";", 1)[0].strip().lower()


def _covers(mode: str, media_type: str) -> bool:
    """`mode` (perhaps a wildcard) takes `media_type`."""
    if mode in ("*", "*/*"):
        return True
    if mode.endswith("/*"):
        return media_type.startswith(mode[:-1])
    return mode == media_type


def _media_type(part: Part) -> str:
    if part.media_type:
        return _base(part.media_type)
    if not isinstance(part.text, UnsetType):
        return "text/plain"
    if not isinstance(part.data, UnsetType):
        return "application/json"
    return ""


class MediaModes:
    """The input and output modes of one card, normalised once."""

    def __init__(self, card: AgentCard) -> None:
        self.inputs = self._modes(card.default_input_modes, (s.input_modes for s in card.skills))
        self.outputs = self._modes(card.default_output_modes, (s.output_modes for s in card.skills))
        #: whether the agent takes each media type seen lately (a few dozen at most)
        self._taken: dict[str, bool] = {}

    @staticmethod
    def _modes(default: Sequence[str], skills: Iterable[Sequence[str]]) -> tuple[str, ...]:
        seen = dict.fromkeys(_base(m) for m in default)
        for modes in skills:
            seen.update(dict.fromkeys(_base(m) for m in modes))
        seen.pop("", None)
        return tuple(seen)

    def check(self, message: Message, accepted_output_modes: Sequence[str]) -> None:
        """Raise ContentTypeNotSupported for the first part the agent does not take, or
        when the agent produces none of `accepted_output_modes`."""
        if self.inputs:
            for index, part in enumerate(message.parts):
                media_type = _media_type(part)
                if media_type and not self._takes(media_type):
                    raise ContentTypeNotSupported(
                        f"message.parts[{index}] is {media_type}; this agent takes "
                        + ", ".join(self.inputs),
                        part=str(index),
                        mediaType=media_type,
                    )
        if not accepted_output_modes:
            return
        accepted = tuple(a for a in (_base(m) for m in accepted_output_modes) if a)
        outputs = self.outputs
        producible = (_covers(a, o) or _covers(o, a) for a in accepted for o in outputs)
        if accepted and outputs and not any(producible):
            raise ContentTypeNotSupported(
                "configuration.acceptedOutputModes: this agent produces only " + ", ".join(outputs),
                acceptedOutputModes=", ".join(accepted),
            )

    def _takes(self, media_type: str) -> bool:
        taken = self._taken.get(media_type)
        if taken is None:
            taken = any(_covers(m, media_type) for m in self.inputs)
            if len(self._taken) >= 64:
                self._taken.clear()
            self._taken[media_type] = taken
        return taken
