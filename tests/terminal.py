"""A command on a pseudo-terminal that is its controlling terminal, for the tests of what
a person sees: colours are on, `\\x03` is a real Ctrl-C (SIGINT to the terminal's
foreground process group), and `expect` waits, bounded, for text on the screen."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["ANSI", "Terminal"]

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Start a new session whose controlling terminal is the pty on stdin, then exec.
_CTTY = (
    "import fcntl, os, sys, termios; os.setsid(); fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execvp(sys.argv[1], sys.argv[1:])"
)


class Terminal:
    """`argv` on a pseudo-terminal, in `cwd`, with `env` (default: ours) less `NO_COLOR`."""

    def __init__(
        self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None
    ) -> None:
        master, slave = os.openpty()
        base = os.environ if env is None else env
        self.process = subprocess.Popen(
            [sys.executable, "-c", _CTTY, *argv],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env={k: v for k, v in base.items() if k != "NO_COLOR"} | {"TERM": "xterm"},
        )
        os.close(slave)
        self.master = master
        self.raw = b""
        self.pos = 0

    @property
    def screen(self) -> str:
        return ANSI.sub("", self.raw.decode(errors="replace")).replace("\r\n", "\n")

    def expect(self, text: str, timeout: float = 20) -> None:
        """Until `text` is on the screen after what the last `expect` found."""
        deadline = time.monotonic() + timeout
        while (found := self.screen.find(text, self.pos)) < 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{text!r} not seen; screen:\n{self.screen}")
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    data = os.read(self.master, 65536)
                except OSError:  # EIO: the command closed the terminal
                    data = b""
                if not data:
                    raise AssertionError(f"{text!r} not seen before exit; screen:\n{self.screen}")
                self.raw += data
        self.pos = found + len(text)

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def exit_code(self) -> int:
        return self.process.wait(timeout=20)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=20)
        os.close(self.master)
