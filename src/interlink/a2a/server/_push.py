"""Push notification delivery: a worker that drains the store's outbox to webhooks.

Theory of operation. `TaskStore.append` queues one outbox row per (push config, event)
in the event's own transaction; nothing on the event path touches the network. A
`PushDelivery` has one *dispatcher* task that claims due rows (`claim_deliveries`) when
woken (`wake()`, after an append) or every `poll_interval` (rows due for retry, rows left
by a previous process: the outbox is durable, so delivery survives a restart). Claimed
rows go to a *lane* per (tenant, task, config); a lane sends its rows one at a time in
`seq` order, so a receiver never sees event 5 before event 4 was delivered or dropped.
Lanes run in parallel, at most `concurrency` requests at once; one attempt is bounded by
`timeout`, so a hanging webhook holds one slot and its own lane, nothing else.

A failed attempt is retried with exponential backoff and full jitter until the retry
budget (`max_attempts`) is spent, then dropped with a logged warning. The row's attempt
count and due time are written to the store (`retry_delivery`), and the lane waits for
the dispatcher to claim its head again when due: the store stays the one source of truth.
4xx answers other than 408 and 429 are permanent (dropped at once): the same bytes with
the same credentials get the same answer, and retrying would hold the lane for minutes.

Whatever the webhook does, an attempt is one attempt (`_attempt` judges it and never
raises): a redirect is a failure (never followed: its target is unchecked), the body is
never read, `timeout` bounds the whole attempt (resolving, connecting, the answer's
head), and `Retry-After` counts only as RFC 9110 spells it (ASCII digits or an
HTTP-date), never longer than `max_delay`.

The body is the event's `StreamResponse` JSON, for a config set by a 1.0 client; for one
set by a 0.3 client (`Delivery.protocol`), the task as 0.3 JSON, as 0.3 servers post it
(0.3 §9.5, and the official 0.3 SDK: the `Task`, not the event): the task as it stands
when the event is delivered (the store keeps the latest snapshot; a receiver never sees
it go back), one post per event as for 1.0.

SSRF (`_push_ssrf`): only http(s) URLs whose host is or resolves to globally reachable
addresses (the IANA special-purpose registries, `_addresses`), unless allow-listed;
checked when a config is set and again before every attempt, which then connects to the
address just checked (URL pinned to the IP, `Host` header and TLS SNI keep the name).

Limits: pinned https connections are pooled by address: two names on one IP may share a
TLS connection verified for the first. (Ordering holds across restarts and replicas: the
store offers only the head of each lane.)
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import random
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, NamedTuple, TypeAlias

import httpx
import msgspec

from interlink.a2a import _codec
from interlink.a2a._types import Task, TaskPushNotificationConfig
from interlink.a2a.compat import _v03 as compat
from interlink.a2a.server._push_ssrf import AllowList, Refused, allow_list, check_url, target
from interlink.a2a.stores._base import Delivery, StoreError, TaskStore

__all__ = ["IDEMPOTENCY_HEADER", "TOKEN_HEADER", "PushDelivery", "check_url"]

IDEMPOTENCY_HEADER: Final = "X-A2A-Idempotency-Key"
"""`<taskId>:<seq>`: the same for every attempt of one event, so receivers de-duplicate."""
TOKEN_HEADER: Final = "X-A2A-Notification-Token"
"""The config's `token`, as the official SDKs send it (1.0 does not say how)."""

logger = logging.getLogger("interlink.a2a.push")

_RETRYABLE_4XX: Final = frozenset({408, 429})


def _now() -> int:
    """Microseconds since the epoch, the store's clock."""
    return time.time_ns() // 1000


# -- SSRF guard (see `_push_ssrf`) ---------------------------------------------------------

#: Each tenant's webhook allow list, by store: tenants sharing a store share its outbox,
#: so the worker of one may claim another's deliveries; each is checked against the
#: list of the tenant it belongs to (a tenant served by no worker here: public only).
_TENANT_ALLOW: dict[int, dict[str, AllowList]] = {}


# -- delivery ----------------------------------------------------------------------------------


class _Failure(NamedTuple):
    error: str
    permanent: bool = False
    retry_after: float = 0.0
    """Seconds the receiver asked us to wait (`Retry-After`), 0 when it did not say."""


