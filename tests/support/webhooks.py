"""Webhook test helpers: a recording receiver on 127.0.0.1, receiver-side signature
checks, a stub DNS, a socket factory that records every connection, and polling."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import re
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web
from standardwebhooks import Webhook as StandardWebhook

from service.settings.options import Settings
from service.webhooks.addresses import IPAddress
from tests.conftest import base_env
from tests.support.api import get_json

ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def delivery_settings(dsn: str, data_dir: Any) -> Settings:
    """Deliveries to loopback receivers with a short backoff base and three attempts."""
    return Settings.from_env(
        base_env(
            dsn,
            data_dir,
            WEBHOOK_ALLOW_HTTP="true",
            WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32",
            WEBHOOK_RETRY_BASE_SECONDS="0.5",
            WEBHOOK_MAX_ATTEMPTS="3",
            WEBHOOK_TIMEOUT_SECONDS="2",
        )
    )


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    started: float
    finished: float = 0.0
    status: int = 0

    @property
    def delivery_id(self) -> str:
        return self.headers["X-Service-Delivery"]

    @property
    def json(self) -> Any:
        return orjson.loads(self.body)


# A behaviour answers a request: the status to send (after an optional delay).
Behaviour = Callable[[Received, int], Awaitable[int]]


async def always_ok(received: Received, seen: int) -> int:
    return 200


class Receiver:
    """An HTTP server on 127.0.0.1 that records every request it gets.

    `behaviour(received, seen)` decides the status; `seen` counts earlier requests
    with the same X-Service-Delivery.
    """

    def __init__(self, behaviour: Behaviour = always_ok, host: str = "127.0.0.1") -> None:
        self.behaviour = behaviour
        self.host = host
        self.requests: list[Received] = []
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/hook"

    async def start(self) -> Receiver:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)  # 0: any free port
        await site.start()
        server = site._server
        assert isinstance(server, asyncio.base_events.Server)
        self.port = server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        received = Received(dict(request.headers), await request.read(), time.monotonic())
        seen = sum(
            1
            for r in self.requests
            if r.headers.get("X-Service-Delivery") == received.headers.get("X-Service-Delivery")
        )
        self.requests.append(received)
        status = await self.behaviour(received, seen)
        received.finished = time.monotonic()
        received.status = status
        return web.Response(status=status, text="ok")

    def for_delivery(self, delivery_id: str) -> list[Received]:
        return [r for r in self.requests if r.headers.get("X-Service-Delivery") == delivery_id]


def verify_service_signature(secret: str, received: Received) -> bool:
    """What a receiver does with X-Service-Signature: recompute, compare in constant time."""
    expected = "sha256=" + hmac.new(secret.encode(), received.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, received.headers["X-Service-Signature"])


def verify_standard_signature(secret: str, received: Received) -> Any:
    """The Standard Webhooks library's own check (raises when no signature matches)."""
    return StandardWebhook(secret).verify(received.body, received.headers)


class StubDns:
    """Names to addresses, changeable during a test (DNS rebinding)."""

    def __init__(self, answers: dict[str, list[str]] | None = None) -> None:
        self.answers = dict(answers or {})
        self.lookups: list[str] = []

    async def lookup(self, host: str) -> list[IPAddress]:
        self.lookups.append(host)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [ipaddress.ip_address(a) for a in self.answers[host]]


@dataclass
class ConnectionLog:
    """A socket factory for the webhook client that records every address it connects
    to and refuses anything but loopback, so a test never sends traffic elsewhere."""

    targets: list[str] = field(default_factory=list)

    def __call__(self, addr_info: tuple[Any, ...]) -> socket.socket:
        family, type_, proto, _, sockaddr = addr_info
        self.targets.append(str(sockaddr[0]))
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        mapped = getattr(address, "ipv4_mapped", None)
        if not (address.is_loopback or (mapped is not None and mapped.is_loopback)):
            raise OSError(f"test network: refusing to connect to {address}")
        return socket.socket(family, type_, proto)


async def eventually(
    check: Callable[[], Awaitable[Any]], *, within: float = 10.0, interval: float = 0.05
) -> Any:
    """Poll check() until it returns something truthy; fail after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {within} s (last: {value!r})")
        await asyncio.sleep(interval)


async def create_webhook(client: Any, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    resp = await client.post("/api/v1/webhooks", json=body, headers=headers)
    data: dict[str, Any] = await resp.json()
    assert resp.status == 201, data
    return data


async def patch(client: Any, headers: dict[str, str], path: str, body: Any) -> Any:
    resp = await client.patch(path, json=body, headers=headers)
    data = await resp.json()
    assert resp.status == 200, data
    return data


def check_signed(secret: str, received: Received) -> None:
    assert verify_service_signature(secret, received)
    verify_standard_signature(secret, received)  # raises when no signature matches
    assert received.headers["webhook-id"] == received.delivery_id
    assert received.headers["X-Service-Event"] == received.json["event"]
    assert received.headers["Content-Type"] == "application/json"


async def fail_twice(received: Received, seen: int) -> int:
    return 500 if seen < 2 else 200


async def always_unavailable(received: Received, seen: int) -> int:
    return 503


async def deliveries_of(client: Any, headers: dict[str, str], hook_id: str) -> list[Any]:
    page = await get_json(client, f"/api/v1/webhooks/{hook_id}/deliveries", headers)
    return list(page["data"])


async def wait_status(client: Any, headers: dict[str, str], hook_id: str, status: str) -> Any:
    async def reached() -> Any:
        rows = await deliveries_of(client, headers, hook_id)
        return rows[0] if rows and rows[0]["status"] == status else None

    return await eventually(reached)
