"""The history of the resolved view (docs/history.md): a tenant's context and document
as they were at a revision or a time, and what changed between two moments."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg
import orjson

from service.auth.principal import Principal
from service.base.errors import FieldError, ServiceError
from service.base.etags import Rendered
from service.base.timefmt import utcnow
from service.repositories.history import HistoryBoundsRow
from service.usecases.common.deps import Deps
from service.usecases.common.tenant_access import active, visible, visible_active
from service.views.base import render
from service.views.tenants import Tenant

Moment = int | datetime


def validation_failed(error: FieldError) -> ServiceError:
    return ServiceError("VALIDATION_ERROR", f"{error.field}: {error.message}", details=[error])


def _not_future(moment: Moment, field: str) -> datetime:
    """Now; a time after it is refused."""
    now = utcnow()
    if isinstance(moment, datetime) and moment > now:
        raise validation_failed(FieldError(field, "lies in the future"))
    return now


def _checked(bounds: HistoryBoundsRow, moment: Moment, field: str) -> int:
    """The revision a moment names, by the bounds read for it: a revision as it is, a
    time as the last revision committed at or before it (the horizon's when none)."""
    if isinstance(moment, int):
        if moment > bounds.newest:
            raise validation_failed(
                FieldError(field, f"past the newest revision ({bounds.newest})")
            )
        if moment < bounds.kept_from:
            raise history_unavailable()
        return moment
    if moment < bounds.kept_since:
        raise history_unavailable()
    if bounds.at_revision is None or bounds.at_revision < bounds.kept_from:
        return bounds.kept_from
    return bounds.at_revision


def history_unavailable() -> ServiceError:
    return ServiceError(
        "HISTORY_UNAVAILABLE", "that moment lies before the kept history (HISTORY_RETENTION_DAYS)"
    )


class ContextHistory:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.history = deps.repos.history

    async def revision_of(self, conn: asyncpg.Connection, moment: Moment, field: str) -> int:
        """The revision a moment names: a revision as it is, a time as the last revision
        committed at or before it (by the commit time in the revision log)."""
        now = _not_future(moment, field)
        bounds = await self.history.history_bounds(
            conn, moment if isinstance(moment, datetime) else now
        )
        return _checked(bounds, moment, field)

    async def context_at(
        self, principal: Principal, tenant_id: UUID, moment: Moment, field: str
    ) -> Rendered:
        """The masked context as GET /context answered at that moment: the moment and the
        context in one statement (one snapshot, no transaction around two)."""
        _not_future(moment, field)
        found = await self.deps.db.run(
            lambda conn: self.history.render_tenant_context_at_moment(
                conn,
                tenant_id,
                moment if isinstance(moment, int) else None,
                moment if isinstance(moment, datetime) else None,
            )
        )
        _checked(found.bounds, moment, field)
        return Rendered.of_text(visible_active(principal, found.context).document)

    async def tenant_at(
        self,
        principal: Principal,
        tenant_id: UUID,
        moment: Moment,
        field: str,
        *,
        include_archived: bool,
    ) -> Rendered:
        """The tenant document as GET /tenants/{id} answered at that moment."""

        async def work(conn: asyncpg.Connection) -> Tenant:
            revision = await self.revision_of(conn, moment, field)
            tenant = visible(principal, await self.history.get_tenant_at(conn, tenant_id, revision))
            if not include_archived:
                active(tenant)
            return Tenant.of(tenant)

        return render(await self.deps.db.transaction(work, isolation="repeatable_read"))

    async def ancestors_at(
        self, principal: Principal, tenant_id: UUID, moment: Moment, field: str
    ) -> list[Tenant]:
        """The ancestors, root first, as they were at that moment; a scoped caller sees
        the part of the chain inside its own subtree."""

        async def work(conn: asyncpg.Connection) -> list[Tenant]:
            revision = await self.revision_of(conn, moment, field)
            node = visible_active(
                principal, await self.history.get_tenant_at(conn, tenant_id, revision)
            )
            chain = [UUID(part) for part in node.ancestry_path.split("/")[1:-1]]
            shown: list[Tenant] = []
            for ancestor_id in chain:
                row = await self.history.get_tenant_at(conn, ancestor_id, revision)
                if row is not None and principal.can_see_path(row.ancestry_path):
                    shown.append(Tenant.of(row))
            return shown

        return await self.deps.db.transaction(work, isolation="repeatable_read")

    async def diff(
        self, principal: Principal, tenant_id: UUID, start: Moment, end: Moment
    ) -> dict[str, Any]:
        """Per config and permission key, what differs between the contexts at the two
        moments, each difference with the last revision that changed it and its audit
        entry."""

        async def work(conn: asyncpg.Connection) -> dict[str, Any]:
            first = await self.revision_of(conn, start, "from")
            last = await self.revision_of(conn, end, "to")
            if first > last:
                raise validation_failed(FieldError("from", "lies after to"))
            before = await self._document(conn, principal, tenant_id, first)
            after = await self._document(conn, principal, tenant_id, last)
            return await self._differences(conn, tenant_id, first, last, before, after)

        return await self.deps.db.transaction(work, isolation="repeatable_read")

    async def _document(
        self, conn: asyncpg.Connection, principal: Principal, tenant_id: UUID, revision: int
    ) -> dict[str, Any]:
        found = await self.history.render_tenant_context_at(conn, tenant_id, revision)
        document: dict[str, Any] = orjson.loads(visible_active(principal, found).document)
        return document

    async def _at(self, conn: asyncpg.Connection, tenant_id: UUID, revision: int) -> dict[str, Any]:
        """The context at a revision, whatever its state then (empty: it did not exist)."""
        found = await self.history.render_tenant_context_at(conn, tenant_id, revision)
        if found is None:
            return {"resolved_config": {}, "resolved_permissions": {}}
        document: dict[str, Any] = orjson.loads(found.document)
        return document

    async def _differences(
        self,
        conn: asyncpg.Connection,
        tenant_id: UUID,
        first: int,
        last: int,
        before: dict[str, Any],
        after: dict[str, Any],
    ) -> dict[str, Any]:
        parts = (("config", "resolved_config"), ("permissions", "resolved_permissions"))
        pending: dict[tuple[str, str], dict[str, Any]] = {}
        for part, field in parts:
            old, new = before[field], after[field]
            for key in sorted(old.keys() | new.keys()):
                if old.get(key) != new.get(key):
                    change = (
                        "added" if key not in old else "removed" if key not in new else "changed"
                    )
                    pending[(part, key)] = {
                        "key": key,
                        "change": change,
                        "before": old.get(key),
                        "after": new.get(key),
                    }
        # The context only changes at revisions that changed a version on the tenant's
        # paths; walking them from the newest back, a key's difference was last caused
        # by the first revision r whose context before it (at r - 1) shows the key
        # differently than at r.
        unresolved = set(pending)
        later = after
        candidates = await self.history.list_context_change_revisions(conn, tenant_id, first, last)
        for revision in reversed(candidates):
            if not unresolved:
                break
            earlier = await self._at(conn, tenant_id, revision - 1)
            for part, key in list(unresolved):
                field = "resolved_config" if part == "config" else "resolved_permissions"
                if earlier[field].get(key) != later[field].get(key):
                    pending[(part, key)]["revision"] = revision
                    unresolved.discard((part, key))
            later = earlier
        audits: dict[int, str | None] = {}
        for item in pending.values():
            revision = item.setdefault("revision", last)
            if revision not in audits:
                row = await self.history.get_history_revision(conn, revision)
                audits[revision] = str(row.audit_ids[0]) if row and row.audit_ids else None
            item["audit_id"] = audits[revision]
        return {
            "from": first,
            "to": last,
            "config": [v for (part, _), v in sorted(pending.items()) if part == "config"],
            "permissions": [v for (part, _), v in sorted(pending.items()) if part == "permissions"],
        }
