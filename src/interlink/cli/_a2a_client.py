"""`interlink a2a card|send|tasks|task|cancel`: talk to any A2A 1.0 agent from a terminal.

`send` streams by default when the card declares streaming: status changes, artifact
chunks inline, a spinner while the agent works (on a terminal). When the agent asks for
input, the person answers at a prompt and the same task goes on (without a terminal the
question is printed and the exit code is 3). Ctrl-C asks whether to cancel the task;
Ctrl-C at that question leaves it running (exit 130). `--json` prints ProtoJSON: the
result, or one object per line for streams and task lists; it never prompts
(input-required exits 3, Ctrl-C cancels).
The A2A client is imported inside `run`, so that other commands start without it.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from typing import TYPE_CHECKING, Final

from interlink.cli._parser import Commands, Parser, repeatable, subcommand
from interlink.cli._terminal import Style, colors  # imported by the CLI anyway: costs nothing

if TYPE_CHECKING:
    import httpx

    from interlink.a2a import A2AClient, KeySource, Negotiation, TrustedKeys
    from interlink.a2a import types as t

__all__ = ["COMMANDS", "EXIT_CODES", "add_parsers", "run"]

COMMANDS: Final = ("card", "send", "tasks", "task", "cancel")
# exit codes (EXIT_CODES says what each means)
OK: Final = 0
TASK_FAILED: Final = 1
USAGE: Final = 2
NEEDS_INPUT: Final = 3
AUTH: Final = 4
A2A_ERROR: Final = 5
NETWORK: Final = 6
INTERRUPTED: Final = 130
TASKS_LIMIT: Final = 30  # `tasks` lists this many by default, as `gh` does
BINDINGS: Final = ("jsonrpc", "rest", "grpc")
VERSIONS: Final = ("1.0", "0.3")
EXIT_CODES: Final = """exit codes:
  0    success; the task completed (or was accepted, or is still working)
  1    the task failed, was rejected or was canceled
  2    usage error (bad options, unreadable --file)
  3    the agent needs input and there is no terminal to ask (or no answer was given)
  4    authentication required: missing or wrong credentials (HTTP 401), or auth-required
  5    A2A error (task not found, not cancelable, ...) or no usable agent card at URL
  6    network error: the agent could not be reached, timed out, or the stream broke off
  130  interrupted (Ctrl-C) without cancelling

