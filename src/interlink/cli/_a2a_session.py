"""The conversation behind `interlink a2a send` and `interlink a2a task --follow`.

A `Session` runs turns (a streamed or blocking `SendMessage`, or a subscription) and
renders them through a `TaskView`. Between turns it answers the agent's questions: an
input-required task is put to the person on the terminal and continued with the
answer; without a terminal the exit code is 3. Ctrl-C during a turn asks whether to
cancel the task; Ctrl-C at that question is "interrupted": the command ends with 130 and
the task goes on (without a terminal there is no question: SIGINT cancels). While only
following a task, Ctrl-C stops following. A stream that breaks off
is resumed with `SubscribeToTask` from its last event id.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import mimetypes
import os
import signal
import sys
import uuid
from collections.abc import AsyncGenerator, Awaitable, Sequence
from pathlib import Path
from typing import TypeVar

import msgspec

from interlink.a2a import INTERRUPTED_STATES as WAITING
from interlink.a2a import TERMINAL_STATES as TERMINAL
from interlink.a2a import (
    A2AClient,
    StreamEvent,
    StreamInterrupted,
    StreamPayload,
    encode,
)
from interlink.a2a import types as t
from interlink.cli._a2a_client import (
    AUTH,
    INTERRUPTED,
    NEEDS_INPUT,
    OK,
    TASK_FAILED,
)
from interlink.cli._a2a_render import Screen, TaskView, task_lines
from interlink.cli._terminal import LineReader, Style, colors

__all__ = ["Session", "exit_code_of"]

T = TypeVar("T")
S = t.TaskState
_STATE_EXIT = {
    S.TASK_STATE_FAILED: TASK_FAILED,
    S.TASK_STATE_CANCELED: TASK_FAILED,
    S.TASK_STATE_REJECTED: TASK_FAILED,
    S.TASK_STATE_INPUT_REQUIRED: NEEDS_INPUT,
    S.TASK_STATE_AUTH_REQUIRED: AUTH,
}


class _Interrupted(Exception):
    """Ctrl-C ended the command without cancelling the task."""


def exit_code_of(state: t.TaskState) -> int:
    return _STATE_EXIT.get(state, OK)


def print_json(obj: msgspec.Struct, *, indent: bool = True) -> None:
    data = encode(obj)
    print((msgspec.json.format(data, indent=2) if indent else data).decode(), flush=True)


def file_part(path: str) -> t.Part:
    data = Path(path).read_bytes()
    media = mimetypes.guess_type(path)[0] or "application/octet-stream"
    return t.Part(raw=data, filename=os.path.basename(path), media_type=media)


class Session:
    """One run of `send` or `task --follow` (see the module)."""

    def __init__(self, client: A2AClient, args: argparse.Namespace) -> None:
        self.client = client
        self.args = args
        self.json: bool = args.json
        self.style = Style(colors(sys.stdout))
        self.screen = Screen(sys.stdout, self.style, spinner=sys.stdout.isatty() and not self.json)
        self.view = TaskView(None if self.json else self.screen)
        self.interactive = sys.stdin.isatty() and not self.json
        self.input = LineReader(sys.stdin.fileno()) if self.interactive else None
        self.sigint = asyncio.Event()
        self.detach = False  # Ctrl-C stops following instead of offering to cancel
        self.stream = client.card.capabilities.streaming is True
        self.no_wait: bool = getattr(args, "no_wait", False)  # `send --no-wait`

    # -- the commands ----------------------------------------------------------------------

    async def send(self) -> int:
        args = self.args
        parts = [t.Part(text=args.text)] if args.text else []
        parts += [file_part(path) for path in args.file]
        if args.stream is not None:
            self.stream = args.stream
        if self.no_wait:
            self.stream = False
        message = self._message(parts, args.task, args.context)
        return await self._sigint_handled(self._converse(self._turn(message)))

    async def show(self, task_id: str, *, follow: bool, history: int | None) -> int:
        task = await self.client.get_task(task_id, history_length=history)
        state = task.status.state
        if not follow or state in TERMINAL or state in WAITING:
            if self.json:
                print_json(task)
            else:
                print("\n".join(task_lines(task, self.style)))
            self.view.seed(task)
            if follow and state in WAITING and self.interactive:
                return await self._sigint_handled(self._converse(_done()))
            if state == S.TASK_STATE_INPUT_REQUIRED and not self.json:
                self._input_hint()
            return exit_code_of(state)
        if not self.json:
            print("\n".join(task_lines(task, self.style)), flush=True)
        self.view.seed(task)
        self.detach = True
        return await self._sigint_handled(
            self._converse(self._consume(self.client.subscribe(task_id)))
        )

    # -- turns -----------------------------------------------------------------------------

    def _message(
        self, parts: list[t.Part], task_id: str | None, context_id: str | None
    ) -> t.Message:
        return t.Message(
            message_id=uuid.uuid4().hex,
            role=t.Role.ROLE_USER,
            parts=parts,
            task_id=task_id or "",
            context_id=context_id or "",
        )

    async def _converse(self, turn: Awaitable[t.Message | None]) -> int:
        while True:
            reply = await self._guard(turn)
            self.detach = False
            if reply is not None:
                return OK  # a direct message: no task to follow
            state = self.view.state
            if state != S.TASK_STATE_INPUT_REQUIRED or self.no_wait:
                return exit_code_of(state)
            answer = await self._ask_input() if self.interactive else None
            if answer is None:
                self._input_hint()
                return NEEDS_INPUT
            parts = [t.Part(text=answer)]
            turn = self._turn(self._message(parts, self.view.task_id, self.view.context_id))

    async def _turn(self, message: t.Message) -> t.Message | None:
        self.screen.spin("waiting for the agent")
        if self.stream:
            return await self._consume(self.client.stream_message(message))
        result = await self.client.send_message(message, return_immediately=self.no_wait)
        if self.json:
            if isinstance(result, t.Message):
                print_json(t.SendMessageResponse(message=result))
            else:
                print_json(t.SendMessageResponse(task=result))
        self.view.apply(result)
        return result if isinstance(result, t.Message) else None

    async def _consume(
        self, events: AsyncGenerator[StreamEvent, None], again: bool = True
    ) -> t.Message | None:
        reply = None
        try:
            # Closed here, in this task, whatever ends the loop (a closed stdout, Ctrl-C):
            # left to the loop's shutdown, the stream and the generators inside it would
            # be closed concurrently ("aclose(): asynchronous generator is already running").
            async with contextlib.aclosing(events):
                async for event in events:
                    self._emit(event.payload)
                    if isinstance(event.payload, t.Message):
                        reply = event.payload
        except StreamInterrupted as exc:
            if not exc.task_id or not again:
                raise
            self._note("the stream broke off; resubscribing")
            return await self._consume(
                self.client.subscribe(exc.task_id, last_event_id=exc.last_event_id), False
            )
        state = self.view.state
        if reply is None and again and self.view.task_id and state not in TERMINAL | WAITING:
            return await self._consume(self.client.subscribe(self.view.task_id), False)
        return reply

    def _emit(self, payload: StreamPayload) -> None:
        if self.json:
            print_json(_wrap(payload), indent=False)
        self.view.apply(payload)
        state = self.view.state
        if state in TERMINAL or state in WAITING:
            self.screen.stop_spin()
        else:
            self.screen.spin(f"{state.removeprefix('TASK_STATE_').lower().replace('_', '-')}")

    def _note(self, text: str) -> None:
        if not self.json:
            self.screen.line(self.style.dim(text))

    def _input_hint(self) -> None:
        self.screen.stop_spin()
        sys.stdout.flush()
        print(
            f"the agent needs input; answer with: interlink a2a send {self.args.url} "
            f'--task {self.view.task_id} "ANSWER"',
            file=sys.stderr,
        )

    # -- Ctrl-C and questions --------------------------------------------------------------

    async def _sigint_handled(self, work: Awaitable[int]) -> int:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self.sigint.set)
        try:
            return await work
        except _Interrupted:
            return INTERRUPTED
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            self.screen.stop_spin()

    async def _guard(self, turn: Awaitable[T]) -> T | None:
        """`turn`, unless Ctrl-C: then (after asking) cancel the task, or stop."""
        work = asyncio.ensure_future(turn)
        ticker = asyncio.ensure_future(self._tick()) if self.screen.spinner else None
        try:
            while True:
                self.sigint.clear()
                if await _first(work, self.sigint.wait()) is work:
                    return work.result()
                if self.detach:
                    await _stop(work)
                    self._note(f"stopped following; task {self.view.task_id} goes on")
                    raise _Interrupted
                if not self.view.task_id or self.view.state in TERMINAL:
                    await _stop(work)
                    self._note("interrupted")
                    raise _Interrupted
                if self.interactive and not await self._confirm_cancel(work):
                    continue
                await _stop(work)
                self._note(f"cancelling task {self.view.task_id}")
                task = await self.client.cancel_task(self.view.task_id)
                self._emit(task)
                return None
        finally:
            await _stop(work)
            if ticker is not None:
                await _stop(ticker)
            self.screen.stop_spin()

    async def _tick(self) -> None:
        while True:
            self.screen.tick()
            await asyncio.sleep(0.1)

    async def _confirm_cancel(self, work: asyncio.Future[T]) -> bool:
        assert self.input is not None
        self.screen.hold()
        self.input.discard_typeahead()
        self.screen.ask(self.style(f"cancel task {self.view.task_id}? [y/N] ", "1;33"))
        self.sigint.clear()
        read = asyncio.ensure_future(self.input.readline())
        try:
            first = await _first(read, self.sigint.wait(), work)
        finally:
            await _stop(read)
        if first is read:
            answer = read.result()
            if answer is not None:
                self.screen.typed()
            yes = (answer or "").strip().lower() in ("y", "yes")
        else:
            yes = False  # the task ended while asked: nothing to cancel
        self.screen.release()
        if first is not read and first is not work:  # Ctrl-C: interrupted, not cancelled
            self._note(
                f"interrupted; task {self.view.task_id} goes on "
                f"(interlink a2a cancel {self.args.url} {self.view.task_id} cancels it)"
            )
            raise _Interrupted
        return yes

    async def _ask_input(self) -> str | None:
        assert self.input is not None
        self.input.discard_typeahead()
        while True:
            self.sigint.clear()
            self.screen.ask(self.style("your answer: ", "1;35"))
            read = asyncio.ensure_future(self.input.readline())
            try:
                first = await _first(read, self.sigint.wait())
            finally:
                await _stop(read)
            if first is not read or read.result() is None:
                self.screen.end_line()
                return None
            self.screen.typed()
            answer = (read.result() or "").strip()
            if answer:
                return answer


async def _first(*waits: Awaitable[object]) -> asyncio.Future[object]:
    """The first of `waits` to finish; the others that were made here are cancelled."""
    futures: Sequence[asyncio.Future[object]] = [asyncio.ensure_future(w) for w in waits]
    try:
        done, _ = await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for future, wait in zip(futures, waits, strict=True):
            if future is not wait:
                await _stop(future)
    return next(f for f in futures if f in done)


async def _stop(future: asyncio.Future[T]) -> None:
    if not future.done():
        future.cancel()
        with contextlib.suppress(BaseException):
            await future


def _wrap(
    payload: StreamPayload,
) -> t.StreamResponse:
    if isinstance(payload, t.Task):
        return t.StreamResponse(task=payload)
    if isinstance(payload, t.Message):
        return t.StreamResponse(message=payload)
    if isinstance(payload, t.TaskStatusUpdateEvent):
        return t.StreamResponse(status_update=payload)
    return t.StreamResponse(artifact_update=payload)


async def _done() -> None:
    return None
