"""The HTTP edges that depend on uvicorn's parser (issue #11, points 13 and 14), on
uvicorn with h11 and with httptools, configured as `interlink a2a serve` runs it: a body
declared over the limit is refused at once; a body that breaks HTTP is the server's
400, never an application error; stopping the server ends open streams cleanly
within the grace period, also the `interlink a2a serve` process on SIGINT and SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx
import pytest

from interlink.a2a import A2AApp
from interlink.cli._a2a_uvicorn import GRACE, StreamingServer, config
from tests.a2a.conftest import VERSION, free_socket
from tests.a2a.stopping_app import make_app

pytestmark = [pytest.mark.any_loop, pytest.mark.e2e]

Parser = Literal["h11", "httptools"]
PARSERS: list[Parser] = ["h11", "httptools"]
ROOT = Path(__file__).resolve().parents[2]
#: what must never be in a server's log
BROKEN = ("Exception in ASGI application", "Traceback", "Cancel ", "Fatal error")


class Recorded(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))
        if record.exc_info:
            self.lines.append("Traceback")


@dataclass
class Running:
    server: StreamingServer
    port: int
    log: Recorded
    task: asyncio.Task[None]

    async def idle(self) -> None:
        """Until no response is being written."""
        async with asyncio.timeout(10):
            while self.server.server_state.tasks:  # noqa: ASYNC110 - no event to wait on
                await asyncio.sleep(0.01)

    def problems(self) -> list[str]:
        return [line for line in self.log.lines if any(word in line for word in BROKEN)]


@contextlib.asynccontextmanager
async def running(app: A2AApp, http: Parser) -> AsyncIterator[Running]:
    sock = free_socket()
    port = sock.getsockname()[1]
    server = StreamingServer(config(app, host="127.0.0.1", port=port, http=http))
    log = Recorded()
    loggers = [logging.getLogger(name) for name in ("uvicorn.error", "asyncio", "interlink")]
    for logger in loggers:
        logger.addHandler(log)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
                await asyncio.sleep(0.01)
        yield Running(server, port, log, task)
    finally:
        server.should_exit = True
        async with asyncio.timeout(GRACE + 10):
            await task
        for logger in loggers:
            logger.removeHandler(log)


async def exchange(port: int, request: bytes) -> bytes:
    """Everything the server sends back to `request` until it closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        async with asyncio.timeout(5):
            return await reader.read(-1)
    finally:
        writer.close()


# -- point 13: bodies ------------------------------------------------------------------


@pytest.mark.parametrize("http", PARSERS)
async def test_a_body_declared_over_the_limit_is_refused_at_once(http: Parser) -> None:
    """`Content-Length: 100000000` and no body: the -32600 of the body limit comes at
    once (it waited for the body), and the connection closes (its body is not read)."""
    async with running(make_app(), http) as served:
        answer = await exchange(
            served.port,
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"A2A-Version: 1.0\r\nContent-Length: 100000000\r\n\r\n",
        )
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), answer[:200]
        error = json.loads(body)["error"]
        assert error["code"] == -32600
        assert error["data"][0]["metadata"]["limit"] == str(16 * 1024 * 1024)
        assert served.problems() == []


@pytest.mark.parametrize("http", PARSERS)
@pytest.mark.parametrize("path", ["/nope", "/", "/.well-known/agent-card.json"])
async def test_a_malformed_chunked_body_is_the_servers_400(http: Parser, path: str) -> None:
    """A chunk size that is no number: the parser's 400 and the end of the connection;
    the app neither answers it too nor logs an "Exception in ASGI application" (with
    h11 the 404 of an unknown path was written after the 400)."""
    async with running(make_app(), http) as served:
        answer = await exchange(
            served.port,
            f"POST {path} HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\n".encode()
            + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        )
        assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
        assert answer.count(b"HTTP/1.1") == 1
        await served.idle()
        assert served.problems() == []
        # and the server goes on serving
        async with httpx.AsyncClient(timeout=10) as client:
            card = await client.get(f"http://127.0.0.1:{served.port}/.well-known/agent-card.json")
        assert card.status_code == 200


# -- point 14: stopping with streams open ----------------------------------------------


