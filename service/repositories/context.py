"""The resolved context of a tenant, read in one statement."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class ResolvedConfig:
    key: str
    value: Any
    encrypted_value: str | None
    sensitive: bool
    locked: bool
    source_tenant_id: UUID


@dataclass(frozen=True, slots=True)
class ResolvedPermission:
    key: str
    value: bool
    mode: str
    source_tenant_id: UUID


@dataclass(frozen=True, slots=True)
class ResolvedContext:
    id: UUID
    ancestry_path: str
    depth: int
    isolation_strategy: str
    status: str
    config: list[ResolvedConfig]
    permissions: list[ResolvedPermission]


class ContextRepository(Repository):
    _resolve = NamedSql("resolve_tenant_context")

    async def resolve_tenant_context(
        self, conn: asyncpg.Connection, tenant_id: UUID
    ) -> ResolvedContext | None:
        row = await conn.fetchrow(self._resolve, tenant_id)
        if row is None:
            return None
        return ResolvedContext(
            id=row["id"],
            ancestry_path=row["ancestry_path"],
            depth=row["depth"],
            isolation_strategy=row["isolation_strategy"],
            status=row["status"],
            config=[
                ResolvedConfig(
                    key=c["key"],
                    value=c["value"],
                    encrypted_value=c["encrypted_value"],
                    sensitive=c["sensitive"],
                    locked=c["locked"],
                    source_tenant_id=UUID(c["source_tenant_id"]),
                )
                for c in row["config"]
            ],
            permissions=[
                ResolvedPermission(
                    key=p["key"],
                    value=p["value"],
                    mode=p["mode"],
                    source_tenant_id=UUID(p["source_tenant_id"]),
                )
                for p in row["permissions"]
            ],
        )
