"""The push SSRF guard: `check_url` refuses non-public targets by resolving, never by
connecting; delivery re-checks every attempt and connects to the address it checked."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable
from typing import NamedTuple

import httpx
import pytest

from interlink.a2a import A2AApp, A2AServer
from interlink.a2a.server._addresses import EXTRA, IPV4, IPV6, refusal
from interlink.a2a.server._push import PushDelivery, check_url
from interlink.a2a.server._push_ssrf import target
from tests.a2a.agents import Scripted, card, message
from tests.a2a.conftest import Served
from tests.a2a.test_push import SpyStore, emit, hook, running, task_with_hooks, worker

Serve = Callable[[A2AApp], Awaitable[Served]]

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
        ("http://127.0.0.1/", "127.0.0.1 is in 127.0.0.0/8 (Loopback)"),
        ("http://10.0.0.1/", "10.0.0.1 is in 10.0.0.0/8 (Private-Use)"),
        ("https://192.168.1.1:8443/x", "192.168.1.1 is in 192.168.0.0/16 (Private-Use)"),
        ("http://169.254.169.254/latest/meta-data", "in 169.254.0.0/16 (Link Local)"),
        ("http://[::1]/", "::1 is in ::1/128 (Loopback Address): not globally reachable"),
        ("http://[fd00::1]/", "fd00::1 is in fc00::/7 (Unique-Local)"),
        ("http://[fe80::1]/", "fe80::1 is in fe80::/10 (Link-Local Unicast)"),
        ("http://0.0.0.0/", '0.0.0.0 is in 0.0.0.0/32 ("This host on this network")'),
        ("http://224.0.0.1/", "224.0.0.1 is in 224.0.0.0/4 (Multicast)"),
        ("http://100.64.0.1/", "100.64.0.1 is in 100.64.0.0/10 (Shared Address Space)"),
        ("http://[fec0::1]/", "fec0::1 is in fec0::/10 (Site-Local (deprecated))"),
        ("http://[FEC0::1]/", "fec0::1 is in fec0::/10"),
        ("http://[ff0e::1]/", "ff0e::1 is in ff00::/8 (Multicast)"),
        ("http://[4000::1]/", "4000::1 is outside 2000::/3 (global unicast)"),
        ("http://[2001:db8::1]/", "2001:db8::1 is in 2001:db8::/32 (Documentation)"),
        ("http://[::ffff:127.0.0.1]/", "IPv4-mapped Address of 127.0.0.1, in 127.0.0.0/8"),
        ("http://[0:0:0:0:0:ffff:a00:1]/", "IPv4-mapped Address of 10.0.0.1, in 10.0.0.0/8"),
        ("http://[::127.0.0.1]/", "IPv4-compatible (deprecated) of 127.0.0.1, in 127.0.0.0/8"),
        ("http://[2002:7f00:1::]/", "6to4 of 127.0.0.1, in 127.0.0.0/8"),
        ("http://[64:ff9b::a00:1]/", "IPv4-IPv6 Translat. of 10.0.0.1, in 10.0.0.0/8"),
        ("http://[64:ff9b:1::5db8:d822]/", "in 64:ff9b:1::/48"),  # local use: no IPv4 to judge
        # zone ids: never public, whatever the address
        ("http://[fe80::1%25eth0]/", "has a zone id"),
        ("http://[2606:4700::1%25eth0]/", "has a zone id"),
        # the spellings of 127.0.0.1 a URL host can take: a name to the URL parser, the
        # system resolver reads it (numerically, no DNS) as the connection would
        ("http://127.1/", "127.1 resolves to 127.0.0.1, in 127.0.0.0/8"),
        ("http://127.0.1/", "127.0.1 resolves to 127.0.0.1, in 127.0.0.0/8"),
        ("http://2130706433/", "2130706433 resolves to 127.0.0.1, in 127.0.0.0/8"),
        ("http://0x7f000001/", "0x7f000001 resolves to 127.0.0.1, in 127.0.0.0/8"),
        ("http://0x7f.1/", "0x7f.1 resolves to 127.0.0.1, in 127.0.0.0/8"),
        ("http://017700000001/", "017700000001 resolves to 127.0.0.1, in 127.0.0.0/8"),
        ("http://0/", "0 resolves to 0.0.0.0, in 0.0.0.0/32"),
        ("http://0177.0.0.1/", "invalid URL"),  # httpx refuses a leading zero outright
        ("http://127.0.0.1./", "127.0.0.1 is in 127.0.0.0/8"),
        ("http://127\u30020\u30020\u30021/", "127.0.0.1 is in 127.0.0.0/8"),  # ideographic dots
        ("http://[::]/", ":: is in ::/128 (Unspecified Address)"),
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
    assert "refused: 10.0.0.1 is in 10.0.0.0/8 (Private-Use)" in caplog.text


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
    assert await check_url(url) == (
        "hooks.example resolves to 127.0.0.1, in 127.0.0.0/8 (Loopback): not globally reachable"
    )


# -- the IANA special-purpose registries, block by block ----------------------------------------

# Transcribed from iana-ipv4-special-registry and iana-ipv6-special-registry (2025): block
# and "Globally Reachable" (N/A and the blank of a terminated row: not reachable). Then
# the blocks other registries own. `ipv4` marks the blocks judged by the IPv4 address
# their addresses carry.
REGISTRY = """
0.0.0.0/8 False
0.0.0.0/32 False
10.0.0.0/8 False
100.64.0.0/10 False
127.0.0.0/8 False
169.254.0.0/16 False
172.16.0.0/12 False
192.0.0.0/24 False
192.0.0.0/29 False
192.0.0.8/32 False
192.0.0.9/32 True
192.0.0.10/32 True
192.0.0.170/32 False
192.0.0.171/32 False
192.0.2.0/24 False
192.31.196.0/24 True
192.52.193.0/24 True
192.88.99.0/24 N/A
192.88.99.2/32 False
192.168.0.0/16 False
192.175.48.0/24 True
198.18.0.0/15 False
198.51.100.0/24 False
203.0.113.0/24 False
240.0.0.0/4 False
255.255.255.255/32 False
::1/128 False
::/128 False
::ffff:0:0/96 False ipv4
64:ff9b::/96 True ipv4
64:ff9b:1::/48 False
100::/64 False
100:0:0:1::/64 False
2001::/23 False
2001::/32 N/A
2001:1::1/128 True
2001:1::2/128 True
2001:1::3/128 True
2001:2::/48 False
2001:3::/32 True
2001:4:112::/48 True
2001:10::/28 N/A
2001:20::/28 True
2001:30::/28 True
2001:db8::/32 False
2002::/16 N/A ipv4
2620:4f:8000::/48 True
3fff::/20 False
5f00::/16 False
fc00::/7 False
fe80::/10 False
224.0.0.0/4 False
::/96 False ipv4
fec0::/10 False
ff00::/8 False
"""


class Row(NamedTuple):
    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    reachable: bool
    carries_ipv4: bool


ROWS = [
    Row(ipaddress.ip_network(block), reachable == "True", carries == ["ipv4"])
    for block, reachable, *carries in (line.split() for line in REGISTRY.strip().splitlines())
]


def expected(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Reachable, by the most specific row that holds `address`."""
    rows = [r for r in ROWS if r.network.version == address.version and address in r.network]
    if not rows:  # IPv6 must be global unicast; any other IPv4 is
        return address.version == 4 or address in ipaddress.ip_network("2000::/3")
    row = max(rows, key=lambda r: r.network.prefixlen)
    if row.carries_ipv4:
        shift = 80 if row.network == ipaddress.ip_network("2002::/16") else 0
        return expected(ipaddress.IPv4Address((int(address) >> shift) & 0xFFFFFFFF))
    return row.reachable


