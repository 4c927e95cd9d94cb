"""Lists rendered by PostgreSQL (the document parts of migration 0029 put together by
tenant_document_texts, migration 0052) are the very documents the Tenant view
(service/views/tenants.py) renders in Python: same keys in the same order, same values;
and, byte for byte, what row_to_json and json_agg make of the document's values
(tests/support/invariants.py REFERENCE_ROWS)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import asyncpg
import orjson
import pytest
from aiohttp.test_utils import TestClient

from service.db.pool import connect
from service.db.queries import Queries
from service.repositories.tenant_documents import TenantDocumentsRepository
from service.repositories.tenants import TenantsRepository
from service.views.base import document
from service.views.tenants import Tenant
from tests.support.api import create_tenant, get_json
from tests.support.entries import put_config
from tests.support.invariants import DOCUMENT_PARTS_WRONG, REFERENCE_ROWS

Client = TestClient[Any, Any]
METADATA = {
    "nested": {"list": [1, 2.5, -3e-7, True, None, "x"], "deep": {"k": {"z": []}}},
    "unicode": 'héllo ✓ 🌍 "quoted" \\ back\nslash \u0001 \u2028',
    "ключ": "значение",
    "big": 12345678901234567,
    "": "empty key",
}
# Sub-millisecond parts that rounding would carry into the next millisecond, second or
# day; the last one is written with an offset, so UTC is another date.
CREATED = "2026-03-04 05:06:07.123999+00"
UPDATED = "2026-03-04 05:06:59.999999+00"
DELETED = "2026-03-04 23:59:59.999500-05"


@pytest.fixture
def repo() -> TenantsRepository:
    return TenantsRepository(Queries.load())


@pytest.fixture
def documents() -> TenantDocumentsRepository:
    return TenantDocumentsRepository(Queries.load())


@pytest.fixture
async def own_conn(db_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection outside the app's pool, free to change its session time zone."""
    conn = await connect(db_url)
    try:
        yield conn
    finally:
        await conn.close()


async def make_family(client: Client, admin: dict[str, str], conn: Any) -> dict[str, str]:
    """A root with odd metadata, a child with plain and sensitive config, and an archived
    grandchild, all with timestamps that have microseconds."""
    root = await create_tenant(client, admin, name="Ünïcødé ✓ root", metadata=METADATA)
    child = await create_tenant(client, admin, name="child", parent_id=root["id"])
    await put_config(client, admin, child["id"], "plain.theme", {"a": [1, 2]}, expect=201)
    await put_config(client, admin, child["id"], "secret", "s3cr3t-value", sensitive=True)
    leaf = await create_tenant(client, admin, name="leaf", parent_id=child["id"])
    resp = await client.delete(f"/api/v1/tenants/{leaf['id']}", headers=admin)
    assert resp.status == 204
    ids = {"root": root["id"], "child": child["id"], "leaf": leaf["id"]}
    await conn.execute(
        "UPDATE tenants SET created_at = $2::text::timestamptz, updated_at = $3::text::timestamptz,"
        " deleted_at = CASE WHEN deleted_at IS NULL THEN NULL ELSE $4::text::timestamptz END"
        " WHERE id = ANY($1::uuid[])",
        [UUID(i) for i in ids.values()],
        CREATED,
        UPDATED,
        DELETED,
    )
    return ids


