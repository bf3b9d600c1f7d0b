"""Helpers for `test_replicas.py`: replica processes of `replica_agent.py` sharing one
PostgreSQL schema, SSE streams watched while they arrive, the stored event log (the
ground truth every stream is compared to), and a loopback webhook receiver.

Every process started here is killed by `Cluster.close()`, and, should a test run be
interrupted before that, by an `atexit` hook.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from interlink.a2a import KEEPALIVE_EXPIRY
from tests.serving import free_port

ROOT = Path(__file__).resolve().parents[2]
AGENT = "tests/a2a/replica_agent.py:app"
VERSION = {"A2A-Version": "1.0"}
TERMINAL = frozenset(
    {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
)
Json = dict[str, Any]

_running: dict[int, asyncio.subprocess.Process] = {}
"""Processes started and not yet reaped: killed at exit if a test could not do it."""


@atexit.register
def _kill_leftovers() -> None:
    for pid in list(_running):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def store_url(pg_url: str, schema: str) -> str:
    return f"{pg_url}{'&' if '?' in pg_url else '?'}schema={schema}"


def send(text: str, **configuration: object) -> Json:
    """SendMessage params for a new task."""
    message = {"messageId": os.urandom(8).hex(), "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"message": message, "configuration": configuration}


async def start_process(*args: str, log: Path) -> asyncio.subprocess.Process:
    """`python -m interlink ARGS...` in the repository root, stderr to `log`."""
    with log.open("ab") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "interlink", *args, cwd=ROOT, stdout=err, stderr=err
        )
    _running[proc.pid] = proc
    return proc


async def reap(proc: asyncio.subprocess.Process, *, grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; waits for the process."""
    try:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), grace)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await asyncio.wait_for(proc.wait(), 10)
    finally:
        if proc.returncode is not None:
            _running.pop(proc.pid, None)


# -- SSE streams ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """One SSE event: its `id:` (the sequence number) and its JSON-RPC response."""

    id: int | None
    data: Json

    @property
    def result(self) -> Json:
        assert "result" in self.data, f"an error in the stream: {self.data}"
        result = self.data["result"]
        assert isinstance(result, dict)
        return result


class Stream:
    """A streaming call read in the background; `events` grows as they arrive."""

    def __init__(
        self, client: httpx.AsyncClient, url: str, body: Json, headers: dict[str, str]
    ) -> None:
        self.events: list[Event] = []
        self.ended = False
        self._changed = asyncio.Condition()
        self._task = asyncio.create_task(self._read(client, url, body, headers))

    async def _read(
        self, client: httpx.AsyncClient, url: str, body: Json, headers: dict[str, str]
    ) -> None:
        try:
            async with client.stream("POST", url, json=body, headers=headers) as response:
                kind = response.headers.get("content-type", "")
                if response.status_code != 200 or not kind.startswith("text/event-stream"):
                    text = (await response.aread()).decode(errors="replace")
                    raise AssertionError(f"not a stream: HTTP {response.status_code} {text}")
                event_id: str | None = None
                data: list[str] = []
                async for line in response.aiter_lines():
                    if line == "":
                        if data:
                            await self._add(Event(_seq(event_id), json.loads("\n".join(data))))
                        event_id, data = None, []
                    elif line.startswith(":"):
                        continue  # a keep-alive comment
                    else:
                        name, _, value = line.partition(":")
                        value = value.removeprefix(" ")
                        if name == "id":
                            event_id = value
                        elif name == "data":
                            data.append(value)
                if data:
                    await self._add(Event(_seq(event_id), json.loads("\n".join(data))))
        finally:
            async with self._changed:
                self.ended = True
                self._changed.notify_all()

    async def _add(self, event: Event) -> None:
        async with self._changed:
            self.events.append(event)
            self._changed.notify_all()

    async def wait_until(
        self, what: str, ready: Callable[[list[Event]], bool], within: float = 20
    ) -> None:
        """Wait until `ready(events)`; fails when the stream ends first or on timeout."""
        try:
            async with asyncio.timeout(within), self._changed:
                await self._changed.wait_for(lambda: ready(self.events) or self.ended)
        except TimeoutError:
            raise AssertionError(
                f"no {what} within {within} s; got {_summary(self.events)}"
            ) from None
        if not ready(self.events):
            if self._task.done() and self._task.exception() is not None:
                await self._task  # the reader's own failure says more
            raise AssertionError(f"the stream ended before {what}: {_summary(self.events)}")

    async def wait_seq(self, seq: int, within: float = 20) -> None:
        await self.wait_until(
            f"event {seq}", lambda evs: any(e.id is not None and e.id >= seq for e in evs), within
        )

    async def finish(self, within: float = 30) -> list[Event]:
        """Every event, once the server ended the stream."""
        try:
            await asyncio.wait_for(asyncio.shield(self._task), within)
        except TimeoutError:
            raise AssertionError(
                f"the stream did not end within {within} s; got {_summary(self.events)}"
            ) from None
        return self.events

    async def aclose(self) -> None:
        self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task


