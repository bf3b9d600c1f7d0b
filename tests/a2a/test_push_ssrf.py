"""The push SSRF guard: `check_url` refuses non-public targets by resolving, never by
connecting; delivery re-checks every attempt and connects to the address it checked."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from interlink.a2a._push import check_url
from tests.a2a.test_push import SpyStore, emit, hook, running, task_with_hooks, worker

pytestmark = pytest.mark.timeout(20)


# -- SSRF guard --------------------------------------------------------------------------------


@pytest.fixture
def no_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails any attempt to open a connection (resolving stays allowed)."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(asyncio.BaseEventLoop, "create_connection", refuse)
    monkeypatch.setattr(asyncio.BaseEventLoop, "sock_connect", refuse)


@pytest.mark.usefixtures("no_connections")
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
        ("http://10.0.0.1/", "10.0.0.1 is a private address"),
        ("https://192.168.1.1:8443/x", "192.168.1.1 is a private address"),
        ("http://169.254.169.254/latest/meta-data", "169.254.169.254 is a link-local address"),
        ("http://[::1]/", "::1 is a loopback address"),
        ("http://[fd00::1]/", "fd00::1 is a private address"),
        ("http://[fe80::1]/", "fe80::1 is a link-local address"),
        ("http://0.0.0.0/", "0.0.0.0 is an unspecified address"),
        ("http://224.0.0.1/", "224.0.0.1 is a multicast address"),
        ("http://100.64.0.1/", "100.64.0.1 is not a public address"),
        ("http://[::ffff:127.0.0.1]/", "a loopback address"),
        ("http://[2002:7f00:1::]/", "a loopback address"),  # 6to4 of 127.0.0.1
        ("http://[64:ff9b::a00:1]/", "a private address"),  # NAT64 of 10.0.0.1
        ("http://localhost:8080/hook", "localhost resolves to"),
        ("ftp://x/", "scheme 'ftp' is not http or https"),
        ("hook", "is not http or https"),
        ("http:///nohost", "no host"),
    ],
)
async def test_check_url_refuses(url: str, reason: str) -> None:
    refusal = await check_url(url)
    assert refusal is not None
    assert reason in refusal


@pytest.mark.usefixtures("no_connections")
async def test_check_url_allows_public_and_allow_listed_hosts() -> None:
    assert await check_url("https://93.184.216.34/hook") is None
    assert await check_url("http://127.0.0.1:8080/hook", ["127.0.0.1:8080"]) is None
    assert await check_url("http://127.0.0.1:8080/hook", ["127.0.0.1"]) is None
    assert await check_url("http://127.0.0.1:9090/hook", ["127.0.0.1:8080"]) is not None
    assert await check_url("http://LOCALHOST./hook", ["localhost"]) is None
    assert await check_url("http://[::1]:81/", ["[::1]:81"]) is None
    assert await check_url("http://[::1]:81/", ["::1"]) is None
    with pytest.raises(ValueError, match="bad port"):
        await check_url("http://x/", ["x:http"])


async def test_a_name_that_does_not_resolve_is_retried(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def getaddrinfo(host: str, port: int, **kwargs: object) -> list[tuple[object, ...]]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", getaddrinfo)
    url = "http://hooks.example/hook"
    assert (
        await check_url(url) == "cannot resolve hooks.example: [Errno -2] Name or service not known"
    )
    store = SpyStore()
    await task_with_hooks(store, hook(url))
    async with running(worker(store, allow=(), max_attempts=2)) as push:
        await emit(store, 2)
        push.wake()
        await store.wait_for("drop")
    assert [what for what, _ in store.calls] == ["retry", "drop"]  # DNS may come back
    assert "retry budget spent): refused: cannot resolve hooks.example" in caplog.text


async def test_refused_at_delivery_without_connecting(caplog: pytest.LogCaptureFixture) -> None:
    sent: list[httpx.Request] = []

    def receive(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(204)

    store = SpyStore()
    await task_with_hooks(store, hook("http://10.0.0.1:9/hook"))
    client = httpx.AsyncClient(transport=httpx.MockTransport(receive))
    async with running(worker(store, allow=(), client=client)) as push:
        await emit(store, 2)
        push.wake()
        await store.wait_for("drop")
    await client.aclose()
    assert sent == []
    assert "refused: 10.0.0.1 is a private address" in caplog.text


async def test_connects_to_the_address_it_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name is resolved once per attempt and the request goes to that address; an
    answer that turns private (DNS rebinding) is refused before any connection."""
    answer = ["93.184.216.34"]

    async def getaddrinfo(host: str, port: int, **kwargs: object) -> list[tuple[object, ...]]:
        assert host == "hooks.example"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answer[0], port))]

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", getaddrinfo)
    sent: list[httpx.Request] = []

    def receive(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(204)

    url = "https://hooks.example:8443/hook"
    assert await check_url(url) is None
    store = SpyStore()
    await task_with_hooks(store, hook(url))
    client = httpx.AsyncClient(transport=httpx.MockTransport(receive))
    async with running(worker(store, allow=(), client=client)) as push:
        await emit(store, 2)
        push.wake()
        await store.wait_for("finish")
        answer[0] = "127.0.0.1"
        await emit(store, 3)
        push.wake()
        await store.wait_for("drop")
    await client.aclose()

    (request,) = sent
    assert request.url == "https://93.184.216.34:8443/hook"
    assert request.headers["host"] == "hooks.example:8443"
    assert request.extensions["sni_hostname"] == "hooks.example"
    assert await check_url(url) == "hooks.example resolves to 127.0.0.1, a loopback address"
