"""Changing a tenant in place: PATCH (fields, metadata, config), archive and restore."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg
import orjson
from msgspec import UNSET

from service.auth.principal import Actor, Principal
from service.base.crypto import PURPOSE_CONFIG, config_aad
from service.base.errors import FieldError, RetryTransaction, ServiceError
from service.repositories.config_entries import ConfigEntryRow, ConfigWrite
from service.repositories.key_locks import KeyWrite
from service.repositories.tenants import TenantNode, TenantRow
from service.schemas.tenants import TenantPatch
from service.usecases.common.deps import Deps
from service.usecases.common.merge_patch import merge_patch
from service.usecases.common.protection import refuse_protected
from service.usecases.common.recording import Event, tenant_audit
from service.usecases.common.tenant_access import check_if_match, visible, visible_active
from service.usecases.entries.constraints import ConfigConstraints, Written
from service.usecases.entries.values import same_json
from service.views.base import SENSITIVE_MASK, document, instant_or_none, opt_str
from service.views.tenants import Tenant


def config_locked(key: str, holder: UUID) -> ServiceError:
    return ServiceError(
        "CONFIG_LOCKED",
        f"config key {key!r} is locked by ancestor {holder}",
        details=[FieldError(f"config.{key}", "locked by an ancestor")],
    )


class TenantChanges:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.tenants = deps.repos.tenants
        self.config = deps.repos.config
        self.constraints = ConfigConstraints(deps)

    async def update(
        self,
        principal: Principal,
        actor: Actor,
        tenant_id: UUID,
        patch: TenantPatch,
        *,
        if_match: str | None,
    ) -> TenantRow:
        async def work(conn: asyncpg.Connection) -> TenantRow:
            node = visible_active(principal, await self.tenants.lock_tenant_node(conn, tenant_id))
            await refuse_protected(conn, self.deps.repos.protection, [tenant_id])
            before = await self.tenants.get_tenant(conn, tenant_id)
            assert before is not None
            check_if_match(if_match, before)
            changed: list[str] = []
            name = before.name if patch.name is UNSET else patch.name
            slug = before.slug if patch.slug is UNSET else patch.slug
            metadata = (
                before.metadata
                if patch.metadata is UNSET
                else merge_patch(before.metadata, patch.metadata)
            )
            for field, old, new in (
                ("name", before.name, name),
                ("slug", before.slug, slug),
                ("metadata", before.metadata, metadata),
            ):
                if old != new:
                    changed.append(field)
            events: list[Event] = []
            if patch.config is not UNSET and patch.config:
                events = await self._apply_config(conn, node, patch.config)
                if events:
                    changed.append("config")
            if not changed:
                return before
            if {"name", "slug", "metadata"} & set(changed):
                await self.tenants.update_tenant_fields(
                    conn, tenant_id, name=name, slug=slug, metadata=metadata
                )
            after = await self.tenants.get_tenant(conn, tenant_id)
            assert after is not None
            old_json, new_json = document(Tenant.of(before)), document(Tenant.of(after))
            updated = Event("tenant.updated", tenant_id, {**new_json, "changed_fields": changed})
            await self.deps.recorder.record(
                conn,
                actor,
                tenant_audit(
                    "tenant.updated",
                    tenant_id,
                    changes={
                        "before": {f: old_json[f] for f in changed},
                        "after": {f: new_json[f] for f in changed},
                    },
                ),
                [updated, *events],
            )
            return after

        return await self.deps.db.transaction(work)

    async def _apply_config(
        self, conn: asyncpg.Connection, node: TenantNode, patch: dict[str, Any]
    ) -> list[Event]:
        """Merge the config patch into the tenant's own entries; events for what changed."""
        # The tenant is locked FOR UPDATE, so its chain of ancestors (and root) is fixed;
        # the key locks keep a concurrent lock by an ancestor from being missed.
        await self.config.lock_config_keys(conn, [KeyWrite(node.ancestry_path, k) for k in patch])
        if node.parent_id is not None:
            locked = await self.config.find_locked_config_keys(conn, node.parent_id, list(patch))
            if locked:
                key = sorted(locked)[0]
                raise config_locked(key, locked[key])
        existing = {e.key: e for e in await self.config.list_config_entries(conn, node.id)}
        writes: list[ConfigWrite] = []
        plain: dict[str, Any] = {}
        deleted: list[str] = []
        events: list[Event] = []
        for key, value in patch.items():
            entry = existing.get(key)
            if value is None:
                if entry is not None:
                    deleted.append(key)
                    events.append(
                        Event("config.deleted", node.id, {"tenant_id": str(node.id), "key": key})
                    )
                continue
            write = self._write_for(node.id, key, value, entry)
            if write is None:
                continue
            writes.append(write)
            plain[key] = value if write.sensitive else write.value
            events.append(
                Event(
                    "config.updated",
                    node.id,
                    {
                        "tenant_id": str(node.id),
                        "key": key,
                        "value": SENSITIVE_MASK if write.sensitive else write.value,
                        "locked": entry.locked if entry else False,
                        "sensitive": write.sensitive,
                    },
                )
            )
        secrets = {w.key for w in writes if w.sensitive}
        await self.constraints.check_values(conn, node.id, node.id, plain, sensitive=secrets)
        written = [Written(node.id, node.parent_id, {**plain, **dict.fromkeys(deleted)})]
        budgets = await self.constraints.lock_budgets(conn, written)
        await self.config.upsert_config_values(conn, node.id, writes)
        await self.config.delete_config_keys(conn, node.id, deleted)
        if budgets:
            await self.constraints.check_budgets(conn, written, sorted(written[0].values))
        return events

    def _write_for(
        self, tenant_id: UUID, key: str, value: Any, entry: ConfigEntryRow | None
    ) -> ConfigWrite | None:
        if entry is not None and entry.sensitive:
            # A sensitive entry stays sensitive; its new value replaces the secret whole.
            token = self.deps.keyring.encryptor.encrypt(
                orjson.dumps(value), purpose=PURPOSE_CONFIG, aad=config_aad(tenant_id, key)
            )
            return ConfigWrite(key, None, token, True)
        merged = merge_patch(entry.value if entry else None, value)
        if entry is not None and same_json(merged, entry.value):
            return None
        return ConfigWrite(key, merged, None, False)

    async def archive(
        self, principal: Principal, actor: Actor, tenant_id: UUID, *, if_match: str | None
    ) -> None:
        async def work(conn: asyncpg.Connection) -> None:
            await self._lock_in_tree(conn, principal, tenant_id)
            await refuse_protected(conn, self.deps.repos.protection, [tenant_id])
            if if_match is not None:
                check_if_match(if_match, await self._tenant(conn, tenant_id))
            if await self.tenants.has_active_children(conn, tenant_id):
                raise ServiceError(
                    "HAS_CHILDREN", "the tenant has active children; archive or move them first"
                )
            await self.tenants.archive_tenant(conn, tenant_id)
            archived = await self._tenant(conn, tenant_id)
            await self._record_status(
                conn, actor, archived, "tenant.deleted",
                {"deleted_at": instant_or_none(archived.deleted_at)},
            )  # fmt: skip

        await self.deps.db.transaction(work)

    async def restore(self, principal: Principal, actor: Actor, tenant_id: UUID) -> TenantRow:
        """Bring an archived tenant back; restoring an active tenant changes nothing."""

        async def work(conn: asyncpg.Connection) -> TenantRow:
            node = await self._lock_in_tree(conn, principal, tenant_id, archived=True)
            await refuse_protected(conn, self.deps.repos.protection, [tenant_id])
            if not node.is_archived:
                return await self._tenant(conn, tenant_id)
            if node.parent_id is not None:
                parents = await self.tenants.lock_tenant_nodes_shared(conn, [node.parent_id])
                if parents[node.parent_id].is_archived:
                    raise ServiceError(
                        "PARENT_ARCHIVED", "the parent tenant is archived; restore it first"
                    )
            await self.tenants.restore_tenant(conn, tenant_id)
            restored = await self._tenant(conn, tenant_id)
            await self._record_status(conn, actor, restored, "tenant.restored", {})
            return restored

        return await self.deps.db.transaction(work)

    async def _tenant(self, conn: asyncpg.Connection, tenant_id: UUID) -> TenantRow:
        tenant = await self.tenants.get_tenant(conn, tenant_id)
        assert tenant is not None, "read inside the transaction that locked it"
        return tenant

    async def _record_status(
        self,
        conn: asyncpg.Connection,
        actor: Actor,
        tenant: TenantRow,
        action: str,
        extra: dict[str, Any],
    ) -> None:
        """Audit and event of an archive or a restore (the action names both)."""
        before = "active" if tenant.status == "archived" else "archived"
        data = {"id": str(tenant.id), "slug": tenant.slug, "parent_id": opt_str(tenant.parent_id)}
        await self.deps.recorder.record(
            conn,
            actor,
            tenant_audit(
                action,
                tenant.id,
                changes={"before": {"status": before}, "after": {"status": tenant.status}},
            ),
            [Event(action, tenant.id, {**data, **extra})],
        )

    async def _lock_in_tree(
        self,
        conn: asyncpg.Connection,
        principal: Principal,
        tenant_id: UUID,
        *,
        archived: bool = False,
    ) -> TenantNode:
        """Share-lock the tenant's tree root, then lock the tenant itself for update.

        A root tenant is locked for update directly: taking a shared lock first and
        upgrading it would deadlock against another transaction doing the same.
        """
        seen = visible(
            principal, (await self.tenants.get_tenant_nodes(conn, [tenant_id])).get(tenant_id)
        )
        if seen.root_id != tenant_id:
            await self.tenants.lock_tree_roots_shared(conn, [seen.root_id])
        node = visible(principal, await self.tenants.lock_tenant_node(conn, tenant_id))
        if node.root_id != seen.root_id:
            raise RetryTransaction
        if node.is_archived and not archived:
            raise ServiceError("TENANT_ARCHIVED", "tenant is archived")
        return node
