"""An ACP agent that does not end at stdin EOF (as some do not): it answers `initialize`
and `session/new`, writes its pid to the file named by argv[1], then outlives its input
until it is signalled."""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> None:
    with open(sys.argv[1] + ".tmp", "w") as file:
        file.write(str(os.getpid()))
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("method") == "initialize":
            result: object = {"protocolVersion": 1, "agentCapabilities": {}}
        elif request.get("method") == "session/new":
            result = {"sessionId": "sess_deaf"}
        else:
            continue
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    while True:  # EOF: not the end, for this agent
        time.sleep(3600)


if __name__ == "__main__":
    main()
