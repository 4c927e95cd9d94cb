"""Seed a migrated, empty database with the benchmark forest through COPY.

`python -m bench seed --dsn DSN --tenants N` does it alone; `python -m bench run` calls
seed_database() itself. The load is done the way pg_restore does it: indexes and keys
of the four loaded tables (and of the history's tables) are dropped, the rows COPYed in
binary, then the indexes and keys rebuilt and the tables analysed.

The seeded rows are data that existed before the history began, as the rows that existed
when migration 0044 started the history: the triggers that note inserted rows for the
revision log are off for the load's transaction (so no revision holds every seeded
tenant), and the history is started at the load's end as 0044 started it (one open
version of each row, valid from the newest revision). The triggers that keep the service's
own tables (config holders, rendered documents) stay on.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import asyncpg

from bench.mixed_picks import MixedPicks, pick_mixed
from bench.results import SeedFigures
from bench.shapes import Forest, SeedPlan, build_forest, sample_nodes
from bench.sqlfiles import bench_queries

SEEDED_TABLES = ["tenants", "tenant_closure", "config_entries", "permission_policies"]
# Filled from the seeded tables at the load's end (start_seeded_history); their indexes
# are rebuilt after it like the seeded tables' own.
HISTORY_TABLES = [
    "tenant_history",
    "config_history",
    "permission_history",
    "config_history_keys",
    "permission_history_keys",
]
TENANT_COLUMNS = [
    "id",
    "parent_id",
    "name",
    "slug",
    "ancestry_path",
    "depth",
    "isolation_strategy",
    "region",
]


@dataclass(frozen=True)
class SeedReport:
    plan: SeedPlan
    tenants: int
    closure_rows: int
    config_entries: int
    permission_policies: int
    generate_s: float
    copy_s: float
    index_s: float
    total_s: float
    landmarks: dict[str, str]
    depths: dict[str, int]
    samples: list[str]
    # The mixed-workload benchmark's tenants (bench/mixed.py).
    mixed: MixedPicks | None = None

    def figures(self) -> SeedFigures:
        return SeedFigures(
            plan=self.plan,
            tenants=self.tenants,
            closure_rows=self.closure_rows,
            config_entries=self.config_entries,
            permission_policies=self.permission_policies,
            generate_s=round(self.generate_s, 2),
            copy_s=round(self.copy_s, 2),
            index_s=round(self.index_s, 2),
            total_s=round(self.total_s, 2),
        )


class SeedError(RuntimeError):
    """The database is not empty, or not migrated."""


async def seed_database(dsn: str, plan: SeedPlan, *, region: str = "default") -> SeedReport:
    started = time.perf_counter()
    forest = build_forest(plan)
    generated = time.perf_counter()
    queries = bench_queries()
    conn = await asyncpg.connect(dsn)
    try:
        if await queries["count_tenants"].value(conn):
            raise SeedError("the benchmark database already holds tenants")
        loaded = [*SEEDED_TABLES, *HISTORY_TABLES]
        constraints = await queries["list_bulk_load_constraints"].many(conn, table_names=loaded)
        indexes = await queries["list_bulk_load_indexes"].many(conn, table_names=loaded)
        triggers = await queries["list_bulk_load_revision_triggers"].many(
            conn, table_names=SEEDED_TABLES
        )
        async with conn.transaction():
            # ALTER TABLE holds its tables until the commit: no other session sees the
            # triggers off.
            for row in triggers:
                await conn.execute(row["disable_ddl"])
            for row in reversed(constraints):
                await conn.execute(row["drop_ddl"])
            for row in indexes:
                await conn.execute(row["drop_ddl"])
            await _copy_rows(conn, forest, region)
            await queries["start_seeded_history"].exec(conn)
            copied = time.perf_counter()  # copy_s: the COPY and the history's start
            # Index builds sort in memory; the default 64 MB spills a million-row build.
            await conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
            for row in [*indexes, *constraints]:
                await conn.execute(row["create_ddl"])
            for row in triggers:
                await conn.execute(row["enable_ddl"])
        await queries["vacuum_seeded_tables"].exec(conn)
        # A DSN without the privilege leaves it to the server's own checkpoints.
        with contextlib.suppress(asyncpg.InsufficientPrivilegeError):
            await queries["checkpoint_after_seeding"].exec(conn)
        indexed = time.perf_counter()
        counts = await queries["count_seeded_rows"].one(conn)
        assert counts is not None
    finally:
        await conn.close()
    return SeedReport(
        plan=plan,
        tenants=counts["tenants"],
        closure_rows=counts["closure_rows"],
        config_entries=counts["config_entries"],
        permission_policies=counts["permission_policies"],
        generate_s=generated - started,
        copy_s=copied - generated,
        index_s=indexed - copied,
        total_s=indexed - started,
        landmarks={name: str(forest.ids[node]) for name, node in forest.landmarks.items()},
        depths={name: forest.depths[node] for name, node in forest.landmarks.items()},
        samples=[str(forest.ids[node]) for node in sample_nodes(forest, 1000, plan.seed)],
        mixed=pick_mixed(forest, plan.seed),
    )


async def _copy_rows(conn: asyncpg.Connection, forest: Forest, region: str) -> None:
    await conn.copy_records_to_table(
        "tenants", records=_tenant_rows(forest, region), columns=TENANT_COLUMNS
    )
    await conn.copy_records_to_table(
        "tenant_closure",
        records=forest.closure(),
        columns=["ancestor_id", "descendant_id", "depth"],
    )
    ids = forest.ids
    await conn.copy_records_to_table(
        "config_entries",
        records=((ids[node], key, value, locked) for node, key, value, locked in forest.config),
        columns=["tenant_id", "key", "value", "locked"],
    )
    await conn.copy_records_to_table(
        "permission_policies",
        records=((ids[node], key, value, mode) for node, key, value, mode in forest.permissions),
        columns=["tenant_id", "key", "value", "mode"],
    )


def _tenant_rows(
    forest: Forest, region: str
) -> Iterator[tuple[uuid.UUID, uuid.UUID | None, str, str, str, int, str, str]]:
    paths: list[str] = []
    ids, parents, depths = forest.ids, forest.parents, forest.depths
    for node, node_id in enumerate(ids):
        parent = parents[node]
        path = f"{paths[parent] if parent >= 0 else ''}/{node_id}"
        paths.append(path)
        yield (
            node_id,
            ids[parent] if parent >= 0 else None,
            f"Tenant {node}",
            f"t{node}",
            path,
            depths[node],
            "SHARED_RLS",
            region,
        )
