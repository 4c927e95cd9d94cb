"""Reverting a revision (docs/history.md): a new change, in one transaction with its own
audit entry, events and revision, that puts back the config entries and permission
policies a revision changed as they were before it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import asyncpg

from service.auth.principal import Actor, Principal
from service.base.errors import FieldError, ServiceError
from service.base.timefmt import iso
from service.repositories.history import EntryChangeRow
from service.usecases.common.deps import Deps
from service.usecases.common.recording import AuditRecord, Event
from service.usecases.entries.writes import lock_tenant_for_entries
from service.usecases.tenants.history import ContextHistory, history_unavailable

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _shown(kind: str, entry: dict[str, Any] | None) -> dict[str, Any] | None:
    """An entry as answers and audit entries show it: sensitive values masked."""
    if entry is None:
        return None
    shown: dict[str, Any]
    if kind == "permission":
        shown = {"value": entry["value"], "mode": entry["mode"]}
    else:
        shown = {
            "value": "***" if entry["sensitive"] else entry["value"],
            "locked": entry["locked"],
            "sensitive": entry["sensitive"],
            "reveal_to_descendants": entry["reveal_to_descendants"],
        }
    # Shown when set, as entry answers show it.
    if entry["expires_at"] is not None:
        shown["expires_at"] = iso(entry["expires_at"])
    return shown


class RevisionReverts:
    def __init__(self, deps: Deps, history: ContextHistory) -> None:
        self.deps = deps
        self.history = history
        self.repo = deps.repos.history

    async def revert(
        self, principal: Principal, actor: Actor, revision: int, *, force: bool, dry_run: bool
    ) -> dict[str, Any]:
        async def work(conn: asyncpg.Connection) -> dict[str, Any]:
            await self.history.revision_of(conn, revision, "revision")
            # The history of a revision at the horizon may hold only its result.
            if revision <= (await self.repo.history_bounds(conn, _EPOCH)).kept_from:
                raise history_unavailable()
            if await self.repo.count_revision_tenant_changes(conn, revision):
                raise ServiceError(
                    "REVERT_UNSUPPORTED",
                    f"revision {revision} created, moved, archived, restored or renamed "
                    "tenants; a revert puts back config entries and permission policies only",
                )
            changes = await self.repo.list_revision_entry_changes(conn, revision)
            for change in changes:
                if change.path_now is None or not principal.can_see_path(change.path_now):
                    raise ServiceError(
                        "TENANT_ACCESS_DENIED",
                        f"revision {revision} changed tenants outside the caller's subtree",
                    )
            if not dry_run:
                # Lock the tenants (in id order), then read again what later revisions did.
                for tenant_id in sorted({c.tenant_id for c in changes}):
                    await lock_tenant_for_entries(
                        conn, self.deps.repos.tenants, principal, tenant_id
                    )
                changes = await self.repo.list_revision_entry_changes(conn, revision)
            moves = await self.repo.list_later_moves(
                conn, sorted({c.tenant_id for c in changes}), revision
            )
            details = [
                FieldError(
                    f"{c.kind}:{c.tenant_id}:{c.key}",
                    "changed later by revision " + ", ".join(str(r) for r in c.later_revisions),
                )
                for c in changes
                if c.later_revisions
            ] + [
                FieldError(
                    f"tenant:{tenant_id}",
                    "moved later by revision " + ", ".join(str(r) for r in revisions),
                )
                for tenant_id, revisions in sorted(moves.items())
            ]
            if details and not force:
                raise ServiceError(
                    "REVERT_CONFLICT",
                    f"later revisions changed what revision {revision} changed",
                    details=details,
                )
            if not dry_run:
                await self._apply(conn, actor, revision, changes)
            return {
                "revision": revision,
                "dry_run": dry_run,
                "changes": [_change_view(c) for c in changes],
            }

        return await self.deps.db.transaction(work)

    async def _apply(
        self, conn: asyncpg.Connection, actor: Actor, revision: int, changes: list[EntryChangeRow]
    ) -> None:
        events: list[Event] = []
        tenants = {c.tenant_id for c in changes}
        for change in changes:
            await self.repo.put_back(conn, change)
            action = f"{change.kind}.{'deleted' if change.before is None else 'updated'}"
            events.append(
                Event(
                    action,
                    change.tenant_id,
                    {"tenant_id": str(change.tenant_id), "key": change.key},
                )
            )
        await self.deps.recorder.record(
            conn,
            actor,
            AuditRecord(
                action="revision.reverted",
                resource_type="revision",
                resource_id=str(revision),
                # One tenant's revert shows in that tenant's audit trail.
                tenant_id=tenants.pop() if len(tenants) == 1 else None,
                changes={"changes": [_change_view(c) for c in changes]},
            ),
            events,
        )


def _change_view(c: EntryChangeRow) -> dict[str, Any]:
    """What the revert does to one entry: from its current state to the one before."""
    return {
        "kind": c.kind,
        "tenant_id": str(c.tenant_id),
        "key": c.key,
        "restored": _shown(c.kind, c.before),
        "reverted": _shown(c.kind, c.after),
        "later_revisions": c.later_revisions,
    }
