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

__all__ = [
    "acp_json",
    "content_part",
    "input_modes",
    "part_block",
    "prompt_blocks",
    "prompt_capabilities",
]

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
    if not isinstance(part.raw, bytes):
        if part.text is _UNSET and part.url is _UNSET and part.data is _UNSET:
            raise ContentTypeNotSupported(f"part {index} is empty", part=str(index))
        return part_block(part, index)
    block = part_block(part, index)
    refused = (isinstance(block, s.ImageContent) and not caps.image) or (
        isinstance(block, s.AudioContent) and not caps.audio
    )
    if refused:  # (bytes all the same: as a resource, where the agent takes those)
        block = _blob(part, index)
    if not isinstance(block, s.EmbeddedResource) or caps.embedded_context:
        return block
    media = part.media_type
    needs = (
        "promptCapabilities.image"
        if media.startswith("image/")
        else "promptCapabilities.audio"
        if media.startswith("audio/")
        else "promptCapabilities.embeddedContext"
    )
    raise ContentTypeNotSupported(
        f"part {index} (file bytes, {media or 'no media type'}): the agent does not take it "
        f"({needs} is off)",
        part=str(index),
        mediaType=media,
    )


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


def prompt_capabilities(modes: Sequence[str]) -> s.PromptCapabilities:
    """What an A2A agent taking these input modes takes in a prompt: images and audio by
    their media types (`*/*` takes all); embedded resources always (their text or bytes
    go as a part of the message)."""
    every = "*/*" in modes
    return s.PromptCapabilities(
        image=every or any(mode.startswith("image/") for mode in modes),
        audio=every or any(mode.startswith("audio/") for mode in modes),
        embedded_context=True,
    )


def part_block(part: t.Part, index: int = 0) -> s.ContentBlock:
    """An A2A part (of an agent's answer) as an ACP content block: text as text, data as a
    text block of its JSON, a URL as a resource link, bytes as an image, audio or blob
    resource by media type."""
    media = part.media_type
    if isinstance(part.text, str):
        return s.TextContent(text=part.text)
    if isinstance(part.url, str):
        name = part.filename or part.url.rstrip("/").rsplit("/", 1)[-1] or part.url
        return s.ResourceLink(uri=part.url, name=name, mime_type=media or _UNSET)
    if isinstance(part.raw, bytes):
        data = base64.b64encode(part.raw).decode("ascii")
        if media.startswith("image/"):
            return s.ImageContent(data=data, mime_type=media)
        if media.startswith("audio/"):
            return s.AudioContent(data=data, mime_type=media)
        return _blob(part, index)
    return s.TextContent(
        text=msgspec.json.encode(None if part.data is _UNSET else part.data).decode()
    )


def _blob(part: t.Part, index: int) -> s.EmbeddedResource:
    """A part's bytes as an embedded blob resource (named by its filename, else its index)."""
    assert isinstance(part.raw, bytes)
    uri = part.filename or f"attachment:part-{index}"
    data = base64.b64encode(part.raw).decode("ascii")
    media = part.media_type or _UNSET
    return s.EmbeddedResource(resource=s.BlobResourceContents(blob=data, uri=uri, mime_type=media))