@dataclass(slots=True, eq=False)
class _Entry:
    delivery: Delivery
    lease_until: int
    """Our claim's end (µs); 0 once handed back to the store for a retry."""
    due_at: int
    """When the store offers the row again: the claim's end, or the retry time."""


@dataclass(slots=True, eq=False)
class _Lane:
    """The deliveries of one task to one config that this process knows, by row id."""

    entries: dict[int, _Entry] = field(default_factory=dict)
    runner: asyncio.Task[None] | None = None

    def head(self) -> _Entry | None:
        return min(self.entries.values(), key=lambda e: e.delivery.seq, default=None)


_LaneKey: TypeAlias = tuple[str, str, str]
"""(tenant, task_id, config_id)"""


class PushDelivery:
    """Delivers the store's push outbox to webhooks, off the event path.

    `start()` before use, `stop()` at shutdown; call `wake()` after an append that may
    have queued deliveries. The httpx client is created here unless given (then it is
    not closed here, and it should not follow redirects).
    """

    def __init__(
        self,
        store: TaskStore,
        *,
        allow_hosts: Iterable[str] = (),
        client: httpx.AsyncClient | None = None,
        concurrency: int = 8,
        poll_interval: float = 5.0,
        max_attempts: int = 8,
        base_delay: float = 0.5,
        max_delay: float = 60.0,
        timeout: float = 10.0,
        lease: float = 30.0,
        stop_timeout: float = 5.0,
    ) -> None:
        if concurrency < 1 or max_attempts < 1:
            raise ValueError("concurrency and max_attempts must be at least 1")
        if lease <= timeout:
            raise ValueError("lease must be longer than timeout (a claim must outlive a send)")
        self.store = store
        self.allow_hosts = frozenset(allow_hosts)
        self._allow = allow_list(self.allow_hosts)
        self._tenants: frozenset[str] = frozenset({""})  # (see `serve`)
        self._own_client = client is None
        self._client = client or httpx.AsyncClient(
            limits=httpx.Limits(max_connections=concurrency),
            timeout=timeout,
            follow_redirects=False,
            trust_env=False,  # no proxies from the environment: targets are checked here
        )
        self.concurrency = concurrency
        self.poll_interval = poll_interval
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.timeout = timeout
        self.stop_timeout = stop_timeout
        self._lease = int(lease * 1e6)
        self._batch = concurrency * 4
        self._max_entries = max(concurrency * 256, self._batch)
        self._slots = asyncio.Semaphore(concurrency)
        self._wake = asyncio.Event()
        self._lanes: dict[_LaneKey, _Lane] = {}
        self._dispatcher: asyncio.Task[None] | None = None
        self._last_claim = 0
        """The `now` of the latest claim (µs): rows due by then were offered to it."""
        self._complete = False
        """The latest drain claimed every due row (it did not stop at a memory bound)."""
        self._stopping = False

    # -- lifecycle ---------------------------------------------------------------------------

    def serve(self, tenants: Iterable[str]) -> None:
        """Make this worker's allow list the one of `tenants`' deliveries, whichever
        worker on the same store claims them (call before `start`)."""
        self._tenants = frozenset(tenants)
        table = _TENANT_ALLOW.setdefault(id(self.store), {})
        for tenant in self._tenants:
            table[tenant] = self._allow

    def _allow_for(self, tenant: str) -> AllowList:
        if tenant in self._tenants:
            return self._allow
        return _TENANT_ALLOW.get(id(self.store), {}).get(tenant, frozenset())

    async def start(self) -> None:
        if self._dispatcher is not None:
            return
        if self._stopping:
            raise RuntimeError("a stopped PushDelivery cannot start again; make a new one")
        self._wake.set()  # a first drain at once: rows left by a previous process
        self._dispatcher = asyncio.create_task(self._dispatch(), name="interlink-push")

    def wake(self) -> None:
        """Deliveries may have been queued: claim them now rather than at the next poll."""
        self._wake.set()

    async def stop(self) -> None:
        """Stop claiming; let attempts in flight finish for up to `stop_timeout` seconds,
        then cancel them (their rows are offered again when the claim expires)."""
        self._stopping = True
        self._wake.set()
        table = _TENANT_ALLOW.get(id(self.store), {})
        for tenant in self._tenants:
            if table.get(tenant) is self._allow:
                del table[tenant]
        if not table:
            _TENANT_ALLOW.pop(id(self.store), None)
        tasks = {lane.runner for lane in self._lanes.values() if lane.runner is not None}
        if self._dispatcher is not None:
            # Let a claim in progress return, so its rows are not leased to nobody.
            tasks.add(self._dispatcher)
            self._dispatcher = None
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=self.stop_timeout)
            for task in late:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self._lanes.clear()
        if self._own_client:
            await self._client.aclose()

    # -- dispatcher --------------------------------------------------------------------------

    async def _dispatch(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._idle_for()):
                    await self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return
            try:
                await self._drain()
            except Exception:  # keep polling: the store may come back
                logger.exception("push: cannot claim deliveries")

    def _idle_for(self) -> float:
        """Seconds until the next poll, or until a waiting lane's head is due again (or,
        when overdue and not offered, until `_drain` gives up on it)."""
        now = _now()
        soonest = now + int(self.poll_interval * 1e6)
        for lane in self._lanes.values():
            head = lane.head()
            if lane.runner is None and head is not None:
                if head.due_at > self._last_claim:
                    soonest = min(soonest, head.due_at)
                elif self._complete:  # offered and not returned: when to give up on it
                    soonest = min(soonest, head.due_at + self._lease)
        return max(0.0, (soonest - now) / 1e6)

    async def _drain(self) -> None:
        """Claim every due row (while memory allows) and hand each to its lane."""
        self._complete = False
        while not self._stopping:
            now = self._last_claim = _now()
            batch = await self.store.claim_deliveries(now, self._batch, self._lease)
            for delivery in batch:
                self._accept(delivery, now)
            if len(batch) < self._batch:
                self._complete = True
                break
            if self._running() >= self.concurrency * 2 or self._entries() >= self._max_entries:
                break  # enough to do; the lanes wake us when they are done
        now = _now()
        for key, lane in list(self._lanes.items()):
            head = lane.head()
            # Every due row was just claimed, and this head, due a lease ago, was not: the
            # store dropped it (its config was deleted) or another worker has it. Stop
            # holding the lane for it.
            if self._complete and lane.runner is None and head and self._gone(head, now):
                del lane.entries[head.delivery.id]
            self._run(key, lane)

    def _gone(self, entry: _Entry, now: int) -> bool:
        return entry.lease_until <= now and now >= entry.due_at + self._lease

    def _entries(self) -> int:
        return sum(len(lane.entries) for lane in self._lanes.values())

    def _running(self) -> int:
        return sum(lane.runner is not None for lane in self._lanes.values())

    def _accept(self, delivery: Delivery, now: int) -> None:
        key = (delivery.tenant, delivery.task_id, delivery.config_id)
        lane = self._lanes.setdefault(key, _Lane())
        entry = lane.entries.get(delivery.id)
        if entry is None:
            lane.entries[delivery.id] = _Entry(delivery, now + self._lease, now + self._lease)
        else:  # claimed again: a retry now due, or a held row whose claim ran out
            entry.delivery = delivery
            entry.lease_until = entry.due_at = now + self._lease

    def _run(self, key: _LaneKey, lane: _Lane) -> None:
        if not lane.entries:
            if lane.runner is None:
                del self._lanes[key]
        elif lane.runner is None and not self._stopping and self._sendable(lane):
            lane.runner = asyncio.create_task(self._lane(key, lane), name=f"push {key[1]}")

    def _sendable(self, lane: _Lane) -> bool:
        """The head is ours long enough to finish an attempt before another worker may
        claim it; else the lane waits for the dispatcher to claim it (again)."""
        head = lane.head()
        return head is not None and head.lease_until - _now() > self.timeout * 1e6

    # -- one lane ----------------------------------------------------------------------------

    async def _lane(self, key: _LaneKey, lane: _Lane) -> None:
        entry: _Entry | None = None
        try:
            while not self._stopping and self._sendable(lane):
                entry = lane.head()
                assert entry is not None
                async with self._slots:
                    # waiting for a slot took time: still ours for a whole attempt?
                    if self._stopping or not self._sendable(lane):
                        break
                    failure = await self._attempt(entry.delivery)
                await self._settle(lane, entry, failure)
        except Exception:  # a bug: the row is offered again when its claim ends
            logger.exception("push: lane of task %s to config %s failed", key[1], key[2])
            if entry is not None and entry.delivery.id in lane.entries:
                self._hold(entry, entry.lease_until)  # not sent again before then
        finally:
            lane.runner = None
            if not lane.entries and self._lanes.get(key) is lane:
                del self._lanes[key]
            if not self._stopping:
                # the next event of the lane is offered only now (the store gives lane
                # heads), or the head waits for a claim: let the dispatcher claim again
                self._wake.set()

    async def _settle(self, lane: _Lane, entry: _Entry, failure: _Failure | None) -> None:
        d = entry.delivery
        attempts = d.attempts + 1
        claimed_until = entry.lease_until
        try:
            if failure is None:
                del lane.entries[d.id]
                await self.store.finish_delivery(d.id)
            elif failure.permanent or attempts >= self.max_attempts:
                del lane.entries[d.id]
                why = "permanent failure" if failure.permanent else "retry budget spent"
                logger.warning(
                    "push: dropped event %s of task %s for config %s after %d attempt(s)"
                    " (%s): %s",
                    d.seq, d.task_id, d.config_id, attempts, why, failure.error,
                )  # fmt: skip
                await self.store.drop_delivery(d.id, failure.error)
            else:
                cap = min(self.max_delay, self.base_delay * 2**d.attempts)
                delay = max(random.uniform(0, cap), min(failure.retry_after, self.max_delay))
                # Hand the row back before the store does: from the commit on, the
                # dispatcher may claim it again, and that claim must find it waiting.
                entry.lease_until, entry.due_at = 0, _now() + int(delay * 1e6)
                logger.debug(
                    "push: event %s of task %s to config %s failed (attempt %d), retry in"
                    " %.2fs: %s",
                    d.seq, d.task_id, d.config_id, attempts, delay, failure.error,
                )  # fmt: skip
                await self.store.retry_delivery(d.id, entry.due_at, failure.error)
        except StoreError as exc:
            # The row stays claimed until its lease ends, then it is offered again (so a
            # delivered event may be sent twice: at least once; receivers de-duplicate).
            logger.error("push: cannot record delivery %s: %s", d.id, exc)
            if d.id in lane.entries:  # a retry: the lane still waits for this row
                self._hold(entry, claimed_until)

    @staticmethod
    def _hold(entry: _Entry, claimed_until: int) -> None:
        """The lane waits for the store to offer `entry` again, when its claim ends."""
        entry.lease_until, entry.due_at = 0, max(entry.due_at, claimed_until)

    async def _attempt(self, d: Delivery) -> _Failure | None:
        """One POST of one event: None when the receiver took it (2xx), else why not.

        The one place that judges an attempt, and it never raises: whatever goes wrong
        (the config, the URL, the connection, the webhook's answer, our reading of it,
        a bug) is one failed attempt, counted against the retry budget like any other.
        """
        try:
            async with asyncio.timeout(self.timeout):
                status, retry_after = await self._post(d)
            if 200 <= status < 300:
                return None
            permanent = 400 <= status < 500 and status not in _RETRYABLE_4XX
            wait = _retry_after(retry_after, time.time(), self.max_delay)
            redirect = " (redirects are not followed)" if 300 <= status < 400 else ""
            return _Failure(f"HTTP {status}{redirect}", permanent, wait)
        except _codec.ValidationError as exc:
            return _Failure(f"bad push config: {exc}", permanent=True)
        except _TaskGone as exc:
            return _Failure(str(exc), permanent=True)
        except Refused as refused:
            return _Failure(f"refused: {refused.reason}", permanent=refused.permanent)
        except TimeoutError:
            return _Failure(f"no answer within {self.timeout}s")
        except (httpx.InvalidURL, httpx.UnsupportedProtocol, httpx.LocalProtocolError) as exc:
            return _Failure(f"cannot send: {exc}", permanent=True)
        except UnicodeEncodeError as exc:  # a header value that is not ASCII
            return _Failure(f"cannot send: {exc}", permanent=True)
        except (httpx.HTTPError, OSError) as exc:
            return _Failure(f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # a bug (ours or a library's): still one failed attempt
            logger.warning("push: attempt of event %s of task %s failed", d.seq, d.task_id,
                           exc_info=True)  # fmt: skip
            return _Failure(f"{type(exc).__name__}: {exc}")

    async def _post(self, d: Delivery) -> tuple[int, list[bytes]]:
        """POST the event: the answer's status and its `Retry-After` field values. The
        body is never read (no reason to, and it could be endless)."""
        config = _codec.decode(TaskPushNotificationConfig, d.config)
        headers = {"Content-Type": "application/json", IDEMPOTENCY_HEADER: f"{d.task_id}:{d.seq}"}
        auth = config.authentication
        if auth is not None and (auth.scheme or auth.credentials):
            headers["Authorization"] = f"{auth.scheme} {auth.credentials}".strip()
        if config.token:
            headers[TOKEN_HEADER] = config.token
        to = await target(config.url, self._allow_for(d.tenant))
        body = d.payload if d.protocol != compat.VERSION else await self._task_v03(d)
        request = self._client.build_request(
            "POST", to.url, content=body, headers={**headers, **to.headers},
            extensions=to.extensions,
        )  # fmt: skip
        # Never follow a redirect, whatever the client says: its target is unchecked.
        response = await self._client.send(request, stream=True, follow_redirects=False)
        await response.aclose()
        retry_after = [v for k, v in response.headers.raw if k.lower() == b"retry-after"]
        return response.status_code, retry_after

    async def _task_v03(self, d: Delivery) -> bytes:
        """The body for a config of a 0.3 client: the task as 0.3 JSON, as it stands."""
        row = await self.store.get(d.tenant, d.task_id)
        if row is None:
            raise _TaskGone(f"task {d.task_id} is no longer stored")
        return msgspec.json.encode(compat.task_to_v03(_codec.decode(Task, row.task)))


class _TaskGone(Exception):
    """The task of a delivery is gone: there is nothing to send, ever."""


# -- Retry-After (RFC 9110 section 10.2.3) ---------------------------------------------------

_WEEKDAY = rb"(Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_MONTHS: Final = (b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct",
                  b"Nov", b"Dec")  # fmt: skip
