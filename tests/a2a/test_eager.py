"""`_eager.eager_task`: the first step runs at once, as the new task's, and the task goes
on from where it left off (a result, an exception, a wait, a cancellation)."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from interlink.a2a.server._eager import eager_task

pytestmark = pytest.mark.timeout(10)

_var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="outer")


async def test_first_step_runs_now_as_the_new_task() -> None:
    seen: list[object] = []
    made: list[asyncio.Task[None]] = []

    async def job() -> None:
        seen.append(asyncio.current_task())
        _var.set("inner")

    outer = asyncio.current_task()
    task = eager_task(job(), "job", made.append)
    assert seen == made == [task]  # done before the call returned, as its own task
    assert asyncio.current_task() is outer
    assert _var.get() == "outer"  # (its own copy of the context)
    await task
    assert task.done()
    assert task.result() is None


async def test_a_job_that_waits_goes_on_in_its_task() -> None:
    gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    steps: list[str] = []

    async def job() -> None:
        steps.append("first")
        steps.append(await gate)
        assert _var.get() == "outer"

    task = eager_task(job(), "job", lambda _: None)
    assert steps == ["first"]
    gate.set_result("second")
    await task
    assert steps == ["first", "second"]


async def test_an_exception_of_the_first_step_is_the_tasks() -> None:
    async def job() -> None:
        raise ValueError("boom")

    task = eager_task(job(), "job", lambda _: None)
    with pytest.raises(ValueError, match="boom"):
        await task


async def test_a_cancel_reaches_the_waiting_job() -> None:
    cancelled = asyncio.Event()

    async def job() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    task = eager_task(job(), "job", lambda _: None)
    task.cancel()  # (before the task's own first step)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()


async def test_a_cancel_after_the_job_ended_leaves_its_end() -> None:
    async def job() -> None:
        return None

    task = eager_task(job(), "job", lambda _: None)
    task.cancel()
    await asyncio.wait([task])
    assert task.done()


async def test_a_cancel_before_the_task_stepped_cancels_what_the_first_step_waits_on() -> None:
    """Cancelled before its task took up the future its first step waits on, the job
    gets the cancel there and that future is cancelled too (a task it stands for stops),
    as a task's waiter is."""
    never = asyncio.Event()
    inner: list[asyncio.Task[None]] = []
    got: list[str] = []

    async def job() -> None:
        inner.append(asyncio.create_task(never.wait()))  # type: ignore[arg-type]
        try:
            await inner[0]
        except asyncio.CancelledError:
            got.append("cancelled")
            raise

    task = eager_task(job(), "job", lambda _: None)
    task.cancel()  # (before the task's first step: its waiter is not known to it)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert got == ["cancelled"]
    assert inner[0].cancelled()


async def test_a_loop_task_factory_is_not_used() -> None:
    """The task is made as a plain Task: a factory that steps a coroutine itself (as
    Python 3.12's `eager_task_factory`) would step the job once too often."""
    loop = asyncio.get_running_loop()
    made_by_factory: list[object] = []

    def factory(
        loop: asyncio.AbstractEventLoop, coro: object, **kwargs: object
    ) -> asyncio.Task[object]:
        made_by_factory.append(coro)
        return asyncio.Task(coro, loop=loop, **kwargs)  # type: ignore[arg-type]

    steps: list[int] = []

    async def job() -> None:
        steps.append(1)

    old = loop.get_task_factory()
    loop.set_task_factory(factory)  # type: ignore[arg-type]
    try:
        task = eager_task(job(), "job", lambda _: None)
        await task
    finally:
        loop.set_task_factory(old)
    assert steps == [1]
    assert made_by_factory == []
