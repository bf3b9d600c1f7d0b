"""Hostile webhooks, on raw TCP servers of 127.0.0.1 that send exactly the bytes given:
whatever a receiver answers (a `Retry-After` that is malformed, huge, negative or a
date, a redirect, a body or a head that never ends, nothing at all), each POST is one
failed attempt of the retry budget. The receiver gets exactly `max_attempts` POSTs of
the event, then the event is dropped with a warning that says why; no traceback."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

import httpx
import pytest

from interlink.a2a.server._push import _retry_after
from tests.a2a.test_push import (
    WAIT,
    SpyStore,
    Tracked,
    emit,
    hook,
    running,
    task_with_hooks,
    worker,
)

pytestmark = [pytest.mark.timeout(30), pytest.mark.any_loop]

BUDGET = 3
"""The policy's bound in these tests: `max_attempts`."""

Answer: TypeAlias = Callable[[asyncio.StreamWriter], Awaitable[None]]
"""What the webhook does once it has read a whole request."""


@dataclass(kw_only=True)
class Hostile(Tracked):
    """Counts the POSTs it reads, and answers each with `answer`."""

    answer: Answer
    attempts: int = 0
    counted: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # a connection reset: the worker gave up on this attempt and hung up
        with self.track(writer), contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await reader.readexactly(length)
            async with self.counted:
                self.attempts += 1
                self.counted.notify_all()
            await self.answer(writer)

    async def wait_for(self, attempts: int) -> None:
        async with asyncio.timeout(WAIT), self.counted:
            await self.counted.wait_for(lambda: self.attempts >= attempts)


class Start(Protocol):
    def __call__(self, answer: Answer) -> Awaitable[Hostile]: ...


@pytest.fixture
async def hostile() -> AsyncIterator[Start]:
    started: list[tuple[Hostile, asyncio.Server]] = []

    async def start(answer: Answer) -> Hostile:
        webhook = Hostile(answer=answer)
        started.append((webhook, await webhook.listen()))
        return webhook

    yield start
    for webhook, server in started:
        await webhook.shut(server)  # an answer that never ends sees its connection end


# -- answers --------------------------------------------------------------------------------


def head(status: int, *headers: bytes, body: bytes = b"") -> Answer:
    """One response, byte for byte: `headers` are whole header lines."""
    lines = b"".join(h + b"\r\n" for h in headers)
    data = b"HTTP/1.1 %d X\r\n%sContent-Length: %d\r\n\r\n%s" % (status, lines, len(body), body)

    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(data)
        await writer.drain()

    return answer


def forever(first: bytes, again: bytes) -> Answer:
    """`first`, then `again` over and over until the worker hangs up."""

    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(first)
        while not writer.is_closing():
            await writer.drain()
            writer.write(again)
            await asyncio.sleep(0.001)  # pace, not synchronisation: a steady trickle

    return answer


async def silence(writer: asyncio.StreamWriter) -> None:
    """Reads the request and never answers (until the worker hangs up)."""
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()


async def hang_up(writer: asyncio.StreamWriter) -> None:
    writer.close()


def retry_after(value: bytes) -> Answer:
    return head(503, b"Retry-After: " + value)


