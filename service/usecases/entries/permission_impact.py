"""Impact preview of a permission policy change (a dry run), like the config entries'
(service/usecases/entries/impact.py): the tenants whose resolved policy would change,
the descendants' own policies a LOCKED one would override, and whether the write would
be refused. One snapshot; nothing written, emitted or invalidated."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg
from msgspec import UNSET

from service.auth.principal import Principal
from service.repositories.impact import Policy
from service.schemas.config import PermissionPreviewBody, PreviewQuery
from service.usecases.common.deps import Deps
from service.usecases.common.tenant_access import visible_active

NIL = UUID(int=0)
SHADOWED_LIMIT = 100


def policy_json(p: Policy | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {"value": p.value, "mode": p.mode, "source_tenant_id": str(p.source_tenant_id)}


class PermissionImpact:
    def __init__(self, deps: Deps) -> None:
        self.db = deps.db
        self.repos = deps.repos

    async def preview(
        self,
        principal: Principal,
        tenant_id: UUID,
        key: str,
        body: PermissionPreviewBody,
        query: PreviewQuery,
    ) -> tuple[dict[str, Any], UUID | None]:
        async def work(conn: asyncpg.Connection) -> tuple[dict[str, Any], UUID | None]:
            return await self._preview(conn, principal, tenant_id, key, body, query)

        return await self.db.transaction(work, isolation="repeatable_read")

    async def _preview(
        self,
        conn: asyncpg.Connection,
        principal: Principal,
        tenant_id: UUID,
        key: str,
        body: PermissionPreviewBody,
        query: PreviewQuery,
    ) -> tuple[dict[str, Any], UUID | None]:
        repos = self.repos
        node = visible_active(
            principal, (await repos.tenants.get_tenant_nodes(conn, [tenant_id])).get(tenant_id)
        )
        before = await repos.permissions.get_permission_policy(conn, tenant_id, key)
        refused: dict[str, Any] | None = None
        if node.parent_id is not None:
            locked = await repos.permissions.find_locked_permission_keys(
                conn, node.parent_id, [key]
            )
            if key in locked:
                refused = {
                    "code": "PERMISSION_LOCKED",
                    "message": f"permission key {key!r} is locked by ancestor {locked[key]}",
                }
        if refused is None and body.change == "delete" and before is None:
            refused = {
                "code": "PERMISSION_NOT_FOUND",
                "message": f"permission key {key!r} not found",
            }
        new: tuple[bool, str] | None = None
        if body.change == "set":
            assert body.value is not None  # checked by the schema
            mode = body.mode if body.mode is not UNSET else (before.mode if before else "INHERIT")
            new = (body.value, mode)
        changes, total = await repos.impact.preview_permission_change(
            conn, tenant_id, key, new=new, after_id=query.cursor or NIL, limit=query.limit + 1
        )
        shadowed: list[tuple[UUID, bool, str]] = []
        shadowed_total = 0
        if new is not None and new[1] == "LOCKED":
            shadowed, shadowed_total = await repos.impact.list_shadowed_permission_policies(
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
                    "old": policy_json(c.old),
                    "new": policy_json(c.new),
                }
                for c in page
            ],
            "shadowed_policies": [
                {"tenant_id": str(t), "value": v, "mode": m} for t, v, m in shadowed
            ],
            "shadowed_total": shadowed_total,
        }
        return document, (page[-1].tenant_id if more else None)
