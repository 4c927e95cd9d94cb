"""The tamper-evident audit chain: a clean chain verifies, and an offline recomputation
from the export agrees; edits, deletions, reordering and unchained rows made with SQL
(bypassing the guards as a superuser would) are each found; GDPR redaction and
retention keep the chain verifiable; concurrent writers keep one valid chain."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg
import pytest
from aiohttp.test_utils import TestClient

from service.base.ids import uuid7
from service.settings.options import Settings
from service.usecases.compliance.chain_hash import GENESIS, changes_digest, entry_hash
from tests.conftest import base_env
from tests.support.api import create_tenant, get_json
from tests.support.gdpr import error_of
from tests.support.keys import key_headers

VERIFY = "/api/v1/audit-logs/verify"


@pytest.fixture
def settings(fresh_db_url: str, tmp_path: Path) -> Settings:
    # Each test tampers with its own database.
    return Settings.from_env(base_env(fresh_db_url, tmp_path))


async def history(client: TestClient, admin: dict[str, str]) -> list[dict[str, Any]]:
    """A few changes of several kinds; returns the tenants."""
    parent = await create_tenant(client, admin, metadata={"note": 'é "q" \n\t\u0001'})
    child = await create_tenant(client, admin, parent_id=parent["id"])
    for name in ("Renamed", "Again"):
        resp = await client.patch(f"/api/v1/tenants/{child['id']}", json={"name": name},
                                  headers=admin)  # fmt: skip
        assert resp.status == 200
    return [parent, child]


async def verify(client: TestClient, admin: dict[str, str], query: str = "") -> dict[str, Any]:
    return await get_json(client, f"{VERIFY}{query}", admin)


async def tamper(conn: asyncpg.Connection, *statements: str) -> None:
    """Run statements with triggers off, as a superuser rewriting history would."""
    async with conn.transaction():
        await conn.execute("SET LOCAL session_replication_role = replica")
        for statement in statements:
            await conn.execute(statement)


async def links(conn: asyncpg.Connection) -> list[asyncpg.Record]:
    return await conn.fetch("SELECT seq, entry_id FROM audit_chain ORDER BY seq")


async def export_all(client: TestClient, admin: dict[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    query = "limit=3"
    while True:
        resp = await client.get(f"/api/v1/audit-logs/chain?{query}", headers=admin)
        assert resp.status == 200
        out.extend(await resp.json())
        cursor = resp.headers.get("X-Next-Cursor")
        if cursor is None:
            return out
        query = f"limit=3&from_seq={cursor}"


def offline_check(exported: list[dict[str, Any]]) -> bytes:
    """What docs/security.md's script does: recompute every link; returns the last hash."""
    prev = GENESIS
    for link in exported:
        assert bytes.fromhex(link["prev_hash"]) == prev
        e = link["entry"]
        digest = bytes.fromhex(link["changes_digest"])
        assert changes_digest(e["changes_text"]) == digest
        fields = {k: e[k] for k in ("id", "tenant_id", "actor_id", "actor_type", "action",
                                    "resource_type", "resource_id", "request_id",
                                    "ip_address", "created_at_us")}  # fmt: skip
        prev = entry_hash(prev, link["seq"], fields, digest)
        assert prev.hex() == link["entry_hash"]
    return prev


def docs_script() -> str:
    text = (Path(__file__).parent.parent / "docs" / "security.md").read_text()
    return text.split("```python\n", 1)[1].split("```", 1)[0]


async def test_a_clean_chain_verifies_and_recomputes_offline(
    client, admin, db_conn, tmp_path: Path
) -> None:
    await history(client, admin)
    total = await db_conn.fetchval("SELECT count(*) FROM audit_logs")
    result = await verify(client, admin)
    head = await db_conn.fetchrow("SELECT entry_hash FROM audit_chain ORDER BY seq DESC LIMIT 1")
    assert result == {
        "valid": True, "from_seq": 1, "to_seq": total, "checked": total, "redacted": 0,
        "purged": 0, "head": {"seq": total, "hash": bytes(head["entry_hash"]).hex()},
        "first_break": None,
    }  # fmt: skip
    exported = await export_all(client, admin)
    assert [x["seq"] for x in exported] == list(range(1, total + 1))
    assert offline_check(exported).hex() == result["head"]["hash"]
    # the script docs/security.md gives auditors agrees
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(exported))
    script = tmp_path / "check.py"
    script.write_text(docs_script())
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(path), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0
    assert out.decode().strip() == f"chain valid through {total} head {result['head']['hash']}"
    # a sub-range starts from the stored hash of the link before it
    part = await verify(client, admin, "?from_seq=2&to_seq=3")
    assert (part["valid"], part["from_seq"], part["to_seq"], part["checked"]) == (True, 2, 3, 2)


