"""Flow control on real pipes (issue #11): an agent whose client stops reading stops
reading too, and so does a client whose agent stops reading, each in bounded memory,
and nothing is lost once reading resumes; stdin EOF ends an agent at once, cancelling
what still runs."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import signal
import sys
import termios
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AGENTS = Path(__file__).with_name("agents")
EXAMPLE = [sys.executable, str(ROOT / "examples" / "acp_agent.py")]
STUCK = [sys.executable, str(AGENTS / "stuck_agent.py")]
pytestmark = [pytest.mark.e2e, pytest.mark.any_loop]

INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'
RSS_LIMIT_MIB = 64  # the figure
EXIT_WITHIN = 1.0  # the figure, seconds from closing stdin to the exit
STALL = 3.0  # writes that make no progress for this long are blocked


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


async def spawn(command: list[str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=1024 * 1024,
    )


@pytest.fixture
async def cleanup() -> AsyncIterator[list[asyncio.subprocess.Process]]:
    procs: list[asyncio.subprocess.Process] = []
    yield procs
    for proc in procs:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def line_of(stdout: asyncio.StreamReader, id: object) -> dict[str, object]:
    while True:
        line = await stdout.readline()
        assert line, f"stdout ended before the answer to {id!r}"
        message = json.loads(line)
        assert isinstance(message, dict)
        if message.get("id") == id:
            return message


# -- an agent whose client does not read ------------------------------------------------


async def test_an_agent_whose_client_stops_reading_stops_reading_in_bounded_memory(
    cleanup: list[asyncio.subprocess.Process],
) -> None:
    """58,000 `session/list` (each answered with 40 sessions) written to an agent whose
    stdout nobody reads: its stdin pushes back while its RSS stays under 64 MiB; then,
    reading, every request has exactly one answer."""
    proc = await spawn(EXAMPLE)
    cleanup.append(proc)
    assert proc.stdin is not None
    assert proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    async with asyncio.timeout(50):
        stdin.write(INIT)
        await line_of(stdout, 0)
        for i in range(40):
            new = {"cwd": "/tmp", "mcpServers": []}
            line = {"jsonrpc": "2.0", "id": f"s{i}", "method": "session/new", "params": new}
            stdin.write(json.dumps(line).encode() + b"\n")
            await line_of(stdout, f"s{i}")
        count = 58_000
        data = b"".join(
            b'{"jsonrpc":"2.0","id":%d,"method":"session/list","params":{}}\n' % i
            for i in range(1, count + 1)
        )
        chunk = 16 * 1024
        sent, peak = 0, rss_mib(proc.pid)
        drain: asyncio.Task[None] | None = None
        while sent < len(data):
            stdin.write(data[sent : sent + chunk])
            sent += chunk
            drain = asyncio.ensure_future(stdin.drain())
            done, _ = await asyncio.wait({drain}, timeout=STALL)
            peak = max(peak, rss_mib(proc.pid))
            if not done:
                break  # the agent no longer reads: its stdin pushed back
        blocked_at = min(sent, len(data))
        peak = max(peak, rss_mib(proc.pid))
        print(f"agent: blocked after {blocked_at} of {len(data)} bytes, peak RSS {peak:.1f} MiB")
        assert blocked_at < len(data), "the agent read everything: stdin never pushed back"
        assert peak < RSS_LIMIT_MIB

        async def read_answers() -> list[object]:
            ids: list[object] = []
            while len(ids) < count:
                line = await stdout.readline()
                assert line, "stdout ended early"
                message = json.loads(line)
                assert len(message["result"]["sessions"]) == 40
                ids.append(message["id"])
            return ids

        reading = asyncio.create_task(read_answers())
        assert drain is not None
        await drain
        stdin.write(data[sent:])
        await stdin.drain()
        ids = await reading
        assert sorted(ids) == list(range(1, count + 1))  # type: ignore[type-var]
        stdin.close()
        assert await proc.wait() == 0
        assert await stdout.read() == b""  # nothing more than one answer each


# -- a client whose agent does not read -------------------------------------------------


async def test_a_client_whose_agent_stops_reading_stops_reading_in_bounded_memory(
    tmp_path: Path, cleanup: list[asyncio.subprocess.Process]
) -> None:
    """An agent writes 10,000 `fs/read_text_file` to an interlink client (each answered
    with 8 KiB) and reads none of the answers: the client stops reading the agent's
    stdout while its RSS stays under 64 MiB; then every request has one answer."""
    count = 10_000
    status_path = tmp_path / "status"
    os.mkfifo(status_path)
    status_fd = os.open(status_path, os.O_RDONLY | os.O_NONBLOCK)
    loop = asyncio.get_running_loop()
    status = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(status), os.fdopen(status_fd, "rb", buffering=0)
    )
    try:
        await flood_the_client(count, status_path, status, cleanup)
    finally:
        transport.close()


async def flood_the_client(
    count: int,
    status_path: Path,
    status: asyncio.StreamReader,
    cleanup: list[asyncio.subprocess.Process],
) -> None:
    agent = [sys.executable, str(AGENTS / "flood_agent.py"), str(count), str(status_path)]
    client = await spawn([sys.executable, str(AGENTS / "flood_client.py"), *agent, str(STALL)])
    cleanup.append(client)
    assert client.stdout is not None
    assert client.stderr is not None
    async with asyncio.timeout(50):
        pid_line = (await status.readline()).split()
        assert pid_line[0] == b"pid"
        agent_pid = int(pid_line[1])
        peak = rss_mib(client.pid)
        wrote_task = asyncio.ensure_future(status.readline())
        while not wrote_task.done():  # sample the client's RSS while the agent writes
            peak = max(peak, rss_mib(client.pid))
            await asyncio.wait({wrote_task}, timeout=0.05)
        peak = max(peak, rss_mib(client.pid))
        word, wrote, total = wrote_task.result().split()
        assert word == b"wrote"
        print(f"client: blocked after {int(wrote)} of {int(total)} bytes, peak RSS {peak:.1f} MiB")
        assert int(wrote) < int(total), "the client read everything: it never pushed back"
        assert peak < RSS_LIMIT_MIB
        os.kill(agent_pid, signal.SIGUSR1)  # now the agent reads
        word, answers, unique, bad = (await status.readline()).split()
        assert word == b"answers"
        assert (int(answers), int(unique), int(bad)) == (count, count, 0)
        assert await client.wait() == 0, (await client.stderr.read()).decode()


# -- stdin EOF ends the agent -----------------------------------------------------------


async def prompt_then_close(proc: asyncio.subprocess.Process, text: str) -> float:
    """initialize, session/new, a prompt whose first update has come; then close stdin
    and return how long the agent took to exit."""
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(INIT)
    await line_of(proc.stdout, 0)
    proc.stdin.write(
        b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}\n'
    )
    session = (await line_of(proc.stdout, 1))["result"]
    assert isinstance(session, dict)
    prompt = {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": text}]}
    line = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt}
    proc.stdin.write(json.dumps(line).encode() + b"\n")
    first = json.loads(await proc.stdout.readline())
    assert first["method"] == "session/update"  # the handler runs
    proc.stdin.close()
    closed = time.monotonic()
    await asyncio.wait_for(proc.wait(), 10)
    return time.monotonic() - closed


@pytest.mark.parametrize(
    ("command", "text"),
    [(STUCK, "wait"), (EXAMPLE, "slow")],
    ids=["a-prompt-that-waits-forever", "the-example-agents-slow-prompt"],
)
async def test_stdin_eof_cancels_the_running_prompt_and_the_agent_exits_at_once(
    cleanup: list[asyncio.subprocess.Process], command: list[str], text: str
) -> None:
    proc = await spawn(command)
    cleanup.append(proc)
    assert proc.stdout is not None
    assert proc.stderr is not None
    async with asyncio.timeout(30):
        took = await prompt_then_close(proc, text)
        print(f"{command[-1]} ({text!r} prompt): exited {took:.3f} s after stdin EOF")
        assert took < EXIT_WITHIN
        assert proc.returncode == 0
        rest = [json.loads(line) for line in (await proc.stdout.read()).splitlines()]
        answers = [message for message in rest if message.get("id") == 2]
        assert len(answers) == 1  # (written, should a client still read)
        assert answers[0]["error"]["code"] == -32800  # cancelled, not run to its end
        if command is STUCK:  # the cancellation reached the handler
            stderr = await proc.stderr.read()
            assert b"prompt handler cancelled" in stderr
            assert b"prompt handler finally" in stderr


async def test_stdin_eof_ends_an_agent_whose_client_has_stopped_reading_too(
    cleanup: list[asyncio.subprocess.Process],
) -> None:
    """The client reads the first updates of a long echo, then stops reading stdout and
    closes stdin (a client that exits without reading the rest): the agent, its writes
    blocked, still exits at once (it waited for ever for the pipe to drain)."""
    out_r, out_w = os.pipe()
    proc = await asyncio.create_subprocess_exec(
        *EXAMPLE, stdin=asyncio.subprocess.PIPE, stdout=out_w, stderr=asyncio.subprocess.PIPE
    )
    os.close(out_w)
    cleanup.append(proc)
    assert proc.stdin is not None
    assert proc.stderr is not None
    loop = asyncio.get_running_loop()
    stdout = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stdout), os.fdopen(out_r, "rb", buffering=0)
    )
    try:
        async with asyncio.timeout(30):
            proc.stdin.write(INIT)
            await line_of(stdout, 0)
            new = {"cwd": "/tmp", "mcpServers": []}
            line = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": new}
            proc.stdin.write(json.dumps(line).encode() + b"\n")
            session = (await line_of(stdout, 1))["result"]
            assert isinstance(session, dict)
            text = "word " * 2_000_000
            prompt = {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": text}]}
            line = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt}
            proc.stdin.write(json.dumps(line).encode() + b"\n")
            first = json.loads(await stdout.readline())
            assert first["method"] == "session/update"  # the echo runs
            transport.pause_reading()  # from now on nobody reads the agent's stdout
            capacity = fcntl.fcntl(out_r, 1032)  # F_GETPIPE_SZ
            full = capacity.to_bytes(4, sys.byteorder)
            while fcntl.ioctl(out_r, termios.FIONREAD, b"\0\0\0\0") != full:  # noqa: ASYNC110
                await asyncio.sleep(0.01)  # (nothing tells when the pipe is full: look)
            proc.stdin.close()
            closed = time.monotonic()
            await proc.wait()  # (its stdout is not a pipe of ours: this waits for the exit)
            took = time.monotonic() - closed
            print(f"exited {took:.3f} s after stdin EOF, its stdout unread")
            assert took < EXIT_WITHIN
            assert proc.returncode == 0
    finally:
        transport.close()
