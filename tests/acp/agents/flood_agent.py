"""A misbehaving agent for the client's backpressure test, in plain Python (no
interlink, so nothing of ours holds it back): after `initialize` it writes N
`fs/read_text_file` requests to the client without reading a single answer.

`python flood_agent.py N STATUS_FIFO STALL`: reports on the FIFO `pid P`, then
`wrote BYTES TOTAL` once its writes made no progress for STALL seconds (or it wrote
all); on SIGUSR1 it reads the client's answers while it writes the rest and reports
`answers COUNT UNIQUE BAD` (BAD: answers that are not a file's content), then exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys

PAD = "p" * 900  # each request about 1 KiB


def request(i: int) -> str:
    params = {"sessionId": "s", "path": f"/flood/{i}/{PAD}"}
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": "fs/read_text_file", "params": params})


def main() -> None:
    count, status_path, stall = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    status = open(status_path, "w", buffering=1)  # noqa: SIM115 - open until exit
    status.write(f"pid {os.getpid()}\n")
    init = json.loads(sys.stdin.buffer.readline())
    answer = {"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": 1}}
    os.write(1, json.dumps(answer).encode() + b"\n")
    data = b"".join(request(i).encode() + b"\n" for i in range(1, count + 1))
    view = memoryview(data)
    os.set_blocking(1, False)
    sent = 0
    while sent < len(data):
        try:
            sent += os.write(1, view[sent : sent + 65536])
        except BlockingIOError:
            if not select.select([], [1], [], stall)[1]:
                break  # no progress for `stall` seconds: the client pushes back
    status.write(f"wrote {sent} {len(data)}\n")
    signal.sigwait({signal.SIGUSR1})
    ids: list[int] = []
    bad = 0
    pending = b""
    os.set_blocking(0, False)
    while len(ids) < count:
        readable, writable, _ = select.select([0], [1] if sent < len(data) else [], [], 30)
        if not readable and not writable:
            break
        if writable:
            with contextlib.suppress(BlockingIOError):
                sent += os.write(1, view[sent : sent + 65536])
        if readable:
            chunk = os.read(0, 1 << 20)
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                message = json.loads(line)
                ids.append(message["id"])
                if "x" * 100 not in message.get("result", {}).get("content", ""):
                    bad += 1
    status.write(f"answers {len(ids)} {len(set(ids))} {bad}\n")
    status.close()


if __name__ == "__main__":
    main()
