"""A tenant's own config entries: list, read, create or replace, delete."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg
from msgspec import UNSET

from service.auth.principal import Actor, Principal
from service.base.crypto import DecryptionError
from service.base.errors import ServiceError
from service.base.timefmt import iso
from service.repositories.config_entries import ConfigEntryRow, ConfigWrite
from service.repositories.tenants import TenantNode
from service.schemas.config import ConfigPut
from service.usecases.common.deps import Deps
from service.usecases.common.protection import refuse_protected_by
from service.usecases.common.recording import AuditRecord, Event
from service.usecases.common.tenant_access import reading_active_tenant
from service.usecases.entries.constraints import ConfigConstraints, Written
from service.usecases.entries.values import (
    check_reveal,
    encrypt_value,
    same_json,
    shown_value,
    try_decrypt,
)
from service.usecases.entries.writes import EntryStore, EntryWrites, key_locked
from service.views.base import SENSITIVE_MASK


@dataclass(frozen=True, slots=True)
class ShownEntry:
    """An entry with its value as this caller may see it."""

    entry: ConfigEntryRow
    value: Any


def config_not_found(key: str) -> ServiceError:
    return ServiceError("CONFIG_NOT_FOUND", f"the tenant has no config entry {key!r}")


def _audit_view(entry: ConfigEntryRow | None) -> dict[str, Any] | None:
    if entry is None:
        return None
    return {
        "value": SENSITIVE_MASK if entry.sensitive else entry.value,
        "locked": entry.locked,
        "sensitive": entry.sensitive,
        "reveal_to_descendants": entry.reveal_to_descendants,
        **({} if entry.expires_at is None else {"expires_at": iso(entry.expires_at)}),
    }


def updated_event(entry: ConfigEntryRow) -> Event:
    return Event(
        "config.updated",
        entry.tenant_id,
        {
            "tenant_id": str(entry.tenant_id),
            "key": entry.key,
            "value": SENSITIVE_MASK if entry.sensitive else entry.value,
            "locked": entry.locked,
            "sensitive": entry.sensitive,
        },
    )


class ConfigEntries:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.config = deps.repos.config
        self.constraints = ConfigConstraints(deps)
        self.writes = EntryWrites(
            deps,
            EntryStore(
                kind="config",
                resource="config_entry",
                locked_code="CONFIG_LOCKED",
                not_found=config_not_found,
                audit_view=_audit_view,
                get=self.config.get_config_entry,
                remove=self.config.delete_config_entry,
                lock_keys=self.config.lock_config_keys,
                find_locked=self.config.find_locked_config_keys,
                after_remove=self._after_remove,
            ),
        )

    async def _after_remove(self, conn: asyncpg.Connection, node: TenantNode, key: str) -> None:
        # A value gone at a budget's holder (or above it) may leave its children over it.
        await self.constraints.check_budgets(conn, [Written(node.id, node.parent_id, {})], [key])

    def _shown(self, entry: ConfigEntryRow, reveal: bool) -> ShownEntry:
        value = shown_value(self.deps.keyring.encryptor, entry, entry.tenant_id, reveal)
        return ShownEntry(entry, value)

    async def list_entries(
        self, principal: Principal, tenant_id: UUID, *, reveal: bool
    ) -> list[ShownEntry]:
        reveal = check_reveal(principal, reveal)
        async with reading_active_tenant(self.deps, principal, tenant_id) as conn:
            entries = await self.config.list_config_entries(conn, tenant_id)
        return [self._shown(e, reveal) for e in entries]

    async def get(
        self, principal: Principal, tenant_id: UUID, key: str, *, reveal: bool
    ) -> ShownEntry:
        reveal = check_reveal(principal, reveal)
        async with reading_active_tenant(self.deps, principal, tenant_id) as conn:
            entry = await self.config.get_config_entry(conn, tenant_id, key)
        if entry is None:
            raise config_not_found(key)
        return self._shown(entry, reveal)

    async def put(
        self, principal: Principal, actor: Actor, tenant_id: UUID, key: str, body: ConfigPut
    ) -> tuple[ShownEntry, bool]:
        """Create or replace the entry; returns it (masked) and whether it was created."""
        if body.reveal_to_descendants is True and not principal.has_scope("admin"):
            # Sharing a secret with the admins below is a decision about who reads it.
            raise ServiceError(
                "INSUFFICIENT_SCOPE", "reveal_to_descendants: true needs the admin scope"
            )

        async def work(conn: asyncpg.Connection) -> tuple[ShownEntry, bool]:
            node = await self.writes.lock_key(
                conn, principal, tenant_id, key, check_protection=False
            )
            # Protection, the ancestors' lock and the entry in one round trip, refused in
            # the order the other writes refuse them.
            checks = await self.config.check_config_write(conn, tenant_id, node.parent_id, key)
            refuse_protected_by(checks.protected_by)
            if checks.locked_by is not None:
                raise key_locked("CONFIG_LOCKED", "config", key, checks.locked_by)
            before = checks.before
            locked = body.locked if body.locked is not UNSET else bool(before and before.locked)
            sensitive = (
                body.sensitive if body.sensitive is not UNSET else bool(before and before.sensitive)
            )
            shared = (
                body.reveal_to_descendants
                if body.reveal_to_descendants is not UNSET
                else bool(before and before.reveal_to_descendants)
            )
            if (
                before is not None
                and before.reveal_to_descendants == shared
                and before.expires_at == body.expires_at
                and self._unchanged(before, body.value, locked, sensitive)
            ):
                return self._shown(before, False), False
            written = Written(tenant_id, node.parent_id, {key: body.value})
            budgets = await self.constraints.check_one_and_lock_budgets(
                conn, written, sensitive={key} if sensitive else ()
            )
            write = (
                ConfigWrite(
                    key,
                    None,
                    encrypt_value(self.deps.keyring.encryptor, tenant_id, key, body.value),
                    True,
                )
                if sensitive
                else ConfigWrite(key, body.value, None, False)
            )
            after = await self.config.upsert_config_entry(
                conn,
                tenant_id,
                write,
                locked=locked,
                reveal_to_descendants=shared,
                expires_at=body.expires_at,
            )
            if budgets:
                await self.constraints.check_budgets(conn, [written], [key])
            await self.deps.recorder.record(
                conn,
                actor,
                AuditRecord(
                    action="config.updated",
                    resource_type="config_entry",
                    resource_id=key,
                    tenant_id=tenant_id,
                    changes={"before": _audit_view(before), "after": _audit_view(after)},
                ),
                [updated_event(after)],
            )
            return self._shown(after, False), before is None

        return await self.deps.db.transaction(work)

    def _unchanged(self, before: ConfigEntryRow, value: Any, locked: bool, sensitive: bool) -> bool:
        if before.locked != locked or before.sensitive != sensitive:
            return False
        if not sensitive:
            return same_json(before.value, value)
        assert before.encrypted_value is not None
        try:
            old = try_decrypt(self.deps.keyring.encryptor, before.tenant_id, before.key,
                              before.encrypted_value)  # fmt: skip
        except DecryptionError:
            return False  # an unreadable secret is replaced, never compared
        return same_json(old, value)

    async def delete(self, principal: Principal, actor: Actor, tenant_id: UUID, key: str) -> None:
        await self.writes.delete(principal, actor, tenant_id, key)
