"""Revisions (migration 0033): every kind of write gets one, with its log of changed
tenants and its audit entries; X-Revision on write answers; commit order is revision
order under concurrent commits on several connections."""

from __future__ import annotations

import asyncio
import random
from typing import Any
from uuid import UUID

import asyncpg
import pytest

from service.http.appkeys import DATABASE, REPOSITORIES
from tests.support.api import create_tenant, move, unique_slug
from tests.support.entries import put_config, put_permission


@pytest.fixture
def db_url(fresh_db_url: str) -> str:
    """Revisions are counted from the first: a database of each test's own."""
    return fresh_db_url


async def _current(client: Any) -> int:
    repo = client.app[REPOSITORIES].revisions
    return int(await client.app[DATABASE].run(repo.current_revision))


async def _log(client: Any, revision: int) -> list[tuple[str, str, str | None, str | None]]:
    """(tenant id, change, path, left_path) of each tenant the revision changed."""
    repo = client.app[REPOSITORIES].revisions
    rows = await client.app[DATABASE].run(lambda c: repo.list_revision_tenants(c, revision))
    return [(str(r.tenant_id), r.change, r.path, r.left_path) for r in rows]


async def _write(client: Any, method: str, path: str, headers: dict[str, str], **kw: Any) -> Any:
    """Send a write; check that its answer's X-Revision is the newest revision."""
    resp = await client.request(method, path, headers=headers, **kw)
    assert resp.status < 300, await resp.text()
    assert int(resp.headers["X-Revision"]) == await _current(client)
    return resp


async def test_each_kind_of_write_gets_a_revision_with_its_log(client, admin, db_conn) -> None:
    assert await _current(client) == 0
    root = await create_tenant(client, admin)
    a = await create_tenant(client, admin, parent_id=root["id"])
    b = await create_tenant(client, admin, parent_id=a["id"])
    other = await create_tenant(client, admin)
    assert await _current(client) == 4
    assert await _log(client, 2) == [(a["id"], "context", a["ancestry_path"], None)]
    # Every revision names its audit entries.
    audit = await db_conn.fetchval("SELECT audit_ids FROM context_revisions WHERE revision = 2")
    actions = await db_conn.fetch("SELECT action FROM audit_logs WHERE id = ANY($1)", audit)
    assert [r["action"] for r in actions] == ["tenant.created"]

    steps: list[tuple[str, Any]] = []

    async def step(name: str, method: str, path: str, **kw: Any) -> list[Any]:
        before = await _current(client)
        await _write(client, method, path, admin, **kw)
        assert await _current(client) == before + 1, name
        log = await _log(client, before + 1)
        steps.append((name, log))
        return log

    cfg = f"/api/v1/tenants/{a['id']}/config/theme"
    a_path, b_path = a["ancestry_path"], b["ancestry_path"]
    # A config write at A: A and B (below it) may have new contexts.
    assert await step("config put", "PUT", cfg, json={"value": "dark"}) == [
        (a["id"], "context", a_path, None),
        (b["id"], "context", b_path, None),
    ]
    # A lock: the same tenants.
    assert await step("lock", "PUT", cfg, json={"value": "dark", "locked": True}) == [
        (a["id"], "context", a_path, None),
        (b["id"], "context", b_path, None),
    ]
    assert len(await step("unlock", "PUT", cfg, json={"value": "dark", "locked": False})) == 2
    assert await step("config delete", "DELETE", cfg) == [
        (a["id"], "context", a_path, None),
        (b["id"], "context", b_path, None),
    ]
    perm = f"/api/v1/tenants/{b['id']}/permissions/export"
    assert await step("permission put", "PUT", perm, json={"value": True}) == [
        (b["id"], "context", b_path, None)
    ]
    assert await step("mode change", "PUT", perm, json={"value": True, "mode": "LOCKED"}) == [
        (b["id"], "context", b_path, None)
    ]
    assert await step("permission delete", "DELETE", perm) == [(b["id"], "context", b_path, None)]
    # A field update changes the tenant document only.
    patch = {"name": "Renamed"}
    assert await step("patch", "PATCH", f"/api/v1/tenants/{b['id']}", json=patch) == [
        (b["id"], "document", b_path, None)
    ]
    # A move: every tenant of the moved subtree, from its old path to its new one.
    new_a = f"{other['ancestry_path']}/{a['id']}"
    assert await step(
        "move", "POST", f"/api/v1/tenants/{a['id']}/move", json={"new_parent_id": other["id"]}
    ) == [
        (a["id"], "moved", new_a, a_path),
        (b["id"], "moved", f"{new_a}/{b['id']}", b_path),
    ]
    b_path = f"{new_a}/{b['id']}"
    assert await step("archive", "DELETE", f"/api/v1/tenants/{b['id']}") == [
        (b["id"], "archived", None, b_path)
    ]
    assert await step("restore", "POST", f"/api/v1/tenants/{b['id']}/restore") == [
        (b["id"], "context", b_path, None)
    ]
    batch = {"tenants": [{"name": "N", "slug": unique_slug()} for _ in range(3)]}
    for item in batch["tenants"]:
        item["parent_id"] = b["id"]
    log = await step("batch create", "POST", "/api/v1/tenants/batch", json=batch)
    assert [(change, path is not None) for _, change, path, _ in log] == [("context", True)] * 3
    await _write(client, "DELETE", f"/api/v1/tenants/{log[0][0]}", admin)
    purge = {"confirm": batch["tenants"][0]["slug"]}
    purged_path = log[0][2]
    assert await step("purge", "POST", f"/api/v1/tenants/{log[0][0]}/purge", json=purge) == [
        (log[0][0], "purged", None, purged_path)
    ]


