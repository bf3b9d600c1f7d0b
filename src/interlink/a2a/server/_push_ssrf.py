"""The SSRF guard of push delivery: which webhook URLs may be sent to, and where to.

`check_url` allows only http(s) URLs whose host is, or resolves to, globally reachable
addresses only (`_addresses.refusal`: the IANA special-purpose registries), unless the
host is allow-listed. It runs when a config is set and again before every attempt.
`target` is what an attempt sends to: the config's URL with its host replaced by the
address just checked (`Host` header and TLS SNI keep the name), so a DNS answer that
changes between check and connect (DNS rebinding) cannot reach a refused address.

A host is judged in the spelling the sender will use: httpx parses the URL (the parser
that sends is the parser that checks). What it leaves as a name, including the short
and numeric IPv4 forms (`127.1`, `2130706433`, `0x7f000001`), is resolved by the
system's resolver, as the connection would be, and the connection goes to the address
that came back and was judged. An IPv6 literal with a zone id (`[fe80::1%25eth0]`) is
refused: a scoped address is never a public one.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import Iterable
from typing import NamedTuple, TypeAlias

import httpx

from interlink.a2a.server._addresses import refusal

__all__ = ["AllowList", "Refused", "Target", "allow_list", "check_url", "target"]

AllowList: TypeAlias = frozenset[tuple[str, int | None]]
"""(normalized host, port) pairs; port None allows every port."""

_IP: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address


def allow_list(entries: Iterable[str]) -> AllowList:
    return frozenset(_split_host_port(entry.strip()) for entry in entries)


def _allows(allow: AllowList, host: str, port: int) -> bool:
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


class Refused(Exception):
    """The URL may not be used; `permanent` unless DNS failed (which may be transient)."""

    def __init__(self, reason: str, *, permanent: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent


class Target(NamedTuple):
    url: httpx.URL
    """What to connect to: the config's URL, its host replaced by a checked address."""
    headers: dict[str, str]
    """`Host` when the URL was pinned."""
    extensions: dict[str, object]
    """`sni_hostname` when an https URL was pinned."""


def _literal(host: str) -> _IP | None:
    """The address `host` spells as an IP literal (None: a name to resolve)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id is not None:
        raise Refused(f"{host} has a zone id: a scoped address is not globally reachable")
    return address


async def target(url: str, allow: AllowList) -> Target:
    """Check `url` and say where to connect; raises `Refused`. Resolves, never connects."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise Refused(f"invalid URL: {exc}") from exc
    if parsed.scheme not in ("http", "https"):
        raise Refused(f"scheme {parsed.scheme or '(none)'!r} is not http or https")
    if not parsed.host:
        raise Refused("the URL has no host")
    host = _normalize_host(parsed.host)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    if _allows(allow, host, port):
        return Target(parsed, {}, {})
    literal = _literal(host)
    addresses = [literal] if literal is not None else await _resolve(host, port)
    for address in addresses:
        why = refusal(address)
        if why is not None and not _allows(allow, str(address), port):
            if literal is not None:
                raise Refused(f"{host} is {why}")
            raise Refused(f"{host} resolves to {address}, {why}")
    pinned = str(addresses[0])
    if parsed.host == pinned:  # an IP literal in its one spelling: nothing to resolve
        return Target(parsed, {}, {})
    extensions: dict[str, object] = {"sni_hostname": host} if parsed.scheme == "https" else {}
    return Target(parsed.copy_with(host=pinned), {"Host": parsed.netloc.decode()}, extensions)


async def _resolve(host: str, port: int) -> list[_IP]:
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )
    except OSError as exc:
        raise Refused(f"cannot resolve {host}: {exc}", permanent=False) from exc
    # The scope id of an IPv6 link-local answer ("fe80::1%eth0") does not change the verdict.
    addresses = [ipaddress.ip_address(str(info[4][0]).partition("%")[0]) for info in infos]
    if not addresses:
        raise Refused(f"cannot resolve {host}: no addresses", permanent=False)
    return addresses


async def check_url(
    url: str, allow_hosts: Iterable[str] = (), *, unresolvable_ok: bool = False
) -> str | None:
    """Why `url` may not receive push notifications, or None when it may.

    Only http and https; the host must be or resolve to globally reachable addresses
    only (every address it resolves to is checked), unless the host, as written in the
    URL (name or IP literal), is in `allow_hosts`, alone or as `host:port`. An IP in
    `allow_hosts` also allows names that resolve to it. Resolves the name; never
    connects. `unresolvable_ok` accepts a name that does not resolve now (a config may
    name a host that exists later; every delivery checks again).
    """
    try:
        await target(url, allow_list(allow_hosts))
    except Refused as refused:
        if unresolvable_ok and not refused.permanent:
            return None
        return refused.reason
    return None
