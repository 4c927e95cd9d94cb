"""A quick figure for the config impact preview on a subtree of about 10,000 tenants
(docs/performance.md "Impact preview"): seeds 50,000 tenants in a throwaway embedded
PostgreSQL, puts a value above the subtree and own values on about 1 % of it, and
times the preview statements seven times each.

    .venv/bin/python -m bench.impact_preview
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Any
from uuid import UUID

import asyncpg

from bench.seed import seed_database
from bench.shapes import SeedPlan
from service.db.queries import Queries
from tests.support.databases import create_database, create_template, test_server

KEY = "preview.theme"
SUBTREE = (
    "SELECT ancestor_id, count(*) AS n FROM tenant_closure GROUP BY ancestor_id "
    "HAVING count(*) BETWEEN 9000 AND 12000 ORDER BY abs(count(*) - 10000) LIMIT 1"
)
# A value at the subtree's parent, one at its root, and own values at about one tenant
# in a hundred.
ENTRIES = (
    "INSERT INTO config_entries (tenant_id, key, value) "
    "SELECT c.ancestor_id, $2, '\"light\"'::jsonb FROM tenant_closure c "
    "WHERE c.descendant_id = $1 AND c.depth = 1 "
    "UNION ALL SELECT $1, $2, '\"mine\"'::jsonb "
    "UNION ALL SELECT c.descendant_id, $2, '\"own\"'::jsonb FROM tenant_closure c "
    "WHERE c.ancestor_id = $1 AND c.depth > 0 AND abs(hashtext(c.descendant_id::text)) % 100 = 0"
)

# The same for a permission: a policy above, one at the root, about 1 % own ones.
POLICIES = (
    "INSERT INTO permission_policies (tenant_id, key, value) "
    "SELECT c.ancestor_id, $2, true FROM tenant_closure c "
    "WHERE c.descendant_id = $1 AND c.depth = 1 "
    "UNION ALL SELECT $1, $2, false "
    "UNION ALL SELECT c.descendant_id, $2, true FROM tenant_closure c "
    "WHERE c.ancestor_id = $1 AND c.depth > 0 AND abs(hashtext(c.descendant_id::text)) % 100 = 0"
)


async def measure(dsn: str) -> None:
    started = time.monotonic()
    report = await seed_database(dsn, SeedPlan.for_total(50_000))
    print(f"seeded {report.tenants} tenants in {time.monotonic() - started:.0f} s")
    conn = await asyncpg.connect(dsn)
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    row = await conn.fetchrow(SUBTREE)
    assert row is not None
    tenant = row["ancestor_id"]
    await conn.execute(ENTRIES, tenant, KEY)
    await conn.execute("ANALYZE")
    own = await conn.fetchval("SELECT count(*) FROM config_entries WHERE key = $1", KEY)
    print(f"subtree of {row['n']} tenants; {own} entries of {KEY!r} (one above, one at its root)")
    queries = Queries.load()
    preview, shadowed = queries["preview_config_change"], queries["list_shadowed_config_entries"]
    cases: dict[str, dict[str, Any]] = {
        "set, locked": {"new_value": "neon", "new_locked": True, "removing": False},
        "set, unlocked": {"new_value": "neon", "new_locked": False, "removing": False},
        "delete": {"new_value": None, "new_locked": False, "removing": True},
    }
    for label, params in cases.items():
        times: list[float] = []
        total = 0
        for _ in range(7):
            start = time.perf_counter()
            async with conn.transaction(isolation="repeatable_read"):
                rows = await preview.many(
                    conn, tenant_id=tenant, key=KEY, new_sensitive=False,
                    after_id=UUID(int=0), row_limit=101, **params,
                )  # fmt: skip
                if params["new_locked"]:
                    await shadowed.many(conn, tenant_id=tenant, key=KEY, row_limit=100)
            times.append((time.perf_counter() - start) * 1000)
            total = rows[0]["total"] if rows else 0
        print(
            f"{label}: {total} tenants change; median {statistics.median(times):.0f} ms "
            f"(min {min(times):.0f}, max {max(times):.0f}) over 7 runs"
        )
    # A policy above the subtree and at about 1 % of it, then the two other previews.
    await conn.execute(POLICIES, tenant, "perm.preview")
    other = await conn.fetchval(
        "SELECT id FROM tenants WHERE parent_id IS NULL AND id <> (SELECT t.id FROM tenants t "
        "JOIN tenant_closure c ON c.ancestor_id = t.id WHERE c.descendant_id = $1 "
        "AND t.parent_id IS NULL)", tenant,
    )  # fmt: skip
    # the new root locks the key: every tenant of the moved subtree changes
    await conn.execute(
        "INSERT INTO config_entries (tenant_id, key, value, locked) "
        "VALUES ($1, $2, '\"dark\"'::jsonb, true)", other, KEY,
    )  # fmt: skip
    await conn.execute("ANALYZE")
    move, permission = queries["preview_move"], queries["preview_permission_change"]
    more: dict[str, Any] = {
        "permission set, LOCKED": (permission, {"key": "perm.preview", "new_value": False,
                                                "new_mode": "LOCKED", "removing": False}),
        "move under another root": (move, {"new_parent_id": other}),
    }  # fmt: skip
    for label, (query, params) in more.items():
        times = []
        for _ in range(7):
            start = time.perf_counter()
            async with conn.transaction(isolation="repeatable_read"):
                rows = await query.many(
                    conn, tenant_id=tenant, after_id=UUID(int=0), row_limit=101, **params
                )
            times.append((time.perf_counter() - start) * 1000)
            total = rows[0]["total"] if rows else 0
        print(
            f"{label}: {total} tenants change; median {statistics.median(times):.0f} ms "
            f"(min {min(times):.0f}, max {max(times):.0f}) over 7 runs"
        )
    await conn.close()


def main() -> None:
    with test_server(None) as admin_dsn:
        asyncio.run(measure(create_database(admin_dsn, create_template(admin_dsn))))


if __name__ == "__main__":
    main()