async def test_re_encrypting_a_value_and_changes_outside_tenant_data_get_none(
    client, admin, db_conn
) -> None:
    tenant = await create_tenant(client, admin)
    await put_config(client, admin, tenant["id"], "db", {"pw": "x"}, sensitive=True, expect=201)
    before = await _current(client)
    # Key rotation rewrites ciphertexts only: nothing any context shows.
    await db_conn.execute(
        "UPDATE config_entries SET encrypted_value = encrypted_value || '' WHERE sensitive"
    )
    # An API key (audited, no tenant data).
    resp = await client.post(
        "/api/v1/api-keys", json={"name": "k", "scopes": ["read"]}, headers=admin
    )
    assert resp.status == 201, await resp.json()
    assert await _current(client) == before
    # Nothing is left behind by the transactions that got no revision.
    assert await db_conn.fetchval("SELECT count(*) FROM context_change_pending") == 0
    assert await db_conn.fetchval("SELECT count(*) FROM context_change_marks") == 0


async def test_a_rolled_back_change_leaves_no_revision(client, admin, db_conn) -> None:
    tenant = await create_tenant(client, admin)
    before = await _current(client)
    tx = db_conn.transaction()
    await tx.start()
    await db_conn.execute("UPDATE tenants SET name = 'x' WHERE id = $1", UUID(tenant["id"]))
    await tx.rollback()
    # A refused write (a lock above) changes nothing either.
    child = await create_tenant(client, admin, parent_id=tenant["id"])
    await put_config(client, admin, tenant["id"], "k", 1, locked=True, expect=201)
    status, _ = await put_config(client, admin, child["id"], "k", 2)
    assert status == 409
    assert await _current(client) == before + 2


async def test_a_move_that_fails_and_one_that_succeeds(client, admin) -> None:
    a = await create_tenant(client, admin)
    b = await create_tenant(client, admin, parent_id=a["id"])
    before = await _current(client)
    status, _ = await move(client, admin, a["id"], b["id"])  # a cycle
    assert status == 409
    assert await _current(client) == before
    await put_permission(client, admin, a["id"], "p", True, "LOCAL", expect=201)
    assert await _current(client) == before + 1


