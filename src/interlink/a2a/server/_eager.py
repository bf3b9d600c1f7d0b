"""Tasks started eagerly: `eager_task(job, name)` is an asyncio task whose first step
runs now, in the caller's step, rather than on the loop's next round.

A blocking `SendMessage` starts its task's executor in a task of its own (it outlives
the request: it runs on after an early answer, and is cancelled on its own). Most
executors publish and return without ever waiting (on the in-memory store nothing
suspends): run eagerly, the executor is done when `start` returns and the request
answers in the same step, instead of one round later for the executor and one more for
the request to wake up.

The first step runs as the new task's (`asyncio.current_task()` is it, in its own copy
of the context), so timeouts and cancellation inside the executor see the right task.
(Python 3.12's `eager_start` does the same, but only once the task is made, so the job
cannot find its task in its first step.) `_Resumed` hands the task the coroutine as the
first step left it: done (its result or exception, at the task's first step), or
suspended on what it awaits (which the task then awaits).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine, Generator
from typing import Any

__all__ = ["eager_task"]


def eager_task(
    job: Coroutine[Any, Any, None], name: str, made: Callable[[asyncio.Task[None]], None]
) -> asyncio.Task[None]:
    """`job` as a task of the running loop, its first step already run; `made(task)` is
    called before that step (the job may look for its own task)."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    resumed = _Resumed(job)
    # (the Task itself, not the loop's task factory: an eager factory, as Python 3.12's
    # `eager_task_factory`, would step the job before its first step here)
    task = asyncio.Task(resumed, loop=loop, name=name, context=context)
    made(task)
    current = asyncio.current_task(loop)
    if current is not None:
        asyncio.tasks._leave_task(loop, current)
    asyncio.tasks._enter_task(loop, task)
    try:
        context.run(resumed.first_step)
    finally:
        asyncio.tasks._leave_task(loop, task)
        if current is not None:
            asyncio.tasks._enter_task(loop, current)
    return task


class _Resumed(Coroutine[Any, Any, None]):
    """A coroutine whose first step ran already (`first_step`), for its task to go on
    with: the task's first `send` gets what that step gave (a future to wait on, or the
    end), every later `send` and `throw` goes to the coroutine itself."""

    def __init__(self, job: Coroutine[Any, Any, None]) -> None:
        self._job = job
        self._yielded: Any = None
        self._ended: BaseException | None = None
        self._first = True

    def first_step(self) -> None:
        try:
            self._yielded = self._job.send(None)
        except BaseException as exc:  # StopIteration too: given to the task as it steps
            self._ended = exc

    def send(self, value: Any) -> Any:
        if self._first:
            self._first = False
            if self._ended is not None:
                ended, self._ended = self._ended, None
                raise ended
            return self._yielded
        return self._job.send(value)

    def throw(self, *args: Any) -> Any:
        if self._first:
            self._first = False
            if self._ended is not None:  # (it ended before the task stepped: that stands)
                ended, self._ended = self._ended, None
                raise ended
            # Cancelled before the task took up the future the first step waits on: do
            # as a task does with its waiter, cancel that future and wait on it (its end
            # throws the cancel in), so that what it stands for (a task, a gather) stops
            # too rather than run on with nobody awaiting it.
            waits_on = self._yielded
            if (
                args
                and isinstance(args[0], asyncio.CancelledError)
                and getattr(waits_on, "_asyncio_future_blocking", False)
                and waits_on.cancel()
            ):
                return waits_on
        return self._job.throw(*args)

    def close(self) -> None:
        self._job.close()

    def __await__(self) -> Generator[Any, None, None]:
        raise TypeError("a task's coroutine, not to be awaited")
