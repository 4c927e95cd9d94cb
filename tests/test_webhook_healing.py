"""Endpoints that heal: a failing endpoint is disabled (by dead letters, or by time
without a success on a controlled clock) with a reason, a `webhook.disabled` event to
the other subscribed endpoints and an audit entry; re-enabling starts fresh; recover
re-queues its dead letters; the webhook answer carries its delivery statistics."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from aiohttp import web

from service.app import create_app
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.api import create_tenant, get_json
from tests.support.gdpr import error_of
from tests.support.webhooks import (
    ISO_MS,
    Receiver,
    always_ok,
    always_unavailable,
    create_webhook,
    eventually,
    patch,
)


@pytest.fixture
def settings_env() -> dict[str, str]:
    return {"WEBHOOK_DISABLE_AFTER_DEAD_LETTERS": "2"}


@pytest.fixture
def settings(fresh_db_url: str, tmp_path: Path, settings_env: dict[str, str]) -> Settings:
    return Settings.from_env(
        base_env(
            fresh_db_url, tmp_path, WEBHOOK_ALLOW_HTTP="true",
            WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32", WEBHOOK_RETRY_BASE_SECONDS="0.1",
            WEBHOOK_MAX_ATTEMPTS="1", WEBHOOK_TIMEOUT_SECONDS="2", **settings_env,
        )
    )  # fmt: skip


@pytest.fixture
def app(settings: Settings) -> web.Application:
    return create_app(settings)


@pytest.fixture
async def failing() -> AsyncIterator[Receiver]:
    server = await Receiver(always_unavailable).start()
    yield server
    await server.close()


@pytest.fixture
async def watcher() -> AsyncIterator[Receiver]:
    server = await Receiver(always_ok).start()
    yield server
    await server.close()


async def setup(client: Any, admin: dict[str, str], failing: Receiver, watcher: Receiver):
    tenant = await create_tenant(client, admin)
    hook = await create_webhook(client, admin, url=failing.url, events=["tenant.updated"],
                                tenant_id=tenant["id"])  # fmt: skip
    await create_webhook(client, admin, url=watcher.url, events=["webhook.disabled"],
                         tenant_id=tenant["id"])  # fmt: skip
    return tenant, hook


async def rename(client: Any, admin: dict[str, str], tenant: dict[str, Any], name: str) -> None:
    await patch(client, admin, f"/api/v1/tenants/{tenant['id']}", {"name": name})


async def disabled(client: Any, admin: dict[str, str], hook_id: str) -> dict[str, Any]:
    async def check() -> Any:
        got = await get_json(client, f"/api/v1/webhooks/{hook_id}", admin)
        return None if got["active"] else got

    result: dict[str, Any] = await eventually(check)
    return result


async def test_dead_letters_disable_and_recover_heals(client, admin, db_conn, failing, watcher):
    tenant, hook = await setup(client, admin, failing, watcher)
    fresh = await get_json(client, f"/api/v1/webhooks/{hook['id']}", admin)
    assert (fresh["disabled_reason"], fresh["disabled_at"], fresh["delivery_stats"]) == (
        None, None,
        {"success_rate": None, "attempts_succeeded": 0, "attempts_failed": 0,
         "last_success_at": None, "last_failure_at": None},
    )  # fmt: skip
    await rename(client, admin, tenant, "One")
    await rename(client, admin, tenant, "Two")
    off = await disabled(client, admin, hook["id"])
    assert off["disabled_reason"].startswith("2 deliveries failed for good since ")
    assert ISO_MS.match(off["disabled_at"])
    stats = off["delivery_stats"]
    assert (stats["success_rate"], stats["attempts_succeeded"], stats["attempts_failed"]) == (
        0.0, 0, 2,
    )  # fmt: skip
    assert stats["last_success_at"] is None
    assert ISO_MS.match(stats["last_failure_at"])

    # the other endpoint subscribed to the tenant heard about it
    received = await eventually(lambda: _first(watcher))
    assert received.json["event"] == "webhook.disabled"
    assert received.json["data"]["webhook_id"] == hook["id"]
    assert received.json["data"]["reason"] == off["disabled_reason"]
    entry = await db_conn.fetchrow(
        "SELECT actor_id, actor_type, changes FROM audit_logs WHERE action = 'webhook.disabled' "
        "AND resource_id = $1", hook["id"],
    )  # fmt: skip
    assert (entry["actor_id"], entry["actor_type"]) == ("system", "system")
    assert entry["changes"] == {"before": {"active": True}, "after": {"active": False},
                                "reason": off["disabled_reason"]}  # fmt: skip

    path = f"/api/v1/webhooks/{hook['id']}/recover"
    since = {"since": "2000-01-01T00:00:00Z"}
    assert await error_of(await client.post(path, json=since, headers=admin)) == (
        409, "WEBHOOK_INACTIVE",
    )  # fmt: skip

    # the receiver is back; re-enabling starts fresh, recover re-queues the dead letters
    failing.behaviour = always_ok
    on = await patch(client, admin, f"/api/v1/webhooks/{hook['id']}", {"active": True})
    assert (on["active"], on["disabled_reason"], on["disabled_at"]) == (True, None, None)
    resp = await client.post(path, json=since, headers=admin)
    assert (resp.status, await resp.json()) == (200, {"requeued": 2})

    async def healed() -> Any:
        got = await get_json(client, f"/api/v1/webhooks/{hook['id']}", admin)
        return got if got["delivery_stats"]["attempts_succeeded"] == 2 else None

    healthy = await eventually(healed)
    assert healthy["active"] is True
    assert healthy["delivery_stats"]["success_rate"] == 0.5
    assert ISO_MS.match(healthy["delivery_stats"]["last_success_at"])
    recovered = await db_conn.fetchval(
        "SELECT changes FROM audit_logs WHERE action = 'webhook.recovered'"
    )
    assert recovered == {"since": "2000-01-01T00:00:00.000Z", "requeued": 2}
    # nothing failed is left: recovering again re-queues nothing
    resp = await client.post(path, json=since, headers=admin)
    assert await resp.json() == {"requeued": 0}
    resp = await client.post(path, json={"since": "yesterday"}, headers=admin)
    assert await error_of(resp) == (400, "VALIDATION_ERROR")


async def _first(receiver: Receiver) -> Any:
    return receiver.requests[0] if receiver.requests else None


@pytest.mark.parametrize(
    "settings_env",
    [{"WEBHOOK_DISABLE_AFTER_SECONDS": "3600", "WEBHOOK_DISABLE_AFTER_DEAD_LETTERS": "0"}],
)
async def test_failing_for_the_configured_time_disables(client, admin, db_conn, failing, watcher):
    tenant, hook = await setup(client, admin, failing, watcher)
    await rename(client, admin, tenant, "One")

    async def failed_once() -> Any:
        return await db_conn.fetchval(
            "SELECT attempts_failed FROM webhook_health WHERE webhook_id = $1", UUID(hook["id"])
        )

    await eventually(failed_once)
    assert (await get_json(client, f"/api/v1/webhooks/{hook['id']}", admin))["active"] is True
    # the clock: the streak began two hours ago
    await db_conn.execute(
        "UPDATE webhook_health SET failing_since = now() - interval '2 hours' "
        "WHERE webhook_id = $1", UUID(hook["id"]),
    )  # fmt: skip
    await rename(client, admin, tenant, "Two")
    off = await disabled(client, admin, hook["id"])
    assert off["disabled_reason"].startswith("no delivery succeeded since ")
    assert off["disabled_reason"].endswith("(limit 3600 seconds)")
