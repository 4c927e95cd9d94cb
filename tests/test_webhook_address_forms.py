"""Issue 16, items 7 and 14: every IPv6 form that embeds a forbidden IPv4 address is
refused, and a refusal says why without echoing the addresses a name resolves to."""

from __future__ import annotations

import ipaddress
import re

import pytest

from service.webhooks.addresses import blocked_reason
from service.webhooks.urlguard import UnsafeUrl, UrlGuard, parse_target
from tests.support.webhooks import StubDns

# (IPv6 form, the IPv4 address it embeds): each must be refused as that IPv4 would be.
EMBEDDING_FORMS = [
    ("::ffff:127.0.0.1", "127.0.0.1"),  # IPv4-mapped (refused before the issue too)
    ("::ffff:0:7f00:1", "127.0.0.1"),  # IPv4-translated (RFC 2765)
    ("::ffff:0:a00:1", "10.0.0.1"),
    ("::ffff:0:a9fe:a9fe", "169.254.169.254"),
    ("64:ff9b::7f00:1", "127.0.0.1"),  # NAT64 well-known prefix
    ("64:ff9b::c0a8:101", "192.168.1.1"),
    ("64:ff9b:1::7f00:1", "127.0.0.1"),  # local-use NAT64
    ("64:ff9b:1:ffff::a00:1", "10.0.0.1"),
    ("2002:7f00:1::", "127.0.0.1"),  # 6to4
    ("2002:a00:1:1::1", "10.0.0.1"),
    ("2002:a9fe:a9fe::", "169.254.169.254"),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1"),  # Teredo (client inverted)
    ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "10.0.0.1"),
    ("::7f00:1", "127.0.0.1"),  # IPv4-compatible (deprecated)
]


@pytest.mark.parametrize(("form", "inner"), EMBEDDING_FORMS)
def test_ipv6_forms_embedding_a_forbidden_ipv4_are_refused(form: str, inner: str) -> None:
    assert blocked_reason(ipaddress.ip_address(inner)) is not None
    assert blocked_reason(ipaddress.ip_address(form)) is not None, form
    with pytest.raises(UnsafeUrl, match="not allowed"):
        parse_target(f"https://[{form}]/hook", allow_http=False, allowed=())


@pytest.mark.parametrize(
    "form",
    [
        "::ffff:808:808",  # mapped 8.8.8.8
        "::ffff:0:808:808",  # translated 8.8.8.8
        "64:ff9b::808:808",  # NAT64 of 8.8.8.8
        "2002:808:808::1",  # 6to4 of 8.8.8.8
        "2606:4700:4700::1111",
    ],
)
def test_ipv6_forms_of_public_addresses_pass(form: str) -> None:
    assert blocked_reason(ipaddress.ip_address(form)) is None
    parse_target(f"https://[{form}]/hook", allow_http=False, allowed=())


@pytest.mark.parametrize(
    "answer",
    ["10.1.2.3", "192.168.77.5", "169.254.169.254", "::ffff:0:a01:203", "fd12:3456::7"],
)
async def test_refusals_of_resolved_names_name_no_address(answer: str) -> None:
    guard = UrlGuard(
        StubDns({"internal.example": ["93.184.216.34", answer]}),
        allow_http=False,
        allowed=(),
        timeout=1.0,
    )
    with pytest.raises(UnsafeUrl) as caught:
        await guard.check("https://internal.example/hook")
    message = str(caught.value)
    assert "internal.example" in message
    assert "resolves to an address webhooks may not reach" in message
    for text in {answer, str(ipaddress.ip_address(answer)), "93.184.216.34"}:
        assert text not in message
    # No fragment of an address either (dotted numbers, IPv6 groups).
    tail = message.split("internal.example", 1)[1]
    assert re.search(r"\d+\.\d+|[0-9a-f]{0,4}:[0-9a-f]{0,4}:", tail) is None, message
