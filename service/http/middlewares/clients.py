"""The client's address: the peer, or behind TRUSTED_PROXIES what X-Forwarded-For says.

Each proxy appends the address it received the request from, so the list is only as
trustworthy as the hops that wrote it. Reading right to left, every address inside
TRUSTED_PROXIES is one of our own proxies; the first one outside is the client as our
outermost proxy saw it. Anything further left was written by the client and may be a
lie. When X-Forwarded-For comes from a peer that is not a trusted proxy it is ignored, so
a client cannot pick its own rate-limit bucket.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from service.settings.reader import IPNetwork


def _trusted(address: str, proxies: Sequence[IPNetwork]) -> bool:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(parsed in net for net in proxies if net.version == parsed.version)


def client_address(
    peer: str | None, forwarded_for: Sequence[str], proxies: Sequence[IPNetwork]
) -> str | None:
    """The address per-address limits and audit entries use."""
    if peer is None or not proxies or not _trusted(peer, proxies):
        return peer
    client = peer
    for header in reversed(forwarded_for):
        for hop in reversed(header.split(",")):
            hop = hop.strip()
            try:
                ipaddress.ip_address(hop)
            except ValueError:
                return client  # a hop no proxy of ours wrote: the last good one stands
            client = hop
            if not _trusted(hop, proxies):
                return client
    return client
