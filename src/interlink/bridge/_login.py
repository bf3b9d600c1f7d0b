"""Logging in to an ACP agent (`interlink bridge a2a --login`), and the hint a task that
failed for want of a login carries.

An agent lists its `authMethods` in its `initialize` answer (ACP v1, Authentication): a
method of type `agent` (the default) is run by calling `authenticate` with its id; one of
type `terminal` (offered only to a client that advertises
`clientCapabilities.auth.terminal`, as only `login` here does) by running the agent's own
command again with the method's `args` appended and its `env` over ours, on this
terminal: its exit status zero is success. A method of a type this schema does not know
is listed but not run. While serving, an agent that answers -32000 (authentication
required) at any step, or -32603 while a session opens (what claude-agent-acp answers
when it is not logged in), gets `login_hint` after its words.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from interlink import __version__, acp
from interlink.acp import schema as s
from interlink.bridge._pool import describe, login_refusal
from interlink.jsonrpc import ConnectionClosed, RpcError

__all__ = [
    "LoginError",
    "LoginMethod",
    "choose_login_method",
    "login",
    "login_hint",
    "login_methods",
    "offered_login_methods",
]

_AUTH_REQUIRED = -32000


class LoginError(Exception):
    """A login that could not be done, in one line; `status` is the exit status it means
    (2: the method asked for is not one the agent offers, 1: the login failed)."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class LoginMethod:
    """One of the agent's `authMethods`: `type` is `agent`, `terminal`, or the type of a
    variant this schema does not know (which `login` does not run)."""

    id: str
    name: str
    type: str = "agent"
    description: str = ""
    #: of a terminal method: appended to the agent's command, and set over our environment
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, hash=False)

    def line(self) -> str:
        """`ID<TAB>TYPE<TAB>NAME`, with ` — DESCRIPTION` when it has one."""
        about = f" — {self.description}" if self.description else ""
        return f"{self.id}\t{self.type}\t{self.name}{about}"


def login_methods(info: s.InitializeResponse) -> list[LoginMethod]:
    """The login methods of an `initialize` answer, in its order."""
    found = []
    for method in info.auth_methods if isinstance(info.auth_methods, list) else []:
        if isinstance(method, s.UnknownAuthMethod):
            text = {k: v for k, v in method.data.items() if isinstance(v, str)}
            id_ = text.get("id", "")
            about = text.get("description", "")
            found.append(LoginMethod(id_, text.get("name", id_), method.tag or "", about))
            continue
        about = method.description if isinstance(method.description, str) else ""
        if isinstance(method, s.AuthMethodAgent):
            found.append(LoginMethod(method.id, method.name, "agent", about))
            continue
        args = tuple(method.args) if isinstance(method.args, list) else ()
        env = dict(method.env) if isinstance(method.env, dict) else {}
        found.append(LoginMethod(method.id, method.name, "terminal", about, args, env))
    return found


def choose_login_method(methods: Sequence[LoginMethod], method_id: str | None) -> LoginMethod:
    """The method `method_id` names, or the only one there is; else `LoginError` (status
    2 when there is a choice to make, naming them)."""
    offered = ", ".join(m.id for m in methods)
    if method_id is not None:
        for method in methods:
            if method.id == method_id:
                return method
        if not methods:
            raise LoginError(f"the agent offers no login method (asked for {method_id!r})", 2)
        raise LoginError(f"no login method {method_id!r}: the agent offers {offered}", 2)
    if not methods:
        raise LoginError("the agent offers no login method")
    if len(methods) > 1:
        raise LoginError(f"the agent offers {len(methods)} login methods: give one ({offered})", 2)
    return methods[0]


_TERMINAL = s.ClientCapabilities(auth=s.AuthCapabilities(terminal=True))


@contextlib.asynccontextmanager
async def _initialized(
    command: Sequence[str],
    env: Mapping[str, str] | None,
    forward_stderr: Callable[[bytes], None] | None,
    start_timeout: float,
) -> AsyncIterator[tuple[acp.ClientSideConnection, s.InitializeResponse]]:
    """The agent spawned and initialized as a client that can run terminal logins."""
    async with contextlib.AsyncExitStack() as stack:
        spawning = acp.spawn_agent(command, acp.Client(), env=env, forward_stderr=forward_stderr)
        try:
            process = await stack.enter_async_context(spawning)
        except OSError as exc:
            raise LoginError(f"the agent did not start: {exc}") from None
        try:
            async with asyncio.timeout(start_timeout):
                info = await process.agent.initialize(
                    _TERMINAL,
                    client_info=s.Implementation(name="interlink-bridge", version=__version__),
                )
        except TimeoutError:
            raise LoginError(f"the agent did not answer initialize in {start_timeout} s") from None
        except (RpcError, ConnectionClosed) as exc:
            raise LoginError(f"the agent did not start: {_one_line(describe(exc))}") from None
        yield process.agent, info


async def offered_login_methods(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    forward_stderr: Callable[[bytes], None] | None = None,
    start_timeout: float = 30.0,
) -> list[LoginMethod]:
    """The login methods the agent `command` offers a client that runs terminal logins."""
    async with _initialized(command, env, forward_stderr, start_timeout) as (_, info):
        return login_methods(info)


async def login(
    command: Sequence[str],
    method_id: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    forward_stderr: Callable[[bytes], None] | None = None,
    start_timeout: float = 30.0,
) -> LoginMethod:
    """Log in to the agent `command` with the method `method_id` (or its only one): a
    terminal method runs on this process's stdin, stdout and stderr. Returns the method
    used; raises `LoginError` when the login fails or cannot be done."""
    async with _initialized(command, env, forward_stderr, start_timeout) as (agent, info):
        method = choose_login_method(login_methods(info), method_id)
        if method.type == "agent":
            try:
                await agent.authenticate(method.id)
            except (RpcError, ConnectionClosed) as exc:
                raise LoginError(f"{method.id}: {_one_line(describe(exc))}") from None
            return method
    if method.type != "terminal":
        about = f" ({method.description})" if method.description else ""
        raise LoginError(f"{method.id}: ACP v1 has no login method of type {method.type!r}{about}")
    environment = dict(os.environ if env is None else env)
    environment.update(method.env)
    try:
        process = await asyncio.create_subprocess_exec(*command, *method.args, env=environment)
    except OSError as exc:
        raise LoginError(f"{method.id}: {exc}") from None
    try:
        status = await process.wait()
    finally:
        if process.returncode is None:  # (cancelled: Ctrl-C reached it too)
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            await process.wait()
    if status != 0:
        how = f"was killed by signal {-status}" if status < 0 else f"exited with code {status}"
        raise LoginError(f"{method.id}: the login ({shlex.join([*command, *method.args])}) {how}")
    return method


def login_hint(
    exc: BaseException,
    command: Sequence[str],
    info: s.InitializeResponse | None,
    *,
    opening: bool = False,
) -> str:
    """How to log in, in one line, when `exc` is the agent's answer for want of a login
    (`login_refusal`); "" for any other error."""
    refusal = login_refusal(exc, opening=opening)
    if refusal is None:
        return ""
    how = "to log in" if refusal.code == _AUTH_REQUIRED else "if the agent wants a login"
    methods = login_methods(info) if info is not None else []
    offered = ", ".join(f"{m.id} ({m.name})" for m in methods)
    auth = f"; it offers: {offered}" if offered else ""
    return (
        f"hint: {how}, run `interlink bridge a2a --login [METHOD_ID] -- {shlex.join(command)}`"
        f" (`--login --list` lists its methods), or serve with --auth METHOD_ID{auth}"
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())
