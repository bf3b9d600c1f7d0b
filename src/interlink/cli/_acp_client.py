"""`interlink acp client -- AGENT_CMD [ARGS...]`: talk to any ACP agent from a terminal.

The agent runs as a child process; this process is its editor. Files under `--cwd` and
terminals are served for real by `LocalClient`; updates are rendered as they arrive
(text inline, thoughts dimmed, tool calls with each status change, plans as a checklist,
diffs as unified diffs); permission requests are put to the person (`--yes` allows).

Ctrl-C: during a turn the first one sends `session/cancel` (the turn ends `cancelled`)
and a second one quits; at the prompt it quits. The agent runs in a session of its own
(Node-based agents reset an inherited "ignore SIGINT"), so the terminal's Ctrl-C reaches
only this process and the agent learns of it through the protocol alone. For the same
reason SIGTERM and SIGHUP (the terminal closed) quit as Ctrl-D does, closing the agent
(stdin EOF, then terminate) before exiting with 128 + the signal's number.
Plain ANSI when the person's stream (stdout; stderr under `--json`) is a terminal and
`NO_COLOR` is unset or empty, plain text otherwise.

For scripts and debugging: `--json` puts one ACP wire-form JSON line per event on stdout
(what a person would read goes to stderr), `--verbose` shows the JSON-RPC traffic on
stderr. A line on the agent's stdout that is not JSON-RPC is reported on stderr, and
`initialize` waits `--init-timeout` seconds at most, so a misbehaving agent never leaves
the person waiting without a clue.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal, TextIO, TypeVar

from interlink.cli._acp_render import JsonLines, Renderer, WireLog
from interlink.cli._parser import Commands, agent_command, subcommand, usage
from interlink.cli._terminal import LineReader, Style, colors

if TYPE_CHECKING:  # imported where used, so that `interlink --version` stays fast
    import asyncio

    from interlink.acp import ClientSideConnection, LocalClient, WireTap
    from interlink.acp import schema as s

__all__ = ["add_parser", "run"]

T = TypeVar("T")
_PROG = "interlink acp client"


def add_parser(commands: Commands) -> None:
    client = subcommand(
        commands,
        "client",
        "talk to an ACP agent from this terminal",
        "Start AGENT_CMD as an ACP agent and talk to it: type prompts, watch the "
        "agent work, answer its permission requests. Files under --cwd and terminals are "
        "served to the agent. Ctrl-C cancels a turn, a second Ctrl-C (or Ctrl-D, /quit) quits.",
    )
    client.add_argument("--cwd", metavar="DIR", help="the session's directory (default: here)")
    client.add_argument("-p", "--prompt", metavar="TEXT", help="run one turn, print it, exit")
    client.add_argument("--yes", action="store_true", help="allow every permission request")
    client.add_argument(
        "--init-timeout",
        metavar="SECONDS",
        type=float,
        default=30.0,
        help="how long to wait for the agent's answer to initialize (default: 30; 0: no limit)",
    )
    client.add_argument(
        "--json",
        action="store_true",
        help="write each update as one JSON line on stdout (ACP wire form), a line with the "
        "stop reason at the end of a turn, permission requests and answers as lines too; "
        "everything for a person goes to stderr",
    )
    client.add_argument(
        "--verbose",
        action="store_true",
        help="show the JSON-RPC traffic on stderr (→ to the agent, ← from it)",
    )
    client.add_argument("agent", nargs=argparse.REMAINDER, metavar="-- AGENT_CMD [ARGS...]")


class _Quit(Exception):
    """The person asked to quit (Ctrl-C outside a turn, or a second Ctrl-C)."""


class _NoAnswer(Exception):
    """The agent did not answer `initialize` in time."""


class _Session:
    """One run of the command: the agent, the person's input, Ctrl-C."""

    def __init__(self, args: argparse.Namespace, out: TextIO) -> None:
        import asyncio

        human = sys.stderr if args.json else out  # --json keeps stdout for the lines
        self.args = args
        self.style = Style(colors(human))
        self.render = Renderer(human, self.style)
        self.lines = JsonLines(out) if args.json else None
        self.input = LineReader(sys.stdin.fileno())
        self.quit = asyncio.Event()
        self.closed = False  # stdout's reader is gone
        self.interrupted = False
        self.terminated = 0  # the SIGTERM or SIGHUP we were sent, if any
        self.connection: ClientSideConnection | None = None
        self.session_id = ""
        self.turn: asyncio.Task[object] | None = None
        self.cancelling: asyncio.Task[None] | None = None
        self.bad_lines = 0  # lines on the agent's stdout that were not JSON-RPC

    def on_bad_output(self, message: str) -> None:
        self.bad_lines += 1
        sys.stdout.flush()
        print(f"{_PROG}: warning: {message}", file=sys.stderr, flush=True)

    def on_sigint(self) -> None:
        import asyncio

        turn_running = self.turn is not None and not self.turn.done()
        if turn_running and self.cancelling is None and self.connection is not None:
            self.render.line(self.style("cancelling — Ctrl-C again to quit", "33"))
            self.cancelling = asyncio.create_task(self.connection.cancel(self.session_id))
            return
        self.interrupted = True
        self.quit.set()

    def on_terminate(self, signum: int) -> None:
        """SIGTERM, or SIGHUP (the terminal is gone): quit as Ctrl-D does, so the agent,
        in a session of its own where neither reaches it, is closed too."""
        self.terminated = signum
        self.quit.set()

    async def race(self, work: Awaitable[T], within: float | None = None) -> T:
        """`work`, unless the person quits first (then `_Quit`) or `within` seconds pass
        (then `TimeoutError`)."""
        import asyncio

        task = asyncio.ensure_future(work)
        quitting = asyncio.ensure_future(self.quit.wait())
        try:
            await asyncio.wait(
                {task, quitting}, timeout=within, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            quitting.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            if self.quit.is_set():
                raise _Quit
            raise TimeoutError
        return task.result()

    async def initialize(self, local: LocalClient) -> s.InitializeResponse:
        from interlink import __version__
        from interlink.acp import schema as s

        assert self.connection is not None
        info = s.Implementation(name="interlink", title=_PROG, version=__version__)
        limit = self.args.init_timeout
        try:
            return await self.race(
                self.connection.initialize(local.capabilities(), client_info=info),
                within=limit or None,
            )
        except TimeoutError:
            noise = (
                f"; {self.bad_lines} line(s) on its stdout were not JSON-RPC (see above)"
                if self.bad_lines
                else ""
            )
            raise _NoAnswer(
                f"waited {limit:g} s for the agent's answer to initialize, in vain{noise}"
                " (an ACP agent answers on its stdout, one JSON-RPC message a line;"
                " --init-timeout waits longer)"
            ) from None

    async def ask_permission(self, request: s.RequestPermissionRequest) -> str | None:
        try:
            choice = await self._permission(request)
            if self.lines is not None:
                self.lines.answer(choice)
        except BrokenPipeError:
            self.output_closed()
            return None  # (cancelled: we are leaving)
        return choice

    async def on_update(self, notification: s.SessionNotification) -> None:
        try:
            if self.lines is not None:
                await self.lines.on_update(notification)
            else:
                await self.render.on_update(notification)
        except BrokenPipeError:
            self.output_closed()

    def output_closed(self) -> None:
        """stdout's reader is gone (`head -1`): quit. (Seen in a handler of the
        connection, where raising would answer the agent with an error and log a
        traceback; `main` raises it again for `interlink.cli.main`.)"""
        self.closed = True
        self.quit.set()

    async def _permission(self, request: s.RequestPermissionRequest) -> str | None:
        from interlink.acp import allow_first, reject_first

        if self.lines is not None:
            self.lines.write(request)
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
            if self.lines is not None:
                self.lines.write({"error": exc.to_error_object()})
            if self.args.prompt is not None:
                raise
            self.render.unfinished("failed")
            self.render.line(self.style(f"the turn failed: {exc}", "31"))
            return
        finally:
            await self._cancel_sent()
        if self.lines is not None:
            self.lines.write(response)
        else:
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

    def wire_log(self) -> WireTap | None:
        if not self.args.verbose:
            return None
        log = WireLog(sys.stderr)

        def tap(direction: Literal["recv", "send"], data: bytes) -> None:
            sys.stdout.flush()
            log(direction, data)

        return tap

    async def main(self, command: list[str], cwd: str) -> int:
        import asyncio

        from interlink.acp import LocalClient, spawn_agent

        forward = _stderr_forwarder()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self.on_sigint)
        for signum in _TERMINATE:
            loop.add_signal_handler(signum, self.on_terminate, signum)
        try:
            async with (
                LocalClient(cwd, ask_permission=self.ask_permission) as local,
                spawn_agent(
                    command,
                    local,
                    forward_stderr=forward,
                    close_timeout=2.0,
                    start_new_session=True,  # the terminal's Ctrl-C is ours, not the agent's
                    on_bad_output=self.on_bad_output,
                    wire_tap=self.wire_log(),
                ) as agent,
            ):
                local.on_update = self.on_update
                self.connection = agent.agent
                init = await self.initialize(local)
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
            if not self.closed and not self.terminated:
                self.render.line()
        finally:
            for signum in (signal.SIGINT, *_TERMINATE):
                loop.remove_signal_handler(signum)
        if self.closed:
            raise BrokenPipeError(errno.EPIPE, "stdout closed")  # `interlink.cli.main`
        if self.terminated:
            return 128 + self.terminated
        return 130 if self.interrupted else 0


