"""An interlink client for the client's backpressure test: spawns the agent given on
the command line, answers its `fs/read_text_file` with 8 KiB of text each, and ends
when the agent does."""

from __future__ import annotations

import asyncio
import sys

from interlink.acp import Client, spawn_agent
from interlink.acp import schema as s

CONTENT = "x" * 8192


class FileClient(Client):
    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        return s.ReadTextFileResponse(content=CONTENT)


async def main(command: list[str]) -> None:
    async with spawn_agent(command, FileClient()) as proc:
        await proc.agent.initialize(
            s.ClientCapabilities(fs=s.FileSystemCapabilities(read_text_file=True))
        )
        await proc.agent.wait_closed()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
