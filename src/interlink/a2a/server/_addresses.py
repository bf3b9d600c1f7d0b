"""Which IP addresses a webhook may have: the IANA special-purpose registries as data.

`refusal(address)` says why an address is not globally reachable, or None when it is.
The verdict comes from the most specific block that holds the address (192.0.0.9/32 is
reachable inside the unreachable 192.0.0.0/24), from these tables and nothing else:
Python's `ipaddress` flags (`is_private`, `is_global`) change between versions and miss
blocks (`fec0::/10`).

- `IPV4` and `IPV6`: every row of the IANA IPv4 and IPv6 Special-Purpose Address
  Registries (iana-ipv4-special-registry, iana-ipv6-special-registry, as updated in
  2025) with its "Globally Reachable" column. Only True is reachable; False, N/A and
  the blank of a terminated row are not.
- `EXTRA`: blocks those registries leave to others: IPv4 multicast, IPv6 multicast,
  deprecated site-local `fec0::/10` (RFC 3879) and IPv4-compatible `::/96` (RFC 4291).
- IPv6 outside `2000::/3` (the only space IANA allocates for global unicast) and in no
  reachable block is refused.
- A block that carries an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64
  `64:ff9b::/96`, 6to4 `2002::/16`) is judged by that IPv4 address: it is where the
  packets go. The local-use NAT64 prefix `64:ff9b:1::/48` says nowhere which bits hold
  the IPv4 address (that depends on the network's prefix length): refused, as listed.

Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
from typing import Final, NamedTuple, TypeAlias

__all__ = ["EXTRA", "IPV4", "IPV6", "Block", "refusal"]

IP: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
Network: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network


class Block(NamedTuple):
    network: Network
    name: str
    reachable: bool | None
    """The registry's "Globally Reachable": None where it says N/A or nothing."""
    ipv4_at: int | None = None
    """For a block whose addresses carry an IPv4 address: how many bits above the
    lowest that address starts. Such addresses are judged by the IPv4 address."""


def _rows(table: str) -> tuple[Block, ...]:
    """`block | name | True/False/N/A [| ipv4 bit offset]` lines -> blocks."""
    blocks = []
    for line in table.strip().splitlines():
        network, name, reachable, *embeds = (cell.strip() for cell in line.split("|"))
        verdict = {"True": True, "False": False, "N/A": None}[reachable]
        offset = int(embeds[0]) if embeds else None
        blocks.append(Block(ipaddress.ip_network(network), name, verdict, offset))
    return tuple(blocks)


IPV4: Final = _rows("""
0.0.0.0/8          | "This network"                           | False
0.0.0.0/32         | "This host on this network"              | False
10.0.0.0/8         | Private-Use                              | False
100.64.0.0/10      | Shared Address Space                     | False
127.0.0.0/8        | Loopback                                 | False
169.254.0.0/16     | Link Local                               | False
172.16.0.0/12      | Private-Use                              | False
192.0.0.0/24       | IETF Protocol Assignments                | False
192.0.0.0/29       | IPv4 Service Continuity Prefix           | False
192.0.0.8/32       | IPv4 dummy address                       | False
192.0.0.9/32       | Port Control Protocol Anycast            | True
192.0.0.10/32      | Traversal Using Relays around NAT Anycast | True
192.0.0.170/32     | NAT64/DNS64 Discovery                    | False
192.0.0.171/32     | NAT64/DNS64 Discovery                    | False
192.0.2.0/24       | Documentation (TEST-NET-1)               | False
192.31.196.0/24    | AS112-v4                                 | True
192.52.193.0/24    | AMT                                      | True
192.88.99.0/24     | Deprecated (6to4 Relay Anycast)          | N/A
192.88.99.2/32     | 6a44-relay anycast address               | False
192.168.0.0/16     | Private-Use                              | False
192.175.48.0/24    | Direct Delegation AS112 Service          | True
198.18.0.0/15      | Benchmarking                             | False
198.51.100.0/24    | Documentation (TEST-NET-2)               | False
203.0.113.0/24     | Documentation (TEST-NET-3)               | False
240.0.0.0/4        | Reserved                                 | False
255.255.255.255/32 | Limited Broadcast                        | False
""")
"""The IANA IPv4 Special-Purpose Address Registry."""

