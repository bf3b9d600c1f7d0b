"""`interlink bridge a2a --login`: listing and running an agent's login methods, and the
hint a task failed for want of a login carries; with `login_agent.py` as real
subprocesses, served tasks sent by interlink's A2A client."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from pathlib import Path

import pytest

from interlink.a2a import types as t
from interlink.acp import schema as s
from interlink.bridge import (
    AcpBridge,
    LoginError,
    LoginMethod,
    choose_login_method,
    login_methods,
)
from tests.bridge.conftest import ROOT, connected
from tests.bridge.test_sessions import turn

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

S = t.TaskState
LOGIN_AGENT = [sys.executable, str(Path(__file__).with_name("login_agent.py"))]


def agent(tmp: Path, *options: str) -> list[str]:
    return [*LOGIN_AGENT, str(tmp / "credentials"), *options]


async def cli(
    *args: str, stdin: bytes = b"", env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """`interlink bridge a2a ARGS`: its exit status, stdout and stderr."""
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "interlink", "bridge", "a2a", *args),
        cwd=ROOT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    async with asyncio.timeout(30):
        out, err = await proc.communicate(stdin)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def failure(tmp: Path, command: list[str], message: str = "hello") -> list[str]:
    """The lines of the reason a served task failed with."""
    async with connected(tmp, command) as client:
        task = await client.send_message(message)
        assert isinstance(task, t.Task)
        assert task.status.state == S.TASK_STATE_FAILED, task.status
        assert task.status.message is not None
        return str(task.status.message.parts[0].text).splitlines()


def hint(command: list[str], offered: str = "; it offers: key (API key)") -> str:
    return (
        f"to log in, run `interlink bridge a2a --login [METHOD_ID] -- {shlex.join(command)}` "
        f"(`--login --list` lists its methods), or serve with --auth METHOD_ID{offered}"
    )


async def test_list_prints_the_methods_offered_to_a_client_that_runs_terminal_logins(
    tmp_path: Path,
) -> None:
    status, out, err = await cli("--login", "--list", "--", *agent(tmp_path))
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "terminal\tterminal\tLog in from the terminal — asks for a code",
        "key\tagent\tAPI key",
        "env\tenv_var\tSet LOGIN_AGENT_KEY",
    ]
    assert (await cli("--list", "--", *agent(tmp_path)))[1] == out


async def test_a_terminal_login_runs_on_the_terminal_then_serving_works(tmp_path: Path) -> None:
    command = agent(tmp_path)
    status, out, err = await cli("--login", "terminal", "--", *command, stdin=b"s3cret\n")
    assert (status, err) == (0, "")
    # the agent's own login talked on our stdio, then we said how it went
    assert out == "code: logged in\nlogged in with terminal (Log in from the terminal)\n"
    assert (tmp_path / "credentials").read_text() == "s3cret"
    async with connected(tmp_path, command) as client:
        task = await client.send_message("hello")
        assert isinstance(task, t.Task)
        assert task.status.state == S.TASK_STATE_COMPLETED
        assert task.artifacts[0].parts[0].text == "hello"


async def test_a_terminal_login_that_fails_exits_1_in_one_line(tmp_path: Path) -> None:
    command = agent(tmp_path)
    status, out, err = await cli("--login", "terminal", "--", *command, stdin=b"\n")
    assert (status, out) == (1, "code: ")
    login = shlex.join([*command, "--terminal-login"])
    assert err == (
        "no code given\n"  # (the agent's, on our stderr)
        f"interlink bridge a2a: terminal: the login ({login}) exited with code 4\n"
    )
    assert not (tmp_path / "credentials").exists()


async def test_an_agent_login_calls_authenticate_and_says_how_it_went(tmp_path: Path) -> None:
    command = agent(tmp_path)
    status, out, err = await cli("--login", "key", "--", *command)
    assert (status, out) == (1, "")
    assert err == (
        "interlink bridge a2a: key: the agent answered -32000: Authentication failed: "
        "LOGIN_AGENT_KEY is not set\n"
    )
    status, out, err = await cli("--login", "key", "--", *command, env={"LOGIN_AGENT_KEY": "k1"})
    assert (status, out, err) == (0, "logged in with key (API key)\n", "")
    assert (tmp_path / "credentials").read_text() == "k1"


@pytest.mark.parametrize(
    ("given", "says", "status"),
    [
        (["nope"], "no login method 'nope': the agent offers terminal, key, env", 2),
        ([], "the agent offers 3 login methods: give one (terminal, key, env)", 2),
        (["env"], "env: ACP v1 has no login method of type 'env_var'", 1),
    ],
)
async def test_a_method_not_offered_not_chosen_or_unknown_fails_in_one_line(
    tmp_path: Path, given: list[str], says: str, status: int
) -> None:
    got = await cli("--login", *given, "--", *agent(tmp_path))
    assert got == (status, "", f"interlink bridge a2a: {says}\n")


async def test_an_agent_that_does_not_start_fails_the_login_in_one_line(tmp_path: Path) -> None:
    status, out, err = await cli("--login", "--", "false")
    assert (status, out) == (1, "")
    assert err == (
        "interlink bridge a2a: the agent did not start: the agent closed its stdout and "
        "exited with code 1\n"
    )


async def test_serving_before_a_login_fails_the_task_with_the_agents_words_and_a_hint(
    tmp_path: Path,
) -> None:
    command = agent(tmp_path)
    # serving does not advertise terminal logins: only `key` is offered
    assert await failure(tmp_path, command) == [
        "the agent answered -32000: Authentication required: not logged in",
        f"hint: {hint(command)}",
    ]


async def test_an_internal_error_opening_a_session_carries_the_hint_too(tmp_path: Path) -> None:
    command = agent(tmp_path, "--internal")
    assert await failure(tmp_path, command) == [
        "the agent answered -32603: Internal error (Query closed)",
        f"hint: {hint(command).replace('to log in', 'if the agent wants a login', 1)}",
    ]


async def test_a_prompt_refused_for_want_of_a_login_carries_the_hint(tmp_path: Path) -> None:
    command = agent(tmp_path)
    (tmp_path / "credentials").write_text("old")
    async with connected(tmp_path, command) as client:
        first = await client.send_message("hello", context_id="c")
        assert isinstance(first, t.Task)
        assert first.status.state == S.TASK_STATE_COMPLETED
        (tmp_path / "credentials").unlink()  # (the session is open: the prompt refuses)
        task = await client.send_message("again", context_id="c")
        assert isinstance(task, t.Task)
        assert task.status.state == S.TASK_STATE_FAILED
        assert task.status.message is not None
        assert str(task.status.message.parts[0].text).splitlines() == [
            "the agent answered -32000: Authentication required: the login expired",
            f"hint: {hint(command)}",
        ]


async def test_a_refused_auth_at_start_up_says_how_to_log_in(tmp_path: Path) -> None:
    command = agent(tmp_path)
    status, out, err = await cli(
        "--port", "0", "--store", "memory:", "--auth", "key", "--", *command
    )
    assert (status, out) == (1, "")
    assert err.splitlines() == [
        "interlink bridge a2a: the agent did not start: the agent answered -32000: "
        "Authentication failed: LOGIN_AGENT_KEY is not set",
        f"hint: {hint(command)}",
    ]


@pytest.mark.timeout(30)
async def test_a_restart_refused_for_want_of_a_login_fails_the_task_at_once(
    tmp_path: Path,
) -> None:
    command = agent(tmp_path)
    bridge = AcpBridge(
        command,
        workspace=tmp_path / "ws",
        auth_method="key",
        env={**os.environ, "LOGIN_AGENT_KEY": "k1"},
        min_backoff=0.01,
        start_timeout=60,  # (not waited for: the test's timeout is shorter)
    )
    await bridge.start()
    try:
        assert (await turn(bridge, "c", "hello")).states()[-1] == S.TASK_STATE_COMPLETED
        (tmp_path / "credentials.revoked").touch()  # (its next authenticate refuses)
        assert (await turn(bridge, "c", "die")).states()[-1] == S.TASK_STATE_FAILED
        refused = await turn(bridge, "c", "hello")
        assert refused.states()[-1] == S.TASK_STATE_FAILED
        assert refused.notes()[-1].splitlines() == [
            "the agent is not running (the agent answered -32000: Authentication failed: "
            "the key was revoked)",
            f"hint: {hint(command)}",
        ]
    finally:
        await bridge.aclose()


def test_the_methods_of_an_initialize_answer_and_the_choice_of_one() -> None:
    info = s.InitializeResponse(
        protocol_version=1,
        auth_methods=[
            s.AuthMethodTerminal(id="t", name="T", args=["--login"], env={"X": "1"}),
            s.AuthMethodAgent(id="a", name="A", description="by the agent"),
            s.UnknownAuthMethod({"type": "env_var", "id": "e", "name": "E", "varName": "KEY"}),
        ],
    )
    methods = login_methods(info)
    assert methods == [
        LoginMethod("t", "T", "terminal", "", ("--login",), {"X": "1"}),
        LoginMethod("a", "A", "agent", "by the agent"),
        LoginMethod("e", "E", "env_var"),
    ]
    assert [m.line() for m in methods] == [
        "t\tterminal\tT",
        "a\tagent\tA — by the agent",
        "e\tenv_var\tE",
    ]
    assert choose_login_method(methods, "a") is methods[1]
    assert choose_login_method(methods[:1], None) is methods[0]
    with pytest.raises(LoginError, match="offers no login method") as refused:
        choose_login_method([], None)
    assert refused.value.status == 1
    with pytest.raises(LoginError, match="give one") as several:
        choose_login_method(methods, None)
    assert several.value.status == 2
    assert login_methods(s.InitializeResponse(protocol_version=1)) == []
