"""Servers the tests run as other processes: a free port to give one, and whether its
agent card answers yet."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request

__all__ = ["card_answers", "card_served", "free_port"]

CARD_PATH = "/.well-known/agent-card.json"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def card_answers(url: str) -> bool:
    """Whether the agent card of the server at `url` answers 200 now."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + CARD_PATH, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def card_served(proc: subprocess.Popen[bytes], url: str, timeout: float = 30) -> bool:
    """Whether the card at `url` answers before `proc` exits and within `timeout` seconds.
    (Another process: nothing to await, so it is asked ten times a second.)"""
    deadline = time.monotonic() + timeout
    while not card_answers(url):
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True