#: signals that end the client as a quit does (the agent does not get them: its own session)
_TERMINATE = (signal.SIGTERM, signal.SIGHUP)


def _stderr_forwarder() -> Callable[[bytes], None]:
    dim = colors(sys.stderr)
    stream = sys.stderr.buffer

    def forward(chunk: bytes) -> None:
        stream.write(b"\x1b[2m" + chunk + b"\x1b[0m" if dim else chunk)
        stream.flush()

    return forward


def run(args: argparse.Namespace) -> int:
    import asyncio

    from interlink.acp import AgentExited, ProtocolVersionError
    from interlink.jsonrpc import ConnectionClosed, RpcError

    command = agent_command(args)
    if not command:
        return usage(_PROG, "give the agent's command after --")
    if args.init_timeout < 0:
        return usage(_PROG, "--init-timeout must not be negative")
    if args.cwd is not None and not os.path.isdir(args.cwd):
        return usage(_PROG, f"not a directory: {args.cwd}")
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
        return _fail(f"the agent answered with an error: {exc}")
    except _NoAnswer as exc:
        return _fail(str(exc))
    except (ConnectionClosed, ProtocolVersionError, OSError) as exc:
        return _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


def _fail(message: str) -> int:
    sys.stdout.flush()
    print(f"{_PROG}: error: {message}", file=sys.stderr)
    return 1
