"""`_eager.eager_task`: the first step runs at once, as the new task's, and the task goes
on from where it left off (a result, an exception, a wait, a cancellation)."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from interlink._eager import eager_task

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
