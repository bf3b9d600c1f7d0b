"""Processes: an agent served on this process's stdio, and a client's spawned agent.

`run_agent` keeps stdout for JSON-RPC only: the protocol writes to a duplicate of the
original stdout, while file descriptor 1 and `sys.stdout` are pointed at stderr, so a
stray `print()` (or a child process the agent starts) cannot corrupt the stream. EOF on
stdin ends the agent at once: every handler still running is cancelled (a request it
served answers -32800, should the client still read stdout), and `run_agent` returns.

`spawn_agent` starts an agent with the parent's environment (unless told otherwise),
drains its stderr continuously into a bounded ring buffer (optionally forwarding it),
and when the child exits, fails pending requests with `AgentExited`, which carries the
exit code and the stderr tail (also when a grandchild it left behind still holds its
stdout: half a second after the exit, our end of the pipe is closed). Closing is stdin
EOF, wait, terminate, kill. The agent runs in a session of its own, so a terminal's
Ctrl-C reaches the editor only; if the editor dies, the agent's stdin reaches EOF.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Literal

from interlink.acp._agent import Agent, AgentSideConnection
from interlink.aio import ByteReader, ByteWriter, open_stdio
from interlink.jsonrpc import ConnectionClosed, RpcError

if TYPE_CHECKING:  # an agent process never loads the client side
    from interlink.acp._client import Client, ClientSideConnection

__all__ = ["AgentExited", "AgentProcess", "WireTap", "run_agent", "serve_agent", "spawn_agent"]

logger = logging.getLogger("interlink.acp")

#: sees the bytes read from the agent's stdout ("recv") and written to its stdin ("send")
WireTap = Callable[[Literal["recv", "send"], bytes], None]

#: read-ahead of the agent's stdout (the transport pauses at twice it): small, so a
#: connection that stops reading pushes back on the agent at once
_STREAM_LIMIT = 256 * 1024
_SHOWN = 200  # bytes of a line on the agent's stdout that is not JSON-RPC, when reported


async def serve_agent(
    agent: Agent, *, max_message_size: int | None = None, unstable: bool = False
) -> None:
    """Serve `agent` on stdin/stdout until stdin reaches EOF."""
    sys.stdout.flush()
    protocol_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        reader, writer = await open_stdio(stdin_fd=0, stdout_fd=protocol_out)
    finally:
        os.close(protocol_out)
    connection = AgentSideConnection(
        agent, reader, writer, max_message_size=max_message_size, unstable=unstable
    )
    # EOF on stdin: the client is gone, so what still runs is cancelled (and the agent
    # ends at once; DECISIONS.md "EOF on stdin ends the agent cleanly")
    connection.connection.cancel_at_eof = True
    await connection.serve()


def run_agent(agent: Agent, *, max_message_size: int | None = None, unstable: bool = False) -> None:
    """`serve_agent` in a new event loop: the one line an agent's `__main__` needs."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_agent(agent, max_message_size=max_message_size, unstable=unstable))


class AgentExited(ConnectionClosed):
    """The agent process ended while a request was waiting for its answer."""

    def __init__(self, returncode: int | None, stderr_tail: str) -> None:
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        how = "is still running" if returncode is None else f"exited with code {returncode}"
        tail = f"; stderr ends with:\n{stderr_tail}" if stderr_tail else ""
        super().__init__(f"the agent closed its stdout and {how}{tail}")


class _StderrRing:
    """The last `limit` bytes of a stream, read continuously so the child never blocks."""

    def __init__(self, limit: int, forward: Callable[[bytes], None] | None) -> None:
        self.limit = limit
        self.forward = forward
        self.buffer = bytearray()

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            if self.forward is not None:
                try:
                    self.forward(chunk)
                except Exception:  # draining must go on, or the agent blocks on a full pipe
                    logger.exception("forward_stderr failed; the agent's stderr is still kept")
                    self.forward = None
            self.buffer += chunk
            if len(self.buffer) > self.limit:
                del self.buffer[: len(self.buffer) - self.limit]

    def tail(self, lines: int = 20) -> str:
        text = self.buffer.decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])