def rpc(method: str, params: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def send(text: str) -> dict[str, object]:
    message = {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"message": message}


async def read_stream(response: httpx.Response, first: asyncio.Event) -> list[bytes]:
    """The stream's lines to its end (a broken body raises)."""
    lines = []
    async for line in response.aiter_lines():
        lines.append(line.encode())
        if line.startswith("data: "):
            first.set()
    return lines


@contextlib.asynccontextmanager
async def slow_stream(
    client: httpx.AsyncClient, url: str
) -> AsyncIterator[asyncio.Task[list[bytes]]]:
    """A `SendStreamingMessage` of a task that goes on, read by a task (its lines);
    entered once its first event came."""
    body = rpc("SendStreamingMessage", send("slow"))
    async with client.stream("POST", url, json=body, headers=VERSION) as streamed:
        first = asyncio.Event()
        reading = asyncio.create_task(read_stream(streamed, first))
        await asyncio.wait_for(first.wait(), 10)
        yield reading


@pytest.mark.parametrize("http", PARSERS)
async def test_stopping_ends_open_streams_cleanly_and_in_time(http: Parser) -> None:
    """A `SendStreamingMessage` of a task that goes on, a `SubscribeToTask` of it, and a
    subscriber of an 8 MB answer that never reads: told to stop, the server ends the
    two streams that read (a `retry:` hint, then the end of the chunked body), closes
    the one that does not, and is done within the grace period, logging no exception
    (the streams were cancelled at its end: "Exception in ASGI application")."""
    loop = asyncio.get_running_loop()
    async with running(make_app(), http) as served:
        url = f"http://127.0.0.1:{served.port}/"
        async with httpx.AsyncClient(timeout=30) as client:
            started = await client.post(
                url,
                json=rpc(
                    "SendMessage",
                    {**send("big 8000000"), "configuration": {"returnImmediately": True}},
                ),
                headers=VERSION,
            )
            big = started.json()["result"]["task"]["id"]
            stuck = socket.socket()
            stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            stuck.setblocking(False)
            await loop.sock_connect(stuck, ("127.0.0.1", served.port))
            body = json.dumps(rpc("SubscribeToTask", {"id": big})).encode()
            await loop.sock_sendall(
                stuck,
                b"POST / HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\n"
                + b"Content-Length: %d\r\n\r\n" % len(body)
                + body,
            )
            async with slow_stream(client, url) as reading:
                task_id = None
                async with asyncio.timeout(10):
                    while task_id is None:
                        live = [k for k in served.server.app.server.live if k[1] != big]
                        task_id = live[0][1] if live else None
                        await asyncio.sleep(0.01)
                async with client.stream(
                    "POST", url, json=rpc("SubscribeToTask", {"id": task_id}), headers=VERSION
                ) as subscribed:
                    second = asyncio.Event()
                    following = asyncio.create_task(read_stream(subscribed, second))
                    await asyncio.wait_for(second.wait(), 10)
                    stopped_at = loop.time()
                    served.server.should_exit = True
                    async with asyncio.timeout(GRACE + 5):
                        streams = await asyncio.gather(reading, following)
                        await served.task
                    took = loop.time() - stopped_at
            stuck.close()
    for lines in streams:
        assert b"retry: 1000" in lines
    assert took < GRACE, f"the server took {took:.1f} s to stop"
    assert served.problems() == []


@pytest.mark.parametrize("http", PARSERS)
async def test_stopping_answers_a_blocking_send_message_with_the_task_as_it_stands(
    http: Parser,
) -> None:
    """A `SendMessage` that waits for a task that goes on: told to stop, the server
    answers it with the task as it stands (the client polls or resubscribes), within
    the grace period; it was cancelled at the end ("Exception in ASGI application",
    HTTP 500 "Internal Server Error")."""
    loop = asyncio.get_running_loop()
    async with running(make_app(), http) as served:
        url = f"http://127.0.0.1:{served.port}/"
        async with httpx.AsyncClient(timeout=30) as client:
            waiting = asyncio.create_task(
                client.post(url, json=rpc("SendMessage", send("slow")), headers=VERSION)
            )
            async with asyncio.timeout(10):
                while not _working(served):  # noqa: ASYNC110 - no event says "working"
                    await asyncio.sleep(0.01)
            stopped_at = loop.time()
            served.server.should_exit = True
            async with asyncio.timeout(GRACE + 5):
                answer = await waiting
                await served.task
            took = loop.time() - stopped_at
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_WORKING"
    assert took < GRACE, f"the server took {took:.1f} s to stop"
    assert served.problems() == []


def _working(served: Running) -> bool:
    return any(
        live.state == "TASK_STATE_WORKING" for live in served.server.app.server.live.values()
    )


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
async def test_interlink_a2a_serve_stops_with_streams_open(stop: signal.Signals) -> None:
    """The real command: told to stop while a stream and a subscription are open, it
    ends both cleanly and exits within the grace period, with no traceback."""
    command = [sys.executable, "-m", "interlink", "a2a", "serve"]
    command += ["tests/a2a/stopping_app.py:app", "--port", "0", "--store", "memory:"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    err = b""
    try:
        async with asyncio.timeout(30):  # serve's one line on stdout: it listens
            line = await process.stdout.readline()
        assert line.startswith(b"serving on "), line
        url = line.removeprefix(b"serving on ").strip().decode()
        async with (
            httpx.AsyncClient(timeout=30) as client,
            slow_stream(client, url) as reading,
        ):
            process.send_signal(stop)
            async with asyncio.timeout(GRACE + 5):
                lines = await reading
                err += await process.stderr.read()
                code = await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert b"retry: 1000" in lines
    text = err.decode()
    assert not [word for word in BROKEN if word in text], text
    assert "Shutting down" in text
    assert code in (0, -stop, 128 + stop), text
