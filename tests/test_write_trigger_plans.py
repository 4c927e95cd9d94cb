"""EXPLAIN of what a small write runs at commit, at 11,110 tenants: the revision and
history triggers look notes up in tenants and tenant_closure by index, never by reading
the whole table (with nested loops off for their own joins, a few notes once joined
tenants as a hash over every row: 264 ms per create at 1,000,000 tenants). auto_explain
logs every nested statement's plan to the session."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from uuid import UUID

import asyncpg
import pytest

from service.db.pool import connect
from tests.support.databases import create_database, drop_database
from tests.support.seeding import seed_balanced

BIG = {"tenants", "tenant_closure", "config_entries", "tenant_history", "config_history"}


@pytest.fixture(scope="module")
def seeded(admin_dsn: str, template_db: str) -> Iterator[tuple[str, list[list[UUID]]]]:
    dsn = create_database(admin_dsn, template_db)

    async def seed() -> list[list[UUID]]:
        conn = await asyncpg.connect(dsn)
        try:
            levels = await seed_balanced(conn, roots=10, fanout=10, levels=3)
            # Entries on about 30 % of tenants (their history versions come at commit).
            await conn.execute(
                "INSERT INTO config_entries (tenant_id, key, value)"
                " SELECT id, k, '\"v\"'::jsonb FROM tenants,"
                " unnest(ARRAY['theme', 'limits']) AS k WHERE random() < 0.3"
            )
            await conn.execute("ANALYZE")
            return levels
        finally:
            await conn.close()

    levels = asyncio.run(seed())
    yield dsn, levels
    drop_database(admin_dsn, dsn)


@pytest.fixture
async def conn(seeded: tuple[str, list[list[UUID]]]) -> AsyncIterator[asyncpg.Connection]:
    connection = await connect(seeded[0])
    try:
        yield connection
    finally:
        await connection.close()


async def _plans_of(conn: asyncpg.Connection, statements: list[tuple[str, tuple]]) -> str:
    """Every plan the statements and their triggers ran, committed as one transaction."""
    logged: list[str] = []
    conn.add_log_listener(lambda _c, message: logged.append(str(message.message)))
    await conn.execute(
        "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0;"
        " SET auto_explain.log_nested_statements = on; SET client_min_messages = log"
    )
    try:
        async with conn.transaction():
            for sql, args in statements:
                await conn.execute(sql, *args)
        await conn.execute("SELECT 1")  # the notices of the commit arrive before this
    finally:
        await conn.execute("RESET client_min_messages")
    return "\n".join(logged)


def _scanned(plans: str) -> set[str]:
    return set(re.findall(r"Seq Scan on (\w+)", plans)) & BIG


async def test_a_create_reads_no_whole_table_at_commit(
    conn: asyncpg.Connection, seeded: tuple[str, list[list[UUID]]]
) -> None:
    parent = seeded[1][2][5]
    row = await conn.fetchrow("SELECT ancestry_path, depth FROM tenants WHERE id = $1", parent)
    tid = uuid.uuid4()
    plans = await _plans_of(conn, [(
        "INSERT INTO tenants (id, parent_id, name, slug, ancestry_path, depth,"
        " isolation_strategy, region, document_head, document_tail)"
        " VALUES ($1, $2, 'T', $3, $4, $5, 'SHARED_RLS', 'default', '', '')",
        (tid, parent, f"w_{tid.hex[:12]}", f"{row['ancestry_path']}/{tid}", row["depth"] + 1),
    )])  # fmt: skip
    assert "context_revision_tenants" in plans  # the commit's statements were logged
    assert _scanned(plans) == set(), plans
    # Nothing costed as if forbidden (PostgreSQL 15 adds 10^10 per disabled node), which
    # would JIT-compile the statement at every commit.
    assert "JIT:" not in plans, plans


async def test_a_config_write_below_a_subtree_reads_no_whole_table_at_commit(
    conn: asyncpg.Connection, seeded: tuple[str, list[list[UUID]]]
) -> None:
    tenant = seeded[1][1][3]  # 10 tenants below it
    plans = await _plans_of(conn, [(
        "INSERT INTO config_entries (tenant_id, key, value) VALUES ($1, 'plan', '\"pro\"')"
        " ON CONFLICT (tenant_id, key) DO UPDATE SET value = EXCLUDED.value",
        (tenant,),
    )])  # fmt: skip
    assert "context_revision_tenants" in plans
    assert _scanned(plans) == set(), plans
    assert "JIT:" not in plans, plans


async def test_the_history_trigger_plans_its_statements_once(
    conn: asyncpg.Connection, seeded: tuple[str, list[list[UUID]]]
) -> None:
    """Generic plans (migration 0049): the history statements run with the trigger's
    arrays as parameters, planned once per connection. A custom plan, made again at
    every commit under the commit-order lock, shows the array's values instead."""
    tenant = seeded[1][1][4]
    plans = await _plans_of(conn, [(
        "INSERT INTO config_entries (tenant_id, key, value) VALUES ($1, 'plan', '\"pro\"')"
        " ON CONFLICT (tenant_id, key) DO UPDATE SET value = EXCLUDED.value",
        (tenant,),
    )])  # fmt: skip
    history = [p for p in plans.split("Query Text:") if "Update on config_history" in p]
    assert history, plans
    assert re.search(r"tenant_id = ANY \(\$\d+\)", history[0]), history[0]
    assert str(tenant) not in history[0]


