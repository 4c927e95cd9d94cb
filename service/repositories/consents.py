"""Consent records; status (granted, revoked, expired) comes from the consent_records view."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class ConsentRow:
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
        await self._lock.exec(conn, tenant_id=str(tenant_id), purpose=purpose)

    async def get_active_consent(
        self, conn: asyncpg.Connection, tenant_id: UUID, purpose: str
    ) -> ConsentRow | None:
        return await self._active.one_as(ConsentRow, conn, tenant_id=tenant_id, purpose=purpose)

    async def get_consent(self, conn: asyncpg.Connection, consent_id: UUID) -> ConsentRow | None:
        return await self._get.one_as(ConsentRow, conn, consent_id=consent_id)

    async def insert_consent(self, conn: asyncpg.Connection, consent: NewConsent) -> None:
        await self._insert.exec(
            conn,
            consent_id=consent.id,
            tenant_id=consent.tenant_id,
            purpose=consent.purpose,
            granted_by=consent.granted_by,
            expires_at=consent.expires_at,
            metadata=consent.metadata,
        )

    async def list_consents(
        self, conn: asyncpg.Connection, tenant_id: UUID, *, purpose: str | None = None
    ) -> list[ConsentRow]:
        return [
            ConsentRow(**r)
            for r in await self._list.many(conn, tenant_id=tenant_id, purpose=purpose)
        ]

    async def revoke_consent(
        self, conn: asyncpg.Connection, consent_id: UUID, revoked_by: str
    ) -> None:
        await self._revoke.exec(conn, consent_id=consent_id, revoked_by=revoked_by)
