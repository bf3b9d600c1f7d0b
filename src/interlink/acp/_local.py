"""`LocalClient`: a `Client` that serves, for real, what an editor serves: text files under
one root directory, terminals as local subprocesses, permission questions and session
updates through callbacks.

Invariants:

- a file path must be absolute and, after resolving `..` and symlinks, lie under the
  root; anything else is refused with -32602 before the file system is touched. The
  last path component is opened without following symlinks, so a link swapped in after
  the check is refused too (a swap of an intermediate directory is not guarded against);
- a missing file is -32002 with `data.uri` and `data.path`;
- a terminal is a process in its own session (so the person's Ctrl-C never reaches it),
  its stdout and stderr captured together; with `outputByteLimit` only the tail is kept,
  cut at a UTF-8 character boundary. Kill and release kill its whole process group;
  `aclose()` kills every terminal. A terminal id is only valid in its own session;
- the default permission policy is safe: it picks the first reject option, else answers
  cancelled. It never allows.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import errno
import itertools
import os
import shutil
import signal
import stat
import subprocess
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import cast

from interlink.acp import _schema as s
from interlink.acp._client import Client
from interlink.jsonrpc import InvalidParams, ResourceNotFound

__all__ = [
    "LocalClient",
    "PermissionPolicy",
    "UpdateHandler",
    "allow_first",
    "reject_first",
]

#: answers a permission request with the chosen option id, or None for "cancelled"
PermissionPolicy = Callable[[s.RequestPermissionRequest], Awaitable[str | None]]
#: receives every `session/update`, in order
UpdateHandler = Callable[[s.SessionNotification], Awaitable[None]]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# After the process exits, how long a grandchild that still holds the output pipe may keep
# the exit status from being reported.
_DRAIN_GRACE = 1.0


async def reject_first(request: s.RequestPermissionRequest) -> str | None:
    """The safe default: the first reject option, else cancelled."""
    for option in request.options:
        if option.kind in ("reject_once", "reject_always"):
            return option.option_id
    return None


async def allow_first(request: s.RequestPermissionRequest) -> str | None:
    """Allow without asking: the first allow option, else the first reject option."""
    for option in request.options:
        if option.kind in ("allow_once", "allow_always"):
            return option.option_id
    return await reject_first(request)


async def _ignore_update(notification: s.SessionNotification) -> None:
    return None


def _invalid(detail: str, **data: object) -> InvalidParams:
    return InvalidParams(data={"detail": detail, **data})


class _Terminal(asyncio.SubprocessProtocol):
    """One terminal's process. A protocol rather than streams and `wait()`: output arrives
    by callback, and the exit is seen when the process exits even while a background
    grandchild still holds the output pipe (where `Process.wait()` would block)."""

    def __init__(self, session_id: str, limit: int | None) -> None:
        self.session_id = session_id
        self.limit = limit
        self.output = bytearray()
        self.truncated = False
        self.exit_status: s.TerminalExitStatus | None = None
        self.exited = asyncio.Event()
        self.transport: asyncio.SubprocessTransport | None = None
        self._output_open = True
        self._returncode: int | None = None
        self._grace: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (cast, not isinstance: uvloop's transport does not subclass asyncio's)
        self.transport = cast(asyncio.SubprocessTransport, transport)

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.output += data.encode() if isinstance(data, str) else data
        if self.limit is not None and len(self.output) > self.limit:
            del self.output[: len(self.output) - self.limit]
            while self.output and self.output[0] & 0xC0 == 0x80:  # a continuation byte
                del self.output[0]
            self.truncated = True

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._output_open = False
        if self._returncode is not None:
            self._finish()

    def process_exited(self) -> None:
        assert self.transport is not None
        self._returncode = self.transport.get_returncode()
        if not self._output_open:
            self._finish()
        else:  # let the last output arrive, but not wait on whoever else holds the pipe
            self._grace = asyncio.get_running_loop().call_later(_DRAIN_GRACE, self._finish)

    def _finish(self) -> None:
        if self._grace is not None:
            self._grace.cancel()
        if self.exited.is_set() or self._returncode is None:
            return
        code = self._returncode
        if code >= 0:
            self.exit_status = s.TerminalExitStatus(exit_code=code, signal=None)
        else:
            self.exit_status = s.TerminalExitStatus(exit_code=None, signal=_signal_name(-code))
        self.exited.set()

    def text(self) -> str:
        # While the process runs, an incomplete last character is held back.
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        return decoder.decode(bytes(self.output), final=self.exit_status is not None)

    def kill(self) -> None:
        """SIGKILL to the whole process group (the group outlives a reaped leader while
        any member lives, so its id cannot have been reused)."""
        assert self.transport is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.transport.get_pid(), signal.SIGKILL)

    async def finish(self) -> None:
        """After `kill()`: wait for the exit, then close the pipes."""
        await self.exited.wait()
        assert self.transport is not None
        self.transport.close()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


class LocalClient(Client):
    """Serves `fs/*` under `root` (default `cwd`), `terminal/*` with local processes,
    permission through `ask_permission` and updates through `on_update`.

    Advertise `capabilities()` in `initialize`. Use as `async with` (or call `aclose()`)
    so that no terminal outlives the client.
    """

    def __init__(
        self,
        cwd: str | os.PathLike[str],
        *,
        root: str | os.PathLike[str] | None = None,
        ask_permission: PermissionPolicy = reject_first,
        on_update: UpdateHandler = _ignore_update,
    ) -> None:
        self.cwd = Path(cwd).resolve(strict=True)
        self.root = Path(self.cwd if root is None else root).resolve(strict=True)
        if not self.root.is_dir():
            raise NotADirectoryError(str(self.root))
        self.ask_permission = ask_permission
        self.on_update = on_update
        self._terminals: dict[str, _Terminal] = {}

    @staticmethod
    def capabilities() -> s.ClientCapabilities:
        """What this client serves: text files (read and write) and terminals."""
        return s.ClientCapabilities(
            fs=s.FileSystemCapabilities(read_text_file=True, write_text_file=True),
            terminal=True,
        )

    async def __aenter__(self) -> LocalClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Kill every terminal and wait for it."""
        terminals = list(self._terminals.values())
        self._terminals.clear()
        for terminal in terminals:
            terminal.kill()
        await asyncio.gather(*(terminal.finish() for terminal in terminals))

    # -- updates and permission ----------------------------------------------------------

    async def session_update(self, params: s.SessionNotification) -> None:
        await self.on_update(params)

    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        choice = await self.ask_permission(params)
        if choice is None:
            return s.RequestPermissionResponse(outcome=s.CancelledPermissionOutcome())
        if choice not in {option.option_id for option in params.options}:
            raise ValueError(f"the permission policy chose {choice!r}, which was not offered")
        return s.RequestPermissionResponse(outcome=s.SelectedPermissionOutcome(option_id=choice))

    # -- files ---------------------------------------------------------------------------

    def confine(self, path: str) -> Path:
        """`path` resolved, if it is absolute and under the root; else -32602."""
        if not os.path.isabs(path):
            raise _invalid(f"the path must be absolute: {path!r}", path=path)
        try:
            resolved = Path(path).resolve()
        except (OSError, RuntimeError, ValueError) as exc:
            raise _invalid(f"cannot resolve {path!r}: {exc}", path=path) from None
        if not resolved.is_relative_to(self.root):
            raise _invalid(f"{path} is outside the allowed root {self.root}", path=path)
        return resolved

    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        path = self.confine(params.path)
        line = params.line if isinstance(params.line, int) else None
        limit = params.limit if isinstance(params.limit, int) else None
        if line is not None and line < 1:
            raise _invalid(f"line is 1-based, got {line}", path=params.path)
        try:
            content = await asyncio.to_thread(_read, path, line, limit)
        except FileNotFoundError:
            raise ResourceNotFound(
                f"no such file: {params.path}", {"uri": path.as_uri(), "path": params.path}
            ) from None
        except UnicodeDecodeError:
            raise _invalid(f"{params.path} is not UTF-8 text", path=params.path) from None
        except OSError as exc:
            raise _invalid(f"cannot read {params.path}: {exc.strerror}", path=params.path) from None
        return s.ReadTextFileResponse(content=content)

    async def write_text_file(self, params: s.WriteTextFileRequest) -> s.WriteTextFileResponse:
        path = self.confine(params.path)
        try:
            await asyncio.to_thread(_write, path, params.content)
        except OSError as exc:
            raise _invalid(
                f"cannot write {params.path}: {exc.strerror}", path=params.path
            ) from None
        return s.WriteTextFileResponse()

    # -- terminals -----------------------------------------------------------------------

    def _terminal(self, session_id: str, terminal_id: str) -> _Terminal:
        terminal = self._terminals.get(terminal_id)
        if terminal is None or terminal.session_id != session_id:
            raise ResourceNotFound(
                f"no terminal {terminal_id!r} in this session", {"terminalId": terminal_id}
            )
        return terminal

    def _argv(self, params: s.CreateTerminalRequest, cwd: Path) -> list[str]:
        args = params.args if isinstance(params.args, list) else []
        command = params.command
        if args or not any(c.isspace() for c in command):
            return [command, *args]
        # Many agents send a whole shell command line as `command` with no args.
        found = (cwd / command).exists() if "/" in command else shutil.which(command)
        if found:
            return [command]
        return [shutil.which("bash") or "/bin/sh", "-c", command]

    async def create_terminal(self, params: s.CreateTerminalRequest) -> s.CreateTerminalResponse:
        cwd = self.cwd if not isinstance(params.cwd, str) else self.confine(params.cwd)
        if not cwd.is_dir():
            raise _invalid(f"the terminal cwd is not a directory: {cwd}", path=str(cwd))
        limit = params.output_byte_limit if isinstance(params.output_byte_limit, int) else None
        env = dict(os.environ)
        if isinstance(params.env, list):
            env.update((variable.name, variable.value) for variable in params.env)
        argv = self._argv(params, cwd)
        terminal = _Terminal(params.session_id, limit)
        try:
            await asyncio.get_running_loop().subprocess_exec(
                lambda: terminal,
                *argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise _invalid(
                f"cannot run {params.command!r}: {exc.strerror}", command=params.command
            ) from None
        terminal_id = f"term_{uuid.uuid4().hex[:12]}"
        self._terminals[terminal_id] = terminal
        return s.CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(self, params: s.TerminalOutputRequest) -> s.TerminalOutputResponse:
        terminal = self._terminal(params.session_id, params.terminal_id)
        return s.TerminalOutputResponse(
            output=terminal.text(),
            truncated=terminal.truncated,
            exit_status=terminal.exit_status,
        )

    async def wait_for_terminal_exit(
        self, params: s.WaitForTerminalExitRequest
    ) -> s.WaitForTerminalExitResponse:
        terminal = self._terminal(params.session_id, params.terminal_id)
        await terminal.exited.wait()
        assert terminal.exit_status is not None
        return s.WaitForTerminalExitResponse(
            exit_code=terminal.exit_status.exit_code, signal=terminal.exit_status.signal
        )

    async def kill_terminal(self, params: s.KillTerminalRequest) -> s.KillTerminalResponse:
        self._terminal(params.session_id, params.terminal_id).kill()
        return s.KillTerminalResponse()

    async def release_terminal(self, params: s.ReleaseTerminalRequest) -> s.ReleaseTerminalResponse:
        terminal = self._terminal(params.session_id, params.terminal_id)
        del self._terminals[params.terminal_id]
        terminal.kill()
        await terminal.finish()
        return s.ReleaseTerminalResponse()


def _regular(fd: int) -> int:
    """`fd`, if it is a regular file: a FIFO, a device or a socket would block the
    thread (and the answer) for as long as nobody writes to it."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file")
    os.set_blocking(fd, True)
    return fd


def _read(path: Path, line: int | None, limit: int | None) -> str:
    fd = _regular(os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW))
    with open(fd, encoding="utf-8", newline="") as file:
        if line is None and limit is None:
            return file.read()
        start = (line or 1) - 1
        return "".join(itertools.islice(file, start, None if limit is None else start + limit))


def _write(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | _NOFOLLOW, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads
            raise OSError(errno.EINVAL, "not a regular file") from None
        raise
    fd = _regular(fd)
    os.ftruncate(fd, 0)
    with open(fd, "w", encoding="utf-8", newline="") as file:
        file.write(content)
