"""Fast test trees written with COPY (tests only; the bench has its own seeder).

Use a plain asyncpg connection: COPY needs the binary jsonb codec (JSON as text).
"""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

import asyncpg
import orjson

from service.base.ids import uuid7

TENANT_COLUMNS = (
    "id", "parent_id", "name", "slug", "ancestry_path", "depth", "metadata",
    "isolation_strategy", "region", "status", "created_at", "updated_at",
)  # fmt: skip


async def seed_balanced(
    conn: asyncpg.Connection, *, roots: int, fanout: int, levels: int, prefix: str = "s"
) -> list[list[UUID]]:
    """roots trees, each node with `fanout` children, `levels` levels below the roots.

    Returns the ids level by level (level 0 = the roots).
    """
    now = datetime.now(UTC)
    tenants: list[tuple[object, ...]] = []
    closure: list[tuple[UUID, UUID, int]] = []
    paths: dict[UUID, list[UUID]] = {}
    by_level: list[list[UUID]] = [[uuid7() for _ in range(roots)]]
    for _ in range(levels):
        by_level.append([uuid7() for _ in range(len(by_level[-1]) * fanout)])
    for depth, ids in enumerate(by_level):
        for i, tenant_id in enumerate(ids):
            parent = None if depth == 0 else by_level[depth - 1][i // fanout]
            chain = ([] if parent is None else paths[parent]) + [tenant_id]
            paths[tenant_id] = chain
            tenants.append(
                (
                    tenant_id, parent, f"{prefix} {depth}.{i}", f"{prefix}_{tenant_id.hex}",
                    "/" + "/".join(str(x) for x in chain), depth, orjson.dumps({}).decode(),
                    "SHARED_RLS", "default", "active", now, now,
                )
            )  # fmt: skip
            closure += [(a, tenant_id, len(chain) - 1 - k) for k, a in enumerate(chain)]
    await conn.copy_records_to_table("tenants", records=tenants, columns=TENANT_COLUMNS)
    await conn.copy_records_to_table(
        "tenant_closure", records=closure, columns=("ancestor_id", "descendant_id", "depth")
    )
    await conn.execute("ANALYZE tenants; ANALYZE tenant_closure; ANALYZE config_entries")
    return by_level
