"""Servers for `python -m bench a2a`: the same echo agent on interlink and on the official
SDK (`a2a-sdk`), and a bare ASGI floor, each served by `serve` in a process of its own.

The agent, on both implementations: `stream N` answers with one artifact in N appended
chunks (`c0 `, `c1 `, ...); any other text with one artifact holding the text. Then the
task completes.
"""

STREAM_PREFIX = "stream "
PROTOCOL_BINDINGS = {"jsonrpc": "JSONRPC", "rest": "HTTP+JSON", "grpc": "GRPC"}
"""The bench's bindings, by the names the cards give them."""


def stream_chunks(text: str) -> list[str] | None:
    """The chunks the agent streams for `text`, or None when it echoes it whole."""
    if not text.startswith(STREAM_PREFIX):
        return None
    return [f"c{i} " for i in range(int(text[len(STREAM_PREFIX) :]))]
