"""What `python -m bench a2a` sends on each binding, how it checks each answer, and the
loop that drives the load: workers in parallel, one request in flight each, until a
deadline or a count.

A binding (`JSONRPC`, `REST`, `GRPC`) turns a workload's request into a `Call` for its
wire and an `Answer` back into the dicts of the JSON bindings (camelCase, enums by name);
the checks are the same on every binding. A wrong answer (status, JSON-RPC error, id,
task state, echoed text, a missing or reordered stream chunk) counts as an error, as does
a failed or timed-out exchange. The floor's fixed answers get a lenient check: a
well-formed answer of the right kind, and the stream's count of artifact events.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from bench.a2a_peers import proto, stream_chunks

__all__ = [
    "BINDINGS",
    "Answer",
    "Binding",
    "Call",
    "Caller",
    "Check",
    "Request",
    "Run",
    "drive",
    "floor",
    "get",
    "send",
    "stream",
]

_COMPLETED = "TASK_STATE_COMPLETED"
_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.encode


@dataclass(frozen=True, slots=True)
class Call:
    """One request: an HTTP method and path with its body, or a gRPC method (`path`,
    `method` empty) with its serialized request; `stream` for a streaming answer."""

    method: str
    path: str
    body: bytes
    stream: bool = False


Answer = tuple[int, list[bytes]]
"""The HTTP status and the body (one item), or 0 and a gRPC call's messages."""
Check = Callable[[Answer], int]
"""An answer -> the events it counts; raises `BadAnswer` for a wrong one."""
Request = Callable[[int], tuple[Call, Check]]


class Caller(Protocol):
    """One worker's connection to the server, one call in flight."""

    async def call(self, call: Call) -> Answer: ...

    async def aclose(self) -> None: ...


class BadAnswer(Exception):
    pass


def _message(text: str) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}


def _sse_data(body: bytes) -> Iterator[bytes]:
    """The data of each Server-Sent Event in a complete stream."""
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [
            line[6:] if line.startswith(b"data: ") else line[5:]
            for line in block.split(b"\n")
            if line.startswith(b"data:")
        ]
        if data:
            yield b"\n".join(data)


def _http_body(answer: Answer) -> bytes:
    status, (body,) = answer
    if status != 200:
        raise BadAnswer(f"HTTP {status}: {body[:200]!r}")
    return body


class Binding:
    """How one binding carries the workloads; `n` is the request's number, None for the
    floor (whose answers carry no ids)."""

    name = ""
    headers: tuple[tuple[str, str], ...] = ()
    """Sent with every call: HTTP headers, or gRPC metadata."""

    def send(self, n: int, text: str) -> Call:
        raise NotImplementedError

    def stream(self, n: int, text: str) -> Call:
        raise NotImplementedError

    def get(self, n: int, task_id: str) -> Call:
        raise NotImplementedError

    def result(self, answer: Answer, n: int | None, kind: str) -> dict[str, Any]:
        """The unary answer: a `SendMessageResponse` or a `Task` (`kind`)."""
        raise NotImplementedError

    def events(self, answer: Answer, n: int | None) -> list[dict[str, Any]]:
        """The stream's `StreamResponse`s."""
        raise NotImplementedError


