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
from service.repositories.impact import OwnEntry, Resolved
from service.schemas.config import ConfigPreviewBody, PreviewQuery
from service.usecases.common.deps import Deps
from service.usecases.common.tenant_access import visible_active
from service.usecases.entries.config_entries import config_not_found
from service.usecases.entries.writes import key_locked
from service.views.base import SENSITIVE_MASK

NIL = UUID(int=0)
SHADOWED_LIMIT = 100


def _shown(value: Any, sensitive: bool) -> Any:
    return SENSITIVE_MASK if sensitive else value


def refusal(error: ServiceError) -> dict[str, Any]:
    """The error the real write would answer, as the preview reports it."""
    return {"code": error.code, "message": error.message}


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