def _seq(value: str | None) -> int | None:
    return None if value is None or value == "" else int(value)


def _summary(events: Sequence[Event]) -> str:
    return ", ".join(f"{e.id}:{describe(e.data.get('result', e.data))}" for e in events) or "-"


# -- replicas -----------------------------------------------------------------------------


@dataclass
class Replica:
    name: str
    port: int
    proc: asyncio.subprocess.Process
    log: Path
    client: httpx.AsyncClient
    streams: list[Stream] = field(default_factory=list)
    next_id: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        """The end of the process's stderr."""
        try:
            return self.log.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def _body(self, method: str, params: object) -> Json:
        self.next_id += 1
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    async def call(self, method: str, params: object) -> Json:
        response = await self.client.post(
            self.url, json=self._body(method, params), headers=VERSION
        )
        assert response.status_code == 200, f"{self.name} {method}: {response.text}"
        answer = response.json()
        assert isinstance(answer, dict)
        return answer

    async def result(self, method: str, params: object) -> Json:
        answer = await self.call(method, params)
        assert "result" in answer, f"{self.name} {method}: {answer}"
        result = answer["result"]
        assert isinstance(result, dict)
        return result

    async def task(self, task_id: str) -> Json:
        return await self.result("GetTask", {"id": task_id})

    def stream(self, method: str, params: object, *, last_event_id: int | None = None) -> Stream:
        headers = dict(VERSION)
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        stream = Stream(self.client, self.url, self._body(method, params), headers)
        self.streams.append(stream)
        return stream

    def subscribe(self, task_id: str, *, last_event_id: int | None = None) -> Stream:
        return self.stream("SubscribeToTask", {"id": task_id}, last_event_id=last_event_id)

    async def kill(self) -> None:
        """SIGKILL: the process dies without any clean-up."""
        self.proc.kill()
        await asyncio.wait_for(self.proc.wait(), 10)
        _running.pop(self.proc.pid, None)

    async def close(self) -> None:
        for stream in self.streams:
            await stream.aclose()
        await self.client.aclose()
        await reap(self.proc)


