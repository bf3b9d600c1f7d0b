"""ACP agent on the official Python SDK (PyPI ``agent-client-protocol==0.12.1``).

Implements interlink's interop *scenario contract* (see README.md next to this file):
``tool <path>`` reads a file through the client after asking permission, ``slow``
streams "working" until cancelled, anything else is echoed back word by word.

Run: ``python py_agent.py`` (speaks ACP v1 on stdin/stdout, logs to stderr).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import os
import re
import sys
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import acp
from acp import schema

AGENT_NAME = "py-sdk-agent"
TOOL_CALL_ID = "call_1"
SLOW_SECONDS = 10.0
SLOW_INTERVAL = 0.5
_WORDS = re.compile(r"\s*\S+\s*|\s+")

T = TypeVar("T")

log = logging.getLogger(AGENT_NAME)


def split_words(text: str) -> list[str]:
    """Split into chunks that keep their spaces, so ``"".join(chunks) == text``."""
    # Leading whitespace goes with the first word, trailing with the last one.
    return _WORDS.findall(text)


@dataclass
class Turn:
    """One running ``session/prompt``; ``cancelled`` is set by ``session/cancel``."""

    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Session:
    cwd: str
    turn: Turn | None = None


class _Cancelled(Exception):
    """The turn was cancelled while waiting for the client."""


class SdkAgent:
    """Duck-typed ``acp.Agent``.

    Not a subclass on purpose: a subclass of the SDK's Protocol class inherits stub
    methods that answer unimplemented requests (``session/load`` ...) with success;
    without them the SDK router answers ``-32601``.
    """

    def __init__(self) -> None:
        self._conn: acp.Client | None = None
        self._sessions: dict[str, Session] = {}
        self._can_read_files = False

    # -- connection -------------------------------------------------------------------

    def on_connect(self, conn: acp.Client) -> None:
        self._conn = conn

    @property
    def conn(self) -> acp.Client:
        if self._conn is None:  # pragma: no cover - the SDK calls on_connect first
            raise RuntimeError("not connected")
        return self._conn

    # -- agent methods ----------------------------------------------------------------
    # The SDK splats any `_meta` keys of the params into **kwargs; they are ignored.

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: schema.ClientCapabilities | None = None,
        client_info: schema.Implementation | None = None,
        **kwargs: Any,
    ) -> schema.InitializeResponse:
        fs = client_capabilities.fs if client_capabilities is not None else None
        self._can_read_files = bool(fs is not None and fs.read_text_file)
        # We speak exactly version 1: answer it whatever was requested (the client
        # decides whether it can continue).
        return schema.InitializeResponse.model_validate(
            {
                "protocolVersion": acp.PROTOCOL_VERSION,
                "agentCapabilities": {"loadSession": False},
                "authMethods": [],
                "agentInfo": {
                    "name": AGENT_NAME,
                    "version": importlib.metadata.version("agent-client-protocol"),
                },
            }
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> schema.NewSessionResponse:
        session_id = f"py-{uuid.uuid4().hex}"
        self._sessions[session_id] = Session(cwd=cwd)
        return schema.NewSessionResponse.model_validate({"sessionId": session_id})

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None and session.turn is not None:
            session.turn.cancelled.set()

    async def prompt(
        self, session_id: str, prompt: list[Any], **kwargs: Any
    ) -> schema.PromptResponse:
        session = self._sessions.get(session_id)
        if session is None:
            raise acp.RequestError(-32002, "Resource not found", {"sessionId": session_id})
        texts = [block.text for block in prompt if isinstance(block, schema.TextContentBlock)]
        first = texts[0] if texts else ""
        turn = Turn()
        session.turn = turn
        try:
            if first.startswith("tool ") and first[5:].strip():
                stop = await self._tool(session_id, session, turn, first[5:].strip())
            elif first.strip() == "slow":
                stop = await self._slow(session_id, turn)
            else:
                for chunk in split_words("".join(texts)):
                    await self._say(session_id, chunk)
                stop = "end_turn"
        finally:
            if session.turn is turn:
                session.turn = None
        return schema.PromptResponse.model_validate({"stopReason": stop})

    # -- scenarios --------------------------------------------------------------------

    async def _say(self, session_id: str, text: str) -> None:
        await self.conn.session_update(session_id, acp.update_agent_message_text(text))

    async def _slow(self, session_id: str, turn: Turn) -> str:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SLOW_SECONDS
        await self._say(session_id, "working")
        while loop.time() < deadline:
            try:
                await asyncio.wait_for(turn.cancelled.wait(), SLOW_INTERVAL)
            except TimeoutError:
                if turn.cancelled.is_set():
                    break
                await self._say(session_id, "working")
            else:
                break
        return "cancelled" if turn.cancelled.is_set() else "end_turn"

    async def _until_cancelled(self, turn: Turn, call: Awaitable[T]) -> T:
        """Await ``call`` unless the turn is cancelled first (then raise ``_Cancelled``)."""
        work = asyncio.ensure_future(call)
        stop = asyncio.ensure_future(turn.cancelled.wait())
        try:
            await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if work.done():
            return work.result()
        work.cancel()
        raise _Cancelled

    async def _tool(self, session_id: str, session: Session, turn: Turn, path: str) -> str:
        title = f"Read {path}"
        await self.conn.session_update(
            session_id,
            acp.start_tool_call(TOOL_CALL_ID, title, kind="read", status="pending"),
        )
        tool_call = schema.ToolCallUpdate.model_validate(
            {"toolCallId": TOOL_CALL_ID, "title": title, "kind": "read", "status": "pending"}
        )
        options = [
            schema.PermissionOption.model_validate(
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"}
            ),
            schema.PermissionOption.model_validate(
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"}
            ),
        ]
        try:
            answer = await self._until_cancelled(
                turn,
                self.conn.request_permission(
                    session_id=session_id, tool_call=tool_call, options=options
                ),
            )
        except _Cancelled:
            return await self._fail_tool(session_id, turn)
        outcome = answer.outcome
        allowed = isinstance(outcome, schema.AllowedOutcome) and outcome.option_id == "allow"
        if not allowed or turn.cancelled.is_set():
            return await self._fail_tool(session_id, turn)
        if not self._can_read_files:
            return await self._fail_tool(session_id, turn, "client cannot read text files")
        try:
            read = await self._until_cancelled(
                turn,
                self.conn.read_text_file(
                    session_id=session_id, path=os.path.join(session.cwd, path)
                ),
            )
        except _Cancelled:
            return await self._fail_tool(session_id, turn)
        except acp.RequestError as exc:
            return await self._fail_tool(session_id, turn, f"{exc.code}: {exc}")
        text = read.content
        await self.conn.session_update(
            session_id,
            acp.update_tool_call(
                TOOL_CALL_ID,
                status="completed",
                content=[acp.tool_content(acp.text_block(text))],
            ),
        )
        await self._say(session_id, f"read {len(text)} characters")
        return "cancelled" if turn.cancelled.is_set() else "end_turn"

    async def _fail_tool(self, session_id: str, turn: Turn, reason: str | None = None) -> str:
        content = [acp.tool_content(acp.text_block(reason))] if reason is not None else None
        await self.conn.session_update(
            session_id, acp.update_tool_call(TOOL_CALL_ID, status="failed", content=content)
        )
        return "cancelled" if turn.cancelled.is_set() else "end_turn"


async def main() -> None:
    # cast: a duck-typed agent does not implement every method of the acp.Agent Protocol.
    await acp.run_agent(cast(acp.Agent, SdkAgent()))


if __name__ == "__main__":
    # stdout carries JSON-RPC only; everything else goes to stderr.
    logging.basicConfig(level=os.environ.get("PEER_LOG_LEVEL", "WARNING"), stream=sys.stderr)
    asyncio.run(main())