class _Tap:
    """A wire tap that stops being called once it fails (the traffic must go on)."""

    def __init__(self, tap: WireTap) -> None:
        self.tap: WireTap | None = tap

    def __call__(self, direction: Literal["recv", "send"], data: bytes) -> None:
        if self.tap is not None:
            try:
                self.tap(direction, data)
            except Exception:
                logger.exception("wire_tap failed; it is not called again")
                self.tap = None


class _TappedReader:
    def __init__(self, reader: ByteReader, tap: _Tap) -> None:
        self.reader = reader
        self.tap = tap

    async def read(self, n: int = -1, /) -> bytes:
        data = await self.reader.read(n)
        if data:
            self.tap("recv", data)
        return data


class _TappedWriter:
    def __init__(self, writer: ByteWriter, tap: _Tap) -> None:
        self.writer = writer
        self.tap = tap

    def write(self, data: bytes, /) -> None:
        self.tap("send", data)
        self.writer.write(data)

    async def drain(self) -> None:
        await self.writer.drain()

    def close(self) -> None:
        self.writer.close()

    async def wait_closed(self) -> None:
        await self.writer.wait_closed()


class AgentProcess:
    """A spawned agent: `agent` is the typed connection to it."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        agent: ClientSideConnection,
        stderr: _StderrRing,
    ) -> None:
        self.process = process
        self.agent = agent
        self._stderr = stderr

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def stderr_tail(self, lines: int = 20) -> str:
        return self._stderr.tail(lines)


@asynccontextmanager
async def spawn_agent(
    command: Sequence[str],
    client: Client,
    *,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    forward_stderr: Callable[[bytes], None] | None = None,
    stderr_limit: int = 64 * 1024,
    max_message_size: int | None = None,
    unstable: bool = False,
    start_new_session: bool = True,
    close_timeout: float = 5.0,
    on_bad_output: Callable[[str], None] | None = None,
    wire_tap: WireTap | None = None,
) -> AsyncIterator[AgentProcess]:
    """Start `command` as an ACP agent and connect `client` to it.

    `env` replaces the inherited environment; `extra_env` adds to it.
    The agent runs in its own session (`start_new_session`, on by default), so the
    Ctrl-C or hang-up of the terminal this process runs in does not reach it: a turn is
    cancelled through the protocol, and the agent ends when we close (stdin EOF, then
    terminate) or when this process dies (its stdin reaches EOF).
    A line on the agent's stdout that is not JSON-RPC (a stray print) is answered as the
    protocol says (-32700) and reported, its first 200 bytes with a reminder that stdout
    belongs to the protocol: to `on_bad_output`, or as a warning on the `interlink.acp`
    logger. `wire_tap` sees the traffic as it is read and written, in chunks (not lines).
    """
    from interlink.acp._client import ClientSideConnection

    environment = dict(os.environ if env is None else env)
    environment.update(extra_env or {})
    # The agent's stdout is a pipe of our own, read as a plain pipe: a subprocess
    # transport hands each read on in a callback of its own, a loop iteration per read.
    stdout_fd, child_stdout = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=child_stdout,
            stderr=asyncio.subprocess.PIPE,
            env=environment,
            cwd=cwd,
            limit=_STREAM_LIMIT,
            start_new_session=start_new_session,
        )
    except BaseException:
        os.close(stdout_fd)
        raise
    finally:
        os.close(child_stdout)
    assert process.stdin is not None
    assert process.stderr is not None
    stdout = asyncio.StreamReader(limit=_STREAM_LIMIT)
    stdout_pipe, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stdout), os.fdopen(stdout_fd, "rb", buffering=0)
    )
    ring = _StderrRing(stderr_limit, forward_stderr)
    drain = asyncio.create_task(ring.drain(process.stderr), name="acp-agent-stderr")
    reader: ByteReader = stdout
    writer: ByteWriter = process.stdin
    if wire_tap is not None:
        tap = _Tap(wire_tap)
        reader, writer = _TappedReader(reader, tap), _TappedWriter(writer, tap)
    connection = ClientSideConnection(
        client,
        reader,
        writer,
        max_message_size=max_message_size,
        unstable=unstable,
    )

    async def exited(exc: ConnectionClosed) -> ConnectionClosed:
        await _exited(process, 2.0)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(drain), 1.0)
        return AgentExited(process.returncode, ring.tail())

    connection.closed_error = exited  # type: ignore[method-assign]
    report = on_bad_output or _log_bad_output
    connection.connection.on_invalid_input(
        lambda head, size, error: report(_bad_output_message(head, size, error))
    )
    handle = AgentProcess(process, connection, ring)
    watcher = asyncio.create_task(_end_input_at_exit(process, stdout_pipe), name="acp-agent-exit")
    try:
        async with connection:
            yield handle
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        await _stop(process, close_timeout)
        stdout_pipe.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(drain, 2.0)
        if not drain.done():
            drain.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await drain


def _bad_output_message(head: bytes, size: int, error: RpcError) -> str:
    """What to tell of a line of `size` bytes on the agent's stdout that is not a message."""
    shown = head[:_SHOWN].decode("utf-8", "replace")
    more = f" … ({size} bytes in all)" if size > _SHOWN else ""
    what = f"{error.message} ({error.code})"  # the line itself says more than the parser's reason
    return (
        f"the agent wrote a line on its stdout that is not JSON-RPC ({what}): {shown!r}{more};"
        " its stdout belongs to the protocol, anything else goes to stderr"
    )