def probes(row: Row) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    first, last = row.network[0], row.network[-1]
    return [first, row.network[row.network.num_addresses // 2], last]


def test_the_registry_here_is_the_one_the_guard_uses() -> None:
    used = {(b.network, b.ipv4_at is not None) for b in (*IPV4, *IPV6, *EXTRA)}
    assert used == {(r.network, r.carries_ipv4) for r in ROWS}


@pytest.mark.parametrize("row", ROWS, ids=[str(r.network) for r in ROWS])
def test_every_registry_block_first_middle_and_last(row: Row) -> None:
    for address in probes(row):
        why = refusal(address)
        assert (why is None) == expected(address), (address, why)


@pytest.mark.parametrize(
    "address",
    [
        "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.0", "192.0.1.255",
        "192.0.3.0", "192.88.98.255", "198.17.255.255", "198.20.0.0", "223.255.255.255",
        "2606:4700::1111", "2a00:1450:4001::1", "2001:200::1", "2001:db9::1", "2003::1",
        "3fff:1000::1", "::ffff:93.184.216.34", "64:ff9b::93.184.216.34", "2002:5db8:d822::1",
        "::93.184.216.34", "2001:1::1", "192.0.0.9",
    ],
)  # fmt: skip
def test_globally_reachable_addresses_pass(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    "address",
    ["1fff:ffff::1", "4000::1", "200::1", "fe00::1", "::2:1:1", "2001:1::4", "64:ff9b::7f00:1"],
)
def test_addresses_outside_every_reachable_block_are_refused(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is not None


@pytest.mark.usefixtures("no_connections")
async def test_a_literal_in_another_spelling_is_connected_to_as_checked() -> None:
    """`93.184.216.34.` would be resolved by name when connecting: the request goes to
    the address that was judged, not to whatever a resolver makes of the spelling."""
    to = await target("http://93.184.216.34.:8080/hook", frozenset())
    assert to.url == "http://93.184.216.34:8080/hook"
    assert to.headers == {"Host": "93.184.216.34.:8080"}


@pytest.mark.any_loop
async def test_a_site_local_webhook_is_refused_when_set_and_never_sent_to(serve: Serve) -> None:
    """End to end: `http://[fec0::1]/` is -32602 as a config and as a message's inline
    config; the task's events are delivered to the public webhook beside it, and
    nothing ever goes to fec0::1 (the worker's transport records every request)."""
    sent: list[httpx.Request] = []

    def receive(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(204)

    store = SpyStore()
    client = httpx.AsyncClient(transport=httpx.MockTransport(receive))
    push = PushDelivery(store, client=client, poll_interval=0.05, base_delay=0.01)
    server = await serve(A2AApp(A2AServer(Scripted(), card(), store, push=push)))
    try:
        task = (await server.result("SendMessage", message("ask")))["task"]
        assert isinstance(task, dict)
        bad = {"taskId": task["id"], "url": "http://[fec0::1]/"}
        refused = await server.call("CreateTaskPushNotificationConfig", bad)
        error = refused["error"]
        assert isinstance(error, dict)
        assert error["code"] == -32602
        assert "fec0::1 is in fec0::/10 (Site-Local (deprecated))" in json.dumps(error)
        good = {"taskId": task["id"], "url": "http://93.184.216.34/hook"}
        await server.result("CreateTaskPushNotificationConfig", good)
        inline = {
            **message("more", taskId=str(task["id"])),
            "configuration": {"taskPushNotificationConfig": {"url": "http://[fec0::1]:8080/"}},
        }
        refused = await server.call("SendMessage", inline)
        assert isinstance(refused["error"], dict)
        assert refused["error"]["code"] == -32602
        await server.result("SendMessage", message("more", taskId=str(task["id"])))
        await store.wait_for("finish")
        listed = await server.result("ListTaskPushNotificationConfigs", {"taskId": task["id"]})
        assert [c["url"] for c in listed["configs"]] == [good["url"]]  # type: ignore[attr-defined]
    finally:
        await client.aclose()
    assert sent
    assert {str(r.url) for r in sent} == {good["url"]}