HOSTILE: dict[str, Answer] = {
    # "\xb2" is "²" in ISO-8859-1: str.isdigit() says yes, float() says no
    "retry-after-superscript-two": retry_after(b"\xb2"),
    "retry-after-superscript-nine": retry_after(b"1\xb9"),
    "retry-after-not-a-number": retry_after(b"soon"),
    "retry-after-fraction": retry_after(b"0.5"),
    "retry-after-exponent": retry_after(b"1e9"),
    "retry-after-negative": retry_after(b"-5"),
    "retry-after-plus": retry_after(b"+1"),
    "retry-after-hex": retry_after(b"0x10"),
    "retry-after-huge": retry_after(b"99999999999999999999999999999999"),
    "retry-after-5000-digits": retry_after(b"9" * 5000),  # over int()'s digit limit
    "retry-after-empty": retry_after(b""),
    "retry-after-two-values": head(503, b"Retry-After: 1", b"Retry-After: 2"),
    "retry-after-past-date": retry_after(b"Sun, 06 Nov 1994 08:49:37 GMT"),
    "retry-after-future-date": retry_after(b"Fri, 31 Dec 9999 23:59:59 GMT"),
    "retry-after-rfc850-date": retry_after(b"Sunday, 06-Nov-94 08:49:37 GMT"),
    "retry-after-asctime-date": retry_after(b"Sun Nov  6 08:49:37 1994"),
    "retry-after-impossible-date": retry_after(b"Sat, 31 Feb 2099 08:49:37 GMT"),
    "retry-after-date-year-0": retry_after(b"Sat, 01 Jan 0000 00:00:00 GMT"),
    "retry-after-latin1-junk": retry_after(b"\xff\xfe\xfd"),
    "429-retry-after-superscript": head(429, b"Retry-After: \xb2"),
    "redirect-301": head(301, b"Location: /elsewhere"),
    "redirect-302": head(302, b"Location: /elsewhere"),
    "redirect-303": head(303, b"Location: /elsewhere"),
    "redirect-307": head(307, b"Location: /elsewhere"),
    "redirect-308-no-location": head(308),
    "body-that-never-ends": forever(
        b"HTTP/1.1 500 X\r\nTransfer-Encoding: chunked\r\n\r\n", b"400\r\n" + b"x" * 1024 + b"\r\n"
    ),
    "content-length-body-never-sent": forever(
        b"HTTP/1.1 500 X\r\nContent-Length: 1000000000\r\n\r\n", b"x"
    ),
    "head-that-never-ends": forever(b"HTTP/1.1 500 X\r\n", b"X-More: yes\r\n"),
    "informational-forever": forever(b"", b"HTTP/1.1 100 Continue\r\n\r\n"),
    "no-answer": silence,
    "hangs-up": hang_up,
    "not-http": head(0),
    "garbage": forever(b"\x00\xff garbage\r\n\r\n", b""),
}


@pytest.mark.parametrize("answer", HOSTILE.values(), ids=HOSTILE.keys())
async def test_a_hostile_answer_is_one_failed_attempt_of_the_budget(
    hostile: Start, answer: Answer, caplog: pytest.LogCaptureFixture
) -> None:
    webhook = await hostile(answer)
    store = SpyStore()
    await task_with_hooks(store, hook(webhook.url))
    caplog.set_level(logging.DEBUG, "interlink.a2a.push")
    async with running(worker(store, max_attempts=BUDGET, timeout=0.5, lease=5.0)) as push:
        await emit(store, 2)
        push.wake()
        await store.wait_for("drop")
    await webhook.wait_for(BUDGET)

    assert webhook.attempts == BUDGET
    assert [what for what, _ in store.calls] == ["retry"] * (BUDGET - 1) + ["drop"]
    # each wait is the backoff's (max_delay 0.05 s here), whatever the webhook asked for
    assert all(delay <= 50_000 + 20_000 for delay in store.retry_delays)
    assert [r for r in caplog.records if r.exc_info] == []
    (dropped,) = [r for r in caplog.records if "dropped event" in r.getMessage()]
    assert dropped.levelno == logging.WARNING
    assert f"after {BUDGET} attempt(s) (retry budget spent)" in dropped.getMessage()


async def test_a_redirect_is_not_followed_even_by_a_client_that_would(hostile: Start) -> None:
    elsewhere = await hostile(head(204))
    webhook = await hostile(head(307, b"Location: " + elsewhere.url.encode()))
    store = SpyStore()
    await task_with_hooks(store, hook(webhook.url))
    client = httpx.AsyncClient(follow_redirects=True)
    async with running(worker(store, client=client, max_attempts=BUDGET)) as push:
        await emit(store, 2)
        push.wake()
        await store.wait_for("drop")
    await client.aclose()
    assert webhook.attempts == BUDGET
    assert elsewhere.attempts == 0


