"""Whoever causes failures cannot switch off an endpoint that serves others: a write key
scoped to one child makes changes too large for the parent's receiver, whose webhook
(include_descendants) stays enabled and still delivers a sibling's later event; an
endpoint that fails for the events of two children is disabled as before."""

from __future__ import annotations

import re
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
from tests.support.keys import key_headers
from tests.support.webhooks import (
    Received,
    Receiver,
    always_unavailable,
    create_webhook,
    eventually,
    patch,
)

LIMIT = 100 * 1024  # the receiver refuses bodies over 100 KB


async def refuses_large_bodies(received: Received, seen: int) -> int:
    return 413 if len(received.body) > LIMIT else 200


@pytest.fixture
def settings(fresh_db_url: str, tmp_path: Path) -> Settings:
    return Settings.from_env(
        base_env(
            fresh_db_url, tmp_path, WEBHOOK_ALLOW_HTTP="true",
            WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32", WEBHOOK_RETRY_BASE_SECONDS="0.1",
            WEBHOOK_MAX_ATTEMPTS="1", WEBHOOK_TIMEOUT_SECONDS="2",
            WEBHOOK_DISABLE_AFTER_DEAD_LETTERS="2",
        )
    )  # fmt: skip


@pytest.fixture
def app(settings: Settings) -> web.Application:
    return create_app(settings)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    server = await Receiver(refuses_large_bodies).start()
    yield server
    await server.close()


async def failed_attempts(db_conn: Any, hook_id: str) -> int:
    found = await db_conn.fetchval(
        "SELECT attempts_failed FROM webhook_health WHERE webhook_id = $1", UUID(hook_id)
    )
    return int(found or 0)


async def test_a_child_cannot_switch_off_its_parents_webhook(
    client, admin, db_conn, receiver
) -> None:
    parent = await create_tenant(client, admin)
    child = await create_tenant(client, admin, parent_id=parent["id"])
    sibling = await create_tenant(client, admin, parent_id=parent["id"])
    hook = await create_webhook(
        client, admin, url=receiver.url, events=["tenant.updated"], tenant_id=parent["id"],
        include_descendants=True,
    )  # fmt: skip
    attacker = await key_headers(client.app, ("read", "write"), tenant_id=child["id"])

    for index in range(4):  # four changes of about 150 KB each
        big = {"blob": f"{index}" + "x" * 150_000}
        await patch(client, attacker, f"/api/v1/tenants/{child['id']}", {"metadata": big})

    async def four_failed() -> bool:
        return await failed_attempts(db_conn, hook["id"]) == 4

    await eventually(four_failed)
    assert [r.status for r in receiver.requests] == [413] * 4

    # the sibling's later event is delivered: the webhook was never switched off
    await patch(client, admin, f"/api/v1/tenants/{sibling['id']}", {"name": "Sibling"})

    async def sibling_delivered() -> Any:
        # counted by the service, not only seen by the receiver
        got = await get_json(client, f"/api/v1/webhooks/{hook['id']}", admin)
        return got if got["delivery_stats"]["attempts_succeeded"] == 1 else None

    got = await eventually(sibling_delivered)
    [delivered] = [r for r in receiver.requests if r.status == 200]
    assert delivered.json["data"]["id"] == sibling["id"]
    assert (got["active"], got["disabled_reason"]) == (True, None)
    assert got["delivery_stats"]["attempts_failed"] == 4
    assert got["delivery_stats"]["attempts_succeeded"] == 1
    disabled = await db_conn.fetchval(
        "SELECT count(*) FROM audit_logs WHERE action = 'webhook.disabled'"
    )
    assert disabled == 0
    # the child's failures stay counted for it alone: its own source is still failing
    sources = await db_conn.fetch(
        "SELECT source_id, dead_letters FROM webhook_source_health WHERE webhook_id = $1",
        UUID(hook["id"]),
    )
    assert [(str(s["source_id"]), s["dead_letters"]) for s in sources] == [(child["id"], 4)]


async def test_failing_for_two_children_disables_as_before(client, admin, receiver) -> None:
    receiver.behaviour = always_unavailable
    parent = await create_tenant(client, admin)
    first = await create_tenant(client, admin, parent_id=parent["id"])
    second = await create_tenant(client, admin, parent_id=parent["id"])
    grandchild = await create_tenant(client, admin, parent_id=second["id"])
    hook = await create_webhook(
        client, admin, url=receiver.url, events=["tenant.updated"], tenant_id=parent["id"],
        include_descendants=True,
    )  # fmt: skip
    # two dead letters from the first child's subtree: one source, still enabled
    for name in ("One", "Two"):
        await patch(client, admin, f"/api/v1/tenants/{first['id']}", {"name": name})
    await wait_failed(client, admin, hook["id"], 2)
    assert (await get_json(client, f"/api/v1/webhooks/{hook['id']}", admin))["active"] is True
    # and two from the second child's (its grandchild counts as the second child)
    await patch(client, admin, f"/api/v1/tenants/{second['id']}", {"name": "Three"})
    await patch(client, admin, f"/api/v1/tenants/{grandchild['id']}", {"name": "Four"})

    async def switched_off() -> Any:
        got = await get_json(client, f"/api/v1/webhooks/{hook['id']}", admin)
        return None if got["active"] else got

    off = await eventually(switched_off)
    # the last two failures may be judged at once: either may disable it
    assert re.match(r"^[34] deliveries failed for good since ", off["disabled_reason"])


async def wait_failed(client: Any, admin: dict[str, str], hook_id: str, count: int) -> None:
    async def failed() -> bool:
        stats = await get_json(
            client, f"/api/v1/webhooks/deliveries/stats?webhook_id={hook_id}", admin
        )
        return bool(stats["failed"] == count)

    await eventually(failed)


async def test_a_global_webhook_counts_each_tree_as_one_source(client, admin, receiver) -> None:
    receiver.behaviour = always_unavailable
    root = await create_tenant(client, admin)
    children = [await create_tenant(client, admin, parent_id=root["id"]) for _ in range(2)]
    other_root = await create_tenant(client, admin)
    hook = await create_webhook(client, admin, url=receiver.url, events=["tenant.updated"])
    # two children of one root: one tree, one source, however many tenants fail
    for child in children:
        for name in ("One", "Two"):
            await patch(client, admin, f"/api/v1/tenants/{child['id']}", {"name": name})
    await wait_failed(client, admin, hook["id"], 4)
    assert (await get_json(client, f"/api/v1/webhooks/{hook['id']}", admin))["active"] is True
    # a second tree fails too: the endpoint fails for more than one source
    for name in ("Three", "Four"):
        await patch(client, admin, f"/api/v1/tenants/{other_root['id']}", {"name": name})

    async def switched_off() -> Any:
        got = await get_json(client, f"/api/v1/webhooks/{hook['id']}", admin)
        return None if got["active"] else got

    off = await eventually(switched_off)
    assert re.match(r"^[56] deliveries failed for good since ", off["disabled_reason"])
