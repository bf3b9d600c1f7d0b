"""`TaskStream`: what one SSE stream of a task sends, taken in batches."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable

import msgspec

from interlink.a2a import _codec
from interlink.a2a._types import StreamResponse, Task
from interlink.a2a.server._runtime import LiveTask, Subscription, no_answer

__all__ = ["PAGE", "PAGE_BYTES", "StreamItem", "TaskStream", "page_size"]

logger = logging.getLogger("interlink.a2a")

PAGE = 32
"""Events of a resumed subscription's stored backlog read from the store at a time, at
most; fewer when they are large (about `PAGE_BYTES` a page, at least one event)."""
PAGE_BYTES = 256 * 1024

StreamItem = tuple[int | None, bytes, StreamResponse | None]
"""An event of a stream: its sequence number (None: none to resume from), its ProtoJSON
`StreamResponse` and, when it was made in this process, that `StreamResponse` (see
`_runtime.Item`)."""


def page_size(events: int, size: int) -> int:
    """The events to read next, after a page of `events` events of `size` bytes."""
    return max(1, min(PAGE, PAGE_BYTES * events // max(size, 1)))


class TaskStream:
    """The events of one stream, taken in batches: `first` (the task snapshot), the
    stored `backlog` (a resumed subscription), then what the subscription receives;
    `task` events cut to `history` messages when the request asked for that. A backlog
    longer than one page is read a page at a time as the client takes it: `more(after,
    limit)` gives at most `limit` stored events after `after`, up to `upto` (so a stream
    that resumes and does not read holds one page, not a copy of the task's log).

    `batch(wait, size)` returns the events that are ready (`StreamItem`s), up to about
    `size` bytes (at least one event), so a transport writes them at once while the rest
    stays counted in the subscription's bounded queue; `[]` when `wait` seconds passed
    without one (time for a keep-alive), `None` when the stream is over. A subscription
    that fell behind its bounded queue just ends: the client resumes with
    `Last-Event-ID`. `aclose()` detaches it (always call it). `translate`, when set, makes each
    event's payload the client's form (a 0.3 client's: `server._v03.event_to_v03`).
    """

    def __init__(
        self,
        on_close: Callable[[LiveTask], None],
        live: LiveTask,
        sub: Subscription,
        first: StreamItem | None,
        backlog: list[tuple[int, bytes]],
        history: int | None = None,
        *,
        more: Callable[[int, int], Awaitable[list[tuple[int, bytes]]]] | None = None,
        after: int = 0,
        upto: int = 0,
    ) -> None:
        self._on_close = on_close
        #: the most history messages a `Task` on this stream may carry (historyLength)
        self._history = history
        self._live = live
        self._sub = sub
        self._pending: deque[StreamItem] = deque()
        if first is not None:
            self._pending.append(first)
        self._pending += [(seq, payload, None) for seq, payload in backlog]
        self._last = backlog[-1][0] if backlog else (first[0] if first and first[0] else 0)
        #: the next page of the backlog, and the last event of it (see `more`)
        self._more = more
        self._upto = upto
        self._loaded = backlog[-1][0] if backlog else after
        self._page = page_size(len(backlog), sum(len(p) for _, p in backlog)) if backlog else 1
        if more is not None:
            self._last = max(self._last, upto)
        #: the client went away or the server stops: no more pages are read
        self._cut = False
        self.translate: Callable[[bytes], bytes] | None = None

    async def batch(
        self, wait: float | None = None, size: int = 64 * 1024
    ) -> list[StreamItem] | None:
        sub = self._sub
        while True:
            ready: list[StreamItem] = []
            taken = 0
            pending = self._pending
            if not pending and self._unloaded and (self._cut or not await self._next_page()):
                return None  # the client resumes from the last event it got
            while pending and (not ready or taken + len(pending[0][1]) <= size):
                ready.append(pending.popleft())
                taken += len(ready[-1][1])
            while (
                sub.items
                and not pending
                and not self._unloaded
                and (not ready or taken + len(sub.items[0][1]) <= size)
            ):
                seq, payload, response = sub.next_ready()
                if seq and seq <= self._last:
                    continue  # already sent from the stored log
                ready.append((seq or None, payload, response))
                taken += len(payload)
            if ready:
                if self._history is not None:
                    ready = [_cut_history(item, self._history) for item in ready]
                if self.translate is not None:  # (the response is 1.0's: dropped)
                    ready = [(seq, self.translate(p), None) for seq, p, _ in ready]
                return ready
            if sub.closed:
                live = self._live
                if live.failure is not None and live.task is None:
                    raise no_answer(live.failure, expose=live.expose_errors)
                return None
            sub.ready.clear()
            if wait is None:
                await sub.ready.wait()
                continue
            try:
                async with asyncio.timeout(wait):
                    await sub.ready.wait()
            except TimeoutError:
                return []

    @property
    def _unloaded(self) -> bool:
        """Whether stored events of the backlog are still to be read."""
        return self._more is not None and self._loaded < self._upto

    async def _next_page(self) -> bool:
        """Read the next page of the backlog into the queue: whether that worked (a
        store that fails ends the stream: nothing after the gap may go out)."""
        assert self._more is not None
        try:
            rows = await self._more(self._loaded, self._page)
        except Exception as exc:
            logger.warning("stream of task %s: cannot read its events: %s", self._live.task_id, exc)
            return False
        rows = [(seq, payload) for seq, payload in rows if self._loaded < seq <= self._upto]
        if not rows:
            return False  # (the log holds no more of them: pruned)
        self._pending += [(seq, payload, None) for seq, payload in rows]
        self._loaded = rows[-1][0]
        self._page = page_size(len(rows), sum(len(payload) for _, payload in rows))
        return True

    def cut(self) -> None:
        """The client went away, or the server stops: end the stream (after what is
        queued)."""
        self._cut = True
        self._sub.close()

    async def aclose(self) -> None:
        self._live.unsubscribe(self._sub)
        self._on_close(self._live)


def _cut_history(item: StreamItem, history: int) -> StreamItem:
    """A `task` event with at most `history` messages of its history; others as they are."""
    seq, payload, response = item
    if not payload.startswith(b'{"task":'):
        return item
    if response is None:
        response = _codec.decode(StreamResponse, payload)
    task = response.task
    if not isinstance(task, Task) or len(task.history) <= history:
        return seq, payload, response
    cut = task.history[-history:] if history else []
    response = StreamResponse(task=msgspec.structs.replace(task, history=cut))
    return seq, _codec.encode(response), response
