"""What crosses the bridge: A2A parts to ACP content blocks, ACP content and updates to
A2A parts.

A message's parts become a prompt, each only as the agent can take it: text and data (a
text block of the JSON) always, a file by URL as a resource link (every ACP agent takes
those), a file's bytes as an image or audio block by its media type when the agent
advertised `promptCapabilities.image` / `.audio`, any other bytes as an embedded blob
resource when it advertised `embeddedContext`. A part it cannot take refuses the whole
message with -32005 naming the part, before anything is sent to the agent.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence

import msgspec

from interlink import acp
from interlink.a2a import ContentTypeNotSupported
from interlink.a2a import types as t
from interlink.acp import schema as s

__all__ = ["acp_json", "content_part", "input_modes", "prompt_blocks"]

_UNSET = msgspec.UNSET
_JSON = "application/json"


def acp_json(value: object) -> object:
    """An ACP object as the JSON value it is on the wire (for a `DataPart`)."""
    return msgspec.json.decode(acp.encode(value))


def input_modes(capabilities: s.PromptCapabilities | None) -> list[str]:
    """The media types an agent with these prompt capabilities takes, as a card lists them."""
    modes = ["text/plain", _JSON]
    if capabilities is not None:
        if capabilities.image:
            modes.append("image/*")
        if capabilities.audio:
            modes.append("audio/*")
        if capabilities.embedded_context:
            modes.append("application/octet-stream")
    return modes


def prompt_blocks(
    parts: Sequence[t.Part], capabilities: s.PromptCapabilities | None
) -> list[s.ContentBlock]:
    """The prompt for a message's parts; -32005 naming the first part the agent cannot take."""
    caps = capabilities or s.PromptCapabilities()
    return [_block(index, part, caps) for index, part in enumerate(parts)]


def _block(index: int, part: t.Part, caps: s.PromptCapabilities) -> s.ContentBlock:
    media = part.media_type
    if isinstance(part.text, str):
        return s.TextContent(text=part.text)
    if part.data is not _UNSET:
        return s.TextContent(text=msgspec.json.encode(part.data).decode())
    if isinstance(part.url, str):
        name = part.filename or part.url.rstrip("/").rsplit("/", 1)[-1] or part.url
        return s.ResourceLink(uri=part.url, name=name, mime_type=media or _UNSET)
    if isinstance(part.raw, bytes):
        data = base64.b64encode(part.raw).decode("ascii")
        if media.startswith("image/") and caps.image:
            return s.ImageContent(data=data, mime_type=media)
        if media.startswith("audio/") and caps.audio:
            return s.AudioContent(data=data, mime_type=media)
        if caps.embedded_context:
            uri = part.filename or f"attachment:part-{index}"
            blob = s.BlobResourceContents(blob=data, uri=uri, mime_type=media or _UNSET)
            return s.EmbeddedResource(resource=blob)
        kind = media or "no media type"
        needs = (
            "promptCapabilities.image"
            if media.startswith("image/")
            else "promptCapabilities.audio"
            if media.startswith("audio/")
            else "promptCapabilities.embeddedContext"
        )
        raise ContentTypeNotSupported(
            f"part {index} (file bytes, {kind}): the agent does not take it ({needs} is off)",
            part=str(index),
            mediaType=media,
        )
    raise ContentTypeNotSupported(f"part {index} is empty", part=str(index))


def content_part(block: object) -> t.Part:
    """An ACP content block (of an agent message) as an A2A part: text as text, images and
    audio as bytes, a resource link as a URL, an embedded resource as its text or bytes;
    anything else as a data part of the ACP object."""
    if isinstance(block, s.TextContent):
        return t.Part(text=block.text)
    if isinstance(block, s.ImageContent | s.AudioContent):
        raw = _decoded(block.data)
        if raw is not None:
            return t.Part(raw=raw, media_type=block.mime_type)
    elif isinstance(block, s.ResourceLink):
        media = block.mime_type if isinstance(block.mime_type, str) else ""
        return t.Part(url=block.uri, filename=block.name, media_type=media)
    elif isinstance(block, s.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, s.TextResourceContents):
            media = resource.mime_type if isinstance(resource.mime_type, str) else ""
            return t.Part(text=resource.text, media_type=media)
        if isinstance(resource, s.BlobResourceContents):
            raw = _decoded(resource.blob)
            if raw is not None:
                media = resource.mime_type if isinstance(resource.mime_type, str) else ""
                return t.Part(raw=raw, media_type=media, filename=resource.uri)
    return t.Part(data=acp_json(block), media_type=_JSON)


def _decoded(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None  # (shown as the ACP object instead)
