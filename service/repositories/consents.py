"""Consent records; status (granted, revoked, expired) comes from the consent_records view."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class Consent:
    id: UUID
    tenant_id: UUID
    purpose: str
    status: str
    granted_at: datetime
    granted_by: str
    revoked_at: datetime | None
    revoked_by: str | None
    expires_at: datetime | None
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class NewConsent:
    id: UUID
    tenant_id: UUID
    purpose: str
    granted_by: str
    expires_at: datetime | None
    metadata: dict[str, Any]


class ConsentsRepository(Repository):
    _lock = NamedSql("lock_consent_purpose")
    _active = NamedSql("get_active_consent")
    _get = NamedSql("get_consent")
    _insert = NamedSql("insert_consent")
    _list = NamedSql("list_consents")
    _revoke = NamedSql("revoke_consent")

    async def lock_consent_purpose(
        self, conn: asyncpg.Connection, tenant_id: UUID, purpose: str
    ) -> None:
        await conn.execute(self._lock, str(tenant_id), purpose)

    async def get_active_consent(
        self, conn: asyncpg.Connection, tenant_id: UUID, purpose: str
    ) -> Consent | None:
        row = await conn.fetchrow(self._active, tenant_id, purpose)
        return None if row is None else Consent(**row)

    async def get_consent(self, conn: asyncpg.Connection, consent_id: UUID) -> Consent | None:
        row = await conn.fetchrow(self._get, consent_id)
        return None if row is None else Consent(**row)

    async def insert_consent(self, conn: asyncpg.Connection, consent: NewConsent) -> None:
        await conn.execute(
            self._insert,
            consent.id,
            consent.tenant_id,
            consent.purpose,
            consent.granted_by,
            consent.expires_at,
            consent.metadata,
        )

    async def list_consents(
        self, conn: asyncpg.Connection, tenant_id: UUID, *, purpose: str | None = None
    ) -> list[Consent]:
        return [Consent(**r) for r in await conn.fetch(self._list, tenant_id, purpose)]

    async def revoke_consent(
        self, conn: asyncpg.Connection, consent_id: UUID, revoked_by: str
    ) -> None:
        await conn.execute(self._revoke, consent_id, revoked_by)
