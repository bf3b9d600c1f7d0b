"""A deliberately broken ACP agent (raw NDJSON, no library), for the checker's tests.

Each defect breaks one rule that `interlink acp check` must report:

- writes a banner line that is not JSON-RPC to stdout (process.stdout-only-protocol);
- invalid JSON is not answered (rpc.parse-error);
- answers `session/new` before `initialize` (init.gate);
- echoes any requested protocol version (init.newer-version);
- echoes integer ids other than 1..999 as strings (rpc.id-zero, rpc.id-negative, rpc.id-large);
- answers unknown methods with a result (rpc.unknown-method, ext.unknown-request);
- sends a `session/update` after the prompt's answer (prompt.updates-before-answer);
- ignores `session/cancel`: a slow turn ends `end_turn` (cancel.session-cancel).

Everything else it does correctly enough to be served: it exits on stdin EOF.
"""

from __future__ import annotations

import json
import sys
import threading
import time

_write_lock = threading.Lock()


def send(message: dict[str, object]) -> None:
    with _write_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def answer(rid: object, result: object) -> None:
    mangled = isinstance(rid, int) and not 0 < rid < 1000  # small positive ids survive
    send({"jsonrpc": "2.0", "id": str(rid) if mangled else rid, "result": result})


def update(session: str, text: str) -> None:
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session, "update": chunk},
        }
    )


def prompt(rid: object, params: dict[str, object]) -> None:
    session = str(params.get("sessionId"))
    blocks = params.get("prompt")
    words = (
        " ".join(
            str(b.get("text")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"
        )
        if isinstance(blocks, list)
        else ""
    )
    if words == "slow":
        for _ in range(6):
            update(session, ".")
            time.sleep(0.5)
    answer(rid, {"stopReason": "end_turn"})
    update(session, "too late")


def main() -> None:
    sys.stdout.write("broken agent ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message:
            continue
        rid, method = message["id"], message.get("method")
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        assert isinstance(params, dict)
        if method == "initialize":
            answer(rid, {"protocolVersion": params.get("protocolVersion"), "agentCapabilities": {}})
        elif method == "session/new":
            answer(rid, {"sessionId": f"s{time.monotonic_ns()}"})
        elif method == "session/prompt":
            threading.Thread(target=prompt, args=(rid, params), daemon=True).start()
        else:
            answer(rid, {})


if __name__ == "__main__":
    main()