async def test_a_body_that_never_ends_is_not_read(hostile: Start) -> None:
    endless = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    webhook = await hostile(forever(endless, b"400\r\n" + b"x" * 1024 + b"\r\n"))
    store = SpyStore()
    await task_with_hooks(store, hook(webhook.url))
    async with running(worker(store, timeout=5.0)) as push:
        await emit(store, 2)
        push.wake()
        await store.wait_for("finish")  # taken at its head: the body is none of our business
    assert webhook.attempts == 1
    assert [what for what, _ in store.calls] == ["finish"]


# -- Retry-After, as RFC 9110 spells it ------------------------------------------------------

NOW = 1_780_000_000.0
"""2026-05-28T20:26:40Z"""


@pytest.mark.parametrize(
    ("values", "seconds"),
    [
        ([b"120"], 120.0),
        ([b"0"], 0.0),
        ([b"007"], 7.0),
        ([b"5000"], 1000.0),  # capped at max_delay
        ([b"9" * 5000], 1000.0),
        ([b"\xb2"], 0.0),  # "²": a digit to str.isdigit(), not to RFC 9110
        ([b"\xd9\xa3"], 0.0),  # ARABIC-INDIC DIGIT THREE in UTF-8
        ([b"1.5"], 0.0),
        ([b"-5"], 0.0),
        ([b"+5"], 0.0),
        ([b"5 s"], 0.0),
        ([b""], 0.0),
        ([b"1", b"2"], 0.0),  # two answers: neither is the answer
        ([], 0.0),
        ([b"Thu, 28 May 2026 20:27:40 GMT"], 60.0),  # IMF-fixdate
        ([b"Thursday, 28-May-26 20:28:40 GMT"], 120.0),  # RFC 850
        ([b"Thu May 28 20:29:40 2026"], 180.0),  # asctime
        ([b"Mon Jun  1 20:26:40 2026"], 1000.0),  # asctime, one-digit day; capped
        ([b"Sun, 06 Nov 1994 08:49:37 GMT"], 0.0),  # past: no extra wait
        ([b"Fri, 31 Dec 9999 23:59:59 GMT"], 1000.0),
        ([b"Sunday, 06-Nov-94 08:49:37 GMT"], 0.0),  # 1994, not 2094
        ([b"Sat, 31 Feb 2099 08:49:37 GMT"], 0.0),  # no such day
        ([b"Thu, 28 May 2026 25:00:00 GMT"], 0.0),
        ([b"Sat, 01 Jan 0000 00:00:00 GMT"], 0.0),
        ([b"thu, 28 may 2026 20:27:40 gmt"], 0.0),  # the names are case-sensitive
        ([b"Thu, 28 May 2026 20:27:40 UTC"], 0.0),
        ([b"Thu, 28 May 2026 20:27:40"], 0.0),
        ([b"2026-05-28T20:27:40Z"], 0.0),
    ],
)
def test_retry_after(values: list[bytes], seconds: float) -> None:
    assert _retry_after(values, NOW, 1000.0) == seconds


async def test_an_error_nobody_foresaw_is_still_one_failed_attempt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bug (here the transport raises what no HTTP library would) does not escape the
    attempt: it is counted like any failure, and the budget ends it."""
    calls: list[httpx.Request] = []

    def broken(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise RuntimeError("unforeseen")

    store = SpyStore()
    await task_with_hooks(store, hook("http://127.0.0.1:9/hook"))
    client = httpx.AsyncClient(transport=httpx.MockTransport(broken))
    async with running(worker(store, client=client, max_attempts=BUDGET)) as push:
        await emit(store, 2)
        push.wake()
        await store.wait_for("drop")
    await client.aclose()
    assert len(calls) == BUDGET
    assert [what for what, _ in store.calls] == ["retry"] * (BUDGET - 1) + ["drop"]
    assert "(retry budget spent): RuntimeError: unforeseen" in caplog.text