IPV6: Final = _rows("""
::1/128            | Loopback Address                         | False
::/128             | Unspecified Address                      | False
::ffff:0:0/96      | IPv4-mapped Address                      | False | 0
64:ff9b::/96       | IPv4-IPv6 Translat.                      | True  | 0
64:ff9b:1::/48     | IPv4-IPv6 Translat. (local use)          | False
100::/64           | Discard-Only Address Block               | False
100:0:0:1::/64     | Dummy IPv6 Prefix                        | False
2001::/23          | IETF Protocol Assignments                | False
2001::/32          | TEREDO                                   | N/A
2001:1::1/128      | Port Control Protocol Anycast            | True
2001:1::2/128      | Traversal Using Relays around NAT Anycast | True
2001:1::3/128      | DNS-SD Service Registration Protocol Anycast | True
2001:2::/48        | Benchmarking                             | False
2001:3::/32        | AMT                                      | True
2001:4:112::/48    | AS112-v6                                 | True
2001:10::/28       | Deprecated (previously ORCHID)           | N/A
2001:20::/28       | ORCHIDv2                                 | True
2001:30::/28       | Drone Remote ID Protocol Entity Tags (DETs) Prefix | True
2001:db8::/32      | Documentation                            | False
2002::/16          | 6to4                                     | N/A   | 80
2620:4f:8000::/48  | Direct Delegation AS112 Service          | True
3fff::/20          | Documentation                            | False
5f00::/16          | Segment Routing (SRv6) SIDs              | False
fc00::/7           | Unique-Local                             | False
fe80::/10          | Link-Local Unicast                       | False
""")
"""The IANA IPv6 Special-Purpose Address Registry. The 6to4 row's N/A is the 6to4
relay's; the packets go to the IPv4 address it carries, which is judged."""

EXTRA: Final = _rows("""
224.0.0.0/4        | Multicast                                | False
::/96              | IPv4-compatible (deprecated)             | False | 0
fec0::/10          | Site-Local (deprecated)                  | False
ff00::/8           | Multicast                                | False
""")
"""Blocks the special-purpose registries leave to others: the IPv4 Multicast Address
Space registry, RFC 4291 (IPv4-compatible, multicast) and RFC 3879 (site-local)."""

_GLOBAL_UNICAST: Final = ipaddress.IPv6Network("2000::/3")

# Most specific first: the first block that holds an address is its verdict.
_BY_LENGTH: Final = {
    version: sorted(
        (b for b in (*IPV4, *IPV6, *EXTRA) if b.network.version == version),
        key=lambda b: -b.network.prefixlen,
    )
    for version in (4, 6)
}


def _block(address: IP) -> Block | None:
    return next((b for b in _BY_LENGTH[address.version] if address in b.network), None)


def refusal(address: IP) -> str | None:
    """Why `address` is not globally reachable ("in 127.0.0.0/8 (Loopback): not globally
    reachable"), None when it is."""
    block = _block(address)
    if block is not None and block.ipv4_at is not None:
        carried = ipaddress.IPv4Address((int(address) >> block.ipv4_at) & 0xFFFFFFFF)
        why = refusal(carried)
        return None if why is None else f"{block.name} of {carried}, {why}"
    if block is not None:
        if block.reachable:
            return None
        return f"in {block.network} ({block.name}): not globally reachable"
    if isinstance(address, ipaddress.IPv6Address) and address not in _GLOBAL_UNICAST:
        return f"outside {_GLOBAL_UNICAST} (global unicast): not globally reachable"
    return None
