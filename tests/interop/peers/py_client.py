"""ACP client on the official Python SDK (PyPI ``agent-client-protocol==0.12.1``).

Spawns an agent, runs one interop scenario and prints ONE JSON object on stdout with
what it observed (format in README.md next to this file). Exit 0 on success, also when
the agent answered a step with a JSON-RPC error (recorded as ``"error"``); non-zero with
a message on stderr on any other failure (timeout, crash, bad arguments).

Usage: python py_client.py [--cwd DIR] [--scenario echo|tool|tool-reject|cancel|history|all]
                           [--prompt TEXT] [--session ID] [--step-timeout SECONDS] [--no-fs]
                           -- CMD [ARGS...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata
import json
import logging
import os
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar, cast

import acp
from acp import schema
from pydantic import BaseModel

CLIENT_NAME = "py-sdk-client"
SCENARIOS = ("echo", "tool", "tool-reject", "cancel", "history", "all")
DEFAULT_PROMPTS = {
    "echo": "hello interop world",
    "tool": "tool notes.txt",
    "tool-reject": "tool notes.txt",
    "cancel": "slow",
    "history": "hello again",
}
# asyncio's default StreamReader limit (64 KiB) kills the SDK's reader on a longer line.
STDOUT_LIMIT = 64 * 1024 * 1024

T = TypeVar("T")
Json = dict[str, Any]


class PeerFailure(Exception):
    """Anything that is not a JSON-RPC error answer: exit non-zero."""


class StepError(Exception):
    """The agent answered a step with a JSON-RPC error: record it, exit 0."""

    def __init__(self, method: str, error: acp.RequestError) -> None:
        super().__init__(method)
        self.method = method
        self.error = error


def dump(model: BaseModel) -> Json:
    """A model as it was on the wire, as far as the SDK kept it."""
    data: Json = model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    return data


def with_meta(params: Json, meta: dict[str, Any]) -> Json:
    # The SDK splats `_meta` keys into the handler's **kwargs; put them back.
    if meta:
        params["_meta"] = dict(meta)
    return params


class Recorder:
    """Duck-typed ``acp.Client``: records what the agent sends, answers its requests.

    Not a subclass of ``acp.Client``: the Protocol's stub methods would answer
    unimplemented requests (``fs/write_text_file`` ...) with success.
    """

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.updates: dict[str, list[Json]] = {}
        self.first_update: dict[str, asyncio.Event] = {}
        self.permission_requests: dict[str, list[Json]] = {}
        self.fs_reads: dict[str, list[Json]] = {}
        self.answers: dict[str, str] = {}  # sessionId -> "allow" | "reject"
        self.cancelled: set[str] = set()

    def track(self, session_id: str, answer: str = "allow") -> None:
        self.updates[session_id] = []
        self.first_update[session_id] = asyncio.Event()
        self.permission_requests[session_id] = []
        self.fs_reads[session_id] = []
        self.answers[session_id] = answer

    async def session_update(self, session_id: str, update: BaseModel, **kwargs: Any) -> None:
        # The SDK runs every notification in its own task; record before the first
        # await so the list keeps arrival order.
        self.updates.setdefault(session_id, []).append(dump(update))
        event = self.first_update.get(session_id)
        if event is not None:
            event.set()

    async def request_permission(
        self,
        session_id: str,
        tool_call: schema.ToolCallUpdate,
        options: list[schema.PermissionOption],
        **kwargs: Any,
    ) -> schema.RequestPermissionResponse:
        params = with_meta(
            {
                "sessionId": session_id,
                "toolCall": dump(tool_call),
                "options": [dump(option) for option in options],
            },
            kwargs,
        )
        self.permission_requests.setdefault(session_id, []).append(params)
        wanted = self.answers.get(session_id, "allow")
        chosen = pick_option(options, wanted)
        if session_id in self.cancelled or chosen is None:
            outcome: Json = {"outcome": "cancelled"}
        else:
            outcome = {"outcome": "selected", "optionId": chosen}
        return schema.RequestPermissionResponse.model_validate({"outcome": outcome})

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> schema.ReadTextFileResponse:
        params: Json = {"sessionId": session_id, "path": path}
        if line is not None:
            params["line"] = line
        if limit is not None:
            params["limit"] = limit
        self.fs_reads.setdefault(session_id, []).append(with_meta(params, kwargs))
        text = await asyncio.to_thread(read_under, self.cwd, path, line, limit)
        return schema.ReadTextFileResponse.model_validate({"content": text})


def read_under(root: Path, path: str, line: int | None, limit: int | None) -> str:
    """The text of ``path`` (absolute, inside ``root``), optionally a slice of lines."""
    target = Path(path)
    if not target.is_absolute():
        raise acp.RequestError.invalid_params({"path": path, "reason": "not absolute"})
    resolved = target.resolve()
    if resolved != root and root not in resolved.parents:
        raise acp.RequestError.invalid_params({"path": path, "reason": "outside the cwd"})
    try:
        text = resolved.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise acp.RequestError.resource_not_found(path) from None
    if line is not None or limit is not None:
        lines = text.splitlines(keepends=True)
        start = max((line or 1) - 1, 0)
        end = start + limit if limit is not None else None
        text = "".join(lines[start:end])
    return text


def pick_option(options: list[schema.PermissionOption], wanted: str) -> str | None:
    """Option id for ``wanted`` ("allow"/"reject"): that id, else the first of that kind."""
    ids: list[str] = [option.option_id for option in options]
    kinds: list[str] = [option.kind for option in options]
    if wanted in ids:
        return wanted
    for option_id, kind in zip(ids, kinds, strict=True):
        if kind.startswith(f"{wanted}_"):
            return option_id
    return None


class Runner:
    def __init__(
        self, conn: acp.Agent, recorder: Recorder, cwd: Path, step_timeout: float, fs: bool
    ) -> None:
        self.conn = conn
        self.recorder = recorder
        self.cwd = cwd
        self.step_timeout = step_timeout
        self.fs = fs
        self.header: Json = {}

    async def step(self, method: str, call: Awaitable[T]) -> T:
        try:
            return await asyncio.wait_for(call, self.step_timeout)
        except acp.RequestError as exc:
            raise StepError(method, exc) from exc
        except TimeoutError:
            raise PeerFailure(f"{method}: no answer within {self.step_timeout} s") from None

    async def initialize(self) -> Json:
        capabilities = schema.ClientCapabilities.model_validate(
            {"fs": {"readTextFile": self.fs, "writeTextFile": False}, "terminal": False}
        )
        info = schema.Implementation.model_validate(
            {"name": CLIENT_NAME, "version": importlib.metadata.version("agent-client-protocol")}
        )
        response = await self.step(
            "initialize",
            self.conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=capabilities,
                client_info=info,
            ),
        )
        if response.protocol_version != acp.PROTOCOL_VERSION:
            raise PeerFailure(
                f"agent answered unsupported protocolVersion {response.protocol_version}"
            )
        self.header = {"protocolVersion": response.protocol_version}
        if response.agent_info is not None:
            self.header["agentInfo"] = dump(response.agent_info)
        if response.agent_capabilities is not None:
            self.header["agentCapabilities"] = dump(response.agent_capabilities)
        return dict(self.header)

    async def new_session(self, out: Json, answer: str = "allow") -> str:
        response = await self.step("session/new", self.conn.new_session(cwd=str(self.cwd)))
        session_id: str = response.session_id
        self.recorder.track(session_id, answer)
        out["sessionId"] = session_id
        out["updates"] = self.recorder.updates[session_id]
        return session_id

    def finish(self, out: Json, session_id: str) -> Json:
        updates = self.recorder.updates[session_id]
        out["updates"] = list(updates)
        out["text"] = message_text(updates)
        return out

    async def run(self, scenario: str, prompt: str | None, session: str | None = None) -> Json:
        out: Json = dict(self.header)
        try:
            if scenario == "cancel":
                await self.cancel(out, prompt or DEFAULT_PROMPTS["cancel"])
            elif scenario == "history":
                await self.history(out, prompt or DEFAULT_PROMPTS["history"], session)
            else:
                answer = "reject" if scenario == "tool-reject" else "allow"
                session_id = await self.new_session(out, answer)
                response = await self.step(
                    "session/prompt",
                    self.conn.prompt(
                        session_id=session_id,
                        prompt=[acp.text_block(prompt or DEFAULT_PROMPTS[scenario])],
                    ),
                )
                out["stopReason"] = response.stop_reason
                if scenario != "echo":
                    out["permissionRequests"] = self.recorder.permission_requests[session_id]
                    out["fsReads"] = self.recorder.fs_reads[session_id]
        except StepError as exc:
            record_error(out, exc)
        if "sessionId" in out:
            self.finish(out, out["sessionId"])
        return out

    async def history(self, out: Json, prompt: str, session: str | None) -> None:
        listed = await self.step("session/list", self.conn.list_sessions())
        out["sessions"] = [dump(info) for info in listed.sessions]
        if listed.next_cursor is not None:
            out["nextCursor"] = listed.next_cursor
        session_id = session or (listed.sessions[0].session_id if listed.sessions else "")
        if not session_id:
            raise PeerFailure("session/list listed no session to load")
        self.recorder.track(session_id)
        out["sessionId"] = session_id
        await self.step(
            "session/load", self.conn.load_session(cwd=str(self.cwd), session_id=session_id)
        )
        out["loaded"] = list(self.recorder.updates[session_id])
        self.recorder.track(session_id)  # (what follows: the prompt's)
        response = await self.step(
            "session/prompt",
            self.conn.prompt(session_id=session_id, prompt=[acp.text_block(prompt)]),
        )
        out["stopReason"] = response.stop_reason

    async def cancel(self, out: Json, prompt: str) -> None:
        session_id = await self.new_session(out)
        loop = asyncio.get_running_loop()
        turn = asyncio.ensure_future(
            self.conn.prompt(session_id=session_id, prompt=[acp.text_block(prompt)])
        )
        first = asyncio.ensure_future(self.recorder.first_update[session_id].wait())
        try:
            await asyncio.wait(
                {turn, first}, timeout=self.step_timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            first.cancel()
        if turn.done():  # the turn ended (or failed) before any update arrived
            response = await self.step("session/prompt", turn)
            raise PeerFailure(f"prompt {prompt!r} ended before an update: {response.stop_reason}")
        if not self.recorder.first_update[session_id].is_set():
            turn.cancel()
            raise PeerFailure(f"no session/update within {self.step_timeout} s")
        before = len(self.recorder.updates[session_id])
        self.recorder.cancelled.add(session_id)
        sent = loop.time()
        await self.conn.cancel(session_id=session_id)
        response = await self.step("session/prompt", turn)
        out["stopReason"] = response.stop_reason
        out["updatesBeforeCancel"] = before
        out["updatesAfterCancel"] = len(self.recorder.updates[session_id]) - before
        out["secondsAfterCancel"] = round(loop.time() - sent, 3)


def message_text(updates: list[Json]) -> str:
    return "".join(
        update["content"].get("text", "")
        for update in updates
        if update.get("sessionUpdate") == "agent_message_chunk"
        and update.get("content", {}).get("type") == "text"
    )


def record_error(out: Json, exc: StepError) -> None:
    error = exc.error
    out["error"] = {"code": error.code, "message": str(error), "data": error.data}
    out["errorMethod"] = exc.method


async def run(args: argparse.Namespace, command: list[str]) -> Json:
    cwd: Path = args.cwd
    recorder = Recorder(cwd)
    result: Json = {}
    # Quirks worked around: spawn_agent_process passes only a trimmed environment
    # unless env= is given, and pipes the agent's stderr without ever reading it
    # (the agent blocks once the pipe fills) -> inherit our stderr instead.
    async with acp.spawn_agent_process(
        cast(acp.Client, recorder),
        command[0],
        *command[1:],
        env=dict(os.environ),
        transport_kwargs={"stderr": None, "limit": STDOUT_LIMIT},
    ) as (conn, process):
        runner = Runner(cast(acp.Agent, conn), recorder, cwd, args.step_timeout, not args.no_fs)
        try:
            result = await runner.initialize()
        except StepError as exc:
            record_error(result, exc)
        else:
            if args.scenario == "all":
                for name in ("echo", "tool", "cancel"):
                    result[name] = await runner.run(name, None)
            else:
                result.update(await runner.run(args.scenario, args.prompt, args.session))
    result["agentExitCode"] = process.returncode
    return result


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="py_client.py", usage="%(prog)s [options] -- AGENT_CMD [ARGS...]"
    )
    parser.add_argument("--cwd", default=os.getcwd(), help="session cwd (default: current dir)")
    parser.add_argument("--scenario", choices=SCENARIOS, default="echo")
    parser.add_argument("--prompt", default=None, help="override the scenario's prompt text")
    parser.add_argument("--session", default=None, help="history: the session to load")
    parser.add_argument("--step-timeout", type=float, default=20.0, help="seconds per step")
    parser.add_argument("--no-fs", action="store_true", help="advertise fs.readTextFile false")
    if "--" not in argv:
        parser.error("missing '-- AGENT_CMD [ARGS...]'")
    split = argv.index("--")
    command = argv[split + 1 :]
    if not command:
        parser.error("empty agent command after '--'")
    return parser.parse_args(argv[:split]), command


def main(argv: list[str]) -> int:
    logging.basicConfig(level=os.environ.get("PEER_LOG_LEVEL", "WARNING"), stream=sys.stderr)
    args, command = parse_args(argv)
    args.cwd = Path(args.cwd).resolve()  # cwd given to the agent, root of fs reads
    try:
        result = asyncio.run(run(args, command))
    except (PeerFailure, ConnectionError, OSError) as exc:
        print(f"{CLIENT_NAME}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    with contextlib.suppress(BrokenPipeError):
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
