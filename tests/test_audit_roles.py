"""The audit chain against the service's own database role (docs/security.md "Roles").

The service runs here as a role that is no superuser and owns nothing: it holds plain
DML (SELECT, INSERT, UPDATE, DELETE on every table, USAGE on sequences), as a deployment
gives its serving role. Through that role, the session variables that once opened the
append-only guards open nothing: an entry cannot be deleted or redacted, no checkpoint
can be recorded, and an audit.purged entry written by hand makes verification fail.
Retention and GDPR redaction, done by the service as that role, still work and keep the
chain valid.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from uuid import UUID

import asyncpg
import pytest
from aiohttp.test_utils import TestClient

from service.base.ids import uuid7
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.api import create_tenant, get_json

VERIFY = "/api/v1/audit-logs/verify"
PASSWORD = "plain-dml-role-password"


def _as_role(dsn: str, role: str) -> str:
    """The DSN with another user (its host, port or socket kept)."""
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(netloc=f"{role}:{PASSWORD}@{parts.netloc.rpartition('@')[2]}"))


@pytest.fixture
async def dml_url(fresh_db_url: str) -> AsyncIterator[str]:
    """A login role of this test holding plain DML on the test's database only."""
    role = f"tenant_dml_{secrets.token_hex(6)}"
    conn = await asyncpg.connect(fresh_db_url)
    try:
        await conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
        await conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        await conn.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"
        )
        await conn.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")
        yield _as_role(fresh_db_url, role)
    finally:
        await conn.execute(f"DROP OWNED BY {role}")
        await conn.close()
        # the test's app pool may still be closing: drop the role once it has gone
        admin = await asyncpg.connect(fresh_db_url)
        try:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role
            )
            await admin.execute(f"DROP ROLE IF EXISTS {role}")
        finally:
            await admin.close()


@pytest.fixture
def settings(dml_url: str, tmp_path: Path) -> Settings:
    # The service itself connects as the plain role (the database is migrated already).
    return Settings.from_env(base_env(dml_url, tmp_path))