class JsonRpc(Binding):
    name = "jsonrpc"
    headers = (("Content-Type", "application/json"), ("A2A-Version", "1.0"))

    def _call(self, n: int, method: str, params: dict[str, Any], stream: bool = False) -> Call:
        body = _encode({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
        return Call("POST", "/", body, stream)

    def send(self, n: int, text: str) -> Call:
        return self._call(n, "SendMessage", {"message": _message(text)})

    def stream(self, n: int, text: str) -> Call:
        return self._call(n, "SendStreamingMessage", {"message": _message(text)}, True)

    def get(self, n: int, task_id: str) -> Call:
        return self._call(n, "GetTask", {"id": task_id})

    def _unwrap(self, body: bytes, n: int | None) -> dict[str, Any]:
        answer = _decode(body)
        if "error" in answer:
            raise BadAnswer(f"JSON-RPC error {answer['error']}"[:300])
        if n is not None and answer.get("id") != n:
            raise BadAnswer(f"answer to id {answer.get('id')!r}, expected {n}")
        result: dict[str, Any] = answer["result"]
        return result

    def result(self, answer: Answer, n: int | None, kind: str) -> dict[str, Any]:
        return self._unwrap(_http_body(answer), n)

    def events(self, answer: Answer, n: int | None) -> list[dict[str, Any]]:
        return [self._unwrap(data, n) for data in _sse_data(_http_body(answer))]


class Rest(Binding):
    name = "rest"
    headers = (("Content-Type", "application/a2a+json"), ("A2A-Version", "1.0"))

    def send(self, n: int, text: str) -> Call:
        return Call("POST", "/message:send", _encode({"message": _message(text)}))

    def stream(self, n: int, text: str) -> Call:
        return Call("POST", "/message:stream", _encode({"message": _message(text)}), True)

    def get(self, n: int, task_id: str) -> Call:
        return Call("GET", f"/tasks/{task_id}", b"")

    def result(self, answer: Answer, n: int | None, kind: str) -> dict[str, Any]:
        result: dict[str, Any] = _decode(_http_body(answer))
        return result

    def events(self, answer: Answer, n: int | None) -> list[dict[str, Any]]:
        return [_decode(data) for data in _sse_data(_http_body(answer))]


class Grpc(Binding):
    name = "grpc"
    headers = (("a2a-version", "1.0"),)

    def send(self, n: int, text: str) -> Call:
        return Call("", proto.SERVICE + "SendMessage", proto.send_message(uuid.uuid4().hex, text))

    def stream(self, n: int, text: str) -> Call:
        body = proto.send_message(uuid.uuid4().hex, text)
        return Call("", proto.SERVICE + "SendStreamingMessage", body, True)

    def get(self, n: int, task_id: str) -> Call:
        return Call("", proto.SERVICE + "GetTask", proto.get_task(task_id))

    def result(self, answer: Answer, n: int | None, kind: str) -> dict[str, Any]:
        (message,) = answer[1]
        return proto.decode(message, proto.SCHEMAS[kind])

    def events(self, answer: Answer, n: int | None) -> list[dict[str, Any]]:
        schema = proto.SCHEMAS["StreamResponse"]
        return [proto.decode(message, schema) for message in answer[1]]


BINDINGS: dict[str, Binding] = {b.name: b for b in (JsonRpc(), Rest(), Grpc())}


# ---- the workloads -------------------------------------------------------------------


def send(binding: Binding) -> Request:
    """Blocking `SendMessage` of `echo N`: a completed task echoing it."""

    def request(n: int) -> tuple[Call, Check]:
        text = f"echo {n}"

        def check(answer: Answer) -> int:
            task = binding.result(answer, n, "SendMessageResponse")["task"]
            state = task["status"]["state"]
            echoed = task["artifacts"][0]["parts"][0]["text"]
            if state != _COMPLETED or echoed != text:
                raise BadAnswer(f"task {state} echoing {echoed!r}, expected {text!r}")
            return 1

        return binding.send(n, text), check

    return request


def stream(binding: Binding, chunks: int) -> Request:
    """`SendStreamingMessage` of `stream N`: N artifact chunks in order, then completed."""
    text = f"stream {chunks}"
    expected = "".join(stream_chunks(text) or [])

    def request(n: int) -> tuple[Call, Check]:
        def check(answer: Answer) -> int:
            results = binding.events(answer, n)
            updates = [r["artifactUpdate"] for r in results if "artifactUpdate" in r]
            got = "".join(p["text"] for u in updates for p in u["artifact"]["parts"])
            last = results[-1] if results else {}
            state = (last.get("statusUpdate") or last.get("task") or {}).get("status", {})
            if got != expected or state.get("state") != _COMPLETED:
                raise BadAnswer(
                    f"{len(updates)} artifact events, text {got[:40]!r}..., "
                    f"last state {state.get('state')!r}"
                )
            return len(updates)

        return binding.stream(n, text), check

    return request


def get(binding: Binding, task_id: str) -> Request:
    """`GetTask` of one completed task."""

    def request(n: int) -> tuple[Call, Check]:
        def check(answer: Answer) -> int:
            task = binding.result(answer, n, "Task")
            if task["id"] != task_id or task["status"]["state"] != _COMPLETED:
                raise BadAnswer(f"task {task['id']} in {task['status']['state']}")
            return 1

        return binding.get(n, task_id), check

    return request


def floor(binding: Binding, workload: str, chunks: int) -> Request:
    """`workload`'s requests (`send`, `stream` or `get`) as they are, checked leniently
    against the floor's fixed answers."""

    def request(n: int) -> tuple[Call, Check]:
        if workload == "stream":
            call = binding.stream(n, f"stream {chunks}")

            def check(answer: Answer) -> int:
                events = binding.events(answer, None)
                updates = sum("artifactUpdate" in e for e in events)
                if updates != chunks:
                    raise BadAnswer(f"{updates} artifact events of {len(events)}")
                return updates

            return call, check
        kind = "Task" if workload == "get" else "SendMessageResponse"
        call = binding.get(n, "floor") if workload == "get" else binding.send(n, f"echo {n}")

        def check_unary(answer: Answer) -> int:
            if not binding.result(answer, None, kind):
                raise BadAnswer(f"an empty {kind}")
            return 1

        return call, check_unary

    return request


# ---- the loop ------------------------------------------------------------------------


@dataclass
class Run:
    """One measured workload on one server."""

    ops: int = 0
    """Correct answers."""
    events: int = 0
    """What the workload counts: answers, or artifact events for streams."""
    errors: int = 0
    first_error: str = ""
    elapsed: float = 0.0
    latencies: list[float] = field(default_factory=list)
    server_cpu: float = 0.0
    client_cpu: float = 0.0

    @property
    def rate(self) -> float:
        return self.events / self.elapsed if self.elapsed else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    @property
    def cpu_per_event_ms(self) -> float:
        return self.server_cpu / self.events * 1000 if self.events else float("nan")

    @property
    def client_busy(self) -> float:
        return self.client_cpu / self.elapsed if self.elapsed else 0.0


async def drive(
    callers: list[Caller], request: Request, duration: float, max_ops: int, limit: float
) -> Run:
    """`callers` in parallel, each request after the last, until `duration` or `max_ops`
    (one request at least, however late the first caller starts); a request gets
    `limit` seconds."""
    run = Run()
    issued = 0
    start = time.perf_counter()
    deadline = start + duration

    async def worker(caller: Caller) -> None:
        nonlocal issued
        while issued < max_ops and (not issued or time.perf_counter() < deadline):
            issued += 1
            call, check = request(issued)
            sent = time.perf_counter()
            try:
                async with asyncio.timeout(limit):
                    answer = await caller.call(call)
                run.events += check(answer)
            except Exception as exc:  # counted and shown, never hidden
                run.errors += 1
                run.first_error = run.first_error or f"{type(exc).__name__}: {exc}"[:300]
                continue
            run.latencies.append(time.perf_counter() - sent)
            run.ops += 1

    await asyncio.gather(*(worker(caller) for caller in callers))
    run.elapsed = time.perf_counter() - start
    return run
