from __future__ import annotations

from tests.support.api import create_tenant, get_json


async def test_create_and_read(client, admin) -> None:
    root = await create_tenant(client, admin, name="Root")
    child = await create_tenant(client, admin, parent_id=root["id"])
    ancestors = await get_json(client, f"/api/v1/tenants/{child['id']}/ancestors", admin)
    assert [a["id"] for a in ancestors] == [root["id"]]
