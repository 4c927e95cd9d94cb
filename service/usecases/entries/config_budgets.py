"""Budgets of config keys (docs/constraints.md): the children's own values of a key sum
to at most the tenant's resolved value. Declaring one takes the key locks a write at the
tenant takes, so it judges the children's values after their writes commit, and they
judge theirs against it after it commits."""

from __future__ import annotations

from uuid import UUID

import asyncpg

from service.auth.principal import Actor, Principal
from service.base.errors import ServiceError
from service.repositories.config_constraints import BudgetUse, ConfigBudget
from service.usecases.common.deps import Deps
from service.usecases.common.recording import Event
from service.usecases.common.tenant_access import reading_active_tenant
from service.usecases.entries.constraints import ConfigConstraints, Written
from service.usecases.entries.declarations import lock_declared_key, record_declaration


def budget_not_found(key: str) -> ServiceError:
    return ServiceError("CONFIG_BUDGET_NOT_FOUND", f"the tenant declares no budget for {key!r}")


def _event(action: str, row: ConfigBudget) -> Event:
    return Event(action, row.tenant_id, {"tenant_id": str(row.tenant_id), "key": row.key})


class ConfigBudgets:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.repo = deps.repos.constraints
        self.constraints = ConfigConstraints(deps)

    async def _uses(
        self, conn: asyncpg.Connection, tenant_id: UUID, keys: list[str]
    ) -> dict[str, BudgetUse]:
        uses = await self.repo.measure_config_budgets(conn, [tenant_id], keys)
        return {u.key: u for u in uses if u.tenant_id == tenant_id}

    async def list_budgets(
        self, principal: Principal, tenant_id: UUID
    ) -> list[tuple[ConfigBudget, BudgetUse | None]]:
        async with reading_active_tenant(self.deps, principal, tenant_id) as conn:
            budgets = await self.repo.list_config_budgets(conn, tenant_id)
            uses = await self._uses(conn, tenant_id, [b.key for b in budgets])
        return [(b, uses.get(b.key)) for b in budgets]

    async def get(
        self, principal: Principal, tenant_id: UUID, key: str
    ) -> tuple[ConfigBudget, BudgetUse | None]:
        async with reading_active_tenant(self.deps, principal, tenant_id) as conn:
            found = await self.repo.get_config_budget(conn, tenant_id, key)
            if found is None:
                raise budget_not_found(key)
            uses = await self._uses(conn, tenant_id, [key])
        return found, uses.get(key)

    async def put(
        self, principal: Principal, actor: Actor, tenant_id: UUID, key: str
    ) -> tuple[ConfigBudget, BudgetUse | None, bool]:
        """Declare; 409 BUDGET_EXCEEDED when the children hold more than the tenant's
        value, 422 BUDGET_NOT_NUMERIC when a value concerned is not a plain number."""

        async def work(conn: asyncpg.Connection) -> tuple[ConfigBudget, BudgetUse | None, bool]:
            await lock_declared_key(conn, self.deps, principal, tenant_id, key)
            budget, created = await self.repo.upsert_config_budget(conn, tenant_id, key)
            uses = await self._uses(conn, tenant_id, [key])
            use = uses.get(key)
            if created:
                # Only this budget is judged: the others of the subtree hold already.
                refused = await self.constraints.budget_refusals(
                    conn, [Written(tenant_id, None, {})], [key]
                )
                mine = [
                    e for e in refused if e.details and e.details[0].tenant_id == str(tenant_id)
                ]
                if mine:
                    raise mine[0]
                changes = {"before": None, "after": {"key": key}}
                event = _event("config_budget.declared", budget)
                await record_declaration(conn, self.deps, actor, tenant_id, key, changes, event)
            return budget, use, created

        return await self.deps.db.transaction(work)

    async def delete(self, principal: Principal, actor: Actor, tenant_id: UUID, key: str) -> None:
        async def work(conn: asyncpg.Connection) -> None:
            await lock_declared_key(conn, self.deps, principal, tenant_id, key)
            before = await self.repo.delete_config_budget(conn, tenant_id, key)
            if before is None:
                raise budget_not_found(key)
            changes = {"before": {"key": key}, "after": None}
            event = _event("config_budget.deleted", before)
            await record_declaration(conn, self.deps, actor, tenant_id, key, changes, event)

        await self.deps.db.transaction(work)