def _log_bad_output(message: str) -> None:
    logger.warning("%s", message)


async def _end_input_at_exit(
    process: asyncio.subprocess.Process, stdout: asyncio.BaseTransport, grace: float = 0.5
) -> None:
    """Once the agent itself has exited and `grace` seconds have passed for the reader to
    take what it wrote last, close our end of its stdout: a grandchild that inherited
    the pipe would otherwise keep it open, and every pending request would wait forever
    instead of failing with `AgentExited`."""
    await _exit_of(process)
    await asyncio.sleep(grace)
    if not stdout.is_closing():
        stdout.close()


async def _exit_of(process: asyncio.subprocess.Process) -> None:
    """Until the agent process itself has exited (not its pipes: see `_exited`); on a
    pidfd where the system has them, else by looking now and then."""
    if process.returncode is not None:
        return
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # not Linux 5.3+, or already reaped
        while _running(process):  # noqa: ASYNC110 - nothing else tells it here
            await asyncio.sleep(0.1)
        return
    loop = asyncio.get_running_loop()
    gone: asyncio.Future[None] = loop.create_future()

    def exited() -> None:
        if not gone.done():
            gone.set_result(None)

    loop.add_reader(pidfd, exited)
    try:
        await gone
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


def _running(process: asyncio.subprocess.Process) -> bool:
    return process.returncode is None


async def _exited(process: asyncio.subprocess.Process, within: float) -> bool:
    """Wait up to `within` s for the process itself to exit.

    `Process.wait()` on Python 3.11 also waits until every pipe is closed, which a
    background grandchild holding the agent's stdout or stderr can delay forever; the
    return code is set as soon as the agent itself exits, so that is what we watch.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    delay = 0.001
    while process.returncode is None and loop.time() < deadline:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return process.returncode is not None


async def _stop(process: asyncio.subprocess.Process, grace: float) -> None:
    """stdin EOF has been sent by closing the connection: wait, terminate, kill; then
    close our ends of its pipes (a grandchild may still hold theirs)."""
    if process.stdin is not None and not process.stdin.is_closing():
        process.stdin.close()
    if not await _exited(process, grace):
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        if not await _exited(process, 2.0):
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await _exited(process, 5.0)
    transport = getattr(process, "_transport", None)  # no public way to close the pipes
    if transport is not None:
        transport.close()
