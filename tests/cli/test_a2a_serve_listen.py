"""`interlink a2a serve --host NAME` listens on every address NAME resolves to, on one
port, as uvicorn (asyncio) did before serve bound its own socket: `localhost` that
resolves to `::1` and `127.0.0.1` (glibc gives `::1` first) is served on both."""

from __future__ import annotations

import errno
import socket
from collections.abc import Sequence

import pytest

from interlink.cli import _a2a_serve

pytestmark = pytest.mark.timeout(30)

_real_getaddrinfo = socket.getaddrinfo


def _both(host: object, port: object, *args: object, **kwargs: object) -> Sequence[object]:
    if host != "dual.test":
        return _real_getaddrinfo(host, port, *args, **kwargs)  # type: ignore[arg-type]
    stream = socket.SOCK_STREAM
    number = int(port)  # type: ignore[call-overload]
    return [
        (socket.AF_INET6, stream, 6, "", ("::1", number, 0, 0)),
        (socket.AF_INET, stream, 6, "", ("127.0.0.1", number)),
        (socket.AF_INET6, stream, 6, "", ("::1", number, 0, 0)),  # (getaddrinfo repeats)
    ]


@pytest.mark.parametrize("port", [0, None])
def test_a_name_with_several_addresses_is_served_on_each(
    monkeypatch: pytest.MonkeyPatch, port: int | None
) -> None:
    if port is None:  # a fixed port: one the OS just gave
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    monkeypatch.setattr(socket, "getaddrinfo", _both)
    listeners = _a2a_serve._listen("dual.test", port)
    try:
        bound = {s.getsockname()[:2] for s in listeners}
        ports = {address[1] for address in bound}
        assert len(ports) == 1, bound  # one port, also for --port 0
        (chosen,) = ports
        assert bound == {("::1", chosen), ("127.0.0.1", chosen)}
        for family, address in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            with socket.socket(family) as client:
                client.settimeout(10)
                client.connect((address, chosen))
    finally:
        for listener in listeners:
            listener.close()


def test_a_port_in_use_on_one_of_the_addresses_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        monkeypatch.setattr(socket, "getaddrinfo", _both)
        with pytest.raises(OSError, match="in use") as refused:
            _a2a_serve._listen("dual.test", port)
        assert refused.value.errno == errno.EADDRINUSE


def test_accepted_connections_send_at_once() -> None:
    """TCP_NODELAY on every accepted connection: a stream's events are not held back
    behind its headers until the client's delayed ACK (asyncio sets it itself only on
    sockets whose proto says TCP, which ours, from `create_server`, do not)."""
    listeners = _a2a_serve._listen("127.0.0.1", 0)
    try:
        with socket.create_connection(listeners[0].getsockname()[:2], timeout=5):
            accepted, _ = listeners[0].accept()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        for listener in listeners:
            listener.close()