async def test_the_chain_is_global_and_checks_its_input(client, admin) -> None:
    parent = await create_tenant(client, admin)
    scoped = await key_headers(client.app, tenant_id=parent["id"])
    resp = await client.get(VERIFY, headers=scoped)
    assert await error_of(resp) == (403, "TENANT_ACCESS_DENIED")
    resp = await client.get(f"{VERIFY}?from_seq=5&to_seq=2", headers=admin)
    assert await error_of(resp) == (400, "VALIDATION_ERROR")
    resp = await client.get(f"{VERIFY}?from_seq=0", headers=admin)
    assert await error_of(resp) == (400, "VALIDATION_ERROR")


TAMPERING: dict[str, tuple[str, ...]] = {
    "edited field": (
        "UPDATE audit_logs SET actor_id = 'someone-else' WHERE id = (SELECT entry_id "
        "FROM audit_chain WHERE seq = 3)",
    ),
    "edited changes": (
        "UPDATE audit_logs SET changes = '{\"after\": null}' WHERE id = (SELECT entry_id "
        "FROM audit_chain WHERE seq = 3)",
    ),
    "deleted entry": (
        "DELETE FROM audit_logs WHERE id = (SELECT entry_id FROM audit_chain WHERE seq = 3)",
    ),
    "deleted entry and link": (
        "DELETE FROM audit_logs WHERE id = (SELECT entry_id FROM audit_chain WHERE seq = 3)",
        "DELETE FROM audit_chain WHERE seq = 3",
    ),
    "swapped times": (
        "UPDATE audit_logs a SET created_at = b.created_at FROM (SELECT l.id, l.created_at "
        "FROM audit_logs l JOIN audit_chain c ON c.entry_id = l.id WHERE c.seq = 4) b "
        "WHERE a.id = (SELECT entry_id FROM audit_chain WHERE seq = 3)",
    ),
    "swapped links": (
        "UPDATE audit_chain SET seq = -3 WHERE seq = 3",
        "UPDATE audit_chain SET seq = 3 WHERE seq = 4",
        "UPDATE audit_chain SET seq = 4 WHERE seq = -3",
    ),
}
EXPECTED = {
    "edited field": ("hash_mismatch", 3),
    "edited changes": ("changes_mismatch", 3),
    "deleted entry": ("missing_entry", 3),
    "deleted entry and link": ("sequence_gap", 3),
    "swapped times": ("hash_mismatch", 3),
    "swapped links": ("link_mismatch", 3),
}


@pytest.mark.parametrize("case", sorted(TAMPERING))
async def test_tampering_is_found(client, admin, db_conn, case: str) -> None:
    await history(client, admin)
    assert (await verify(client, admin))["valid"]
    await tamper(db_conn, *TAMPERING[case])
    result = await verify(client, admin)
    broken = result["first_break"]
    assert (result["valid"], broken["reason"], broken["seq"]) == (False, *EXPECTED[case])
    # the links before the break were checked
    assert result["checked"] == 2


async def test_removed_ends_and_unchained_rows_are_found(client, admin, db_conn) -> None:
    await history(client, admin)
    before = await links(db_conn)
    # the oldest entries, links and all: the chain starts later without a checkpoint
    await tamper(db_conn, "DELETE FROM audit_logs WHERE id IN (SELECT entry_id FROM "
                          "audit_chain WHERE seq <= 2)",
                 "DELETE FROM audit_chain WHERE seq <= 2")  # fmt: skip
    broken = (await verify(client, admin))["first_break"]
    assert (broken["reason"], broken["seq"]) == ("unanchored_start", 3)
    # the newest entry
    last = before[-1]["seq"]
    await tamper(db_conn, f"DELETE FROM audit_logs WHERE id = '{before[-1]['entry_id']}'")
    broken = (await verify(client, admin, "?from_seq=4"))["first_break"]
    assert (broken["reason"], broken["seq"]) == ("missing_entry", last)
    # an entry slipped in with the chain trigger off
    forged = (
        "INSERT INTO audit_logs (id, actor_id, actor_type, action, resource_type) "
        f"VALUES ('{uuid7()}', 'x', 'system', 'forged', 'x')"
    )
    await tamper(db_conn, forged)
    result = await verify(client, admin, f"?from_seq=4&to_seq={last - 1}")
    assert (result["valid"], result["first_break"]["reason"]) == (False, "unchained_entry")


async def test_gdpr_redaction_keeps_the_chain_verifiable(client, admin, db_conn) -> None:
    parent, child = await history(client, admin)
    for tenant in (child, parent):
        assert (await client.delete(f"/api/v1/tenants/{tenant['id']}", headers=admin)).ok
    resp = await client.post(f"/api/v1/tenants/{child['id']}/purge",
                             json={"confirm": child["slug"]}, headers=admin)  # fmt: skip
    assert resp.status == 200, await resp.text()
    redacted = await db_conn.fetchval(
        "SELECT count(*) FROM audit_logs WHERE changes = '{\"redacted\": true}'"
    )
    assert redacted > 0
    result = await verify(client, admin)
    assert (result["valid"], result["redacted"]) == (True, redacted)


