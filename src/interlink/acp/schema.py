"""Every ACP v1 type (generated from the official schema), for `from interlink.acp import
schema as s`: `s.PromptRequest`, `s.AgentMessageChunk`, `s.TextContent`, ..."""

from interlink.acp._schema import *  # noqa: F403