@dataclass
class Cluster:
    """Replica processes on one schema of the test database; `close()` stops them all."""

    pg_url: str
    schema: str
    tmp: Path
    replicas: list[Replica] = field(default_factory=list)

    @property
    def store(self) -> str:
        return store_url(self.pg_url, self.schema)

    async def start(self, count: int, *extra: str, lease_ttl: float = 2.0) -> list[Replica]:
        """`count` more replicas, started at once; returns them once each serves its card."""
        started = []
        for _ in range(count):
            name = f"r{len(self.replicas)}"
            port = free_port()
            log = self.tmp / f"{name}.log"
            args = ["a2a", "serve", AGENT, "--port", str(port), "--store", self.store]
            args += ["--lease-ttl", str(lease_ttl), "--log-level", "warning", *extra]
            proc = await start_process(*args, log=log)
            limits = httpx.Limits(
                max_connections=400,
                max_keepalive_connections=100,
                keepalive_expiry=KEEPALIVE_EXPIRY,
            )
            client = httpx.AsyncClient(timeout=httpx.Timeout(30), limits=limits)
            replica = Replica(name, port, proc, log, client)
            self.replicas.append(replica)
            started.append(replica)
        await asyncio.gather(*(self._ready(r) for r in started))
        return started

    @staticmethod
    async def _ready(replica: Replica, within: float = 30) -> None:
        card = replica.url + ".well-known/agent-card.json"
        deadline = time.monotonic() + within
        while True:
            if replica.proc.returncode is not None:
                raise AssertionError(
                    f"replica {replica.name} exited with {replica.proc.returncode}:\n"
                    f"{replica.output()}"
                )
            try:
                if (await replica.client.get(card, timeout=5)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"replica {replica.name} served no card within {within} s:\n{replica.output()}"
                )
            await asyncio.sleep(0.05)

    async def connect(self) -> asyncpg.Connection:
        return await asyncpg.connect(self.pg_url)

    async def log(self, task_id: str) -> list[Json]:
        """The task's stored events (seq 1, 2, ... in order: the list index is seq - 1)."""
        return (await self.logs())[task_id]

    async def logs(self) -> dict[str, list[Json]]:
        """Every task's stored event log."""
        conn = await self.connect()
        try:
            rows = await conn.fetch(
                f'SELECT task_id, seq, payload FROM "{self.schema}".events ORDER BY task_id, seq'
            )
        finally:
            await conn.close()
        logs: dict[str, list[Json]] = {}
        for row in rows:
            log = logs.setdefault(row["task_id"], [])
            assert row["seq"] == len(log) + 1, f"the stored log has a gap: {row['task_id']}"
            log.append(json.loads(row["payload"]))
        return logs

    async def close(self) -> None:
        await asyncio.gather(*(r.close() for r in self.replicas), return_exceptions=True)
        for replica in self.replicas:  # a replica whose close failed still dies
            if replica.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    replica.proc.kill()
                await replica.proc.wait()
                _running.pop(replica.proc.pid, None)


# -- what events say --------------------------------------------------------------------------


def kind(result: Json) -> str:
    keys = [k for k in ("task", "statusUpdate", "artifactUpdate", "message") if k in result]
    assert len(keys) == 1, f"not a StreamResponse: {result}"
    return keys[0]


def state_of(result: Json) -> str | None:
    """The task state an event sets (None for an artifact update)."""
    if "task" in result:
        return str(result["task"]["status"]["state"])
    if "statusUpdate" in result:
        return str(result["statusUpdate"]["status"]["state"])
    return None


def text_of(message: Json | None) -> str:
    if not message:
        return ""
    return "".join(str(p.get("text", "")) for p in message.get("parts", []))


def status_text(result: Json) -> str:
    """The text of a status update's (or a task's status) message."""
    status = result["statusUpdate"] if "statusUpdate" in result else result["task"]
    return text_of(status["status"].get("message"))


def describe(result: Json) -> str:
    try:
        if "artifactUpdate" in result:
            return "artifact " + "".join(
                str(p.get("text", "")) for p in result["artifactUpdate"]["artifact"]["parts"]
            )
        text = status_text(result)
        return f"{kind(result)} {state_of(result)}" + (f" {text!r}" if text else "")
    except (KeyError, AssertionError, TypeError):
        return json.dumps(result)[:200]


@dataclass
class Folded:
    """A task as its events built it."""

    state: str = ""
    artifacts: dict[str, str] = field(default_factory=dict)
    """artifact id -> its text"""
    messages: list[str] = field(default_factory=list)
    """the texts of the status messages, in order"""


def fold(log: Sequence[Json]) -> Folded:
    folded = Folded()
    for result in log:
        if "task" in result:
            task = result["task"]
            folded.state = task["status"]["state"]
            folded.artifacts = {
                a["artifactId"]: artifact_text(a) for a in task.get("artifacts", [])
            }
        elif "statusUpdate" in result:
            status = result["statusUpdate"]["status"]
            folded.state = status["state"]
            if status.get("message"):
                folded.messages.append(text_of(status["message"]))
        elif "artifactUpdate" in result:
            update = result["artifactUpdate"]
            artifact = update["artifact"]
            text = artifact_text(artifact)
            if update.get("append"):
                folded.artifacts[artifact["artifactId"]] += text
            else:
                folded.artifacts[artifact["artifactId"]] = text
        else:
            raise AssertionError(f"not a task event: {result}")
    return folded


def artifact_text(artifact: Json) -> str:
    return "".join(str(p.get("text", "")) for p in artifact.get("parts", []))


