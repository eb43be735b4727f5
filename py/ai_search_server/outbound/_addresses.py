"""Which resolved addresses an outbound call may connect to.

The check runs on *addresses*, after resolution, never on the URL's text: ``socket.getaddrinfo``
turns ``2130706433``, ``0x7f.1``, ``0177.0.0.1`` and ``127.1`` into 127.0.0.1 while
``ipaddress.ip_address`` rejects those strings, so a text check would let them through. Numeric hosts
are normalised here the way browsers and ``inet_aton`` read them (WHATWG URL IPv4 parser) and never
sent to the resolver; names go to the resolver, and *every* answer must pass.

The ranges are our own table rather than only ``ipaddress``'s ``is_global``: those tables moved between
CPython releases (python/cpython#113171, CVE-2024-4032), and 100.64.0.0/10 or NAT64 forms such as
``64:ff9b::7f00:1`` need rules of their own. ``is_global`` stays as the catch-all behind the table.
IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4) are judged by that IPv4
address.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import NamedTuple

import anyio

from ai_search_server.outbound._errors import OutboundRefused
from ai_search_server.outbound._policy import IPNetwork, OutboundPolicy, normalise_host

__all__ = [
    "METADATA_ADDRESSES",
    "AddressClass",
    "IPAddress",
    "Resolver",
    "check_addresses",
    "classify_address",
    "parse_ip_literal",
    "system_resolve",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# (host, port) -> the addresses to check and then connect to, in preference order.
Resolver = Callable[[str, int], Awaitable[Sequence[IPAddress]]]


class AddressClass(NamedTuple):
    reason: str
    # True when OutboundPolicy.allow_private opens it (a LAN or same-machine upstream).
    private: bool


# Cloud instance-metadata endpoints (AWS/GCP/Azure/OpenStack, AWS IPv6, Alibaba). Only an explicit
# allow-list entry opens them: 100.100.100.200 sits in CGNAT, which allow_private would open.
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)
_METADATA = AddressClass("cloud metadata", private=False)

_RANGES: tuple[tuple[IPNetwork, AddressClass], ...] = tuple(
    (ipaddress.ip_network(net), AddressClass(reason, private))
    for net, reason, private in (
        ("0.0.0.0/8", "unspecified ('this network')", False),
        ("10.0.0.0/8", "private", True),
        ("100.64.0.0/10", "shared (CGNAT)", True),
        ("127.0.0.0/8", "loopback", True),
        ("169.254.0.0/16", "link-local", False),
        ("172.16.0.0/12", "private", True),
        ("192.0.0.0/24", "IETF protocol assignment", False),
        ("192.0.2.0/24", "documentation", False),
        ("192.88.99.0/24", "6to4 relay anycast", False),
        ("192.168.0.0/16", "private", True),
        ("198.18.0.0/15", "benchmarking", False),
        ("198.51.100.0/24", "documentation", False),
        ("203.0.113.0/24", "documentation", False),
        ("224.0.0.0/4", "multicast", False),
        ("240.0.0.0/4", "reserved or broadcast", False),
        ("::/128", "unspecified", False),
        ("::1/128", "loopback", True),
        ("64:ff9b:1::/48", "local-use NAT64", False),
        ("100::/64", "discard-only", False),
        ("2001::/32", "Teredo tunnel", False),
        ("2001:db8::/32", "documentation", False),
        ("2001::/23", "IETF protocol assignment", False),
        ("3fff::/20", "documentation", False),
        ("5f00::/16", "segment-routing", False),
        ("fc00::/7", "unique-local (private)", True),
        ("fe80::/10", "link-local", False),
        ("fec0::/10", "site-local", False),
        ("ff00::/8", "multicast", False),
    )
)
_NOT_GLOBAL = AddressClass("non-global", private=False)

# IPv6 prefixes whose last 32 bits are an IPv4 address the packet ends up at.
_IPV4_CARRIERS = tuple(
    ipaddress.IPv6Network(net)
    for net in ("::ffff:0:0/96", "::/96", "64:ff9b::/96", "::ffff:0:0:0/96")  # mapped, compat, NAT64, SIIT
)


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (mapped, compatible, NAT64, SIIT, 6to4), if any."""
    if isinstance(address, ipaddress.IPv4Address) or int(address) <= 1:  # :: and ::1 are themselves
        return None
    if address.sixtofour is not None:
        return address.sixtofour
    if any(address in net for net in _IPV4_CARRIERS):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def classify_address(address: IPAddress) -> AddressClass | None:
    """Why ``address`` is not a public destination, or None when it is globally reachable."""
    address = _without_scope(address)
    if address in METADATA_ADDRESSES:
        return _METADATA
    inner = embedded_ipv4(address)
    if inner is not None:
        found = classify_address(inner)
        return None if found is None else AddressClass(f"{found.reason} (IPv4 in IPv6)", found.private)
    for network, found in _RANGES:
        if address.version == network.version and address in network:
            return found
    return None if address.is_global else _NOT_GLOBAL


