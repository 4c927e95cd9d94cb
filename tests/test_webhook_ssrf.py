"""SSRF protection: every unsafe target is refused at create and never connected to at
delivery. Production-like settings (no private range allowed; http allowed only so the
loopback listeners can be addressed); a stub DNS; a socket factory that records every
connection the webhook client makes and refuses anything but loopback."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from service.app import create_app
from service.base.ids import uuid7
from service.http.appkeys import DATABASE, DEPS
from service.settings.options import Settings
from service.webhooks.addresses import blocked_reason
from service.webhooks.envelope import seal_secret
from service.webhooks.sender import WebhookNetwork
from service.webhooks.urlguard import UnsafeUrl, parse_target
from tests.conftest import base_env
from tests.support.api import create_tenant
from tests.support.keys import key_headers
from tests.support.webhooks import ConnectionLog, Received, Receiver, StubDns, eventually

PUBLIC = "93.184.216.34"


class Listeners:
    """Plain TCP listeners on 127.0.0.1 and ::1 that count every connection."""

    def __init__(self) -> None:
        self.connections = 0
        self.servers: list[asyncio.Server] = []
        self.v4 = self.v6 = 0

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.close()

    async def start(self) -> Listeners:
        v4 = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        v6 = await asyncio.start_server(self._accept, "::1", 0)
        self.servers = [v4, v6]
        self.v4 = v4.sockets[0].getsockname()[1]
        self.v6 = v6.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        for server in self.servers:
            server.close()
            await server.wait_closed()


@pytest.fixture
async def listeners() -> AsyncIterator[Listeners]:
    started = await Listeners().start()
    yield started
    await started.close()


@pytest.fixture
def dns() -> StubDns:
    return StubDns(
        {
            # Blocked by name even though they resolve to a public address here.
            "localhost": [PUBLIC],
            "metadata.google.internal": [PUBLIC],
            "mixed.example": [PUBLIC, "10.0.0.1"],
            "rebind.example": [PUBLIC],
            "public.example": [PUBLIC],
        }
    )


@pytest.fixture
def connections() -> ConnectionLog:
    return ConnectionLog()


@pytest.fixture
def settings(fresh_db_url: str, tmp_path: Path) -> Settings:
    return Settings.from_env(
        base_env(fresh_db_url, tmp_path, WEBHOOK_ALLOW_HTTP="true", WEBHOOK_MAX_ATTEMPTS="1")
    )


@pytest.fixture
def app(settings: Settings, dns: StubDns, connections: ConnectionLog) -> web.Application:
    return create_app(settings, webhook_network=WebhookNetwork(dns=dns, socket_factory=connections))


def unsafe_urls(listeners: Listeners) -> list[str]:
    p4, p6 = listeners.v4, listeners.v6
    return [
        f"http://127.0.0.1:{p4}/hook",
        f"http://127.1:{p4}/hook",
        f"http://2130706433:{p4}/hook",
        f"http://0x7f000001:{p4}/hook",
        f"http://0.0.0.0:{p4}/hook",
        f"http://[::1]:{p6}/hook",
        f"http://[::ffff:127.0.0.1]:{p4}/hook",
        "http://[::ffff:169.254.169.254]/latest/meta-data/",
        "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/",
        "http://[2002:a9fe:a9fe::]/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://169.254.169.254/latest/meta-data/",
        "http://100.100.100.200/latest/meta-data/",
        "http://10.0.0.1/hook",
        "http://172.16.0.1/hook",
        "http://192.168.1.1/hook",
        "http://metadata.google.internal/computeMetadata/v1/",
        f"http://localhost:{p4}/hook",
        f"http://user:pass@public.example:{p4}/hook",
        f"http://mixed.example:{p4}/hook",
        "http://nowhere.example/hook",  # does not resolve: refused (fail closed)
    ]


async def test_unsafe_urls_are_refused_at_create_and_update(client, admin, listeners, dns):
    safe = await client.post(
        "/api/v1/webhooks",
        json={"url": "http://public.example/hook", "events": ["tenant.created"]},
        headers=admin,
    )
    assert safe.status == 201
    hook_id = (await safe.json())["id"]
    for url in unsafe_urls(listeners):
        resp = await client.post(
            "/api/v1/webhooks", json={"url": url, "events": ["tenant.created"]}, headers=admin
        )
        body = await resp.json()
        assert resp.status == 400, (url, body)
        assert body["error"]["code"] == "UNSAFE_WEBHOOK_URL", url
        assert body["error"]["details"][0]["field"] == "url"
        resp = await client.patch(f"/api/v1/webhooks/{hook_id}", json={"url": url}, headers=admin)
        assert (resp.status, (await resp.json())["error"]["code"]) == (400, "UNSAFE_WEBHOOK_URL")
    assert listeners.connections == 0


async def insert_webhook(app: web.Application, url: str) -> str:
    """A stored webhook whose URL was never checked (as if the rules were looser then)."""
    webhook_id = uuid7()
    token = seal_secret(app[DEPS].keyring.encryptor, webhook_id, "a-secret-of-sixteen+")
    await app[DATABASE].pool.execute(
        "INSERT INTO webhooks (id, url, events, encrypted_secret) VALUES ($1, $2, $3, $4)",
        webhook_id, url, ["tenant.created"], token,
    )  # fmt: skip
    return str(webhook_id)


async def test_unsafe_targets_are_never_connected_to_at_delivery(
    client, admin, listeners, dns, connections
):
    urls = [u for u in unsafe_urls(listeners) if "rebind" not in u]
    resp = await client.post(
        "/api/v1/webhooks",
        json={"url": f"http://rebind.example:{listeners.v4}/hook", "events": ["tenant.created"]},
        headers=admin,
    )
    assert resp.status == 201  # public when checked...
    rebind_id = (await resp.json())["id"]
    dns.answers["rebind.example"] = ["127.0.0.1"]  # ...private when delivered (rebinding)
    hooks = {await insert_webhook(client.app, url): url for url in urls}
    hooks[rebind_id] = "rebind.example"
    await create_tenant(client, admin)  # one event, a delivery to each webhook

    async def all_failed() -> list[Any] | None:
        rows = await client.app[DATABASE].pool.fetch(
            "SELECT webhook_id::text, status, attempts, last_error, last_response_code "
            "FROM webhook_deliveries"
        )
        return (
            rows if len(rows) == len(hooks) and all(r["status"] == "failed" for r in rows) else None
        )

    rows = await eventually(all_failed)
    for row in rows:
        url = hooks[row["webhook_id"]]
        assert row["attempts"] == 1, url
        assert row["last_response_code"] is None, url
        assert row["last_error"].startswith("unsafe URL"), (url, row["last_error"])
    assert connections.targets == []  # the client never opened a connection
    assert listeners.connections == 0
    assert dns.lookups.count("rebind.example") == 2  # resolved again at delivery

    resp = await client.post(f"/api/v1/webhooks/{rebind_id}/test", headers=admin)
    assert (resp.status, (await resp.json())["error"]["code"]) == (400, "UNSAFE_WEBHOOK_URL")
    assert connections.targets == []


async def test_a_redirect_to_a_private_address_is_not_followed(
    fresh_db_url, aiohttp_client, tmp_path, listeners
):
    connections = ConnectionLog()
    settings = Settings.from_env(
        base_env(
            fresh_db_url, tmp_path, WEBHOOK_ALLOW_HTTP="true", WEBHOOK_MAX_ATTEMPTS="1",
            WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32",
        )
    )  # fmt: skip
    client = await aiohttp_client(
        create_app(settings, webhook_network=WebhookNetwork(socket_factory=connections))
    )
    admin = await key_headers(client.app)
    targets = [
        "http://169.254.169.254/latest/meta-data/",
        f"http://127.0.0.2:{listeners.v4}/hook",  # loopback, but outside the allowed /32
    ]

    async def redirect(received: Received, seen: int) -> int:
        raise web.HTTPFound(targets[len(receiver.requests) % 2])

    receiver = await Receiver(redirect).start()
    try:
        resp = await client.post(
            "/api/v1/webhooks", json={"url": receiver.url, "events": ["tenant.created"]},
            headers=admin,
        )  # fmt: skip
        hook = await resp.json()
        assert resp.status == 201, hook
        resp = await client.post(f"/api/v1/webhooks/{hook['id']}/test", headers=admin)
        body = await resp.json()
        assert (body["success"], body["response_code"]) == (False, 302)
        await create_tenant(client, admin)

        async def failed() -> Any:
            return await client.app[DATABASE].pool.fetchrow(
                "SELECT last_response_code, last_error FROM webhook_deliveries "
                "WHERE status = 'failed'"
            )

        row = await eventually(failed)
        assert row["last_response_code"] == 302
        assert "redirects are not followed" in row["last_error"]
        assert len(receiver.requests) == 2
        assert set(connections.targets) == {"127.0.0.1"}
        assert listeners.connections == 0
    finally:
        await receiver.close()


@pytest.mark.parametrize(
    ("url", "allow_http", "problem"),
    [
        ("http://public.example/", False, "must use https"),
        ("ftp://public.example/", True, "http or https"),
        ("https://@public.example/", False, "user:password"),
        ("https://user@public.example/", False, "user:password"),
        ("https://public.example/#x", False, "fragment"),
        ("https://public.example:0/", False, "port"),
        ("https:///path", False, "no host"),
        ("https://pub lic.example/", False, "whitespace"),
        ("https://%6c%6fcalhost/", False, "not a valid host name"),
        ("https://LOCALHOST./", False, "not allowed"),
        ("https://api.localhost/", False, "not allowed"),
        ("https://instance-data/", False, "not allowed"),
        ("https://0177.0.0.1/", False, "canonical"),
        ("https://10.1/", False, "canonical"),
        ("https://[fe80::1%25eth0]/", False, "link-local"),
        ("https://[::]/", False, "unspecified"),
        ("https://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/", False, "embeds"),
        ("https://224.0.0.1/", False, "multicast"),
        ("https://100.64.0.1/", False, "shared"),
        ("https://" + "a" * 2040 + ".example/", False, "longer than"),
    ],
)
def test_url_rules(url, allow_http, problem):
    with pytest.raises(UnsafeUrl, match=problem):
        parse_target(url, allow_http=allow_http, allowed=())


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/path?x=1",
        "https://8.8.8.8/",
        "https://[2606:4700:4700::1111]/",
        "https://[64:ff9b::808:808]/",  # NAT64 of a public address
        "https://xn--bcher-kva.example/",
        "https://bücher.example/",
    ],
)
def test_safe_urls_pass(url):
    parse_target(url, allow_http=False, allowed=())


def test_allowed_cidrs_never_open_metadata():
    allowed = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("127.0.0.1/32"))
    assert blocked_reason(ipaddress.ip_address("169.254.1.1"), allowed) is None
    assert blocked_reason(ipaddress.ip_address("127.0.0.1"), allowed) is None
    assert blocked_reason(ipaddress.ip_address("::ffff:127.0.0.1"), allowed) is None
    assert blocked_reason(ipaddress.ip_address("127.0.0.2"), allowed) is not None
    for metadata in ("169.254.169.254", "::ffff:169.254.169.254", "fd00:ec2::254"):
        assert "metadata" in (blocked_reason(ipaddress.ip_address(metadata), allowed) or "")