def check_sent_stream(events: Sequence[Event], log: Sequence[Json]) -> None:
    """A SendStreamingMessage stream of a new task: every stored event exactly once, in
    order, ids 1..last, the terminal one last."""
    ids = [e.id for e in events]
    assert ids == list(range(1, len(log) + 1)), f"ids {ids}, stored 1..{len(log)}"
    for e in events:
        assert e.result == log[e.id - 1], f"event {e.id} differs from the stored one"  # type: ignore[operator]
    check_ends_once(events)


def check_subscription(
    events: Sequence[Event], log: Sequence[Json], task_id: str, *, after: int | None = None
) -> int:
    """A SubscribeToTask stream: the task snapshot, then every later stored event exactly
    once, in order, without a gap, the terminal one last. `after`: the Last-Event-ID the
    subscription resumed from. Returns the first seq after the snapshot."""
    assert events, "an empty subscription"
    snapshot, rest = events[0], list(events[1:])
    assert kind(snapshot.result) == "task", f"the first event is not the task: {snapshot}"
    assert snapshot.result["task"]["id"] == task_id
    assert rest, f"nothing after the snapshot: {_summary(events)}"
    assert all(e.id is not None for e in rest), f"an event without id: {_summary(events)}"
    first = rest[0].id
    assert first is not None
    if after is not None:
        assert first == after + 1, f"resumed after {after}, got {first} first"
    elif snapshot.id is not None:
        assert first == snapshot.id + 1, f"the snapshot is {snapshot.id}, the next is {first}"
    ids = [e.id for e in rest]
    assert ids == list(range(first, len(log) + 1)), (
        f"ids after the snapshot {ids}, stored 1..{len(log)}"
    )
    for e in rest:
        assert e.result == log[e.id - 1], f"event {e.id} differs from the stored one"  # type: ignore[operator]
    if after is None:  # the snapshot is the task as of the event before `first`
        before = fold(log[: first - 1])
        task = snapshot.result["task"]
        got = {a["artifactId"]: artifact_text(a) for a in task.get("artifacts", [])}
        assert (task["status"]["state"], got) == (before.state, before.artifacts), (
            f"the snapshot is not the task after event {first - 1}"
        )
    check_ends_once(events)
    return first


def check_ends_once(events: Sequence[Event]) -> None:
    """Exactly one terminal event, the last one."""
    states = [state_of(e.result) for e in events[1:]] if events else []
    if events and kind(events[0].result) != "task":
        states.insert(0, state_of(events[0].result))
    terminal = [s for s in states if s in TERMINAL]
    assert len(terminal) == 1, f"{len(terminal)} terminal events: {_summary(events)}"
    assert state_of(events[-1].result) in TERMINAL, f"the last is not terminal: {_summary(events)}"


def check_task(task: Json, log: Sequence[Json]) -> Folded:
    """GetTask's answer is what the stored events built: state, artifacts, messages."""
    folded = fold(log)
    assert task["status"]["state"] == folded.state
    got = {a["artifactId"]: artifact_text(a) for a in task.get("artifacts", [])}
    assert got == folded.artifacts
    agent = [text_of(m) for m in task.get("history", []) if m.get("role") == "ROLE_AGENT"]
    assert agent == folded.messages, f"history {agent}, events {folded.messages}"
    return folded


# -- a webhook receiver -----------------------------------------------------------------------


@dataclass(frozen=True)
class Push:
    key: str
    token: str
    body: bytes


@dataclass
class Webhook:
    """An HTTP/1.1 receiver on 127.0.0.1 that records each request and answers 200."""

    pushes: list[Push] = field(default_factory=list)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    url: str = ""
    _server: asyncio.Server | None = None
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/hook"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                lines = head.decode().split("\r\n")[1:]
                headers = {k.lower(): v for k, _, v in (h.partition(": ") for h in lines if h)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                push = Push(
                    headers.get("x-a2a-idempotency-key", ""),
                    headers.get("x-a2a-notification-token", ""),
                    body,
                )
                async with self.changed:
                    self.pushes.append(push)
                    self.changed.notify_all()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def wait_for(self, ready: Callable[[list[Push]], bool], within: float) -> None:
        try:
            async with asyncio.timeout(within), self.changed:
                await self.changed.wait_for(lambda: ready(self.pushes))
        except TimeoutError:
            raise AssertionError(
                f"the webhook got {len(self.pushes)} requests within {within} s, not all"
            ) from None

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 5)
