"""`interlink acp client -- AGENT_CMD [ARGS...]`: talk to any ACP agent from a terminal.

The agent runs as a child process; this process is its editor. Files under `--cwd` and
terminals are served for real by `LocalClient`; updates are rendered as they arrive
(text inline, thoughts dimmed, tool calls with each status change, plans as a checklist,
diffs as unified diffs); permission requests are put to the person (`--yes` allows).

Ctrl-C: during a turn the first one sends `session/cancel` (the turn ends `cancelled`)
and a second one quits; at the prompt it quits. The agent is started with SIGINT
ignored (inherited through exec), so the terminal's Ctrl-C reaches only this process.
Plain ANSI when stdout is a terminal and `NO_COLOR` is unset, plain text otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import errno
import io
import os
import signal
import sys
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TextIO, TypeVar

if TYPE_CHECKING:  # imported where used, so that `interlink --version` stays fast
    import asyncio

    from interlink.acp import ClientSideConnection, Transcript
    from interlink.acp import schema as s
    from interlink.jsonrpc import RpcError

__all__ = ["LineReader", "Renderer", "Style", "add_parser", "run"]

T = TypeVar("T")
_PROG = "interlink acp client"
_CONTENT_LINES = 12
_DIFF_LINES = 80


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    client = commands.add_parser(
        "client",
        help="talk to an ACP agent from this terminal",
        description="Start AGENT_CMD as an ACP agent and talk to it: type prompts, watch the "
        "agent work, answer its permission requests. Files under --cwd and terminals are "
        "served to the agent. Ctrl-C cancels a turn, a second Ctrl-C (or Ctrl-D, /quit) quits.",
    )
    client.add_argument("--cwd", metavar="DIR", help="the session's directory (default: here)")
    client.add_argument("-p", "--prompt", metavar="TEXT", help="run one turn, print it, exit")
    client.add_argument("--yes", action="store_true", help="allow every permission request")
    client.add_argument("agent", nargs=argparse.REMAINDER, metavar="-- AGENT_CMD [ARGS...]")


class _Quit(Exception):
    """The person asked to quit (Ctrl-C outside a turn, or a second Ctrl-C)."""


class Style:
    """ANSI styling, or none."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, *codes: str) -> str:
        return f"\x1b[{';'.join(codes)}m{text}\x1b[0m" if self.color and text else text

    def dim(self, text: str) -> str:
        return self(text, "2")


_STATUS = {
    "pending": "33",
    "in_progress": "36",
    "completed": "32",
    "failed": "31",
    "cancelled": "33",
}
_PLAN = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}


