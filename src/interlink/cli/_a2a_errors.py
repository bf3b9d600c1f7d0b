"""What `interlink a2a` says when a command fails: one line for a person, and its exit
code (the table in `_a2a_client.EXIT_CODES`).

The line says what happened in words, the agent's URL once, and what to do when there
is something to do; never an exception's class name or the HTTP library's internals
(those stay in the exception chain, for a debugger).
"""

from __future__ import annotations

import os
import socket

import httpx

from interlink.a2a import (
    A2AHttpError,
    A2ATransportError,
    AuthenticationRequired,
    CardError,
    InvalidAgentURL,
    StreamInterrupted,
)
from interlink.cli._a2a_client import A2A_ERROR, AUTH, NETWORK, USAGE, connect_timeout
from interlink.jsonrpc import RpcError

__all__ = ["describe_error", "error_exit_code"]


def error_exit_code(exc: BaseException) -> int | None:
    """The exit code for an error that ends a command (None: not ours to explain)."""
    if isinstance(exc, AuthenticationRequired):
        return AUTH
    if isinstance(exc, A2ATransportError | httpx.HTTPError | TimeoutError):
        return NETWORK
    if isinstance(exc, InvalidAgentURL):
        return USAGE
    if isinstance(exc, CardError):
        return NETWORK if _network_reason(exc, 0) is not None else A2A_ERROR
    if isinstance(exc, RpcError | A2AHttpError):
        return A2A_ERROR
    if isinstance(exc, OSError | ValueError):
        return USAGE
    return None


def describe_error(exc: BaseException, url: str, timeout: float) -> str:
    """One line (see the module); `url` is the agent's, as the command was given it, and
    `timeout` its `--timeout`."""
    where = getattr(exc, "url", None) or url
    reason = _network_reason(exc, timeout)
    if isinstance(exc, StreamInterrupted) and exc.task_id:
        why = reason or str(exc).removesuffix(f" ({exc.url})")
        text = (
            f"the stream broke off ({why}); "
            f"follow the task: interlink a2a task {url} {exc.task_id} --follow"
        )
    elif isinstance(exc, AuthenticationRequired):
        text = f"{exc}; give --bearer TOKEN or --api-key KEY"
    elif isinstance(exc, RpcError):
        text = f"{exc.message} (A2A error {exc.code})"
    elif reason is not None:
        if isinstance(exc, CardError):
            where = url  # (the card's own URL names the agent's again)
        text = f"cannot reach {where}: {reason}"
    elif isinstance(exc, A2AHttpError):
        body = exc.body[:200].decode(errors="replace").strip()
        text = f"{url} answered HTTP {exc.status}" + (f": {body}" if body else "")
    elif isinstance(exc, A2ATransportError):
        text = str(exc)  # "<what went wrong> (<url>)"
    elif isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.strerror or exc}: {exc.filename}"
    else:
        text = str(exc) or "failed"
    return " ".join(text.split())


def _network_reason(exc: BaseException, timeout: float) -> str | None:
    """Why the network failed, in words, if it did anywhere in `exc`'s chain."""
    chain: list[BaseException] = []
    found: BaseException | None = exc
    while found is not None and found not in chain:
        chain.append(found)
        found = found.__cause__ or found.__context__
    http = next((e for e in chain if isinstance(e, httpx.HTTPError)), None)
    timed_out = any(isinstance(e, httpx.TimeoutException | TimeoutError) for e in chain)
    if http is None and not timed_out:
        return None  # not the network (a file not found is an OSError too)
    for cause in chain:
        if isinstance(cause, socket.gaierror):
            return "unknown host"
        if isinstance(cause, OSError) and cause.errno and not isinstance(cause, TimeoutError):
            return os.strerror(cause.errno).lower()
    if timed_out:
        if isinstance(http, httpx.ConnectTimeout):
            return f"no connection within {connect_timeout(timeout):g} s (--timeout)"
        return f"no answer within {timeout:g} s (--timeout)"
    if isinstance(http, httpx.RemoteProtocolError):
        return "the connection closed before the answer was complete"
    if isinstance(http, httpx.ConnectError):
        return "the connection failed"
    return "the connection broke"
