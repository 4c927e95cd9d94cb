"""Impact preview of a config entry change (a dry run): which tenants' resolved value of
the key would change, from what to what and from which source, which descendants' own
entries a lock would override, and whether the write would be refused. It reads in one
snapshot and writes nothing: no entry, no event, no audit entry, no cache invalidation.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg
from msgspec import UNSET

from service.auth.principal import Principal
from service.base.errors import ServiceError
from service.repositories.config_entries import ConfigWrite
from service.repositories.impact import OwnEntry, Resolved
from service.repositories.tenants import TenantNode
from service.schemas.config import ConfigPreviewBody, PreviewQuery
from service.usecases.common.deps import Deps
from service.usecases.common.tenant_access import visible_active
from service.usecases.entries.config_entries import config_not_found
from service.usecases.entries.constraints import ConfigConstraints, Written, schema_violation
from service.usecases.entries.values import encrypt_value
from service.usecases.entries.writes import key_locked
from service.views.base import SENSITIVE_MASK

NIL = UUID(int=0)
SHADOWED_LIMIT = 100


def _shown(value: Any, sensitive: bool) -> Any:
    return SENSITIVE_MASK if sensitive else value


def refusal(error: ServiceError) -> dict[str, Any]:
    """The error the real write would answer, as the preview reports it."""
    found: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.details and error.code in CONSTRAINT_CODES:
        found["details"] = [d.as_dict() for d in error.details]
    return found


CONSTRAINT_CODES = frozenset(
    ("CONFIG_SCHEMA_VIOLATION", "CONFIG_SCHEMA_CONFLICT", "BUDGET_EXCEEDED", "BUDGET_NOT_NUMERIC")
)


class _Undo(Exception):
    """Rolls back the trial write of a preview, carrying what the budgets said."""

    def __init__(self, refused: list[ServiceError]) -> None:
        super().__init__("undo")
        self.refused = refused


def resolved_json(r: Resolved | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "value": _shown(r.value, r.sensitive),
        "source_tenant_id": str(r.source_tenant_id),
        "locked": r.locked,
        "sensitive": r.sensitive,
    }


def own_json(e: OwnEntry) -> dict[str, Any]:
    return {
        "tenant_id": str(e.tenant_id),
        "value": _shown(e.value, e.sensitive),
        "locked": e.locked,
        "sensitive": e.sensitive,
    }


class ConfigImpact:
    def __init__(self, deps: Deps) -> None:
        self.db = deps.db
        self.repos = deps.repos
        self.keyring = deps.keyring
        self.constraints = ConfigConstraints(deps)

    async def preview(
        self,
        principal: Principal,
        tenant_id: UUID,
        key: str,
        body: ConfigPreviewBody,
        query: PreviewQuery,
    ) -> tuple[dict[str, Any], UUID | None]:
        """The preview document and the cursor of the next page of changed tenants."""

        async def work(conn: asyncpg.Connection) -> tuple[dict[str, Any], UUID | None]:
            return await self._preview(conn, principal, tenant_id, key, body, query)

        # Read only, one snapshot: every figure describes the same moment.
        return await self.db.transaction(work, isolation="repeatable_read")

    async def _preview(
        self,
        conn: asyncpg.Connection,
        principal: Principal,
        tenant_id: UUID,
        key: str,
        body: ConfigPreviewBody,
        query: PreviewQuery,
    ) -> tuple[dict[str, Any], UUID | None]:
        repos = self.repos
        nodes = await repos.tenants.get_tenant_nodes(conn, [tenant_id])
        node = visible_active(principal, nodes.get(tenant_id))
        before = await repos.config.get_config_entry(conn, tenant_id, key)
        refused = await self._refusal(conn, node.parent_id, key, body, before is None)
        new: tuple[Any, bool, bool] | None = None
        if body.change == "set":
            locked = body.locked if body.locked is not UNSET else bool(before and before.locked)
            sensitive = (
                body.sensitive if body.sensitive is not UNSET else bool(before and before.sensitive)
            )
            new = (None if sensitive else body.value, locked, sensitive)
        if refused is None:
            refused = await self._constraint_refusal(conn, node, key, body, new)
        changes, total = await repos.impact.preview_config_change(
            conn, tenant_id, key, new=new, after_id=query.cursor or NIL, limit=query.limit + 1
        )
        shadowed: list[OwnEntry] = []
        shadowed_total = 0
        if new is not None and new[1]:
            shadowed, shadowed_total = await repos.impact.list_shadowed_config_entries(
                conn, tenant_id, key, SHADOWED_LIMIT
            )
        more = len(changes) > query.limit
        page = changes[: query.limit]
        document = {
            "dry_run": True,
            "tenant_id": str(tenant_id),
            "key": key,
            "change": body.change,
            "refused": refused,
            "changed_tenants": total,
            "changes": [
                {
                    "tenant_id": str(c.tenant_id),
                    "old": resolved_json(c.old),
                    "new": resolved_json(c.new),
                }
                for c in page
            ],
            "shadowed_entries": [own_json(e) for e in shadowed],
            "shadowed_total": shadowed_total,
        }
        return document, (page[-1].tenant_id if more else None)

    async def _refusal(
        self,
        conn: asyncpg.Connection,
        parent_id: UUID | None,
        key: str,
        body: ConfigPreviewBody,
        missing: bool,
    ) -> dict[str, Any] | None:
        """The error the real write would answer, as {code, message}; None: it would pass."""
        if parent_id is not None:
            held = await self.repos.config.find_locked_config_keys(conn, parent_id, [key])
            if key in held:
                return refusal(key_locked("CONFIG_LOCKED", "config", key, held[key]))
        if body.change == "delete" and missing:
            return refusal(config_not_found(key))
        return None

    async def _constraint_refusal(
        self,
        conn: asyncpg.Connection,
        node: TenantNode,
        key: str,
        body: ConfigPreviewBody,
        new: tuple[Any, bool, bool] | None,
    ) -> dict[str, Any] | None:
        """The schema or budget refusal the write would meet. The budgets are judged by
        making the write in a savepoint, measuring, and rolling the savepoint back: the
        same check the write runs, so the same answer."""
        value = body.value if new is not None else None
        sensitive = new is not None and new[2]
        if new is not None:
            breaches = await self.constraints.schema_refusals(
                conn, node.id, node.id, {key: value}, sensitive={key} if sensitive else ()
            )
            if breaches:
                return refusal(schema_violation(breaches))
        written = [Written(node.id, node.parent_id, {key: value})]
        try:
            async with conn.transaction():
                if new is None:
                    await self.repos.config.delete_config_entry(conn, node.id, key)
                else:
                    token = encrypt_value(self.keyring.encryptor, node.id, key, value)
                    write = (
                        ConfigWrite(key, None, token, True)
                        if sensitive
                        else ConfigWrite(key, value, None, False)
                    )
                    await self.repos.config.upsert_config_entry(
                        conn, node.id, write, locked=new[1], reveal_to_descendants=False
                    )
                raise _Undo(await self.constraints.budget_refusals(conn, written, [key]))
        except _Undo as undo:
            return refusal(undo.refused[0]) if undo.refused else None
