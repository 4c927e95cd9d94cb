"""Which IP addresses a webhook may reach: an explicit list, never ipaddress.is_global.

`ipaddress.is_private` / `is_global` changed between Python versions, so the blocked
networks are listed here. IPv4 embedded in IPv6 (mapped, translated, compatible, 6to4,
Teredo, NAT64) is unwrapped and judged as IPv4 too, so `::ffff:127.0.0.1`,
`::ffff:0:7f00:1` or `2002:a9fe:a9fe::` cannot smuggle a blocked address past the check.

A reason names the kind of address, never the address: for a host name the answer is
what its DNS says, and a refusal must not tell the caller what internal names resolve to.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Cloud metadata endpoints: refused even inside WEBHOOK_ALLOWED_PRIVATE_CIDRS.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, ...
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
    )
)

_V4_BLOCKED: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "unspecified ('this network')"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared address space (carrier-grade NAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
)
_V6_BLOCKED: tuple[tuple[str, str], ...] = (
    # ::/96 holds ::, ::1 and the deprecated IPv4-compatible form.
    ("::/96", "unspecified, loopback or IPv4-compatible"),
    ("64:ff9b:1::/48", "local-use NAT64"),
    ("100::/64", "discard-only"),
    ("2001:db8::/32", "documentation"),
    ("3fff::/20", "documentation"),
    ("fc00::/7", "unique-local"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
)
_BLOCKED: tuple[tuple[IPNetwork, str], ...] = tuple(
    (ipaddress.ip_network(net), reason) for net, reason in (*_V4_BLOCKED, *_V6_BLOCKED)
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215: the IPv4 is the last 32 bits
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # RFC 2765 IPv4-translated
_IETF_V6 = ipaddress.IPv6Network("2001::/23")  # special purpose; Teredo is judged apart
_TEREDO = ipaddress.IPv6Network("2001::/32")


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address carries (mapped, translated, 6to4, Teredo, NAT64)."""
    found: list[ipaddress.IPv4Address] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    if address in _NAT64 or address in _NAT64_LOCAL or address in _TRANSLATED:
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


def _strip_scope(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        return ipaddress.IPv6Address(str(address).split("%", 1)[0])
    return address


def blocked_reason(address: IPAddress, allowed: Sequence[IPNetwork] = ()) -> str | None:
    """Why a webhook must not connect to this address, or None when it may.

    `allowed` (WEBHOOK_ALLOWED_PRIVATE_CIDRS) exempts private ranges for tests and
    development; cloud metadata addresses stay blocked whatever it says.
    """
    address = _strip_scope(address)
    if isinstance(address, ipaddress.IPv6Address):
        for inner in embedded_ipv4(address):
            reason = blocked_reason(inner, allowed)
            if reason is not None:
                return f"an IPv6 form that embeds {reason}"
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if any(address in net for net in allowed if net.version == address.version):
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return None  # judged above through the IPv4 address it maps to
    for net, reason in _BLOCKED:
        if net.version == address.version and address in net:
            return f"a {reason} address"
    if (
        isinstance(address, ipaddress.IPv6Address)
        and address in _IETF_V6
        and address not in _TEREDO
    ):
        return "an IETF special-purpose address"
    return None
