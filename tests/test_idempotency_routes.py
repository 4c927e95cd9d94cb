"""Every POST route honours Idempotency-Key: sent twice with one key, the second answer is
the first one replayed, and the second request does nothing (no audit entry carries its
request id; the webhook receiver gets one test call; one replacement key exists).
Routes come from the endpoint registry; one added later gets a generic request."""

from __future__ import annotations

import base64
import os
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from service.http.appkeys import ENDPOINTS
from tests.conftest import ENCRYPTION_KEY
from tests.support.api import create_tenant, unique_slug
from tests.support.gdpr import add_delivery, add_webhook, events_of
from tests.support.webhooks import Receiver

REPLAYED = "Idempotent-Replayed"


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    started = await Receiver().start()
    yield started
    await started.close()


@pytest.fixture
def settings_env(fresh_db_url: str) -> dict[str, str]:
    # A database of its own: the encryption key is rotated here.
    return {
        "DATABASE_URL": fresh_db_url,
        "SERVICE_REGIONS": "eu,us",
        "WEBHOOK_ALLOW_HTTP": "true",
        "WEBHOOK_ALLOWED_PRIVATE_CIDRS": "127.0.0.1/32",
        "WEBHOOK_TIMEOUT_SECONDS": "2",
    }


class Twice:
    def __init__(self, client: TestClient, admin: dict[str, str], conn: Any) -> None:
        self.client, self.admin, self.conn = client, admin, conn
        self.done: set[tuple[str, str]] = set()

    async def send(self, route: str, path: str, body: Any = None) -> tuple[int, Any]:
        """POST twice with one key; the second must replay the first and write nothing."""
        headers = {**self.admin, "Idempotency-Key": str(uuid.uuid4())}
        first = await self.client.post(path, json=body, headers=headers)
        first_body = await first.read()
        second = await self.client.post(path, json=body, headers=headers)
        second_body = await second.read()
        assert first.status < 500, (path, first_body)
        assert second.status < 500, (path, second_body)
        self.done.add(("POST", route))
        if 200 <= first.status < 300:
            assert (second.status, second_body) == (first.status, first_body), path
            assert second.headers[REPLAYED] == "true"
            for name in ("Location", "ETag", "Cache-Control"):
                assert second.headers.get(name) == first.headers.get(name), (path, name)
            written = await self.conn.fetchval(
                "SELECT count(*) FROM audit_logs WHERE request_id = $1",
                second.headers["X-Request-ID"],
            )
            assert written == 0, f"the replay of {path} wrote audit entries"
        return first.status, (await first.json()) if first_body else None


async def test_every_post_route_replays_instead_of_running_twice(
    client: TestClient, admin, db_conn, receiver: Receiver
) -> None:
    twice = Twice(client, admin, db_conn)
    status, tenant = await twice.send(
        "/api/v1/tenants", "/api/v1/tenants", {"name": "T", "slug": unique_slug("t")}
    )
    assert status == 201
    tid = tenant["id"]
    status, batch = await twice.send(
        "/api/v1/tenants/batch", "/api/v1/tenants/batch",
        {"tenants": [{"name": "C", "slug": unique_slug("c"), "parent_id": tid}]},
    )  # fmt: skip
    assert status == 201
    cid = batch["created"][0]["id"]
    status, moved = await twice.send(
        "/api/v1/tenants/{id}/move", f"/api/v1/tenants/{cid}/move", {"new_parent_id": None}
    )
    assert (status, moved["depth"]) == (200, 0)
    assert (await client.delete(f"/api/v1/tenants/{cid}", headers=admin)).status == 204
    status, _ = await twice.send("/api/v1/tenants/{id}/restore", f"/api/v1/tenants/{cid}/restore")
    assert status == 200
    status, _ = await twice.send(
        "/api/v1/tenants/{id}/consent", f"/api/v1/tenants/{tid}/consent", {"purpose": "ads"}
    )
    assert status == 201
    status, migrated = await twice.send(
        "/api/v1/tenants/{id}/migrate-region", f"/api/v1/tenants/{tid}/migrate-region",
        {"region": "us"},
    )  # fmt: skip
    assert (status, migrated["to_region"]) == (200, "us")
    status, key = await twice.send("/api/v1/api-keys", "/api/v1/api-keys", {"name": "k"})
    assert status == 201
    status, rotated = await twice.send(
        "/api/v1/api-keys/{id}/rotate", f"/api/v1/api-keys/{key['id']}/rotate", {}
    )
    assert status == 201
    replacements = await db_conn.fetchval(
        "SELECT count(*) FROM api_keys WHERE rotated_from = $1", uuid.UUID(key["id"])
    )
    assert (replacements, rotated["rotated_from"]) == (1, key["id"])
    status, _ = await twice.send(
        "/api/v1/roles", "/api/v1/roles", {"name": unique_slug("r"), "scopes": ["read"]}
    )
    assert status == 201
    status, hook = await twice.send(
        "/api/v1/webhooks", "/api/v1/webhooks",
        {"url": receiver.url, "events": ["tenant.updated"], "tenant_id": tid},
    )  # fmt: skip
    assert status == 201
    status, tested = await twice.send(
        "/api/v1/webhooks/{id}/test", f"/api/v1/webhooks/{hook['id']}/test"
    )
    assert (status, tested["success"]) == (200, True)
    assert len(receiver.requests) == 1, "the replayed test sent nothing"
    status, _ = await twice.send(
        "/api/v1/webhooks/{id}/rotate-secret", f"/api/v1/webhooks/{hook['id']}/rotate-secret"
    )
    assert status == 200
    dead_hook = await add_webhook(client, db_conn, tid)
    event = (await events_of(db_conn, tid))[-1]["id"]
    failed = [await add_delivery(db_conn, dead_hook, event, status="failed") for _ in range(2)]
    status, result = await twice.send(
        "/api/v1/webhooks/deliveries/{deliveryId}/retry",
        f"/api/v1/webhooks/deliveries/{failed[0]}/retry",
    )
    assert (status, result) == (200, {"success": True})
    status, result = await twice.send(
        "/api/v1/webhooks/deliveries/retry-all", "/api/v1/webhooks/deliveries/retry-all"
    )
    assert (status, result) == (200, {"retried": 1})
    status, _ = await twice.send(
        "/api/v1/maintenance/purge-expired", "/api/v1/maintenance/purge-expired", {}
    )
    assert status == 200
    status, counts = await twice.send(
        "/api/v1/maintenance/rotate-encryption-key",
        "/api/v1/maintenance/rotate-encryption-key",
        {"old_key": ENCRYPTION_KEY, "new_key": base64.b64encode(os.urandom(32)).decode()},
    )
    assert (status, counts["webhooks_rotated"]) == (200, 2)
    victim = await create_tenant(client, admin)
    status, purged = await twice.send(
        "/api/v1/tenants/{id}/purge", f"/api/v1/tenants/{victim['id']}/purge",
        {"confirm": victim["slug"]},
    )  # fmt: skip
    assert (status, purged["purged"]) == (200, True)
    # routes added later: a generic request, twice, never a 5xx and never a second run
    posts = {e.path for e in client.app[ENDPOINTS].values() if e.method == "POST"}
    for route in sorted(posts - {r for _, r in twice.done}):
        await twice.send(route, re.sub(r"\{[^}]+\}", tid, route), {})
    assert {r for _, r in twice.done} == posts