def check_addresses(host: str, addresses: Sequence[IPAddress], policy: OutboundPolicy) -> None:
    """Refuse unless every address is public or allowed: one bad answer refuses the host.

    Raises:
        OutboundRefused: an address is non-global and neither it nor the host is allow-listed.
    """
    if policy.host_allowed(host):
        return
    for address in addresses:
        plain = _without_scope(address)
        inner = embedded_ipv4(plain)
        if policy.address_allowed(plain) or (inner is not None and policy.address_allowed(inner)):
            continue
        found = classify_address(plain)
        if found is None or (found.private and policy.allow_private):
            continue
        named = f"{host} is" if normalise_host(host) == str(plain) else f"{host} resolves to {plain},"
        raise OutboundRefused(
            f"outbound destination refused: {named} a {found.reason} address; "
            "list it in the outbound allow-list if this upstream is meant to be reached"
        )


def _without_scope(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        return ipaddress.IPv6Address(int(address))
    return address


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address a numeric host denotes, or None for a name to resolve.

    IPv4 follows the WHATWG URL parser (what browsers and ``inet_aton`` accept): one to four parts,
    each decimal, octal (leading ``0``) or hex (``0x``), the last one filling the remaining bytes,
    so ``2130706433``, ``0x7f000001``, ``127.1`` and ``0177.0.0.1`` all give 127.0.0.1. A host whose
    last label is a number but which does not parse is refused, not resolved.

    Raises:
        OutboundRefused: a numeric-looking host that is not a valid address.
    """
    text = normalise_host(host)
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text)
        except ValueError:
            raise OutboundRefused(
                f"outbound destination refused: {host!r} is not a valid IPv6 address"
            ) from None
    parts = text.split(".")
    if _ipv4_number(parts[-1]) is None:
        return None
    numbers = [_ipv4_number(part) for part in parts]
    valid = [n for n in numbers if n is not None]
    if len(parts) > 4 or len(valid) != len(parts) or any(n > 255 for n in valid[:-1]):
        raise OutboundRefused(f"outbound destination refused: {host!r} is not a valid IPv4 address")
    if valid[-1] >= 256 ** (5 - len(valid)):
        raise OutboundRefused(f"outbound destination refused: {host!r} is not a valid IPv4 address")
    value = valid[-1]
    for index, number in enumerate(valid[:-1]):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _ipv4_number(part: str) -> int | None:
    """One WHATWG IPv4 part: ``0x1f`` hex, ``017`` octal, ``17`` decimal; None if not a number."""
    if part[:2] in ("0x", "0X"):
        digits, base = part[2:], 16
        if digits == "":
            return 0
    elif len(part) > 1 and part.startswith("0"):
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    if not digits or not all(ch in "0123456789abcdef"[:base] for ch in digits.lower()):
        return None
    return int(digits, base)


async def system_resolve(host: str, port: int) -> list[IPAddress]:
    """Resolve with the system resolver (``getaddrinfo`` in a worker thread), order kept, duplicates dropped.

    Raises:
        OSError: resolution failed (``socket.gaierror``).
    """
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: dict[IPAddress, None] = {}
    for _family, _type, _proto, _name, sockaddr in infos:
        found[ipaddress.ip_address(sockaddr[0])] = None
    return list(found)