class Renderer:
    """Writes a session's updates to `out` as they arrive."""

    def __init__(self, out: TextIO, style: Style) -> None:
        from interlink.acp import Transcript

        self.out = out
        self.style = style
        self.turn: Transcript = Transcript()
        self._stream: str | None = None  # the kind of text being streamed inline
        self._line_start = True
        self._plan: list[tuple[str, str]] = []
        self.closed = False  # `out` is a pipe whose reader is gone
        self.on_closed: Callable[[], None] | None = None

    def start_turn(self) -> None:
        from interlink.acp import Transcript

        self.turn = Transcript()
        self._plan = []

    def write(self, text: str) -> None:
        if text and not self.closed:
            try:
                self.out.write(text)
                self.out.flush()
            except BrokenPipeError:  # (in a handler of the connection: raising would
                self.closed = True  # answer the agent with an error and log it)
                if self.on_closed is not None:
                    self.on_closed()
                return
            self._line_start = text.endswith("\n")

    def line(self, text: str = "") -> None:
        """A line of its own (ending what was streamed inline first)."""
        self.end_line()
        self._stream = None
        self.write(text + "\n")

    def typed(self) -> None:
        """The person ended a line on the terminal, whose echo moved to a new line."""
        self._line_start = True
        self._stream = None

    def end_line(self) -> None:
        if not self._line_start:
            self.write("\n")

    async def on_update(self, notification: s.SessionNotification) -> None:
        self.update(notification.update)

    def update(self, update: object) -> None:
        from interlink.acp import schema as s
        from interlink.acp._transcript import content_text

        if isinstance(update, s.AgentMessageChunk | s.AgentThoughtChunk | s.UserMessageChunk):
            kind = type(update).__name__
            if kind != self._stream:
                self.end_line()
                if isinstance(update, s.UserMessageChunk):
                    self.write(self.style("> ", "1"))
            self._stream = kind
            text = content_text(update.content)
            self.write(text if isinstance(update, s.AgentMessageChunk) else self.style.dim(text))
        elif isinstance(update, s.ToolCall | s.ToolCallUpdated):
            self._tool_call(update)  # adds it to the turn itself
            return
        elif isinstance(update, s.Plan):
            self._show_plan(update.entries)
        elif isinstance(update, s.CurrentModeUpdate):
            self.line(self.style.dim(f"mode: {update.current_mode_id}"))
        elif isinstance(update, s.SessionInfoUpdate) and isinstance(update.title, str):
            self.line(self.style.dim(f"title: {update.title}"))
        elif isinstance(update, s.AvailableCommandsUpdate) and update.available_commands:
            names = " ".join(f"/{command.name}" for command in update.available_commands)
            self.line(self.style.dim(f"commands: {names}"))
        self.turn.add(update)

    def _status(self, status: str) -> str:
        return self.style(status, _STATUS.get(status, "0"))

    def _tool_call(self, update: s.ToolCall | s.ToolCallUpdated) -> None:
        from interlink.acp import schema as s

        before = self.turn.tool_calls.get(update.tool_call_id)
        old_status, old_title = (before.status, before.title) if before else (None, None)
        self.turn.add(update)
        call = self.turn.tool_calls[update.tool_call_id]
        title = self.style(call.title or call.id, "1")
        if isinstance(update, s.ToolCall) or old_status is None:
            self.line(f"⏺ {title} … {self._status(call.status)}")
        elif call.status != old_status:
            self.line(f"⏺ {title} … {self._status(old_status)} → {self._status(call.status)}")
        elif call.title != old_title:
            self.line(f"⏺ {title} … {self._status(call.status)}")
        if isinstance(update.content, list):
            for item in update.content:
                self._tool_content(item)

    def _tool_content(self, item: object) -> None:
        from interlink.acp import schema as s
        from interlink.acp._transcript import content_text

        if isinstance(item, s.Content):
            lines = content_text(item.content).splitlines()
            for text in lines[:_CONTENT_LINES]:
                self.line(self.style.dim(f"  │ {text}"))
            if len(lines) > _CONTENT_LINES:
                self.line(self.style.dim(f"  │ … {len(lines) - _CONTENT_LINES} more lines"))
        elif isinstance(item, s.Diff):
            old = item.old_text if isinstance(item.old_text, str) else None
            diff = list(
                difflib.unified_diff(
                    (old or "").splitlines(),
                    item.new_text.splitlines(),
                    "/dev/null" if old is None else f"a/{item.path}",
                    f"b/{item.path}",
                    lineterm="",
                )
            )
            for text in diff[:_DIFF_LINES]:
                code = {"+": "32", "-": "31", "@": "36"}.get(text[:1], "0")
                self.line("  " + self.style(text, code))
            if len(diff) > _DIFF_LINES:
                self.line(self.style.dim(f"  … {len(diff) - _DIFF_LINES} more diff lines"))
        elif isinstance(item, s.Terminal):
            self.line(self.style.dim(f"  [terminal {item.terminal_id}]"))

    def _show_plan(self, entries: list[s.PlanEntry]) -> None:
        plan = [(str(entry.status), entry.content) for entry in entries]
        if plan == self._plan:
            return
        self._plan = plan
        self.line(self.style("Plan", "1"))
        for status, content in plan:
            mark = _PLAN.get(status, "[?]")
            self.line(f"  {self.style(mark, _STATUS.get(status, '0'))} {content}")

    def unfinished(self, status: str) -> None:
        """The turn ended, maybe without the agent saying so: mark calls still running."""
        for call in self.turn.tool_calls.values():
            if call.status in ("pending", "in_progress"):
                title = self.style(call.title or call.id, "1")
                self.line(f"⏺ {title} … {self._status(call.status)} → {self._status(status)}")
                call.status = status

    def stop(self, reason: str) -> None:
        if reason == "cancelled":
            self.unfinished("cancelled")
        code = "2" if reason == "end_turn" else "33"
        self.line(self.style(f"── {reason}", code))

    def permission(self, request: s.RequestPermissionRequest) -> None:
        call = self.turn.tool_calls.get(request.tool_call.tool_call_id)
        title = request.tool_call.title
        name = title if isinstance(title, str) else (call.title if call else "a tool call")
        self.line(
            self.style("? ", "1;35") + f"The agent asks permission for {self.style(name, '1')}"
        )
        for number, option in enumerate(request.options, 1):
            self.line(f"  {number}) {option.name} {self.style.dim(f'({option.kind})')}")