async def backdate_all(conn: asyncpg.Connection, days: int) -> None:
    await tamper(conn, f"UPDATE audit_logs SET created_at = created_at - interval '{days} days'")
    # backdating changed the hashed fields: rebuild the chain from scratch for the test
    await tamper(conn, "DELETE FROM audit_chain")
    async with conn.transaction():
        await conn.execute("SELECT audit_chain_link(a) FROM audit_logs a ORDER BY a.id")


async def test_retention_keeps_the_chain_verifiable(client, admin, db_conn) -> None:
    await history(client, admin)
    await backdate_all(db_conn, 400)
    kept = await create_tenant(client, admin)  # one recent entry after the old ones
    old = await db_conn.fetchval("SELECT count(*) FROM audit_logs WHERE created_at < now() - "
                                 "interval '300 days'")  # fmt: skip
    assert (await verify(client, admin))["valid"]
    resp = await client.post("/api/v1/maintenance/purge-expired", json={}, headers=admin)
    assert resp.status == 200
    assert (await resp.json())["audit_logs"] == old
    # the old links went with their entries: the chain starts at the recent entry's link
    first = await db_conn.fetchval("SELECT min(seq) FROM audit_chain")
    entry = await db_conn.fetchval("SELECT entry_id FROM audit_chain WHERE seq = $1", first)
    assert await db_conn.fetchval("SELECT tenant_id FROM audit_logs WHERE id = $1", entry) == UUID(
        kept["id"]
    )
    result = await verify(client, admin)
    assert (result["valid"], result["from_seq"], result["first_break"]) == (True, first, None)
    # removing the new first link by hand is still found
    await tamper(db_conn, f"DELETE FROM audit_chain WHERE seq = {first}")
    broken = (await verify(client, admin))["first_break"]
    assert (broken["reason"], broken["seq"]) == ("unanchored_start", first + 1)


async def test_retention_gaps_in_the_middle_are_listed(client, admin, db_conn) -> None:
    await history(client, admin)
    # entries written after others but backdated (as test_retention does): gaps in the middle
    await tamper(db_conn, "INSERT INTO audit_logs (id, actor_id, actor_type, action, "
                          f"resource_type, created_at) VALUES ('{uuid7()}', 'old', 'system', "
                          "'tenant.updated', 'tenant', now() - interval '400 days')")  # fmt: skip
    async with db_conn.transaction():  # the trigger was off: link it as it would have been
        await db_conn.execute(
            "SELECT audit_chain_link(a) FROM audit_logs a WHERE a.actor_id = 'old'"
        )
    await create_tenant(client, admin)
    resp = await client.post("/api/v1/maintenance/purge-expired", json={}, headers=admin)
    assert (await resp.json())["audit_logs"] == 1
    result = await verify(client, admin)
    assert (result["valid"], result["purged"]) == (True, 1)


async def test_concurrent_writers_keep_one_valid_chain(client, admin, fresh_db_url) -> None:
    await history(client, admin)

    async def writer(conn: asyncpg.Connection, n: int) -> None:
        for i in range(n):
            async with conn.transaction():
                await conn.execute(
                    "INSERT INTO audit_logs (id, actor_id, actor_type, action, resource_type, "
                    "changes) SELECT u, 'w', 'system', 'concurrent', 'x', jsonb_build_object"
                    "('i', $2::int) FROM unnest($1::uuid[]) AS u",
                    [uuid7(), uuid7()], i,
                )  # fmt: skip

    conns = [await asyncpg.connect(fresh_db_url) for _ in range(6)]
    try:
        await asyncio.gather(*(writer(c, 20) for c in conns))
    finally:
        for c in conns:
            await c.close()
    result = await verify(client, admin)
    assert result["valid"], result
    assert result["checked"] == result["head"]["seq"] >= 240


async def test_a_stale_snapshot_is_retried_not_forked(client, admin, fresh_db_url) -> None:
    await history(client, admin)
    old, new = await asyncpg.connect(fresh_db_url), await asyncpg.connect(fresh_db_url)
    insert = (
        "INSERT INTO audit_logs (id, actor_id, actor_type, action, resource_type) "
        "VALUES ($1, 's', 'system', 'snapshot', 'x')"
    )
    try:
        stale = old.transaction(isolation="repeatable_read")
        await stale.start()
        await old.execute(insert, uuid7())  # the snapshot is taken here
        await new.execute(insert, uuid7())  # another writer commits a newer link
        with pytest.raises(asyncpg.SerializationError):
            await stale.commit()
    finally:
        await old.close()
        await new.close()
    assert (await verify(client, admin))["valid"]
