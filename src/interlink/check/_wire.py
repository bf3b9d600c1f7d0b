"""An agent under test, spoken to in raw NDJSON: any bytes can be sent, every line read.

`AgentUnderTest` starts the command in its own session (process group), reads stdout
line by line into `messages` (JSON values) and `garbage` (lines that are not JSON-RPC
messages), keeps stderr's tail, and answers the agent's own requests the way a careful
client that advertised nothing would (permission requests by `on_permission`, anything
else -32601). Every wait is bounded by the case's timeout: a silent agent raises
`NoAnswer`, never hangs. `close` ends the whole process group.

Nothing here knows ACP's rules beyond what a client must do to keep a turn going; the
cases judge what was seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from interlink.jsonrpc import DEFAULT_MAX_MESSAGE_SIZE

__all__ = ["AgentUnderTest", "Launch", "NoAnswer", "Message"]

Message = dict[str, object]
PermissionHook = Callable[["AgentUnderTest", Message], Awaitable[None]]

_LINE_LIMIT = DEFAULT_MAX_MESSAGE_SIZE  # an agent's line longer than this is garbage, not a hang
_STDERR_LINES = 40


class NoAnswer(Exception):
    """The agent did not send what was waited for within the timeout."""


@dataclass(frozen=True)
class Launch:
    """How to start the agent: argv, extra environment, working directory."""

    argv: Sequence[str]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None


def is_message(value: object) -> bool:
    """A JSON-RPC 2.0 request, notification or response object (shape only)."""
    if not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
        return False
    if "method" in value:
        return isinstance(value["method"], str)
    return "id" in value and (("result" in value) != ("error" in value))


class AgentUnderTest:
    def __init__(self, launch: Launch, timeout: float) -> None:
        self.launch = launch
        self.timeout = timeout
        self.messages: list[Message] = []
        self.garbage: list[bytes] = []
        self.batches = 0  # lines that were JSON arrays of messages (a batch answer)
        self.stderr: deque[str] = deque(maxlen=_STDERR_LINES)
        self.on_permission: PermissionHook | None = None
        self.unexpected_requests: list[str] = []  # methods the agent asked that we refused
        self._proc: asyncio.subprocess.Process | None = None
        self._changed = asyncio.Condition()
        self._tasks: list[asyncio.Task[None]] = []
        self._next_id = 0
        self.stdout_closed = False

    # -- process -----------------------------------------------------------------------

    async def start(self) -> None:
        env = {**os.environ, **self.launch.env}
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.launch.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.launch.cwd,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise NoAnswer(f"the agent could not be started: {exc}") from exc
        assert self._proc.stdout is not None
        assert self._proc.stderr is not None
        self._tasks.append(asyncio.create_task(self._read_stdout(self._proc.stdout)))
        self._tasks.append(asyncio.create_task(self._read_stderr(self._proc.stderr)))

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.returncode

    def stderr_tail(self, lines: int = 5) -> str:
        tail = list(self.stderr)[-lines:]
        return ("\nstderr: " + "\n        ".join(tail)) if tail else ""

    async def close_stdin(self) -> None:
        if self._proc is not None and self._proc.stdin is not None:
            self._proc.stdin.close()
            with contextlib.suppress(OSError, ConnectionError):
                await self._proc.stdin.wait_closed()

    async def wait_exit(self, within: float) -> int | None:
        """The exit status, or None when the agent is still running after `within` s."""
        assert self._proc is not None
        try:
            return await asyncio.wait_for(self._proc.wait(), within)
        except TimeoutError:
            return None

    async def close(self) -> None:
        """Stdin EOF, a moment to exit, then SIGTERM and SIGKILL to the process group."""
        proc = self._proc
        if proc is None:
            return
        await self.close_stdin()
        if await self.wait_exit(0.5) is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, sig)
                if await self.wait_exit(2.0) is not None:
                    break
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # what the agent left behind in its group
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # -- reading -----------------------------------------------------------------------

    async def _read_stdout(self, stream: asyncio.StreamReader) -> None:
        buffer = bytearray()
        while True:
            chunk = await stream.read(1 << 16)
            if not chunk:
                break
            buffer += chunk
            while (end := buffer.find(b"\n")) >= 0:
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                await self._line(line)
            if len(buffer) > _LINE_LIMIT:
                self.garbage.append(bytes(buffer[:200]) + b"... (over 64 MiB, no newline)")
                buffer.clear()
        if buffer.strip():
            await self._line(bytes(buffer))
        self.stdout_closed = True
        async with self._changed:
            self._changed.notify_all()

    async def _line(self, line: bytes) -> None:
        try:
            value = json.loads(line)
        except ValueError:
            self.garbage.append(line[:200])
            return
        batch = isinstance(value, list) and bool(value) and all(map(is_message, value))
        if not (batch or is_message(value)):
            self.garbage.append(line[:200])
            return
        values = value if batch else [value]
        async with self._changed:
            self.batches += batch
            self.messages.extend(values)
            self._changed.notify_all()
        for message in values:
            if "method" in message and "id" in message:
                self._tasks.append(asyncio.create_task(self._answer_agent_request(message)))

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        while True:
            chunk = await stream.read(1 << 16)
            if not chunk:
                return
            for line in chunk.decode("utf-8", "replace").splitlines():
                if line.strip():
                    self.stderr.append(line[:300])

    async def _answer_agent_request(self, request: Message) -> None:
        method = request["method"]
        if method == "session/request_permission" and self.on_permission is not None:
            await self.on_permission(self, request)
            return
        if method == "session/request_permission":
            await self.respond(request["id"], result={"outcome": reject_outcome(request)})
            return
        self.unexpected_requests.append(str(method))
        error = {"code": -32601, "message": f"method not found: {method} (not advertised)"}
        await self.respond(request["id"], error=error)

    # -- writing -----------------------------------------------------------------------

    async def send_raw(self, data: bytes) -> None:
        assert self._proc is not None
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(data)
            await asyncio.wait_for(self._proc.stdin.drain(), self.timeout)
        except (ConnectionError, TimeoutError) as exc:
            raise NoAnswer(f"the agent stopped reading its stdin ({exc!r})") from exc

    async def send(self, message: object) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        await self.send_raw(line.encode())

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def request(self, method: str, params: object = None, *, id: object = None) -> object:
        """Send a request (params left out when None); the id used."""
        rid = self.new_id() if id is None else id
        message: Message = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return rid

    async def notify(self, method: str, params: object = None) -> None:
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def respond(self, id: object, *, result: object = None, error: object = None) -> None:
        message: Message = {"jsonrpc": "2.0", "id": id}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result
        with contextlib.suppress(NoAnswer):
            await self.send(message)

    # -- waiting -----------------------------------------------------------------------

    async def wait_for(
        self, predicate: Callable[[Message], bool], what: str, within: float | None = None
    ) -> Message:
        """The first message (from the start) that satisfies `predicate`."""
        limit = self.timeout if within is None else within
        seen = 0
        try:
            async with asyncio.timeout(limit):
                async with self._changed:
                    while True:
                        for message in self.messages[seen:]:
                            if predicate(message):
                                return message
                        seen = len(self.messages)
                        if self.stdout_closed:
                            break
                        await self._changed.wait()
        except TimeoutError:
            raise NoAnswer(f"no {what} within {limit:g}s{self.stderr_tail()}") from None
        await self.wait_exit(1.0)  # stdout closed: the exit status, if it comes now
        raise NoAnswer(self._gone(what))

    def _gone(self, what: str) -> str:
        code = self.returncode
        how = f"exited with status {code}" if code is not None else "closed its stdout"
        return f"no {what}: the agent {how}{self.stderr_tail()}"

    async def response(self, id: object, within: float | None = None) -> Message:
        return await self.wait_for(
            lambda m: is_response(m) and same_id(m["id"], id),
            f"answer to request id {id!r}",
            within,
        )

    async def call(self, method: str, params: object = None, *, id: object = None) -> Message:
        """Request and wait for its response (a result or an error)."""
        return await self.response(await self.request(method, params, id=id))

    async def quiet(self, seconds: float) -> None:
        """Let the agent talk for a moment (used only to see what it sends unasked)."""
        await asyncio.sleep(seconds)

    def responses_to(self, id: object) -> list[Message]:
        return [m for m in self.messages if is_response(m) and same_id(m["id"], id)]


def is_response(message: Message) -> bool:
    return "method" not in message and "id" in message


def same_id(a: object, b: object) -> bool:
    """Ids equal and of the same JSON type (1 is not "1", nor true)."""
    return type(a) is type(b) and a == b


def reject_outcome(request: Message) -> Message:
    """A 'reject once' choice when the agent offers one, else the first option, else
    cancelled: what a client that allows nothing answers."""
    params = request.get("params")
    options = params.get("options") if isinstance(params, dict) else None
    if isinstance(options, list):
        kinds = {o.get("kind"): o.get("optionId") for o in options if isinstance(o, dict)}
        for kind in ("reject_once", "reject_always"):
            if isinstance(kinds.get(kind), str):
                return {"outcome": "selected", "optionId": kinds[kind]}
    return {"outcome": "cancelled"}
