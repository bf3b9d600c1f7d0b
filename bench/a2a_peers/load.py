"""What `python -m bench a2a` sends, how it checks each answer, and the loop that drives
the load: workers in parallel, one request in flight each, until a deadline or a count.
A wrong answer (status, JSON-RPC error, id, task state, echoed text, a missing or
reordered stream chunk) counts as an error, as does a failed or timed-out exchange.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from bench.a2a_peers import stream_chunks
from bench.a2a_peers.http11 import Poster

__all__ = ["Check", "Request", "Run", "drive", "floor", "get", "send", "stream"]

_COMPLETED = "TASK_STATE_COMPLETED"
_decode = msgspec.json.Decoder().decode

# Check: (HTTP status, body) -> events counted; raises _BadAnswer for a wrong answer
Check = Callable[[int, bytes], int]
Request = Callable[[int], tuple[bytes, Check]]


class _BadAnswer(Exception):
    pass


def _envelope(n: int, method: str, params: dict[str, Any]) -> bytes:
    return msgspec.json.encode({"jsonrpc": "2.0", "id": n, "method": method, "params": params})


def _message(text: str) -> dict[str, Any]:
    return {
        "message": {
            "messageId": uuid.uuid4().hex,
            "role": "ROLE_USER",
            "parts": [{"text": text}],
        }
    }


def _result(status: int, body: bytes, n: int) -> Any:
    if status != 200:
        raise _BadAnswer(f"HTTP {status}: {body[:200]!r}")
    answer = _decode(body)
    if "error" in answer:
        raise _BadAnswer(f"JSON-RPC error {answer['error']}"[:300])
    if answer.get("id") != n:
        raise _BadAnswer(f"answer to id {answer.get('id')!r}, expected {n}")
    return answer["result"]


def send(n: int) -> tuple[bytes, Check]:
    text = f"echo {n}"

    def check(status: int, body: bytes) -> int:
        task = _result(status, body, n)["task"]
        state = task["status"]["state"]
        echoed = task["artifacts"][0]["parts"][0]["text"]
        if state != _COMPLETED or echoed != text:
            raise _BadAnswer(f"task {state} echoing {echoed!r}, expected {text!r}")
        return 1

    return _envelope(n, "SendMessage", _message(text)), check


def floor(n: int) -> tuple[bytes, Check]:
    def check(status: int, body: bytes) -> int:
        if status != 200 or "result" not in _decode(body):
            raise _BadAnswer(f"HTTP {status}: {body[:200]!r}")
        return 1

    return send(n)[0], check


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


def stream(chunks: int) -> Request:
    text = f"stream {chunks}"
    expected = "".join(stream_chunks(text) or [])

    def request(n: int) -> tuple[bytes, Check]:
        def check(status: int, body: bytes) -> int:
            results = [_result(status, data, n) for data in _sse_data(body)]
            updates = [r["artifactUpdate"] for r in results if "artifactUpdate" in r]
            got = "".join(p["text"] for u in updates for p in u["artifact"]["parts"])
            last = results[-1] if results else {}
            state = (last.get("statusUpdate") or last.get("task") or {}).get("status", {})
            if got != expected or state.get("state") != _COMPLETED:
                raise _BadAnswer(
                    f"{len(updates)} artifact events, text {got[:40]!r}..., "
                    f"last state {state.get('state')!r}"
                )
            return len(updates)

        return _envelope(n, "SendStreamingMessage", _message(text)), check

    return request


def get(task_id: str) -> Request:
    def request(n: int) -> tuple[bytes, Check]:
        def check(status: int, body: bytes) -> int:
            task = _result(status, body, n)
            if task["id"] != task_id or task["status"]["state"] != _COMPLETED:
                raise _BadAnswer(f"task {task['id']} in {task['status']['state']}")
            return 1

        return _envelope(n, "GetTask", {"id": task_id}), check

    return request


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
    posters: list[Poster], request: Request, duration: float, max_ops: int, limit: float
) -> Run:
    """`posters` in parallel, each request after the last, until `duration` or `max_ops`;
    a request gets `limit` seconds."""
    run = Run()
    issued = 0
    start = time.perf_counter()
    deadline = start + duration

    async def worker(poster: Poster) -> None:
        nonlocal issued
        while issued < max_ops and time.perf_counter() < deadline:
            issued += 1
            body, check = request(issued)
            sent = time.perf_counter()
            try:
                async with asyncio.timeout(limit):
                    status, answer = await poster.post(body)
                run.events += check(status, answer)
            except Exception as exc:  # counted and shown, never hidden
                run.errors += 1
                run.first_error = run.first_error or f"{type(exc).__name__}: {exc}"[:300]
                continue
            run.latencies.append(time.perf_counter() - sent)
            run.ops += 1

    await asyncio.gather(*(worker(poster) for poster in posters))
    run.elapsed = time.perf_counter() - start
    return run
