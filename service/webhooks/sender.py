"""One HTTP POST to a webhook, bounded and guarded.

The client follows no redirects (a 3xx is a failure), ignores proxy variables, keeps no
cookies, resolves every connection afresh through the guarded resolver (no DNS cache,
no kept-alive connections to reuse an old answer), reads at most 64 KiB of a response
and gives up after WEBHOOK_TIMEOUT_SECONDS, the URL check and the connection included.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

import aiohttp

from service.base.crypto import DecryptionError, Encryptor
from service.settings.options import Settings
from service.webhooks.envelope import SealedSecrets, signed_request
from service.webhooks.urlguard import DnsLookup, SystemDns, UnsafeUrl, UrlGuard

MAX_RESPONSE_BYTES = 64 * 1024
MAX_ERROR_LENGTH = 500
SocketFactory = Callable[[tuple[Any, ...]], socket.socket]


@dataclass(frozen=True, slots=True)
class WebhookNetwork:
    """How webhook traffic reaches the network: tests swap in a stub DNS and a socket
    factory that records (and refuses) connections."""

    dns: DnsLookup = field(default_factory=SystemDns)
    socket_factory: SocketFactory | None = None


@dataclass(frozen=True, slots=True)
class AttemptResult:
    success: bool
    # The status the target answered, 0 when there was no response.
    response_code: int
    error: str | None
    duration_ms: float
    # What went wrong, for logs (which never carry URLs or error texts): ok, http,
    # unsafe (the URL guard refused the target; nothing was sent), timeout, dns,
    # connection or client.
    kind: str = "ok"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_ERROR_LENGTH else text[: MAX_ERROR_LENGTH - 1] + "…"


class WebhookSender:
    def __init__(self, settings: Settings, network: WebhookNetwork | None = None) -> None:
        self.network = network or WebhookNetwork()
        self.timeout = settings.webhook_timeout_seconds
        self.guard = UrlGuard(
            self.network.dns,
            allow_http=settings.webhook_allow_http,
            allowed=settings.webhook_allowed_private_cidrs,
            timeout=settings.webhook_timeout_seconds,
        )
        self._session: aiohttp.ClientSession | None = None

    def _new_session(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            resolver=self.guard.resolver(),
            use_dns_cache=False,
            force_close=True,
            limit=0,  # the workers' concurrency cap is the limit
            socket_factory=self.network.socket_factory,
        )
        return aiohttp.ClientSession(
            connector=connector,
            trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=self.timeout),
        )

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def send_signed(
        self,
        encryptor: Encryptor,
        url: str,
        sealed: SealedSecrets,
        body: bytes,
        *,
        delivery_id: UUID,
        event_type: str,
        now: datetime,
    ) -> AttemptResult:
        """Sign `body` with the webhook's secrets (envelope.py) and post it; a secret the
        configured keys cannot open is a failed attempt of its own kind, not an error."""
        try:
            headers = signed_request(
                encryptor,
                sealed,
                delivery_id=delivery_id,
                event_type=event_type,
                body=body,
                now=now,
            )
        except DecryptionError:
            return AttemptResult(
                False, 0, "the webhook secret cannot be decrypted with the configured keys",
                0.0, "secret",
            )  # fmt: skip
        return await self.post(url, body, headers)

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> AttemptResult:
        """POST body to url; never raises for anything the target or the network does."""
        if self._session is None or self._session.closed:
            self._session = self._new_session()
        session = self._session
        started = time.perf_counter()

        def result(code: int, error: str | None, kind: str) -> AttemptResult:
            elapsed = round((time.perf_counter() - started) * 1000, 2)
            success = error is None and 200 <= code < 300
            return AttemptResult(success, code, None if success else error, elapsed, kind)

        try:
            async with asyncio.timeout(self.timeout):
                target = self.guard.parse(url)
                async with session.post(
                    target.url, data=body, headers=dict(headers), allow_redirects=False
                ) as response:
                    await _drain(response.content)
                    code = response.status
        except UnsafeUrl as exc:
            return result(0, _short(f"unsafe URL: {exc}"), "unsafe")
        except TimeoutError:
            return result(0, f"timed out after {self.timeout:g} s", "timeout")
        except aiohttp.ClientConnectorDNSError as exc:
            if isinstance(exc.os_error, UnsafeUrl):
                return result(0, _short(f"unsafe URL: {exc.os_error}"), "unsafe")
            return result(0, _short(f"DNS lookup failed: {exc.os_error}"), "dns")
        except aiohttp.ClientConnectorError as exc:
            return result(0, _short(f"connection failed: {exc.os_error}"), "connection")
        except aiohttp.ClientError as exc:
            return result(0, _short(f"{type(exc).__name__}: {exc}"), "client")
        except OSError as exc:
            return result(0, _short(f"connection failed: {exc}"), "connection")
        if 300 <= code < 400:
            return result(code, f"HTTP {code}: redirects are not followed", "http")
        if 200 <= code < 300:
            return result(code, None, "ok")
        return result(code, f"HTTP {code}", "http")


async def _drain(content: aiohttp.StreamReader) -> None:
    """Read (and drop) at most 64 KiB of the response body."""
    remaining = MAX_RESPONSE_BYTES
    while remaining > 0:
        chunk = await content.read(min(remaining, 16 * 1024))
        if not chunk:
            return
        remaining -= len(chunk)
