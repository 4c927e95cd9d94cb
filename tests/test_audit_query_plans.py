"""EXPLAIN over a log of 60,000 entries: the audit API and the retention batches read
indexes, never the whole log, with custom plans and with the generic plans that
prepared statements settle on (the filters are optional parameters)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg
import pytest

from service.db.pool import connect
from service.ids import uuid7
from tests.support.databases import create_database, drop_database
from tests.support.seeding import seed_balanced
from tests.test_query_plans import explain

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


def cases(levels: list[list[UUID]]) -> list[tuple[str, tuple[Any, ...]]]:
    tenant, mid = levels[2][123], levels[1][4]
    none = (None, None, None, None, None, None)
    some = (uuid7(), "tenant.updated", None, "actor-7", None, None)
    return [
        ("list_audit_logs", (*none, 51)),
        ("list_audit_logs", (*some, 51)),
        ("list_tenant_audit_logs", (*none, 51, tenant)),
        ("list_tenant_audit_logs", (*some, 51, tenant)),
        ("list_tenant_audit_logs", (*none, None, tenant)),
        ("list_subtree_audit_logs", (*none, 51, mid)),
        ("get_audit_log", (uuid7(),)),
        ("delete_expired_audit_logs", (EARLY, 1000, EARLY - timedelta(days=1), UUID(int=0))),
        ("delete_expired_events", (EARLY, 1000, EARLY - timedelta(days=1), UUID(int=0))),
        ("delete_expired_deliveries", (EARLY, 1000, EARLY - timedelta(days=1), UUID(int=0))),
        ("find_expired_archived_leaves", (EARLY, 100)),
    ]


@pytest.mark.parametrize("plan_mode", ["auto", "force_generic_plan"])
async def test_audit_and_retention_queries_use_indexes(
    conn: asyncpg.Connection, seeded: list[list[UUID]], plan_mode: str
) -> None:
    await conn.execute(f"SET plan_cache_mode = {plan_mode}")
    guarded = {"audit_logs", "tenants", "tenant_closure"}
    for name, args in cases(seeded):
        plan = await explain(conn, name, *args)
        seq = [rel for node, rel in plan if node == "Seq Scan" and rel in guarded]
        assert not seq, f"{name} ({plan_mode}) scans {seq} sequentially: {plan}"
        assert any("Index" in node for node, _ in plan), f"{name} uses no index: {plan}"