async def test_the_history_finds_a_tenants_open_version_by_its_end(
    conn: asyncpg.Connection, seeded: tuple[str, list[list[UUID]]]
) -> None:
    """Migration 0054: the tenant statement of the history trigger finds each noted
    tenant's open version with one backward probe of tenant_history_valid_to_idx, and
    reaches versions through tenant_history_pkey only by (tenant_id, valid_from). Through
    the primary key with a filter on valid_to (a plan the generic plan could fall to at
    10,000,000 tenants) it read every version of each tenant."""
    tenant = seeded[1][2][7]
    for n in range(20):  # versions to read past
        await conn.execute("UPDATE tenants SET name = $2 WHERE id = $1", tenant, f"v{n}")
    plans = await _plans_of(conn, [("UPDATE tenants SET name = 'last' WHERE id = $1", (tenant,))])
    history = [p for p in plans.split("Query Text:") if "Update on tenant_history" in p]
    assert history, plans
    assert "Index Scan Backward using tenant_history_valid_to_idx" in history[0], history[0]
    lines = history[0].splitlines()
    for i, line in enumerate(lines):
        if "using tenant_history_pkey" in line:
            assert "valid_from" in lines[i + 1], history[0]
    versions = await conn.fetch(
        "SELECT name, valid_to FROM tenant_history WHERE tenant_id = $1 ORDER BY valid_from",
        tenant,
    )
    assert [v["name"] for v in versions][-2:] == ["v19", "last"]
    assert [v["valid_to"] for v in versions].count(9223372036854775807) == 1


async def _move(conn: asyncpg.Connection, tenant: UUID, parent: UUID | None) -> list[tuple]:
    """The three statements of a move (sql/queries/tenants.sql, move_subtree)."""
    where = "SELECT ancestry_path, depth FROM tenants WHERE id = $1"
    node = await conn.fetchrow(where, tenant)
    above = None if parent is None else await conn.fetchrow(where, parent)
    new_path = f"{above['ancestry_path'] if above else ''}/{tenant}"
    delta = (above["depth"] + 1 if above else 0) - node["depth"]
    return [
        ("DELETE FROM tenant_closure c USING tenant_closure sub, tenant_closure anc"
         " WHERE sub.ancestor_id = $1 AND anc.descendant_id = $1 AND anc.depth > 0"
         " AND c.ancestor_id = anc.ancestor_id AND c.descendant_id = sub.descendant_id",
         (tenant,)),
        *([("INSERT INTO tenant_closure (ancestor_id, descendant_id, depth)"
            " SELECT anc.ancestor_id, sub.descendant_id, anc.depth + sub.depth + 1"
            " FROM tenant_closure anc JOIN tenant_closure sub ON sub.ancestor_id = $1"
            " WHERE anc.descendant_id = $2", (tenant, parent))] if parent else []),
        ("UPDATE tenants t SET ancestry_path = $2::text || substr(t.ancestry_path,"
         " length($3::text) + 1), depth = t.depth + $4::integer,"
         " parent_id = CASE WHEN t.id = $1 THEN $5::uuid ELSE t.parent_id END,"
         " updated_at = now() FROM tenant_closure c"
         " WHERE c.ancestor_id = $1 AND c.descendant_id = t.id",
         (tenant, new_path, node["ancestry_path"], delta, parent)),
    ]  # fmt: skip


async def test_a_move_of_a_subtree_probes_its_holders_and_versions_once(
    conn: asyncpg.Connection, seeded: tuple[str, list[list[UUID]]]
) -> None:
    """A move of 1,111 tenants (about 330 of them config holders): migration 0055, the
    holders follow by tenant_config_holders_pkey probes (hashing every holder read the
    whole table: 232,649 holders for a move of 10,001 at 1,000,000 tenants); migration
    0056, the history statement reads each moved tenant and its open version once (it
    probed tenant_history_valid_to_idx twice and tenants_pkey three times)."""
    roots = seeded[1][0]
    tenant, parent = roots[9], roots[8]  # the other tests use the tree of roots[0]
    plans = await _plans_of(conn, await _move(conn, tenant, parent))
    # One open version of each moved tenant, the row as it is now.
    open_versions = await conn.fetchval(
        "SELECT count(*) FROM tenant_closure c"
        " JOIN tenants t ON t.id = c.descendant_id"
        " JOIN tenant_history h ON h.tenant_id = t.id AND h.valid_to = 9223372036854775807"
        " WHERE c.ancestor_id = $1 AND h.ancestry_path = t.ancestry_path"
        " AND h.depth = t.depth AND h.updated_at = t.updated_at",
        tenant,
    )
    await _plans_of(conn, await _move(conn, tenant, None))  # back where it was
    assert open_versions == 1111
    holders = [p for p in plans.split("Query Text:") if "Update on tenant_config_holders" in p]
    assert holders, plans
    assert "Seq Scan on tenant_config_holders" not in holders[0], holders[0]
    assert "Index Scan using tenant_config_holders_pkey" in holders[0], holders[0]
    history = [p for p in plans.split("Query Text:") if "Update on tenant_history" in p]
    assert history, plans
    assert history[0].count("Index Scan Backward using tenant_history_valid_to_idx") == 1
    assert history[0].count("using tenants_pkey") == 1, history[0]
    # The close probes by a whole key of its index, never by tenant_id alone (which
    # reads every version of the tenant).
    lines = history[0].splitlines()
    probes = [i for i, line in enumerate(lines) if "Index Scan using tenant_history_" in line]
    assert probes, history[0]
    for i in probes:
        assert re.search(r"Index Cond: \(\(tenant_id = .*\) AND \(valid_(from|to) = ", lines[i + 1])
