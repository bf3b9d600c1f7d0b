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
budget (`max_attempts`) is spent, then dropped with a logged error. The row's attempt
count and due time are written to the store (`retry_delivery`), and the lane waits for
the dispatcher to claim its head again when due: the store stays the one source of truth.
4xx answers other than 408 and 429 are permanent (dropped at once): the same bytes with
the same credentials get the same answer, and retrying would hold the lane for minutes.

SSRF: `check_url` allows only http(s) URLs whose host resolves to public addresses only,
unless the host is allow-listed. It runs when a config is created and again before
every attempt; the attempt then connects to the address just checked (URL pinned to the
IP, `Host` header and TLS SNI keep the name), so a DNS answer that changes between check
and connect cannot reach a refused address. Redirects are never followed.

Limits: pinned https connections are pooled by address: two names on one IP may share a
TLS connection verified for the first. (Ordering holds across restarts and replicas: the
store offers only the head of each lane.)
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import random
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, NamedTuple, TypeAlias

import httpx

from interlink.a2a import _codec
from interlink.a2a._store import Delivery, StoreError, TaskStore
from interlink.a2a._types import TaskPushNotificationConfig

__all__ = ["IDEMPOTENCY_HEADER", "TOKEN_HEADER", "PushDelivery", "check_url"]

IDEMPOTENCY_HEADER: Final = "X-A2A-Idempotency-Key"
"""`<taskId>:<seq>`: the same for every attempt of one event, so receivers de-duplicate."""
TOKEN_HEADER: Final = "X-A2A-Notification-Token"
"""The config's `token`, as the official SDKs send it (1.0 does not say how)."""

logger = logging.getLogger("interlink.a2a.push")

_IP: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64: Final = ipaddress.ip_network("64:ff9b::/96")
_RETRYABLE_4XX: Final = frozenset({408, 429})


def _now() -> int:
    """Microseconds since the epoch, the store's clock."""
    return time.time_ns() // 1000


# -- SSRF guard ------------------------------------------------------------------------------


_AllowList: TypeAlias = frozenset[tuple[str, int | None]]
"""(normalized host, port) pairs; port None allows every port."""


def _allow_list(entries: Iterable[str]) -> _AllowList:
    return frozenset(_split_host_port(entry.strip()) for entry in entries)


#: Each tenant's webhook allow list, by store: tenants sharing a store share its outbox,
#: so the worker of one may claim another's deliveries; each is checked against the
#: list of the tenant it belongs to (a tenant served by no worker here: public only).
_TENANT_ALLOW: dict[int, dict[str, _AllowList]] = {}


def _allows(allow: _AllowList, host: str, port: int) -> bool:
    return (host, None) in allow or (host, port) in allow


def _split_host_port(entry: str) -> tuple[str, int | None]:
    """`name`, `name:port`, `1.2.3.4:port`, `::1`, `[::1]:port` -> normalized (host, port)."""
    host, port = entry, ""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = rest.removeprefix(":")
    elif entry.count(":") == 1:
        host, _, port = entry.partition(":")
    if port and not port.isdigit():
        raise ValueError(f"push allow-list entry {entry!r}: bad port")
    return _normalize_host(host), int(port) if port else None


def _normalize_host(host: str) -> str:
    with contextlib.suppress(ValueError):
        return str(ipaddress.ip_address(host))  # one spelling per address
    return host.lower().rstrip(".")


def _refusal(address: _IP) -> str | None:
    """What makes `address` unfit for webhooks ("a loopback address"), None when public."""
    if isinstance(address, ipaddress.IPv6Address):
        # Addresses that carry an IPv4 one reach that IPv4 host: judge that.
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return _refusal(embedded)
    checks = (
        (address.is_unspecified, "an unspecified address"),
        (address.is_loopback, "a loopback address"),
        (address.is_link_local, "a link-local address"),
        (address.is_multicast, "a multicast address"),
        (address.is_private, "a private address"),
        (address.is_reserved, "a reserved address"),
        (not address.is_global, "not a public address"),
    )
    return next((why for refused, why in checks if refused), None)


