"""The tree invariants every test of moves and concurrency checks.

For every tenant: the closure table equals the transitive closure of parent_id; the
ancestry path is the parent's path plus its own id; depth is the parent's plus one;
no tenant is its own ancestor (no cycle); no archived tenant has an active child;
tenant_config_holders lists exactly the tenants that have config entries, with their
count and current path (migration 0028); each row's document parts (migration 0029) put
together around its path, depth and config (tenant_document_texts, migration 0052) make
row_to_json of REFERENCE_ROWS.
"""

from __future__ import annotations

import asyncpg

CLOSURE_FROM_PARENTS = """
WITH RECURSIVE chain AS (
    SELECT id AS descendant_id, id AS ancestor_id, 0 AS depth FROM tenants
    UNION ALL
    SELECT c.descendant_id, t.parent_id, c.depth + 1
    FROM chain c JOIN tenants t ON t.id = c.ancestor_id
    WHERE t.parent_id IS NOT NULL AND c.depth < 1000
)
SELECT descendant_id, ancestor_id, depth FROM chain
"""

# Rows in tenant_config_holders or in what it should hold, but not in both.
CONFIG_HOLDERS_WRONG = """
WITH
expected AS (
    -- each tenant with entries, its path and how many
    SELECT t.id AS tenant_id, t.ancestry_path, count(*)::integer AS entries
    FROM config_entries ce
    JOIN tenants t ON t.id = ce.tenant_id
    GROUP BY t.id, t.ancestry_path
),
stored AS (
    -- what the triggers keep
    SELECT tenant_id, ancestry_path, entries FROM tenant_config_holders
)
SELECT count(*)
FROM ((SELECT * FROM expected EXCEPT ALL SELECT * FROM stored)
      UNION ALL
      (SELECT * FROM stored EXCEPT ALL SELECT * FROM expected)) AS differences
"""

# Each tenant's document as row_to_json renders a row of its values: the reference the
# service's one renderer (the parts a trigger writes into each row, put together by
# assemble_tenant_document, migration 0052) is checked against. A row's columns are the
# document's keys in order (the tenant_documents view of migration 0014, which the
# service no longer reads): uuids as strings, config masked as tenant_details masks it,
# times as svc_iso_time writes them.
REFERENCE_ROWS = """
SELECT td.id, td.parent_id, td.name, td.slug, td.ancestry_path, td.depth, td.config,
       td.metadata, td.isolation_strategy, td.region, td.status,
       svc_iso_time(td.deleted_at) AS deleted_at,
       svc_iso_time(td.created_at) AS created_at,
       svc_iso_time(td.updated_at) AS updated_at
FROM tenant_details td
"""

# Tenants whose stored document parts, around their path, depth and config, are not their
# document.
DOCUMENT_PARTS_WRONG = f"""
SELECT count(*)
FROM tenant_document_texts t
JOIN ({REFERENCE_ROWS}) AS d ON d.id = t.id
WHERE t.document <> row_to_json(d)::text
"""


async def tree_problems(conn: asyncpg.Connection) -> list[str]:
    problems: list[str] = []
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        derived = {tuple(r) for r in await conn.fetch(CLOSURE_FROM_PARENTS)}
        stored = {
            tuple(r)
            for r in await conn.fetch(
                "SELECT descendant_id, ancestor_id, depth FROM tenant_closure"
            )
        }
        if derived != stored:
            problems.append(
                f"closure differs from parent chains: {len(stored - derived)} extra, "
                f"{len(derived - stored)} missing"
            )
        if any(depth >= 1000 for _, _, depth in derived):
            problems.append("a parent chain does not end (cycle)")
        rows = await conn.fetch(
            """
            SELECT t.id, t.ancestry_path, t.depth, p.ancestry_path AS parent_path,
                   p.depth AS parent_depth, t.parent_id
            FROM tenants t LEFT JOIN tenants p ON p.id = t.parent_id
            """
        )
        for r in rows:
            expected = f"{r['parent_path'] or ''}/{r['id']}"
            if r["ancestry_path"] != expected:
                problems.append(f"{r['id']}: path {r['ancestry_path']} != {expected}")
            expected_depth = 0 if r["parent_id"] is None else r["parent_depth"] + 1
            if r["depth"] != expected_depth:
                problems.append(f"{r['id']}: depth {r['depth']} != {expected_depth}")
        orphans = await conn.fetchval(
            """
            SELECT count(*) FROM tenants c JOIN tenants p ON p.id = c.parent_id
            WHERE p.status = 'archived' AND c.status = 'active'
            """
        )
        if orphans:
            problems.append(f"{orphans} active tenants under archived parents")
        wrong = await conn.fetchval(CONFIG_HOLDERS_WRONG)
        if wrong:
            problems.append(f"{wrong} rows of tenant_config_holders differ from the entries")
        stale = await conn.fetchval(DOCUMENT_PARTS_WRONG)
        if stale:
            problems.append(f"{stale} tenants' stored document parts differ from the document")
    return problems