environment: INTERLINK_A2A_BEARER and INTERLINK_A2A_API_KEY supply --bearer and --api-key;
NO_COLOR turns colours off."""
STATES: Final = (
    "submitted", "working", "input-required", "auth-required",
    "completed", "failed", "canceled", "rejected",
)  # fmt: skip


def _state(value: str) -> str:
    name = value.strip().lower().removeprefix("task_state_").replace("_", "-")
    if name not in STATES:
        raise argparse.ArgumentTypeError(f"unknown state {value!r}; one of {', '.join(STATES)}")
    return name


def _positive(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return number


class _Intermixed(Parser):
    """Options may come between the positionals (`send URL --task ID "answer"`), which
    plain argparse refuses once an optional positional was skipped."""

    _mixing = False

    def parse_known_args(  # type: ignore[override]
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._mixing:
            return super().parse_known_args(args, namespace)
        self._mixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._mixing = False


def add_parsers(commands: Commands) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("url", metavar="URL", help="the agent's base URL (where its card is)")
    common.add_argument("--api-key", metavar="KEY", help="API key ($INTERLINK_A2A_API_KEY)")
    common.add_argument("--bearer", metavar="TOKEN", help="bearer token ($INTERLINK_A2A_BEARER)")
    common.add_argument(
        "--timeout", type=float, default=60.0, metavar="SECONDS", help="HTTP timeout (60)"
    )
    common.add_argument("--json", action="store_true", help="print ProtoJSON (see above)")
    common.add_argument(
        "--binding",
        choices=BINDINGS,
        help="talk over this binding only (default: the card's interfaces, JSON-RPC first, "
        "falling back to the next that answers)",
    )
    common.add_argument(
        "--a2a-version",
        choices=VERSIONS,
        help="talk this A2A version only (default: the newest both sides speak)",
    )
    repeatable(
        common,
        "--verify-key",
        "FILE",
        "refuse a card this key (PEM public key, JWK or JWK set) did not sign",
    )
    repeatable(
        common,
        "--jwks",
        "FILE_OR_URL",
        "refuse a card no key of this JWK set (a file, or an http(s) URL) signed",
    )

    def sub(name: str, help_: str, description: str) -> argparse.ArgumentParser:
        return subcommand(
            commands,
            name,
            help_,
            textwrap.fill(description, 88),
            parents=[common],
            epilog=EXIT_CODES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    card = sub(
        "card",
        "show an agent's card",
        "Show the agent card at URL: name, skills with examples, capabilities, interfaces "
        "(each with what the client made of it: picked, failed, skipped or not tried, and "
        "why), security schemes. --json prints the card's ProtoJSON.",
    )
    card.add_argument(
        "--extended", action="store_true", help="fetch the extended card (authenticated)"
    )

    send = sub(
        "send",
        "send a message to an agent and follow the task",
        "Send TEXT (and files) to the agent at URL. Streams the task when the card declares "
        "streaming; asks on the terminal when the agent needs input; Ctrl-C offers to "
        "cancel the task. --json prints each stream event (or the result) as ProtoJSON.",
    )
    send.__class__ = _Intermixed
    send.add_argument("text", nargs="?", metavar="TEXT", help="the message text")
    send.add_argument(
        "--stream",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="stream the task (default: when the card declares streaming)",
    )
    send.add_argument("--context", metavar="ID", help="continue this context")
    send.add_argument("--task", metavar="ID", help="continue this task (e.g. answer a question)")
    repeatable(
        send, "--file", "PATH", "attach a file (repeatable): its bytes, name and guessed media type"
    )
    send.add_argument(
        "--no-wait",
        action="store_true",
        help="return as soon as the task exists (returnImmediately); print its id",
    )

    tasks = sub(
        "tasks",
        "list tasks",
        "List the tasks the agent keeps for you, newest first: id, state, status time, "
        "context, first text of the last message. --json prints one task per line.",
    )
    tasks.add_argument("--context", metavar="ID", help="only this context's tasks")
    tasks.add_argument("--status", type=_state, metavar="STATE", help=", ".join(STATES))
    tasks.add_argument(
        "--limit",
        type=_positive,
        default=TASKS_LIMIT,
        metavar="N",
        help=f"the N newest tasks ({TASKS_LIMIT}; 0: all)",
    )

    task = sub(
        "task",
        "show a task (or follow it)",
        "Show task ID: status, artifacts' text, history. --follow subscribes to it until it "
        "ends; Ctrl-C stops following (the task goes on).",
    )
    task.add_argument("task_id", metavar="ID")
    task.add_argument("--follow", action="store_true", help="subscribe until the task ends")
    task.add_argument("--history", type=_positive, metavar="N", help="the last N messages")

    cancel = sub(
        "cancel",
        "cancel a task",
        "Cancel task ID and print its final state (exit 0 once it is canceled).",
    )
    cancel.add_argument("task_id", metavar="ID")


def run(args: argparse.Namespace) -> int:
    import asyncio
    import io

    from interlink.cli._a2a_errors import describe_error, error_exit_code

    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="replace")
    args.url = with_scheme(args.url)
    if args.a2a_command == "send" and not args.text and not args.file:
        return _fail("send needs TEXT or --file", USAGE)
    try:
        return asyncio.run(_main(args))
    except KeyboardInterrupt:
        return _fail("interrupted", INTERRUPTED)
    except BrokenPipeError:
        raise  # stdout is gone: `interlink.cli.main` ends quietly
    except Exception as exc:
        code = error_exit_code(exc)
        if code is None:
            raise
        return _fail(describe_error(exc, args.url, args.timeout), code)


def connect_timeout(timeout: float) -> float:
    """The time to connect, out of `--timeout`: 10 s at most."""
    return min(timeout, 10.0)


def with_scheme(url: str) -> str:
    """`localhost:9999` -> `http://localhost:9999` (as curl reads it); a URL with a
    scheme stays as it is."""
    import re

    return url if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", url) else f"http://{url}"


def _fail(message: str, code: int) -> int:
    sys.stdout.flush()
    print(f"error: {message}", file=sys.stderr)
    return code


async def _main(args: argparse.Namespace) -> int:
    from interlink.a2a import (
        A2AClient,
        NoInterfaceAnswered,
        NoUsableInterface,
        fetch_card,
        http_client,
    )
    from interlink.a2a import types as t

    bearer = args.bearer or os.environ.get("INTERLINK_A2A_BEARER") or None
    api_key = args.api_key or os.environ.get("INTERLINK_A2A_API_KEY") or None
    connect = connect_timeout(args.timeout)
    async with http_client(args.timeout, connect) as http:
        card, card_url = await fetch_card(args.url, client=http, version=args.a2a_version)
        schemes = card.security_schemes.values()
        if api_key and not any(
            isinstance(s.api_key_security_scheme, t.APIKeySecurityScheme) for s in schemes
        ):
            if args.api_key:
                raise ValueError("--api-key: the agent card declares no API key security scheme")
            api_key = None  # from the environment, meant for some other agent
        try:
            client = await A2AClient.from_card(
                card,
                card_url=card_url,
                client=http,
                bearer=bearer,
                api_key=api_key,
                timeout=args.timeout,
                connect_timeout=connect,
                trusted_keys=await _trusted_keys(args, http),
                binding=args.binding,
                version=args.a2a_version,
            )
        except (NoInterfaceAnswered, NoUsableInterface) as exc:
            if args.a2a_command == "card" and not args.json:  # the card, and why not
                _print_card(card, exc.negotiation)
            raise
        if args.a2a_command == "card":
            return await _card(client, args)
        if args.a2a_command == "tasks":
            return await _tasks(client, args)
        if args.a2a_command == "cancel":
            return await _cancel(client, args)
        from interlink.cli._a2a_session import Session

        session = Session(client, args)
        if args.a2a_command == "task":
            return await session.show(args.task_id, follow=args.follow, history=args.history)
        return await session.send()


async def _card(client: A2AClient, args: argparse.Namespace) -> int:
    from interlink.cli._a2a_session import print_json

    card = await client.get_extended_card() if args.extended else client.card
    if args.json:
        print_json(card)
        return OK
    _print_card(card, client.negotiation)
    if card.signatures:
        kids = ", ".join(f"kid {h['kid']} ({h['alg']})" for h in map(_header, card.signatures))
        how = "verified" if client.trusted_keys else "not verified (give --verify-key or --jwks)"
        print(f"\nsigned: {kids} · {how}")
    else:
        print("\nnot signed")
    return OK


def _print_card(card: t.AgentCard, negotiation: Negotiation) -> None:
    from interlink.cli._a2a_render import card_lines

    print("\n".join(card_lines(card, Style(colors(sys.stdout)), negotiation)))


def _header(signature: t.AgentCardSignature) -> dict[str, object]:
    from interlink.a2a import CardSignatureError, protected_header

    try:
        return protected_header(signature)
    except CardSignatureError:
        return {"kid": "?", "alg": "malformed"}


async def _trusted_keys(args: argparse.Namespace, http: httpx.AsyncClient) -> TrustedKeys | None:
    """The keys of `--verify-key` and `--jwks` (None: neither given)."""
    from interlink.a2a import TrustedKeys

    if not args.verify_key and not args.jwks:
        return None
    sources: list[KeySource] = [*args.verify_key]
    for jwks in args.jwks:
        if jwks.startswith(("http://", "https://")):
            response = await http.get(jwks, headers={"Accept": "application/json"})
            if response.status_code != 200:
                raise ValueError(f"--jwks: {jwks} answered HTTP {response.status_code}")
            try:
                sources.append(response.json())
            except ValueError:
                raise ValueError(f"--jwks: {jwks} is not JSON") from None
        else:
            sources.append(jwks)
    return TrustedKeys.load(*sources)


def _state_filter(name: str | None) -> t.TaskState:
    from interlink.a2a import types as t

    if name is None:
        return t.TaskState.TASK_STATE_UNSPECIFIED
    return t.TaskState("TASK_STATE_" + name.upper().replace("-", "_"))


async def _tasks(client: A2AClient, args: argparse.Namespace) -> int:
    import contextlib
    import shutil

    from interlink.cli._a2a_session import print_json
    from interlink.cli._a2a_table import task_table

    limit: int = args.limit  # 0: all
    found: list[t.Task] = []
    more = False
    tasks = client.iter_tasks(
        context_id=args.context or "",
        status=_state_filter(args.status),
        page_size=min(limit + 1, 100) if limit else None,  # one more: are there more?
        history_length=1,
    )
    async with contextlib.aclosing(tasks):  # closed here, also by a closed stdout
        async for task in tasks:
            if limit and len(found) == limit:
                more = True
                break
            if args.json:
                print_json(task, indent=False)
            found.append(task)
    if more:
        sys.stdout.flush()
        print(f"(the {limit} newest; --limit N for more, --limit 0 for all)", file=sys.stderr)
    if args.json:
        return OK
    if not found:
        print("no tasks")
        return OK
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        width: int | None = int(columns)
    elif sys.stdout.isatty():
        width = shutil.get_terminal_size().columns
    else:
        width = None  # a pipe: whole cells
    print("\n".join(task_table(found, Style(colors(sys.stdout)), width)))
    return OK


async def _cancel(client: A2AClient, args: argparse.Namespace) -> int:
    from interlink.a2a import types as t
    from interlink.cli._a2a_render import task_lines
    from interlink.cli._a2a_session import exit_code_of, print_json

    task = await client.cancel_task(args.task_id)
    if args.json:
        print_json(task)
    else:
        print("\n".join(task_lines(task, Style(colors(sys.stdout)))[:2]))
    if task.status.state == t.TaskState.TASK_STATE_CANCELED:
        return OK
    return exit_code_of(task.status.state)
