"""Value schemas and budgets of config keys (sql/queries/config_constraints.sql)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository

FIRST_ID = UUID(int=0)


@dataclass(frozen=True, slots=True)
class ConfigSchema:
    tenant_id: UUID
    key: str
    schema: Any
    digest: str
    enforce: bool
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class KeyEntry:
    """One entry of a key, for judging it (sensitive ones still encrypted)."""

    tenant_id: UUID
    key: str
    value: Any
    encrypted_value: str | None
    sensitive: bool


@dataclass(frozen=True, slots=True)
class ConfigBudget:
    tenant_id: UUID
    key: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class BudgetUse:
    """A budget with what its holder resolves to and what its children hold."""

    tenant_id: UUID
    key: str
    capacity: Any  # the holder's resolved value; None when absent or sensitive
    present: bool  # the holder resolves the key to a value at all
    allocated: Decimal  # the sum of the children's own numeric values
    non_numeric: int  # children's own values that are not plain numbers


def _schema(row: asyncpg.Record) -> ConfigSchema:
    return ConfigSchema(**{k: v for k, v in row.items() if k != "created"})


class ConfigConstraintsRepository(Repository):
    _put_schema = NamedSql("upsert_config_schema")
    _get_schema = NamedSql("get_config_schema")
    _list_schemas = NamedSql("list_config_schemas")
    _delete_schema = NamedSql("delete_config_schema")
    _path_schemas = NamedSql("list_path_config_schemas")
    _key_entries = NamedSql("list_subtree_entries_of_key")
    _put_budget = NamedSql("upsert_config_budget")
    _get_budget = NamedSql("get_config_budget")
    _list_budgets = NamedSql("list_config_budgets")
    _delete_budget = NamedSql("delete_config_budget")
    _lock_budgets = NamedSql("lock_config_budgets")
    _lock_budgets_with_schemas = NamedSql("lock_config_budgets_with_schemas")
    _measure = NamedSql("measure_config_budgets")

    async def upsert_config_schema(
        self,
        conn: asyncpg.Connection,
        tenant_id: UUID,
        key: str,
        schema: Any,
        *,
        digest: str,
        enforce: bool,
    ) -> tuple[ConfigSchema, bool]:
        row = await self._put_schema.one(
            conn, tenant_id=tenant_id, key=key, schema=schema, digest=digest, enforce=enforce
        )
        assert row is not None
        return _schema(row), bool(row["created"])

    async def get_config_schema(
        self, conn: asyncpg.Connection, tenant_id: UUID, key: str
    ) -> ConfigSchema | None:
        row = await self._get_schema.one(conn, tenant_id=tenant_id, key=key)
        return None if row is None else _schema(row)

    async def list_config_schemas(
        self, conn: asyncpg.Connection, tenant_id: UUID
    ) -> list[ConfigSchema]:
        return [_schema(r) for r in await self._list_schemas.many(conn, tenant_id=tenant_id)]

    async def delete_config_schema(
        self, conn: asyncpg.Connection, tenant_id: UUID, key: str
    ) -> ConfigSchema | None:
        row = await self._delete_schema.one(conn, tenant_id=tenant_id, key=key)
        return None if row is None else _schema(row)

    async def list_path_config_schemas(
        self, conn: asyncpg.Connection, tenant_id: UUID, keys: Sequence[str] | None
    ) -> list[ConfigSchema]:
        """The schemas applying at tenant_id; per key the one nearest the root first."""
        rows = await self._path_schemas.many(
            conn, tenant_id=tenant_id, keys=None if keys is None else list(keys)
        )
        return [_schema(r) for r in rows]

    async def list_subtree_entries_of_key(
        self, conn: asyncpg.Connection, tenant_id: UUID, key: str, *, after: UUID, batch: int
    ) -> list[KeyEntry]:
        rows = await self._key_entries.many(
            conn, tenant_id=tenant_id, key=key, after=after, batch=batch
        )
        return [KeyEntry(**r) for r in rows]

    async def upsert_config_budget(
        self, conn: asyncpg.Connection, tenant_id: UUID, key: str
    ) -> tuple[ConfigBudget, bool]:
        row = await self._put_budget.one(conn, tenant_id=tenant_id, key=key)
        assert row is not None
        return ConfigBudget(row["tenant_id"], row["key"], row["created_at"]), bool(row["created"])

    async def get_config_budget(
        self, conn: asyncpg.Connection, tenant_id: UUID, key: str
    ) -> ConfigBudget | None:
        return await self._get_budget.one_as(ConfigBudget, conn, tenant_id=tenant_id, key=key)

    async def list_config_budgets(
        self, conn: asyncpg.Connection, tenant_id: UUID
    ) -> list[ConfigBudget]:
        return await self._list_budgets.many_as(ConfigBudget, conn, tenant_id=tenant_id)

    async def delete_config_budget(
        self, conn: asyncpg.Connection, tenant_id: UUID, key: str
    ) -> ConfigBudget | None:
        return await self._delete_budget.one_as(ConfigBudget, conn, tenant_id=tenant_id, key=key)

    async def lock_config_budgets(
        self, conn: asyncpg.Connection, tenant_ids: Sequence[UUID], keys: Sequence[str]
    ) -> bool:
        """Hold the budget rows of these keys at these tenants until the transaction
        ends; whether any budget of the keys exists anywhere."""
        if not keys:
            return False
        found = await self._lock_budgets.value(
            conn, tenant_ids=sorted(set(tenant_ids)), keys=sorted(set(keys))
        )
        return bool(found)

    async def lock_config_budgets_with_schemas(
        self,
        conn: asyncpg.Connection,
        tenant_id: UUID,
        parent_ids: Sequence[UUID],
        keys: Sequence[str],
    ) -> tuple[bool, list[ConfigSchema]]:
        """lock_config_budgets at parent_ids and list_path_config_schemas at tenant_id
        for the same keys, in one round trip (a write of one tenant's keys)."""
        rows = await self._lock_budgets_with_schemas.many(
            conn, parent_ids=sorted(set(parent_ids)), tenant_id=tenant_id, keys=sorted(set(keys))
        )
        schemas = [
            ConfigSchema(**{k: v for k, v in r.items() if k != "any_budget"})
            for r in rows
            if r["tenant_id"] is not None
        ]
        return bool(rows and rows[0]["any_budget"]), schemas

    async def measure_config_budgets(
        self, conn: asyncpg.Connection, tenant_ids: Sequence[UUID], keys: Sequence[str] | None
    ) -> list[BudgetUse]:
        rows = await self._measure.many(
            conn, tenant_ids=list(tenant_ids), keys=None if keys is None else list(keys)
        )
        return [
            BudgetUse(
                tenant_id=r["tenant_id"],
                key=r["key"],
                capacity=r["capacity"],
                present=bool(r["present"]),
                allocated=r["allocated"],
                non_numeric=r["non_numeric"],
            )
            for r in rows
        ]
