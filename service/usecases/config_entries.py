"""A tenant's own config entries: list, read, create or replace, delete."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg
from msgspec import UNSET

from service.auth.principal import Actor, Principal
from service.crypto import DecryptionError
from service.errors import ServiceError
from service.repositories.config_entries import ConfigEntry, ConfigWrite
from service.representations import SENSITIVE_MASK
from service.schemas.config import ConfigPut
from service.usecases.config_values import (
    check_reveal,
    encrypt_value,
    same_json,
    shown_value,
    try_decrypt,
)
from service.usecases.deps import Deps
from service.usecases.entry_writes import key_locked, lock_tenant_for_entries
from service.usecases.recording import AuditRecord, Event
from service.usecases.tenant_access import visible_active


@dataclass(frozen=True, slots=True)
class ShownEntry:
    """An entry with its value as this caller may see it."""

    entry: ConfigEntry
    value: Any


def config_not_found(key: str) -> ServiceError:
    return ServiceError("CONFIG_NOT_FOUND", f"the tenant has no config entry {key!r}")


def _audit_view(entry: ConfigEntry | None) -> dict[str, Any] | None:
    if entry is None:
        return None
    return {
        "value": SENSITIVE_MASK if entry.sensitive else entry.value,
        "locked": entry.locked,
        "sensitive": entry.sensitive,
    }


def updated_event(entry: ConfigEntry) -> Event:
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
        self.tenants = deps.repos.tenants
        self.config = deps.repos.config

    def _shown(self, entry: ConfigEntry, reveal: bool) -> ShownEntry:
        value = shown_value(
            self.deps.keyring.encryptor,
            tenant_id=entry.tenant_id,
            key=entry.key,
            value=entry.value,
            encrypted_value=entry.encrypted_value,
            sensitive=entry.sensitive,
            reveal=reveal,
        )
        return ShownEntry(entry, value)

    async def list_entries(
        self, principal: Principal, tenant_id: UUID, *, reveal: bool
    ) -> list[ShownEntry]:
        reveal = check_reveal(principal, reveal)
        async with self.deps.db.connection() as conn:
            visible_active(principal, await self.tenants.get_tenant(conn, tenant_id))
            entries = await self.config.list_config_entries(conn, tenant_id)
        return [self._shown(e, reveal) for e in entries]

    async def get(
        self, principal: Principal, tenant_id: UUID, key: str, *, reveal: bool
    ) -> ShownEntry:
        reveal = check_reveal(principal, reveal)
        async with self.deps.db.connection() as conn:
            visible_active(principal, await self.tenants.get_tenant(conn, tenant_id))
            entry = await self.config.get_config_entry(conn, tenant_id, key)
        if entry is None:
            raise config_not_found(key)
        return self._shown(entry, reveal)

    async def put(
        self, principal: Principal, actor: Actor, tenant_id: UUID, key: str, body: ConfigPut
    ) -> tuple[ShownEntry, bool]:
        """Create or replace the entry; returns it (masked) and whether it was created."""

        async def work(conn: asyncpg.Connection) -> tuple[ShownEntry, bool]:
            node = await lock_tenant_for_entries(conn, self.tenants, principal, tenant_id)
            await self.config.lock_config_keys(conn, [(node.root_id, key)])
            await self._refuse_locked(conn, node.parent_id, key)
            before = await self.config.get_config_entry(conn, tenant_id, key)
            locked = body.locked if body.locked is not UNSET else bool(before and before.locked)
            sensitive = (
                body.sensitive if body.sensitive is not UNSET else bool(before and before.sensitive)
            )
            if before is not None and self._unchanged(before, body.value, locked, sensitive):
                return self._shown(before, False), False
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
            after = await self.config.upsert_config_entry(conn, tenant_id, write, locked=locked)
            await self.deps.recorder.record(
                conn,
                actor,
                AuditRecord(
                    "config.updated",
                    "config_entry",
                    key,
                    tenant_id,
                    {"before": _audit_view(before), "after": _audit_view(after)},
                ),
                [updated_event(after)],
            )
            return self._shown(after, False), before is None

        return await self.deps.db.transaction(work)

    def _unchanged(self, before: ConfigEntry, value: Any, locked: bool, sensitive: bool) -> bool:
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
        async def work(conn: asyncpg.Connection) -> None:
            node = await lock_tenant_for_entries(conn, self.tenants, principal, tenant_id)
            await self.config.lock_config_keys(conn, [(node.root_id, key)])
            if await self.config.get_config_entry(conn, tenant_id, key) is None:
                raise config_not_found(key)
            # Removing a key is a write too: refused under an ancestor's lock, as PATCH is.
            await self._refuse_locked(conn, node.parent_id, key)
            before = await self.config.delete_config_entry(conn, tenant_id, key)
            if before is None:
                raise config_not_found(key)
            await self.deps.recorder.record(
                conn,
                actor,
                AuditRecord(
                    "config.deleted",
                    "config_entry",
                    key,
                    tenant_id,
                    {"before": _audit_view(before), "after": None},
                ),
                [Event("config.deleted", tenant_id, {"tenant_id": str(tenant_id), "key": key})],
            )

        await self.deps.db.transaction(work)

    async def _refuse_locked(
        self, conn: asyncpg.Connection, parent_id: UUID | None, key: str
    ) -> None:
        if parent_id is None:
            return
        locked = await self.config.find_locked_config_keys(conn, parent_id, [key])
        if key in locked:
            raise key_locked("CONFIG_LOCKED", "config", key, locked[key])
