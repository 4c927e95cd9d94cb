"""The masked context PostgreSQL renders (render_tenant_context) is the document the
Python rendering of resolve_tenant_context gives, value for value: locks, overrides,
sensitive values, LOCAL policies, unicode, numbers and nested values."""

from __future__ import annotations

import uuid

import orjson

from service.http.appkeys import DATABASE, REPOSITORIES, USE_CASES
from service.views.base import render
from tests.support.api import create_tenant
from tests.support.entries import put_config, put_permission


async def test_sql_and_python_renderings_agree(client, admin) -> None:
    root = await create_tenant(client, admin, isolation_strategy="SCHEMA_PER_TENANT")
    mid = await create_tenant(client, admin, parent_id=root["id"])
    leaf = await create_tenant(client, admin, parent_id=mid["id"])
    values = {
        "plain": "gold",
        "unicode": "Zürich ✓ \u2028",
        "number": 1.5,
        "integer": 9007199254740993,
        "nested": {"b": [1, {"c": None}], "a": True},
        "empty": {},
    }
    for key, value in values.items():
        await put_config(client, admin, root["id"], key, value, expect=201)
    await put_config(client, admin, root["id"], "limit", 10, expect=201, locked=True)
    await put_config(client, admin, mid["id"], "plain", "silver", expect=201)
    await put_config(client, admin, mid["id"], "token", "s3cr3t", expect=201, sensitive=True)
    await put_config(client, admin, leaf["id"], "own", [1, 2], expect=201)
    await put_permission(client, admin, root["id"], "billing", True, "LOCKED", expect=201)
    await put_permission(client, admin, root["id"], "local_only", True, "LOCAL", expect=201)
    await put_permission(client, admin, mid["id"], "export", False, expect=201)
    await put_permission(client, admin, leaf["id"], "export", True, "LOCAL", expect=201)

    repo = client.app[REPOSITORIES].context
    use_case = client.app[USE_CASES].tenant_context
    async with client.app[DATABASE].connection() as conn:
        for tenant in (root, mid, leaf):
            tenant_id = uuid.UUID(tenant["id"])
            rendered = await repo.render_tenant_context(conn, tenant_id)
            resolved = await repo.resolve_tenant_context(conn, tenant_id)
            assert rendered is not None
            assert resolved is not None
            python = orjson.loads(render(use_case._view(resolved, None)).body)
            assert orjson.loads(rendered.document) == python
            assert list(orjson.loads(rendered.document)["resolved_config"]) == sorted(
                c.key for c in resolved.config
            )
            assert (rendered.ancestry_path, rendered.depth, rendered.status) == (
                resolved.ancestry_path, resolved.depth, resolved.status,
            )  # fmt: skip
        assert await repo.render_tenant_context(conn, uuid.uuid4()) is None
    assert b"s3cr3t" not in rendered.document.encode()
