"""Impact previews: what a change would do to a subtree's resolved context (read only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class Resolved:
    source_tenant_id: UUID
    value: Any  # None for a sensitive value (ciphertext is never read here)
    sensitive: bool
    locked: bool


@dataclass(frozen=True, slots=True)
class ResolvedChange:
    tenant_id: UUID
    old: Resolved | None
    new: Resolved | None


@dataclass(frozen=True, slots=True)
class OwnEntry:
    tenant_id: UUID
    value: Any
    sensitive: bool
    locked: bool


def _resolved(row: asyncpg.Record, side: str) -> Resolved | None:
    if row[f"{side}_source"] is None:
        return None
    return Resolved(
        row[f"{side}_source"], row[f"{side}_value"], row[f"{side}_sensitive"], row[f"{side}_locked"]
    )


@dataclass(frozen=True, slots=True)
class Policy:
    source_tenant_id: UUID
    value: bool
    mode: str


@dataclass(frozen=True, slots=True)
class PolicyChange:
    tenant_id: UUID
    old: Policy | None
    new: Policy | None


@dataclass(frozen=True, slots=True)
class OwnPolicy:
    tenant_id: UUID
    value: bool
    mode: str


def _policy(row: asyncpg.Record, side: str) -> Policy | None:
    if row[f"{side}_source"] is None:
        return None
    return Policy(row[f"{side}_source"], row[f"{side}_value"], row[f"{side}_mode"])


class ImpactRepository(Repository):
    _config = NamedSql("preview_config_change")
    _shadowed = NamedSql("list_shadowed_config_entries")
    _permission = NamedSql("preview_permission_change")
    _shadowed_policies = NamedSql("list_shadowed_permission_policies")
    _move = NamedSql("preview_move")

    async def preview_config_change(
        self,
        conn: asyncpg.Connection,
        tenant_id: UUID,
        key: str,
        new: tuple[Any, bool, bool] | None,
        after_id: UUID,
        limit: int,
    ) -> tuple[list[ResolvedChange], int]:
        """One page of the changed tenants and how many there are; new=None: removal."""
        value, locked, sensitive = new if new is not None else (None, False, False)

        async def page(after: UUID, size: int) -> list[asyncpg.Record]:
            return await self._config.many(
                conn, tenant_id=tenant_id, key=key, new_value=value, new_locked=locked,
                new_sensitive=sensitive, removing=new is None, after_id=after, row_limit=size,
            )  # fmt: skip

        rows = await page(after_id, limit)
        if not rows and after_id.int:  # a page past the end: the total counts from the start
            first = await page(UUID(int=0), 1)
            return [], int(first[0]["total"]) if first else 0
        changes = [
            ResolvedChange(r["tenant_id"], _resolved(r, "old"), _resolved(r, "new")) for r in rows
        ]
        return changes, int(rows[0]["total"]) if rows else 0

    async def list_shadowed_config_entries(
        self, conn: asyncpg.Connection, tenant_id: UUID, key: str, limit: int
    ) -> tuple[list[OwnEntry], int]:
        rows = await self._shadowed.many(conn, tenant_id=tenant_id, key=key, row_limit=limit)
        entries = [OwnEntry(r["tenant_id"], r["value"], r["sensitive"], r["locked"]) for r in rows]
        return entries, int(rows[0]["total"]) if rows else 0

    async def preview_permission_change(
        self,
        conn: asyncpg.Connection,
        tenant_id: UUID,
        key: str,
        new: tuple[bool, str] | None,
        after_id: UUID,
        limit: int,
    ) -> tuple[list[PolicyChange], int]:
        """One page of the changed tenants and how many there are; new=None: removal."""
        value, mode = new if new is not None else (False, "INHERIT")

        async def page(after: UUID, size: int) -> list[asyncpg.Record]:
            return await self._permission.many(
                conn, tenant_id=tenant_id, key=key, new_value=value, new_mode=mode,
                removing=new is None, after_id=after, row_limit=size,
            )  # fmt: skip

        rows = await page(after_id, limit)
        if not rows and after_id.int:  # a page past the end: the total counts from the start
            first = await page(UUID(int=0), 1)
            return [], int(first[0]["total"]) if first else 0
        changes = [PolicyChange(r["tenant_id"], _policy(r, "old"), _policy(r, "new")) for r in rows]
        return changes, int(rows[0]["total"]) if rows else 0

    async def list_shadowed_permission_policies(
        self, conn: asyncpg.Connection, tenant_id: UUID, key: str, limit: int
    ) -> tuple[list[OwnPolicy], int]:
        rows = await self._shadowed_policies.many(
            conn, tenant_id=tenant_id, key=key, row_limit=limit
        )
        policies = [OwnPolicy(r["tenant_id"], r["value"], r["mode"]) for r in rows]
        return policies, int(rows[0]["total"]) if rows else 0

    async def preview_move(
        self,
        conn: asyncpg.Connection,
        tenant_id: UUID,
        new_parent_id: UUID | None,
        *,
        after_id: UUID,
        limit: int,
    ) -> tuple[list[tuple[UUID, list[dict[str, Any]]]], int]:
        """One page of (tenant, its changed entries) and how many tenants change."""

        async def page(after: UUID, size: int) -> list[asyncpg.Record]:
            return await self._move.many(
                conn, tenant_id=tenant_id, new_parent_id=new_parent_id, after_id=after,
                row_limit=size,
            )  # fmt: skip

        rows = await page(after_id, limit)
        if not rows and after_id.int:  # a page past the end: the total counts from the start
            first = await page(UUID(int=0), 1)
            return [], int(first[0]["total"]) if first else 0
        return [(r["tenant_id"], list(r["entries"])) for r in rows], (
            int(rows[0]["total"]) if rows else 0
        )