class _Refused(Exception):
    """The URL may not be used; `permanent` unless DNS failed (which may be transient)."""

    def __init__(self, reason: str, *, permanent: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent


class _Target(NamedTuple):
    url: httpx.URL
    """What to connect to: the config's URL, its host replaced by a checked address."""
    headers: dict[str, str]
    """`Host` when the URL was pinned."""
    extensions: dict[str, object]
    """`sni_hostname` when an https URL was pinned."""


async def _target(url: str, allow: _AllowList) -> _Target:
    """Check `url` and say where to connect; raises `_Refused`. Resolves, never connects."""
    try:
        parsed = httpx.URL(url)  # the parser that sends is the parser that checks
    except httpx.InvalidURL as exc:
        raise _Refused(f"invalid URL: {exc}") from exc
    if parsed.scheme not in ("http", "https"):
        raise _Refused(f"scheme {parsed.scheme or '(none)'!r} is not http or https")
    if not parsed.host:
        raise _Refused("the URL has no host")
    host = _normalize_host(parsed.host)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    if _allows(allow, host, port):
        return _Target(parsed, {}, {})
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        addresses = await _resolve(host, port)
    for address in addresses:
        why = _refusal(address)
        if why is not None and not _allows(allow, str(address), port):
            if str(address) == host:
                raise _Refused(f"{host} is {why}")
            raise _Refused(f"{host} resolves to {address}, {why}")
    if str(addresses[0]) == host:
        return _Target(parsed, {}, {})
    extensions: dict[str, object] = {"sni_hostname": host} if parsed.scheme == "https" else {}
    return _Target(
        parsed.copy_with(host=str(addresses[0])), {"Host": parsed.netloc.decode()}, extensions
    )


async def _resolve(host: str, port: int) -> list[_IP]:
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )
    except OSError as exc:
        raise _Refused(f"cannot resolve {host}: {exc}", permanent=False) from exc
    # The scope id of an IPv6 link-local answer ("fe80::1%eth0") does not change the verdict.
    addresses = [ipaddress.ip_address(str(info[4][0]).partition("%")[0]) for info in infos]
    if not addresses:
        raise _Refused(f"cannot resolve {host}: no addresses", permanent=False)
    return addresses


async def check_url(
    url: str, allow_hosts: Iterable[str] = (), *, unresolvable_ok: bool = False
) -> str | None:
    """Why `url` may not receive push notifications, or None when it may.

    Only http and https; the host must resolve to public addresses only (every address
    it resolves to is checked), unless the host, as written in the URL (name or IP
    literal), is in `allow_hosts`, alone or as `host:port`. An IP in `allow_hosts` also
    allows names that resolve to it. Resolves the name; never connects.
    `unresolvable_ok` accepts a name that does not resolve now (a config may name a host
    that exists later; every delivery checks again).
    """
    try:
        await _target(url, _allow_list(allow_hosts))
    except _Refused as refused:
        if unresolvable_ok and not refused.permanent:
            return None
        return refused.reason
    return None


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
        self._allow = _allow_list(self.allow_hosts)
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

    def _allow_for(self, tenant: str) -> _AllowList:
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
                logger.error(
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
                entry.lease_until, entry.due_at = 0, max(entry.due_at, claimed_until)

    async def _attempt(self, d: Delivery) -> _Failure | None:
        """One POST of one event; None when the receiver took it (2xx)."""
        try:
            config = _codec.decode(TaskPushNotificationConfig, d.config)
        except _codec.ValidationError as exc:
            return _Failure(f"bad push config: {exc}", permanent=True)
        headers = {"Content-Type": "application/json", IDEMPOTENCY_HEADER: f"{d.task_id}:{d.seq}"}
        auth = config.authentication
        if auth is not None and (auth.scheme or auth.credentials):
            headers["Authorization"] = f"{auth.scheme} {auth.credentials}".strip()
        if config.token:
            headers[TOKEN_HEADER] = config.token
        try:
            async with asyncio.timeout(self.timeout):
                target = await _target(config.url, self._allow_for(d.tenant))
                request = self._client.build_request(
                    "POST",
                    target.url,
                    content=d.payload,
                    headers={**headers, **target.headers},
                    extensions=target.extensions,
                )
                response = await self._client.send(request, stream=True)
                await response.aclose()  # the body is not read: no reason to, no size bound
        except _Refused as refused:
            return _Failure(f"refused: {refused.reason}", permanent=refused.permanent)
        except TimeoutError:
            return _Failure(f"no answer within {self.timeout}s")
        except (httpx.InvalidURL, httpx.UnsupportedProtocol, httpx.LocalProtocolError) as exc:
            return _Failure(f"cannot send: {exc}", permanent=True)
        except UnicodeEncodeError as exc:  # a header value that is not ASCII
            return _Failure(f"cannot send: {exc}", permanent=True)
        except (httpx.HTTPError, OSError) as exc:
            return _Failure(f"{type(exc).__name__}: {exc}")
        status = response.status_code
        if 200 <= status < 300:
            return None
        permanent = 400 <= status < 500 and status not in _RETRYABLE_4XX
        return _Failure(f"HTTP {status}", permanent, _retry_after(response))


def _retry_after(response: httpx.Response) -> float:
    value = response.headers.get("Retry-After", "")
    return float(value) if value.isdigit() else 0.0
