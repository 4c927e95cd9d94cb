"""Value schemas of config keys (docs/constraints.md): declare, read, remove, and the
report of the entries a schema refuses.

A declaration takes the key locks a write at the tenant takes (usecases/entries/writes.py):
(tenant, key) exclusively, so every write of the key at or below the tenant, which holds
(tenant, key) shared, either commits before the declaration judges the subtree or waits
and is then judged by the new schema itself.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import asyncpg

from service.auth.principal import Actor, Principal
from service.base.errors import FieldError, ServiceError
from service.repositories.config_constraints import FIRST_ID, ConfigSchema
from service.usecases.common.deps import Deps
from service.usecases.common.recording import Event
from service.usecases.common.schema_cache import InvalidSchema, check_schema, schema_digest
from service.usecases.common.tenant_access import reading_active_tenant
from service.usecases.entries.constraints import MAX_BREACHES, Breach, ConfigConstraints
from service.usecases.entries.declarations import lock_declared_key, record_declaration


def schema_not_found(key: str) -> ServiceError:
    return ServiceError("CONFIG_SCHEMA_NOT_FOUND", f"the tenant declares no schema for {key!r}")


def _audit_view(row: ConfigSchema | None) -> dict[str, Any] | None:
    return None if row is None else {"schema": row.schema, "enforce": row.enforce}


def _event(action: str, row: ConfigSchema) -> Event:
    data: dict[str, Any] = {"tenant_id": str(row.tenant_id), "key": row.key}
    if action == "config_schema.declared":
        data.update(schema=row.schema, enforce=row.enforce)
    return Event(action, row.tenant_id, data)


class ConfigSchemas:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.repo = deps.repos.constraints
        self.constraints = ConfigConstraints(deps)

    async def list_schemas(self, principal: Principal, tenant_id: UUID) -> list[ConfigSchema]:
        async with reading_active_tenant(self.deps, principal, tenant_id) as conn:
            return await self.repo.list_config_schemas(conn, tenant_id)

    async def get(self, principal: Principal, tenant_id: UUID, key: str) -> ConfigSchema:
        async with reading_active_tenant(self.deps, principal, tenant_id) as conn:
            found = await self.repo.get_config_schema(conn, tenant_id, key)
        if found is None:
            raise schema_not_found(key)
        return found

    async def put(
        self,
        principal: Principal,
        actor: Actor,
        tenant_id: UUID,
        key: str,
        schema: dict[str, Any],
        *,
        enforce: bool,
    ) -> tuple[ConfigSchema, bool]:
        """Declare or replace; 409 CONFIG_SCHEMA_CONFLICT when enforced and entries at
        the tenant or below break it. Returns the schema and whether it is new."""
        try:
            check_schema(schema)
        except InvalidSchema as error:
            raise ServiceError(
                "VALIDATION_ERROR",
                f"schema: not a valid JSON Schema (draft 2020-12) at {error.path}: "
                f"{error.message[:300]}",
                details=[
                    FieldError("schema", error.message[:300], info={"schema_path": error.path})
                ],
            ) from None
        digest = schema_digest(schema)

        async def work(conn: asyncpg.Connection) -> tuple[ConfigSchema, bool]:
            await lock_declared_key(conn, self.deps, principal, tenant_id, key)
            before = await self.repo.get_config_schema(conn, tenant_id, key)
            if before is not None and before.digest == digest and before.enforce == enforce:
                return before, False
            if enforce:
                now = datetime.now(UTC)
                probe = ConfigSchema(tenant_id, key, schema, digest, True, now, now)
                found, rest = await self.constraints.scan(conn, tenant_id, [probe])
                if found:
                    raise _conflict(key, found, more=rest is not None)
            after, created = await self.repo.upsert_config_schema(
                conn, tenant_id, key, schema, digest=digest, enforce=enforce
            )
            changes = {"before": _audit_view(before), "after": _audit_view(after)}
            event = _event("config_schema.declared", after)
            await record_declaration(conn, self.deps, actor, tenant_id, key, changes, event)
            return after, created

        return await self.deps.db.transaction(work)

    async def delete(self, principal: Principal, actor: Actor, tenant_id: UUID, key: str) -> None:
        async def work(conn: asyncpg.Connection) -> None:
            await lock_declared_key(conn, self.deps, principal, tenant_id, key)
            before = await self.repo.delete_config_schema(conn, tenant_id, key)
            if before is None:
                raise schema_not_found(key)
            changes = {"before": _audit_view(before), "after": None}
            event = _event("config_schema.deleted", before)
            await record_declaration(conn, self.deps, actor, tenant_id, key, changes, event)

        await self.deps.db.transaction(work)

    async def violations(
        self, principal: Principal, tenant_id: UUID, key: str, *, cursor: UUID | None, limit: int
    ) -> tuple[ConfigSchema, list[Breach], UUID | None]:
        """A page of the entries at the tenant and below that its schema of key refuses
        (judged now; an audit-only schema's report, or a check of an enforced one)."""
        async with reading_active_tenant(self.deps, principal, tenant_id) as conn:
            schema = await self.repo.get_config_schema(conn, tenant_id, key)
            if schema is None:
                raise schema_not_found(key)
            found, rest = await self.constraints.scan(
                conn, tenant_id, [schema], after=cursor or FIRST_ID, limit=limit
            )
        return schema, found, rest


def _conflict(key: str, found: list[Breach], *, more: bool) -> ServiceError:
    count = f"more than {len(found)}" if more else str(len(found))
    return ServiceError(
        "CONFIG_SCHEMA_CONFLICT",
        f"{count} existing entr{'y' if count == '1' else 'ies'} of {key!r} at the tenant or "
        f"below break the schema (details lists the first {MAX_BREACHES}); fix them, or "
        "declare it with ?enforce=false and read its violations report",
        details=[b.detail() for b in found],
    )