@pytest.fixture
async def attacker(dml_url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(dml_url)
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture
async def superuser(fresh_db_url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(fresh_db_url)
    try:
        yield conn
    finally:
        await conn.close()


OLD_DOORS = (
    "SELECT set_config('tenant_service.audit_retention_before', "
    "(now() + interval '1 day')::text, true), "
    "set_config('tenant_service.audit_redaction', 'on', true), "
    "set_config('tenant_service.audit_chain_cut', '1000000', true)"
)


async def _attempt(conn: asyncpg.Connection, statement: str) -> None:
    async with conn.transaction():
        await conn.execute(OLD_DOORS)
        await conn.execute(statement)


async def refused(conn: asyncpg.Connection, *statements: str) -> None:
    """Each statement, in a transaction with the guards' old session variables set,
    fails for lack of privilege."""
    for statement in statements:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await _attempt(conn, statement)


async def key_created(
    client: TestClient, admin: dict[str, str], conn: asyncpg.Connection
) -> tuple[UUID, int]:
    resp = await client.post("/api/v1/api-keys", json={"name": "fresh"}, headers=admin)
    assert resp.status == 201, await resp.text()
    row = await conn.fetchrow(
        "SELECT a.id, c.seq FROM audit_logs a JOIN audit_chain c ON c.entry_id = a.id "
        "WHERE a.action = 'api_key.created' ORDER BY a.id DESC LIMIT 1"
    )
    assert row is not None
    return row["id"], row["seq"]


async def test_the_role_is_plain(attacker: asyncpg.Connection) -> None:
    row = await attacker.fetchrow(
        "SELECT rolsuper, rolcreaterole, pg_has_role(current_user, 'tenant_service_audit', "
        "'MEMBER') AS member FROM pg_roles WHERE rolname = current_user"
    )
    assert dict(row) == {"rolsuper": False, "rolcreaterole": False, "member": False}


async def test_plain_dml_cannot_rewrite_the_chain(
    client: TestClient, admin: dict[str, str], attacker: asyncpg.Connection
) -> None:
    tenant = await create_tenant(client, admin, metadata={"secret": "kept"})
    entry_id, seq = await key_created(client, admin, attacker)
    key_id = await attacker.fetchval("SELECT resource_id FROM audit_logs WHERE id = $1", entry_id)
    other = await attacker.fetchval(
        "SELECT id FROM audit_logs WHERE action = 'tenant.created' ORDER BY id DESC LIMIT 1"
    )
    recorded = await get_json(client, VERIFY, admin)
    assert recorded["valid"] is True
    before = [dict(r) for r in await attacker.fetch("SELECT * FROM audit_logs ORDER BY id")]
    links = [dict(r) for r in await attacker.fetch("SELECT * FROM audit_chain ORDER BY seq")]

    # deleting a fresh entry: by hand, or through retention's function with a fresh cutoff
    await refused(
        attacker,
        f"DELETE FROM audit_logs WHERE id = '{entry_id}'",
        "DELETE FROM audit_logs",
        f"DELETE FROM audit_chain WHERE seq = {seq}",
        "SELECT * FROM audit_purge_batch(now() + interval '1 day', '-infinity', "
        f"'{UUID(int=0)}', 1000, '{uuid7()}', 'x', 'system', NULL, NULL)",
        "SELECT * FROM audit_purge_batch(now() - interval '1 hour', '-infinity', "
        f"'{UUID(int=0)}', 1000, '{uuid7()}', 'x', 'system', NULL, NULL)",
    )
    # recording a checkpoint of one's own
    await refused(
        attacker,
        "INSERT INTO audit_purge_checkpoints (id, changes) VALUES "
        f"('{uuid7()}', '{{\"seqs\": [[{seq}, {seq}]]}}')",
        "UPDATE audit_purge_checkpoints SET changes = changes",
        "DELETE FROM audit_purge_checkpoints",
    )
    # redacting an entry: by hand, or through the GDPR function for a tenant that exists
    await refused(
        attacker,
        f"UPDATE audit_logs SET changes = '{{\"redacted\": true}}' WHERE id = '{other}'",
        f"SELECT audit_redact_tenants(ARRAY['{tenant['id']}']::uuid[])",
        # an id that is no tenant's (the key's: its entries name it)
        f"SELECT audit_redact_tenants(ARRAY['{key_id}']::uuid[])",
        f"INSERT INTO audit_deleted_tenants (id, xact) VALUES ('{key_id}', txid_current())",
    )
    # nor can it step around the guards
    await refused(
        attacker,
        "ALTER TABLE audit_logs DISABLE TRIGGER audit_logs_append_only",
        "SET LOCAL ROLE tenant_service_audit",
        "SET LOCAL session_replication_role = replica",
    )
    assert [dict(r) for r in await attacker.fetch("SELECT * FROM audit_logs ORDER BY id")] == before
    assert [
        dict(r) for r in await attacker.fetch("SELECT * FROM audit_chain ORDER BY seq")
    ] == links
    assert (await get_json(client, VERIFY, admin))["head"] == recorded["head"]


async def test_a_hand_written_checkpoint_fails_verification(
    client: TestClient,
    admin: dict[str, str],
    attacker: asyncpg.Connection,
    superuser: asyncpg.Connection,
) -> None:
    await create_tenant(client, admin)
    entry_id, seq = await key_created(client, admin, attacker)
    # what retention writes, by a role that may INSERT audit entries (the service's own)
    forged = (
        "INSERT INTO audit_logs (id, actor_id, actor_type, action, resource_type, changes) "
        "VALUES ($1, 'system', 'system', 'audit.purged', 'audit_log', $2::jsonb)"
    )
    body = (
        '{"cutoff": "2026-01-01T00:00:00.000Z", "entries": 1, "links_removed": 0, '
        f'"chain_start": null, "seqs": [[{seq}, {seq}]]'
    )
    forged_id = uuid7()
    async with attacker.transaction():
        await attacker.execute(forged, forged_id, body + "}")
    result = await get_json(client, VERIFY, admin)
    assert (result["valid"], result["first_break"]) == (
        False,
        {
            "reason": "unrecorded_checkpoint",
            "seq": None,
            "entry_id": str(forged_id),
            "detail": "an audit.purged entry that retention did not record (a forged checkpoint)",
        },
    )
    # a superuser deleting the entry with the guards off and writing the checkpoint as an
    # entry gets no further: the entry is missing and no recorded checkpoint lists it
    async with superuser.transaction():
        await superuser.execute("SET LOCAL session_replication_role = replica")
        await superuser.execute("DELETE FROM audit_logs WHERE action = 'audit.purged'")
        await superuser.execute("DELETE FROM audit_logs WHERE id = $1", entry_id)
        await superuser.execute(forged, uuid7(), body + "}")
    result = await get_json(client, VERIFY, admin)
    assert (result["valid"], result["first_break"]["reason"]) == (False, "missing_entry")
    assert result["first_break"]["seq"] == seq


async def backdate_all(conn: asyncpg.Connection, days: int) -> None:
    """Age every entry (a superuser, with the guards off) and rebuild the chain."""
    async with conn.transaction():
        await conn.execute("SET LOCAL session_replication_role = replica")
        await conn.execute(
            f"UPDATE audit_logs SET created_at = created_at - interval '{days} days'"
        )
        await conn.execute("DELETE FROM audit_chain")
    async with conn.transaction():
        await conn.execute("SELECT audit_chain_link(a) FROM audit_logs a ORDER BY a.id")


async def test_retention_and_redaction_work_as_the_plain_role(
    client: TestClient, admin: dict[str, str], superuser: asyncpg.Connection
) -> None:
    parent = await create_tenant(client, admin)
    await create_tenant(client, admin, parent_id=parent["id"], metadata={"a": 1})
    await backdate_all(superuser, 400)
    old = await superuser.fetchval("SELECT count(*) FROM audit_logs")
    await create_tenant(client, admin)  # a recent entry the chain starts at
    resp = await client.post("/api/v1/maintenance/purge-expired", json={}, headers=admin)
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["audit_logs"] == old
    result = await get_json(client, VERIFY, admin)
    assert (result["valid"], result["first_break"]) == (True, None)
    # the checkpoints retention recorded are its audit.purged entries, id and body
    recorded = await superuser.fetch(
        "SELECT id, changes::text FROM audit_purge_checkpoints ORDER BY id"
    )
    shown = await superuser.fetch(
        "SELECT id, changes::text FROM audit_logs WHERE action = 'audit.purged' ORDER BY id"
    )
    assert len(recorded) >= 1
    assert [tuple(r) for r in recorded] == [tuple(s) for s in shown]

    # a GDPR purge of a tenant with recent entries redacts them
    tenant = await create_tenant(client, admin, metadata={"secret": "gone"})
    await client.patch(f"/api/v1/tenants/{tenant['id']}", json={"name": "N"}, headers=admin)
    assert (await client.delete(f"/api/v1/tenants/{tenant['id']}", headers=admin)).ok
    resp = await client.post(
        f"/api/v1/tenants/{tenant['id']}/purge", json={"confirm": tenant["slug"]}, headers=admin
    )
    assert resp.status == 200, await resp.text()
    redacted = await superuser.fetchval(
        "SELECT count(*) FROM audit_logs WHERE changes = '{\"redacted\": true}'"
    )
    assert redacted >= 2
    result = await get_json(client, VERIFY, admin)
    assert (result["valid"], result["redacted"]) == (True, redacted)