_MONTH = rb"(?P<month>" + b"|".join(_MONTHS) + rb")"
_TIME = rb"(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
_DELAY_SECONDS: Final = re.compile(rb"[0-9]+")
#: The three HTTP-date forms: IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, obsolete
#: RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT` and asctime `Sun Nov  6 08:49:37 1994`.
_HTTP_DATES: Final = (
    re.compile(_WEEKDAY + rb", (?P<day>[0-9]{2}) " + _MONTH + rb" (?P<year>[0-9]{4}) " + _TIME
               + rb" GMT"),
    re.compile(rb"(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (?P<day>[0-9]{2})-"
               + _MONTH + rb"-(?P<year>[0-9]{2}) " + _TIME + rb" GMT"),
    re.compile(_WEEKDAY + rb" " + _MONTH + rb" (?P<day>[0-9 ][0-9]) " + _TIME
               + rb" (?P<year>[0-9]{4})"),
)  # fmt: skip


def _retry_after(values: list[bytes], now: float, cap: float) -> float:
    """Seconds the receiver asked to wait, at most `cap`: 0 unless `values` is one
    `Retry-After` value that is delay-seconds (ASCII digits only) or an HTTP-date;
    anything else, or a date past, means no wait beyond the backoff's."""
    if len(values) != 1:
        return 0.0
    value = values[0]
    if _DELAY_SECONDS.fullmatch(value):
        # a long run of digits is huge, and int() refuses more than 4300 of them
        return cap if len(value) > 12 else min(float(int(value)), cap)
    when = _http_date(value, now)
    return 0.0 if when is None else max(0.0, min(when - now, cap))


def _http_date(value: bytes, now: float) -> float | None:
    """The time (epoch seconds) an HTTP-date names, None when `value` is not one."""
    m = next((m for p in _HTTP_DATES if (m := p.fullmatch(value)) is not None), None)
    if m is None:
        return None
    year = int(m["year"])
    if len(m["year"]) == 2:  # RFC 850: the last year with those digits, up to 50 ahead
        this_year = datetime.datetime.fromtimestamp(now, datetime.UTC).year
        year += this_year - this_year % 100
        if year > this_year + 50:
            year -= 100
    month = _MONTHS.index(m["month"]) + 1
    day, hour, minute, second = (int(m[name]) for name in ("day", "hour", "minute", "second"))
    try:
        when = datetime.datetime(year, month, day, hour, minute, second, tzinfo=datetime.UTC)
    except ValueError:  # 31 Feb, hour 25, year 0
        return None
    return when.timestamp()