class LineReader:
    """Lines from a file descriptor without a thread: the fd is read only while a line is
    awaited, so type-ahead stays in the terminal and cancelling a read loses nothing."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.tty = os.isatty(fd)
        self._lines: deque[str | None] = deque()
        self._partial = b""
        self._closed = False

    def _read(self, waiter: asyncio.Future[None]) -> None:
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            data = b""
        if data:
            *lines, self._partial = (self._partial + data).split(b"\n")
            self._lines.extend(line.decode(errors="replace").rstrip("\r") for line in lines)
        else:  # EOF: final on a pipe or file; once per Ctrl-D on a terminal
            if self._partial:
                self._lines.append(self._partial.decode(errors="replace"))
                self._partial = b""
            self._lines.append(None)
            self._closed = not self.tty
        if self._lines and not waiter.done():
            waiter.set_result(None)

    async def readline(self) -> str | None:
        """The next line without its newline; None at end of input."""
        import asyncio

        loop = asyncio.get_running_loop()
        while not self._lines:
            if self._closed:
                return None
            waiter: asyncio.Future[None] = loop.create_future()
            try:
                loop.add_reader(self.fd, self._read, waiter)
            except (PermissionError, ValueError):  # a regular file: reads never block
                self._read(waiter)
                continue
            try:
                await waiter
            finally:
                loop.remove_reader(self.fd)
        return self._lines.popleft()

    def discard_typeahead(self) -> None:
        """Before a question that must not be answered by a line typed earlier."""
        self._lines = deque(line for line in self._lines if line is None)
        if self.tty:
            import termios

            with contextlib.suppress(termios.error):
                termios.tcflush(self.fd, termios.TCIFLUSH)


class _Session:
    """One run of the command: the agent, the person's input, Ctrl-C."""

    def __init__(self, args: argparse.Namespace, out: TextIO) -> None:
        import asyncio

        color = out.isatty() and not os.environ.get("NO_COLOR")
        self.args = args
        self.style = Style(color)
        self.render = Renderer(out, self.style)
        self.render.on_closed = self.quit_on_closed_output
        self.input = LineReader(sys.stdin.fileno())
        self.quit = asyncio.Event()
        self.interrupted = False
        self.connection: ClientSideConnection | None = None
        self.session_id = ""
        self.turn: asyncio.Task[object] | None = None
        self.cancelling: asyncio.Task[None] | None = None

    def quit_on_closed_output(self) -> None:
        self.quit.set()

    def on_sigint(self) -> None:
        import asyncio

        turn_running = self.turn is not None and not self.turn.done()
        if turn_running and self.cancelling is None and self.connection is not None:
            self.render.line(self.style("cancelling — Ctrl-C again to quit", "33"))
            self.cancelling = asyncio.create_task(self.connection.cancel(self.session_id))
            return
        self.interrupted = True
        self.quit.set()

    async def race(self, work: Awaitable[T]) -> T:
        """`work`, unless the person quits first (then `_Quit`)."""
        import asyncio

        task = asyncio.ensure_future(work)
        quitting = asyncio.ensure_future(self.quit.wait())
        try:
            await asyncio.wait({task, quitting}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            quitting.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise _Quit
        return task.result()

    async def ask_permission(self, request: s.RequestPermissionRequest) -> str | None:
        from interlink.acp._local import allow_first, reject_first

        self.render.permission(request)
        options = request.options
        policy, why = None, ""
        if self.args.yes:
            policy, why = allow_first, "--yes"
        elif self.args.prompt is not None and not self.input.tty:
            policy, why = reject_first, "no terminal to ask; --yes allows"
        if policy is not None:
            choice = await policy(request)
            name = next((o.name for o in options if o.option_id == choice), "cancelled")
            self.render.line(f"  → {self.style(name, '1')} {self.style.dim(f'({why})')}")
            return choice
        self.input.discard_typeahead()
        while True:
            self.render.write(f"  choose 1-{len(options)}: ")
            answer = await self.input.readline()
            if self.input.tty and answer is not None:
                self.render.typed()
            if answer is None:
                self.render.end_line()
                return None
            answer = answer.strip()
            for number, option in enumerate(options, 1):
                if answer in (str(number), option.option_id):
                    return option.option_id

    async def prompt_turn(self, text: str) -> None:
        import asyncio

        from interlink.jsonrpc import RpcError

        assert self.connection is not None
        self.render.start_turn()
        self.cancelling = None
        self.turn = asyncio.ensure_future(self.connection.prompt(self.session_id, text))
        try:
            response = await self.race(self.turn)
        except RpcError as exc:
            if self.args.prompt is not None:
                raise
            self.render.unfinished("failed")
            self.render.line(self.style(f"the turn failed: {describe(exc)}", "31"))
            return
        finally:
            await self._cancel_sent()
        self.render.stop(str(response.stop_reason))

    async def _cancel_sent(self) -> None:
        if self.cancelling is not None:
            with contextlib.suppress(Exception):
                await self.cancelling

    async def interactive(self) -> None:
        while True:
            if self.input.tty:
                self.render.write(self.style("> ", "1;34"))
            line = await self.race(self.input.readline())
            if self.input.tty and line is not None:
                self.render.typed()
            if line is None:
                self.render.end_line()
                return
            text = line.strip()
            if text in ("/quit", "/exit"):
                return
            if text:
                await self.prompt_turn(text)

    async def main(self, command: list[str], cwd: str) -> int:
        import asyncio

        from interlink import __version__
        from interlink.acp import schema as s
        from interlink.acp import spawn_agent
        from interlink.acp._local import LocalClient

        forward = _stderr_forwarder()
        loop = asyncio.get_running_loop()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited by the agent
        try:
            async with (
                LocalClient(cwd, ask_permission=self.ask_permission) as local,
                spawn_agent(command, local, forward_stderr=forward, close_timeout=2.0) as agent,
            ):
                local.on_update = self.render.on_update
                loop.add_signal_handler(signal.SIGINT, self.on_sigint)
                self.connection = agent.agent
                info = s.Implementation(name="interlink", title=_PROG, version=__version__)
                init = await self.race(
                    self.connection.initialize(local.capabilities(), client_info=info)
                )
                session = await self.race(self.connection.new_session(cwd))
                self.session_id = session.session_id
                if self.args.prompt is not None:
                    await self.prompt_turn(self.args.prompt)
                else:
                    who = init.agent_info
                    name = f"{who.title or who.name} {who.version}" if who else command[0]
                    self.render.line(
                        self.style.dim(f"{name} · session {self.session_id} · {cwd}")
                        + self.style.dim("  (Ctrl-C cancels a turn, Ctrl-D quits)")
                    )
                    await self.interactive()
        except _Quit:
            self.render.line()
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            signal.signal(signal.SIGINT, previous)
        if self.render.closed:
            raise BrokenPipeError(errno.EPIPE, "stdout closed")  # `interlink.cli.main`
        return 130 if self.interrupted else 0


def _stderr_forwarder() -> Callable[[bytes], None]:
    dim = sys.stderr.isatty() and not os.environ.get("NO_COLOR")
    stream = sys.stderr.buffer

    def forward(chunk: bytes) -> None:
        stream.write(b"\x1b[2m" + chunk + b"\x1b[0m" if dim else chunk)
        stream.flush()

    return forward


def run(args: argparse.Namespace) -> int:
    import asyncio

    from interlink.acp import AgentExited, ProtocolVersionError
    from interlink.jsonrpc import ConnectionClosed, RpcError

    command = list(args.agent)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        print(f"{_PROG}: give the agent's command after --", file=sys.stderr)
        return 2
    if args.cwd is not None and not os.path.isdir(args.cwd):
        print(f"{_PROG}: not a directory: {args.cwd}", file=sys.stderr)
        return 2
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="replace")
    try:
        cwd = os.path.abspath(args.cwd or os.getcwd())
        return asyncio.run(_Session(args, sys.stdout).main(command, cwd))
    except BrokenPipeError:
        raise  # stdout is gone: `interlink.cli.main` ends quietly
    except AgentExited as exc:  # its stderr was forwarded already
        how = "is gone" if exc.returncode is None else f"exited with code {exc.returncode}"
        return _fail(f"the agent {how}")
    except RpcError as exc:
        return _fail(f"the agent answered with an error: {describe(exc)}")
    except (ConnectionClosed, ProtocolVersionError, OSError) as exc:
        return _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


def describe(error: RpcError) -> str:
    """`message (code)`, and the detail a peer put in `data`, if any."""
    data = error.data
    detail = data.get("detail") if isinstance(data, dict) else None
    return f"{error}: {detail}" if isinstance(detail, str) else str(error)


def _fail(message: str) -> int:
    sys.stdout.flush()
    print(f"{_PROG}: error: {message}", file=sys.stderr)
    return 1
