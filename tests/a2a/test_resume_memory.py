"""A resumed subscription (`Last-Event-ID`) reads the events it missed from the store a
page at a time (about `PAGE_BYTES`), as its client takes them: streams that resume and
do not read hold a page each, not a copy of the task's whole log (issue 11, point 10:
every buffer is bounded in bytes)."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from pathlib import Path

import msgspec

from interlink.a2a import AgentExecutor, EventSink, RequestContext, TaskUpdater, create_app
from interlink.a2a import types as t
from interlink.a2a._codec import decode
from interlink.a2a.server._handler import A2AServer, Call
from interlink.a2a.server._stream import PAGE_BYTES
from tests.a2a.agents import card, message

EVENT = 32 * 1024
EVENTS = 320  # a log of 10 MiB
STREAMS = 6


class Chatty(AgentExecutor):
    """`EVENTS` artifact chunks of `EVENT` bytes, then waits for `release` (`done`:
    completes at once)."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.sent = asyncio.Event()
        self.done = asyncio.Event()

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        await task.working()
        for i in range(EVENTS):
            await task.add_artifact(text="x" * EVENT, artifact_id=f"a{i % 4}", append=i >= 4)
        self.sent.set()
        if context.text != "done":
            await self.release.wait()
        await task.complete()
        self.done.set()

    async def cancel(self, context: RequestContext, events: EventSink) -> None:
        await TaskUpdater(context, events).cancel()


async def _state(server: A2AServer, call: Call, task_id: str) -> str:
    return str((await server.get_task(t.GetTaskRequest(id=task_id), call)).status.state)


def _held() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


async def _resumed_streams_hold(tmp_path: Path, text: str) -> tuple[int, list[int]]:
    agent = Chatty()
    app = create_app(agent, card(), store=f"sqlite:///{tmp_path / 'tasks.db'}")
    server = app.server
    await server.startup()
    try:
        call = Call()
        body = {**message(text), "configuration": {"returnImmediately": True}}
        params = decode(t.SendMessageRequest, msgspec.json.encode(body))
        task = (await server.send_message(params, call)).task
        assert isinstance(task, t.Task)
        async with asyncio.timeout(30):
            await agent.sent.wait()
            if text == "done":
                await agent.done.wait()
                assert await _state(server, call, task.id) == "TASK_STATE_COMPLETED"
        request = t.SubscribeToTaskRequest(id=task.id)
        resumed = Call(last_event_id=1)
        warm = await server.subscribe_to_task(request, resumed)  # the snapshot, shared
        tracemalloc.start()
        try:
            before = _held()
            streams = [await server.subscribe_to_task(request, resumed) for _ in range(STREAMS)]
            grown = _held() - before  # (the streams are alive: `streams`)
            # every stream still gives every event it missed, in order
            seqs: list[int] = []
            async with asyncio.timeout(30):
                while EVENTS + 1 not in seqs and (batch := await streams[0].batch(0.5)):
                    seqs += [seq for seq, _, _ in batch if seq is not None]
        finally:
            tracemalloc.stop()
        for stream in [warm, *streams]:
            stream.cut()
            await stream.aclose()
        agent.release.set()
        return grown, seqs
    finally:
        await server.shutdown()


async def test_resumed_streams_of_a_running_task_hold_a_page_each(tmp_path: Path) -> None:
    grown, seqs = await _resumed_streams_hold(tmp_path, "wait")
    assert seqs[:EVENTS] == list(range(2, EVENTS + 2))
    # the whole log missed is 10 MiB a stream (60 MiB for 6); a page about PAGE_BYTES
    assert grown < STREAMS * 2 * PAGE_BYTES, grown


async def test_resumed_streams_of_a_finished_task_hold_a_page_each(tmp_path: Path) -> None:
    grown, seqs = await _resumed_streams_hold(tmp_path, "done")
    assert seqs[:EVENTS] == list(range(2, EVENTS + 2))
    # each stream of a finished task holds its final snapshot (one event of the whole
    # task: 10 MiB, decoded and encoded) and a page, not the 10 MiB log besides
    log = EVENTS * EVENT
    assert grown < STREAMS * (2 * log + 2 * PAGE_BYTES), grown