async def python_json(
    repo: TenantsRepository, conn: asyncpg.Connection, tenant_id: str
) -> dict[str, Any]:
    tenant = await repo.get_tenant(conn, UUID(tenant_id))
    assert tenant is not None
    return document(Tenant.of(tenant))  # type: ignore[no-any-return]


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/St_Johns"])
async def test_each_document_is_the_tenant_view(
    client: Client,
    admin: dict[str, str],
    own_conn: asyncpg.Connection,
    repo: TenantsRepository,
    zone: str,
) -> None:
    ids = await make_family(client, admin, own_conn)
    # The session time zone must not show through: documents are always in UTC.
    await own_conn.execute(f"SET timezone = '{zone}'")
    for name, tenant_id in ids.items():
        text = await own_conn.fetchval(
            "SELECT d.document FROM tenant_document_texts d WHERE d.id = $1", UUID(tenant_id)
        )
        document = orjson.loads(text)
        expected = await python_json(repo, own_conn, tenant_id)
        assert document == expected, name
        assert list(document) == list(expected), name
        assert list(document["metadata"]) == list(expected["metadata"]), name

    root = orjson.loads(
        await own_conn.fetchval(
            "SELECT d.document FROM tenant_document_texts d WHERE d.id = $1", UUID(ids["root"])
        )
    )
    assert root["parent_id"] is None
    assert root["deleted_at"] is None
    assert root["metadata"] == METADATA
    assert root["created_at"] == "2026-03-04T05:06:07.123Z"
    assert root["updated_at"] == "2026-03-04T05:06:59.999Z"
    leaf = await python_json(repo, own_conn, ids["leaf"])
    assert leaf["status"] == "archived"
    assert leaf["deleted_at"] == "2026-03-05T04:59:59.999Z"
    child = await python_json(repo, own_conn, ids["child"])
    assert child["config"] == {"plain.theme": {"a": [1, 2]}, "secret": "***"}


@pytest.mark.parametrize("zone", ["UTC", "America/St_Johns"])
async def test_streamed_documents_are_row_to_json_byte_for_byte(
    client: Client, admin: dict[str, str], own_conn: asyncpg.Connection, zone: str
) -> None:
    """stream_descendants_json sends the document parts each row carries (written by a
    trigger with the row, migration 0029) around the config of the tenants in
    tenant_config_holders (migration 0028): the very text row_to_json makes of the
    tenant's values, with names that need escaping, config plain and masked,
    archived, root and child, whatever the writing and the reading session's time zone
    and date style."""
    await own_conn.execute(f"SET timezone = '{zone}'; SET DateStyle = 'SQL, DMY'")
    ids = await make_family(client, admin, own_conn)
    await own_conn.execute(
        "UPDATE tenants SET name = $2 WHERE id = $1",
        UUID(ids["leaf"]),
        'q"uote \\ back\nslash \t\u0001\u001f \u2028 ✓ </script>',
    )
    await own_conn.execute("SET timezone = 'Asia/Kathmandu'")
    query = Queries.load()["stream_descendants_json"]
    expected = f"SELECT row_to_json(d)::text FROM ({REFERENCE_ROWS}) AS d WHERE d.id = $1"
    for top in ("root", "child"):
        path = await own_conn.fetchval(
            "SELECT ancestry_path FROM tenants WHERE id = $1", UUID(ids[top])
        )
        args = query.args(path=path, after=None, max_depth=None, include_archived=True)
        rows = await own_conn.fetch(query.sql, *args)
        assert len(rows) == {"root": 2, "child": 1}[top]
        for row in rows:
            assert row["document"] == await own_conn.fetchval(expected, row["id"])
    root_path = f"/{ids['root']}"
    args = query.args(path=root_path, after=None, max_depth=None, include_archived=True)
    texts = " ".join(r["document"] for r in await own_conn.fetch(query.sql, *args))
    assert '"secret": "***"' in texts
    assert "\\u0001" in texts
    assert await own_conn.fetchval(DOCUMENT_PARTS_WRONG) == 0  # every tenant of the test


async def test_list_endpoints_answer_the_tenant_view(
    client: Client, admin: dict[str, str], own_conn: asyncpg.Connection, repo: TenantsRepository
) -> None:
    ids = await make_family(client, admin, own_conn)
    root, child, leaf = [await python_json(repo, own_conn, ids[k]) for k in ids]
    base = "/api/v1/tenants"

    resp = await client.get(
        f"{base}/{ids['root']}/descendants?include_archived=true", headers=admin
    )
    assert resp.status == 200
    assert resp.headers["Content-Type"] == "application/json"
    body = await resp.json()
    assert body == [child, leaf]
    assert [list(t) for t in body] == [list(child), list(leaf)]
    assert await get_json(client, f"{base}/{ids['root']}/descendants", admin) == [child]
    assert await get_json(client, f"{base}/{ids['child']}/ancestors", admin) == [root]
    assert await get_json(client, f"{base}/{ids['root']}/ancestors", admin) == []
    assert await get_json(client, f"{base}/{ids['root']}/children", admin) == [child]
    resp = await client.get(
        f"{base}/{ids['child']}/children?include_archived=true&limit=1", headers=admin
    )
    assert resp.headers["Content-Type"] == "application/json"
    assert "X-Next-Cursor" not in resp.headers
    assert await resp.json() == [leaf]
    assert await get_json(client, f"{base}/{ids['child']}/children", admin) == []


