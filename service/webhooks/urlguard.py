"""Server-side request forgery protection for webhook URLs (docs/api.md, Webhooks).

Every check runs at create, update, test and every delivery:
- the URL itself: https only (http with WEBHOOK_ALLOW_HTTP), no user:password@, a real
  host name or a canonical IP literal (legacy forms such as 127.1, 2130706433 or
  0x7f000001 are refused: they exist only to slip past filters), no metadata names;
- every address the name resolves to must be allowed (see addresses.py); a name that
  does not resolve is refused (fail closed).

At delivery, `GuardedResolver` is the HTTP client's resolver: it validates every answer
and the connection goes to the address that was checked, so a DNS answer that changes
between the check and the connection (rebinding) cannot redirect it. A literal IP never
reaches a resolver in aiohttp, which is why `parse_target` judges literals itself.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from service.webhooks.addresses import IPAddress, IPNetwork, blocked_reason

# Names that reach metadata services or the machine itself, whatever DNS answers.
BLOCKED_NAMES = frozenset(
    {
        "localhost",
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
BLOCKED_SUFFIXES = (".localhost",)
MAX_URL_LENGTH = 2048
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
# A label made only of digits, or 0x-hex: inet_aton would read the host as an address.
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")


class UnsafeUrl(OSError):
    """The URL or one of its addresses is not a safe webhook target; str() says why.

    An OSError, so that raised inside aiohttp's resolver it surfaces as a connection
    error of the attempt rather than escaping as something else.
    """


class DnsLookup(Protocol):
    """Resolves a host name to addresses; raises OSError when it cannot."""

    async def lookup(self, host: str) -> list[IPAddress]: ...


class SystemDns:
    """The operating system's resolver (getaddrinfo in a thread), as aiohttp's default."""

    async def lookup(self, host: str) -> list[IPAddress]:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(
            host, None, type=socket.SOCK_STREAM, flags=socket.AI_ADDRCONFIG
        )
        found: list[IPAddress] = []
        for family, _, _, _, sockaddr in infos:
            if family in (socket.AF_INET, socket.AF_INET6):
                address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
                if address not in found:
                    found.append(address)
        return found


@dataclass(frozen=True, slots=True)
class Target:
    """A syntactically acceptable URL: its host is either a literal address or a name."""

    url: URL
    host: str
    address: IPAddress | None

    @property
    def is_literal(self) -> bool:
        return self.address is not None


def parse_target(raw: str, *, allow_http: bool, allowed: Sequence[IPNetwork]) -> Target:
    """Check everything about a URL that needs no DNS; literal addresses are judged here."""
    if len(raw) > MAX_URL_LENGTH:
        raise UnsafeUrl(f"the URL is longer than {MAX_URL_LENGTH} characters")
    if any(ch.isspace() or ord(ch) < 0x20 or ch == "\x7f" for ch in raw):
        raise UnsafeUrl("the URL contains whitespace or control characters")
    try:
        url = URL(raw)
    except (ValueError, TypeError) as exc:
        raise UnsafeUrl(f"the URL cannot be parsed: {exc}") from None
    schemes = ("https", "http") if allow_http else ("https",)
    if url.scheme not in schemes:
        raise UnsafeUrl(
            "the URL must use https" if not allow_http else "the URL must use http or https"
        )
    if url.raw_user is not None or url.raw_password is not None or "@" in _raw_authority(raw):
        raise UnsafeUrl("the URL must not carry user:password@ credentials")
    if url.fragment:
        raise UnsafeUrl("the URL must not have a #fragment")
    host = (url.raw_host or "").lower()
    if not host:
        raise UnsafeUrl("the URL has no host")
    if url.port == 0:
        raise UnsafeUrl("the URL's port must be between 1 and 65535")
    address = _literal_address(host)
    if address is not None:
        reason = blocked_reason(address, allowed)
        if reason is not None:
            raise UnsafeUrl(f"the URL's address is not allowed: it is {reason}")
        return Target(url, host, address)
    name = host[:-1] if host.endswith(".") else host
    _check_name(name)
    return Target(url, name, None)


def _raw_authority(raw: str) -> str:
    # yarl drops an empty userinfo ("https://@host/"); judge the text as written.
    rest = raw.split("://", 1)[1] if "://" in raw else raw
    return re.split(r"[/?#\\]", rest, maxsplit=1)[0]


def _literal_address(host: str) -> IPAddress | None:
    if ":" in host:  # yarl gives IPv6 literals without brackets
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            raise UnsafeUrl("the URL's IPv6 address is malformed") from None
    try:
        return ipaddress.IPv4Address(host)
    except ValueError:
        pass
    labels = host.rstrip(".").split(".")
    if labels and _NUMERIC_LABEL.match(labels[-1]):
        # 127.1, 2130706433, 0x7f000001, 0177.0.0.1, 10.1: not canonical dotted quads.
        raise UnsafeUrl(
            f"the URL's host {host!r} is not a canonical IP address or a host name; "
            "write IPv4 addresses as four decimal numbers"
        )
    return None


def _check_name(name: str) -> None:
    labels = name.split(".")
    if len(name) > 253 or not all(_LABEL.match(label) for label in labels):
        raise UnsafeUrl(f"the URL's host {name!r} is not a valid host name")
    if name in BLOCKED_NAMES or name.endswith(BLOCKED_SUFFIXES):
        raise UnsafeUrl(f"the URL's host {name!r} is not allowed (local or cloud metadata)")


def judge_answers(
    host: str, addresses: Sequence[IPAddress], allowed: Sequence[IPNetwork]
) -> list[IPAddress]:
    """All answers for a name, each allowed; otherwise UnsafeUrl (fail closed)."""
    if not addresses:
        raise UnsafeUrl(f"the host {host!r} does not resolve")
    for address in addresses:
        reason = blocked_reason(address, allowed)
        if reason is not None:
            # The kind of address only: the answer itself would map internal names.
            raise UnsafeUrl(
                f"the host {host!r} resolves to an address webhooks may not reach ({reason})"
            )
    return list(addresses)


class UrlGuard:
    """The whole check of a URL before it is stored or tested: syntax, then DNS."""

    def __init__(
        self,
        dns: DnsLookup,
        *,
        allow_http: bool,
        allowed: Sequence[IPNetwork],
        timeout: float,
    ) -> None:
        self.dns = dns
        self.allow_http = allow_http
        self.allowed = tuple(allowed)
        self.timeout = timeout

    def parse(self, raw: str) -> Target:
        return parse_target(raw, allow_http=self.allow_http, allowed=self.allowed)

    async def resolve(self, host: str) -> list[IPAddress]:
        """Every address of a name, each judged; UnsafeUrl when any is blocked or none."""
        try:
            async with asyncio.timeout(self.timeout):
                answers = await self.dns.lookup(host)
        except TimeoutError:
            raise UnsafeUrl(f"resolving the host {host!r} timed out") from None
        except UnsafeUrl:
            raise
        except (OSError, UnicodeError):
            raise UnsafeUrl(f"the host {host!r} does not resolve") from None
        return judge_answers(host, answers, self.allowed)

    async def check(self, raw: str) -> Target:
        target = self.parse(raw)
        if not target.is_literal:
            await self.resolve(target.host)
        return target

    def resolver(self) -> GuardedResolver:
        return GuardedResolver(self)


class GuardedResolver(AbstractResolver):
    """aiohttp's resolver for deliveries: only checked addresses are ever returned."""

    def __init__(self, guard: UrlGuard) -> None:
        self.guard = guard

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        name = host.lower().rstrip(".")
        _check_name(name)
        addresses = await self.guard.resolve(name)
        results: list[ResolveResult] = []
        for address in addresses:
            fam = socket.AF_INET6 if address.version == 6 else socket.AF_INET
            if family not in (socket.AF_UNSPEC, fam):
                continue
            results.append(
                ResolveResult(
                    hostname=host,
                    host=str(address),
                    port=port,
                    family=fam,
                    proto=0,
                    flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
                )
            )
        if not results:
            raise UnsafeUrl(f"the host {name!r} has no address of the wanted family")
        return results

    async def close(self) -> None:
        return None