async def test_revision_order_is_commit_order_under_concurrent_commits(
    client, admin, db_url
) -> None:
    """Writers on six connections commit as fast as they can while readers on two more
    keep reading the log: a reader that sees revision n+1 must already see n (no
    revision ever appears below one a reader has seen), and every revision is there in
    the end, each with its own writer's change."""
    tenants = [(await create_tenant(client, admin))["id"] for _ in range(6)]
    start = await _current(client)
    rounds = 30
    done = asyncio.Event()
    problems: list[str] = []

    async def writer(tenant_id: str, seed: int) -> None:
        rng = random.Random(seed)
        conn = await asyncpg.connect(db_url)
        try:
            for n in range(rounds):
                async with conn.transaction():
                    await conn.execute(
                        "INSERT INTO config_entries (tenant_id, key, value) VALUES ($1, $2, $3)",
                        UUID(tenant_id),
                        f"k{n}",
                        "1",
                    )
                    # Some transactions do more before they commit.
                    for _ in range(rng.randrange(3)):
                        await conn.execute("SELECT pg_sleep(0)")
        finally:
            await conn.close()

    async def reader() -> None:
        conn = await asyncpg.connect(db_url)
        seen = start
        try:
            while not done.is_set():
                rows = await conn.fetch(
                    "SELECT revision FROM context_revisions WHERE revision > $1 ORDER BY 1",
                    seen,
                )
                got = [r["revision"] for r in rows]
                if got != list(range(seen + 1, seen + 1 + len(got))):
                    problems.append(f"after {seen} a reader saw {got}")
                if got:
                    seen = got[-1]
                await asyncio.sleep(0)
        finally:
            await conn.close()

    readers = [asyncio.create_task(reader()) for _ in range(2)]
    await asyncio.gather(*(writer(t, i) for i, t in enumerate(tenants)))
    done.set()
    await asyncio.gather(*readers)
    assert problems == []
    assert await _current(client) == start + 6 * rounds
    async with client.app[DATABASE].connection() as conn:
        rows = await conn.fetch(
            "SELECT tenant_id, count(*) AS n FROM context_revision_tenants "
            "WHERE revision > $1 GROUP BY tenant_id",
            start,
        )
    assert {str(r["tenant_id"]): r["n"] for r in rows} == dict.fromkeys(tenants, rounds)


async def test_an_entry_change_logs_each_tenant_below_by_what_else_happened_to_it(
    client, admin, db_conn
) -> None:
    """Below a changed entry: an active tenant's context changed; an archived one's only
    its document; one whose own row the same transaction changed (a document-only
    change alone) has a new context too, because the entry above it changed."""
    a = await create_tenant(client, admin)
    archived = await create_tenant(client, admin, parent_id=a["id"])
    renamed = await create_tenant(client, admin, parent_id=a["id"])
    plain = await create_tenant(client, admin, parent_id=a["id"])
    await _write(client, "DELETE", f"/api/v1/tenants/{archived['id']}", admin)
    before = await _current(client)
    async with db_conn.transaction():
        await db_conn.execute(
            "UPDATE tenants SET name = 'Renamed' WHERE id = $1", UUID(renamed["id"])
        )
        await db_conn.execute(
            "INSERT INTO config_entries (tenant_id, key, value) VALUES ($1, 'theme', '\"x\"')",
            UUID(a["id"]),
        )
    assert await _current(client) == before + 1
    assert sorted(await _log(client, before + 1)) == sorted([
        (a["id"], "context", a["ancestry_path"], None),
        (archived["id"], "document", None, None),
        (renamed["id"], "context", renamed["ancestry_path"], None),
        (plain["id"], "context", plain["ancestry_path"], None),
    ])  # fmt: skip
    # The field update alone changes the document only.
    async with db_conn.transaction():
        await db_conn.execute(
            "UPDATE tenants SET name = 'Again' WHERE id = $1", UUID(renamed["id"])
        )
    assert await _log(client, before + 2) == [
        (renamed["id"], "document", renamed["ancestry_path"], None)
    ]