async def test_children_pages_carry_the_last_listed_id(
    client: Client,
    admin: dict[str, str],
    own_conn: asyncpg.Connection,
    documents: TenantDocumentsRepository,
) -> None:
    parent = await create_tenant(client, admin, name="parent")
    kids = [await create_tenant(client, admin, parent_id=parent["id"]) for _ in range(3)]
    kids.sort(key=lambda k: UUID(k["id"]))
    found = await documents.list_children_json(
        own_conn, UUID(parent["id"]), cursor=None, status="active", limit=2
    )
    assert orjson.loads(found.body.text) == kids[:2]
    assert found.next_cursor == UUID(kids[1]["id"])
    found = await documents.list_children_json(
        own_conn, UUID(parent["id"]), cursor=found.next_cursor, status="active", limit=2
    )
    assert (orjson.loads(found.body.text), found.next_cursor) == (kids[2:], None)
    found = await documents.list_children_json(
        own_conn, UUID(parent["id"]), cursor=None, status="active", limit=3
    )
    assert (orjson.loads(found.body.text), found.next_cursor) == (kids, None)
    found = await documents.list_children_json(
        own_conn, UUID(parent["id"]), cursor=None, status="active", limit=None
    )
    assert (orjson.loads(found.body.text), found.next_cursor) == (kids, None)


async def test_ancestors_keep_only_the_visible_root_subtree(
    client: Client,
    admin: dict[str, str],
    own_conn: asyncpg.Connection,
    repo: TenantsRepository,
    documents: TenantDocumentsRepository,
) -> None:
    ids = await make_family(client, admin, own_conn)
    root, child = [await python_json(repo, own_conn, ids[k]) for k in ("root", "child")]
    leaf = UUID(ids["leaf"])

    async def ancestors(visible_root: str | None) -> Any:
        found = await documents.list_ancestors_json(
            own_conn, leaf, visible_root=None if visible_root is None else UUID(visible_root)
        )
        return orjson.loads(found.text)

    assert await ancestors(None) == [root, child]
    assert await ancestors(ids["root"]) == [root, child]
    assert await ancestors(ids["child"]) == [child]
    assert await ancestors(ids["leaf"]) == []


async def test_lists_are_what_json_agg_made_of_the_rows_byte_for_byte(
    client: Client,
    admin: dict[str, str],
    own_conn: asyncpg.Connection,
    documents: TenantDocumentsRepository,
) -> None:
    """The children and ancestors arrays are put together from the documents' texts as
    json_agg put together the rows they were rendered from before (a comma, a space, a
    line break and a space between two documents): the same bytes."""
    ids = await make_family(client, admin, own_conn)
    siblings = [await create_tenant(client, admin, parent_id=ids["child"]) for _ in range(2)]
    assert len(siblings) == 2
    child, leaf = UUID(ids["child"]), UUID(ids["leaf"])
    children = await own_conn.fetchval(
        f"SELECT json_agg(d ORDER BY d.id)::text FROM ({REFERENCE_ROWS}) AS d"
        " WHERE d.parent_id = $1",
        child,
    )
    found = await documents.list_children_json(
        own_conn, child, cursor=None, status="all", limit=None
    )
    assert found.body.text == children
    assert children.count(", \n ") == 2
    ancestors = await own_conn.fetchval(
        f"SELECT json_agg(d ORDER BY d.depth)::text FROM ({REFERENCE_ROWS}) AS d"
        " WHERE d.id IN (SELECT ancestor_id FROM tenant_closure"
        " WHERE descendant_id = $1 AND depth > 0)",
        leaf,
    )
    found_ancestors = await documents.list_ancestors_json(own_conn, leaf, visible_root=None)
    assert found_ancestors.text == ancestors
    none = await documents.list_children_json(own_conn, leaf, cursor=None, status="all", limit=None)
    assert none.body.text == "[]"
