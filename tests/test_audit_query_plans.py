"""EXPLAIN over a log of 60,000 entries: the audit API and the retention batches read
indexes, never the whole log, with custom plans and with the generic plans that
prepared statements settle on (the filters are optional parameters)."""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg
import pytest

from service.base.ids import uuid7
from service.db.pool import connect
from service.db.queries import sql_root
from tests.support.databases import create_database, drop_database
from tests.support.seeding import seed_balanced
from tests.test_query_plans import explain, scans

ENTRIES = 60_000
EARLY = datetime(2020, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def log_db(admin_dsn: str, template_db: str) -> Iterator[str]:
    dsn = create_database(admin_dsn, template_db)
    yield dsn
    drop_database(admin_dsn, dsn)


@pytest.fixture(scope="module")
def seeded(log_db: str) -> list[list[UUID]]:
    async def seed() -> list[list[UUID]]:
        conn = await asyncpg.connect(log_db)
        try:
            levels = await seed_balanced(conn, roots=10, fanout=10, levels=2, prefix="a")
            tenants = [t for level in levels for t in level]
            rng = random.Random(7)
            now = datetime.now(UTC)
            rows = [
                (uuid7(), rng.choice(tenants) if i % 10 else None, f"actor-{i % 50}", "api_key",
                 rng.choice(("tenant.created", "tenant.updated", "consent.granted")),
                 "tenant", None, now - timedelta(minutes=ENTRIES - i))
                for i in range(ENTRIES)
            ]  # fmt: skip
            await conn.copy_records_to_table(
                "audit_logs", records=rows,
                columns=("id", "tenant_id", "actor_id", "actor_type", "action", "resource_type",
                         "resource_id", "created_at"),
            )  # fmt: skip
            # an outbox of 20,000 events, a webhook, and a delivery for every fourth event
            events = [
                (uuid7(), "tenant.updated", rng.choice(tenants), "{}", now - timedelta(minutes=i))
                for i in range(20_000)
            ]
            await conn.copy_records_to_table(
                "events", records=events,
                columns=("id", "type", "tenant_id", "payload", "created_at"),
            )  # fmt: skip
            hook = uuid7()
            await conn.execute(
                "INSERT INTO webhooks (id, url, events, encrypted_secret) "
                "VALUES ($1, 'https://h.example.com', ARRAY['tenant.updated'], 'v1:00:00:00')",
                hook,
            )
            deliveries = [
                (uuid7(), hook, e[0], "tenant.updated", ("success", "failed", "pending")[i % 3],
                 6, e[4])
                for i, e in enumerate(events[::4])
            ]  # fmt: skip
            await conn.copy_records_to_table(
                "webhook_deliveries", records=deliveries,
                columns=("id", "webhook_id", "event_id", "event_type", "status", "max_attempts",
                         "updated_at"),
            )  # fmt: skip
            await conn.execute("ANALYZE audit_logs; ANALYZE events; ANALYZE webhook_deliveries")
            return levels
        finally:
            await conn.close()

    return asyncio.run(seed())


@pytest.fixture
async def conn(log_db: str, seeded: list[list[UUID]]) -> AsyncIterator[asyncpg.Connection]:
    connection = await connect(log_db)
    try:
        yield connection
    finally:
        await connection.close()


def cases(levels: list[list[UUID]]) -> list[tuple[str, dict[str, Any]]]:
    tenant, mid = levels[2][123], levels[1][4]
    keys = ("cursor_id", "action", "resource_type", "actor_id", "created_from", "created_to")
    none = dict.fromkeys(keys)
    some = dict(zip(keys, (uuid7(), "tenant.updated", None, "actor-7", None, None), strict=True))
    batch = {
        "cutoff": EARLY,
        "batch_size": 1000,
        "after_at": EARLY - timedelta(days=1),
        "after_id": UUID(int=0),
    }
    return [
        ("list_audit_logs", {**none, "page_size": 51}),
        ("list_audit_logs", {**some, "page_size": 51}),
        ("list_tenant_audit_logs", {**none, "page_size": 51, "tenant_id": tenant}),
        ("list_tenant_audit_logs", {**some, "page_size": 51, "tenant_id": tenant}),
        ("list_tenant_audit_logs", {**none, "page_size": None, "tenant_id": tenant}),
        ("list_subtree_audit_logs", {**none, "page_size": 51, "root_id": mid}),
        ("get_audit_log", {"entry_id": uuid7()}),
        ("list_audit_chain_links", {"from_seq": 5000, "to_seq": 6000, "row_limit": 1000}),
        ("delete_expired_events", batch),
        ("delete_expired_deliveries", batch),
        ("find_expired_archived_leaves", {"cutoff": EARLY, "batch_size": 100}),
    ]


def purge_batch_selection() -> str:
    """The statement of migration 0031's audit_purge_batch that picks a batch, with its
    PL/pgSQL variables as the parameters they become ($1 cutoff, $2 after_at, $3
    after_id, $4 the row limit)."""
    text = (sql_root() / "migrations" / "0031_create_audit_owner_functions.sql").read_text()
    start = text.index("SELECT x.id\n        FROM audit_logs x")
    statement = text[start : text.index("FOR UPDATE SKIP LOCKED", start)]
    for name, param in (
        (r"greatest\(coalesce\(row_limit, 1\), 1\)", "$4::integer"),
        (r"\bcutoff\b", "$1::timestamptz"),
        (r"\bafter_at\b", "$2::timestamptz"),
        (r"\bafter_id\b", "$3::uuid"),
    ):
        statement, found = re.subn(name, param, statement)
        assert found, name
    return statement + "FOR UPDATE SKIP LOCKED"


@pytest.mark.parametrize("plan_mode", ["auto", "force_generic_plan"])
async def test_the_audit_purge_batch_uses_indexes(
    conn: asyncpg.Connection, seeded: list[list[UUID]], plan_mode: str
) -> None:
    await conn.execute(f"SET plan_cache_mode = {plan_mode}")
    statement = await conn.prepare(f"EXPLAIN (FORMAT JSON) {purge_batch_selection()}")
    plan = await statement.fetchval(EARLY, EARLY - timedelta(days=1), UUID(int=0), 1000)
    nodes = scans(plan[0]["Plan"])
    assert not [rel for node, rel in nodes if node == "Seq Scan"], nodes
    assert any("Index" in node for node, _ in nodes), nodes


@pytest.mark.parametrize("plan_mode", ["auto", "force_generic_plan"])
async def test_audit_and_retention_queries_use_indexes(
    conn: asyncpg.Connection, seeded: list[list[UUID]], plan_mode: str
) -> None:
    await conn.execute(f"SET plan_cache_mode = {plan_mode}")
    guarded = {"audit_logs", "audit_chain", "tenants", "tenant_closure"}
    for name, params in cases(seeded):
        plan = await explain(conn, name, params)
        seq = [rel for node, rel in plan if node == "Seq Scan" and rel in guarded]
        assert not seq, f"{name} ({plan_mode}) scans {seq} sequentially: {plan}"
        assert any("Index" in node for node, _ in plan), f"{name} uses no index: {plan}"
