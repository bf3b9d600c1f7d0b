"""The card's interface where the app was not told its URL: made from each request, so
the app works under plain `uvicorn`, mounted under a path, and bound to 0.0.0.0."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount

from interlink.a2a import A2AApp, A2AClient, TenantRouter, create_app, with_interface
from interlink.a2a import types as t
from interlink.a2a.server._card_serve import VARIANTS, PublishedCard
from tests.a2a.agents import Scripted, card
from tests.cli.a2a_harness import free_port

pytestmark = pytest.mark.any_loop

ROOT = Path(__file__).resolve().parents[2]
CARD = ".well-known/agent-card.json"
APP = """
from interlink.a2a import create_app
from tests.a2a.agents import Scripted, card
from tests.cli.a2a_harness import free_port

app = create_app(Scripted(), card())
"""


async def card_at(url: str) -> httpx.Response:
    """The card once the server answers (it is starting in another process)."""
    async with httpx.AsyncClient() as http, asyncio.timeout(30):
        while True:
            try:
                return await http.get(url + CARD)
            except httpx.TransportError:
                await asyncio.sleep(0.1)  # not listening yet: nothing to wait on but time


ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}


@asynccontextmanager
async def process(*cmd: str, cwd: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    proc = await asyncio.create_subprocess_exec(
        *cmd, cwd=cwd, env=ENV, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.terminate()
        try:
            async with asyncio.timeout(15):
                await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def talk(url: str) -> None:
    """Our client finds the agent by its card and gets an answer, also streamed."""
    async with await A2AClient.connect(url) as client:
        assert client.url == url
        task = await client.send_message("echo hello")
        assert isinstance(task, t.Task)
        assert task.status.state == t.TaskState.TASK_STATE_COMPLETED
        assert task.artifacts[0].parts[0].text == "hello"
        events = [event async for event in client.stream_message("echo streamed")]
        assert events


@pytest.mark.parametrize("http", ["h11", "httptools"])
async def test_plain_uvicorn(tmp_path: Path, http: str) -> None:
    (tmp_path / "agent_app.py").write_text(APP)
    port = free_port()
    cmd = [sys.executable, "-m", "uvicorn", "agent_app:app", "--port", str(port)]
    async with process(*cmd, "--http", http, "--log-level", "warning", cwd=tmp_path):
        url = f"http://127.0.0.1:{port}/"
        answer = await card_at(url)
        interfaces = answer.json()["supportedInterfaces"]
        assert interfaces == [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url.rstrip("/"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        ]
        assert answer.headers["vary"] == "Host, A2A-Version"
        await talk(url)
        # the name the client used is the one the card gives back
        async with httpx.AsyncClient() as http_client:
            named = await http_client.get(f"http://localhost:{port}/{CARD}")
        assert named.json()["supportedInterfaces"][0]["url"] == f"http://localhost:{port}/"


async def test_serve_on_all_interfaces_never_advertises_them(tmp_path: Path) -> None:
    (tmp_path / "agent_app.py").write_text(APP)
    port = free_port()
    cli = [sys.executable, "-m", "interlink", "a2a", "serve", "agent_app:app"]
    args = ["--host", "0.0.0.0", "--port", str(port), "--store", "memory:"]
    async with process(*cli, *args, "--log-level", "warning", cwd=tmp_path):
        url = f"http://127.0.0.1:{port}/"
        answer = await card_at(url)
        assert answer.json()["supportedInterfaces"][0]["url"] == url
        async with httpx.AsyncClient() as http:
            for host in (f"0.0.0.0:{port}", "0.0.0.0"):
                asked = await http.get(url + CARD, headers={"Host": host})
                advertised = asked.json()["supportedInterfaces"][0]["url"]
                assert "0.0.0.0" not in advertised
                assert advertised.startswith("http://127.0.0.1")
        await talk(url)


async def test_serve_public_url(tmp_path: Path) -> None:
    (tmp_path / "agent_app.py").write_text(APP)
    port = free_port()
    cli = [sys.executable, "-m", "interlink", "a2a", "serve", "agent_app:app"]
    public = "https://agents.example.org/shout/"
    args = ["--port", str(port), "--store", "memory:", "--public-url", public]
    async with process(*cli, *args, "--log-level", "warning", cwd=tmp_path):
        answer = await card_at(f"http://127.0.0.1:{port}/")
        assert answer.json()["supportedInterfaces"][0]["url"] == public
        assert answer.headers["vary"] == "A2A-Version"  # one card for every host
    bad = await asyncio.create_subprocess_exec(
        *cli, "--public-url", "ftp://x/", cwd=tmp_path, env=ENV, stderr=asyncio.subprocess.PIPE
    )
    async with asyncio.timeout(30):
        _, stderr = await bad.communicate()
    assert bad.returncode == 2
    assert b"not an http:// or https:// URL" in stderr


@asynccontextmanager
async def serving(app: object) -> AsyncIterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))  # type: ignore[arg-type]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
                await asyncio.sleep(0.01)
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        async with asyncio.timeout(20):
            await task


async def test_mounted_in_starlette_under_a_path() -> None:
    agent = create_app(Scripted(), card())
    host = Starlette(routes=[Mount("/agents/x", app=agent)], lifespan=lambda _: agent.lifespan())
    async with serving(host) as port:
        url = f"http://127.0.0.1:{port}/agents/x/"
        async with httpx.AsyncClient() as http:
            answer = await http.get(url + CARD)
        assert answer.json()["supportedInterfaces"][0]["url"] == url
        await talk(url)


# -- the Host header is the client's: checked, bounded, cached per variant ----------------


def scope(host: str | None, *, root: str = "", scheme: str = "http") -> dict[str, object]:
    headers = [] if host is None else [(b"host", host.encode("latin-1"))]
    return {
        "type": "http",
        "scheme": scheme,
        "root_path": root,
        "server": ("127.0.0.1", 9999),
        "headers": headers,
    }


def headers_of(s: dict[str, object], **more: str) -> dict[str, str]:
    """The request's headers, asking for the 1.0 card (see `test_compat_v03_serving` for
    the card a 0.3 client gets)."""
    raw = s["headers"]
    assert isinstance(raw, list)
    return {"a2a-version": "1.0", **{k.decode(): v.decode("latin-1") for k, v in raw}, **more}


def published() -> PublishedCard:
    return PublishedCard(card(), "/")


@pytest.mark.parametrize(
    "host",
    [
        'evil.example/"><script>',
        "user@host",
        "host:99999",
        "host:0",
        "host/path",
        "a b",
        "host:80:80",
        "x" * 300,
        "[::1",
        "host?x=1",
        "host#frag",
    ],
)
def test_a_host_that_is_no_host_port_is_refused(host: str) -> None:
    s = scope(host)
    status, _, body = published().response(s, headers_of(s))
    assert status == 400
    assert b"Host" in body


@pytest.mark.parametrize(
    ("host", "root", "scheme", "url"),
    [
        ("agents.example.org", "", "https", "https://agents.example.org/"),
        ("Agents.Example.org:8443", "/a2a", "https", "https://agents.example.org:8443/a2a/"),
        ("[::1]:9000", "", "http", "http://[::1]:9000/"),
        ("[::]:9000", "", "http", "http://[::1]:9000/"),
        (None, "", "http", "http://127.0.0.1:9999/"),  # HTTP/1.0: the socket's address
        ("h", '/a b/"x"', "http", "http://h/a%20b/%22x%22/"),  # a mount path, quoted
        ("h", "/x/", "ws", "http://h/x/"),
    ],
)
def test_the_interface_comes_from_the_request(
    host: str | None, root: str, scheme: str, url: str
) -> None:
    s = scope(host, root=root, scheme=scheme)
    status, _, body = published().response(s, headers_of(s))
    assert status == 200
    assert url.encode() in body
    assert body.count(b'"url"') == 1


def test_each_variant_has_its_own_etag_and_answers_conditional_gets() -> None:
    card_ = published()
    a, b = scope("a.example"), scope("b.example")
    status_a, headers_a, _ = card_.response(a, headers_of(a))
    status_b, headers_b, _ = card_.response(b, headers_of(b))
    etag_a, etag_b = dict(headers_a)[b"etag"], dict(headers_b)[b"etag"]
    assert (status_a, status_b) == (200, 200)
    assert etag_a != etag_b
    assert dict(headers_a)[b"vary"] == b"Host, A2A-Version"
    same = card_.response(a, headers_of(a, **{"if-none-match": etag_a.decode()}))
    assert same[0] == 304
    assert dict(same[1])[b"vary"] == b"Host, A2A-Version"
    assert same[2] == b""
    other = card_.response(b, headers_of(b, **{"if-none-match": etag_a.decode()}))
    assert other[0] == 200  # another host's tag is not this card's


def test_the_cache_of_variants_is_bounded() -> None:
    card_ = published()
    for i in range(VARIANTS * 4):
        s = scope(f"host{i}.example")
        assert card_.response(s, headers_of(s))[0] == 200
    assert len(card_._variants) == VARIANTS
    s = scope("host0.example")  # evicted long ago: made again, the same
    assert b"http://host0.example/" in card_.response(s, headers_of(s))[2]


def test_a_card_that_lists_its_interfaces_is_served_as_it_is() -> None:
    fixed = with_interface(card(), "https://public.example/agent/")
    card_ = PublishedCard(fixed, "/")
    tags = set()
    for host in ("a.example", "b.example", "[bad"):
        s = scope(host)
        status, headers, body = card_.response(s, headers_of(s))
        assert status == 200
        assert b"https://public.example/agent/" in body
        assert dict(headers)[b"vary"] == b"A2A-Version"  # (not Host)
        tags.add(dict(headers)[b"etag"])
    assert len(tags) == 1


async def test_the_app_answers_400_to_a_bad_host_and_keeps_serving() -> None:
    app: A2AApp = create_app(Scripted(), card())
    async with serving(app) as port:
        url = f"http://127.0.0.1:{port}/"
        async with httpx.AsyncClient() as http:
            bad = await http.get(url + CARD, headers={"Host": "evil/x"})
            assert bad.status_code == 400
            good = await http.get(url + CARD)
            assert good.status_code == 200
        await talk(url)


async def test_each_tenant_advertises_its_own_path() -> None:
    router = TenantRouter({"acme": create_app(Scripted(), card())})
    async with serving(router) as port:
        url = f"http://127.0.0.1:{port}/acme/"
        async with httpx.AsyncClient() as http:
            answer = await http.get(url + CARD)
        assert answer.json()["supportedInterfaces"][0]["url"] == url
        await talk(url)
