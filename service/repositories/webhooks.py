"""Webhook subscriptions (secrets stay encrypted here; use cases seal and open them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class WebhookRow:
    id: UUID
    tenant_id: UUID | None
    url: str
    events: list[str]
    encrypted_secret: str
    previous_encrypted_secret: str | None
    previous_secret_expires_at: datetime | None
    description: str
    active: bool
    include_descendants: bool
    created_at: datetime
    updated_at: datetime
    # The ancestry path of the webhook's tenant; None for a global webhook.
    tenant_path: str | None


@dataclass(frozen=True, slots=True)
class NewWebhook:
    id: UUID
    tenant_id: UUID | None
    url: str
    events: list[str]
    encrypted_secret: str
    description: str
    active: bool
    include_descendants: bool


@dataclass(frozen=True, slots=True)
class WebhookWrite:
    """Every editable column of a webhook, as it is to be stored."""

    url: str
    events: list[str]
    description: str
    active: bool
    include_descendants: bool
    encrypted_secret: str
    previous_encrypted_secret: str | None
    previous_secret_expires_at: datetime | None


def _webhook(row: asyncpg.Record | None) -> WebhookRow | None:
    return None if row is None else WebhookRow(**row)


class WebhooksRepository(Repository):
    _insert = NamedSql("insert_webhook")
    _get = NamedSql("get_webhook")
    _lock = NamedSql("lock_webhook")
    _list = NamedSql("list_webhooks")
    _update = NamedSql("update_webhook")
    _rotate = NamedSql("rotate_webhook_secret")
    _delete = NamedSql("delete_webhook")

    async def insert_webhook(self, conn: asyncpg.Connection, new: NewWebhook) -> WebhookRow:
        row = await self._insert.one(
            conn,
            webhook_id=new.id,
            tenant_id=new.tenant_id,
            url=new.url,
            events=new.events,
            encrypted_secret=new.encrypted_secret,
            description=new.description,
            active=new.active,
            include_descendants=new.include_descendants,
        )
        created = _webhook(row)
        assert created is not None
        return created

    async def get_webhook(self, conn: asyncpg.Connection, webhook_id: UUID) -> WebhookRow | None:
        return _webhook(await self._get.one(conn, webhook_id=webhook_id))

    async def lock_webhook(self, conn: asyncpg.Connection, webhook_id: UUID) -> WebhookRow | None:
        return _webhook(await self._lock.one(conn, webhook_id=webhook_id))

    async def list_webhooks(
        self, conn: asyncpg.Connection, *, scope: UUID | None, tenant_id: UUID | None
    ) -> list[WebhookRow]:
        return await self._list.many_as(
            WebhookRow, conn, scope_tenant_id=scope, tenant_id=tenant_id
        )

    async def update_webhook(
        self, conn: asyncpg.Connection, webhook_id: UUID, write: WebhookWrite
    ) -> WebhookRow:
        row = await self._update.one(
            conn,
            webhook_id=webhook_id,
            url=write.url,
            events=write.events,
            description=write.description,
            active=write.active,
            include_descendants=write.include_descendants,
            encrypted_secret=write.encrypted_secret,
            previous_encrypted_secret=write.previous_encrypted_secret,
            previous_secret_expires_at=write.previous_secret_expires_at,
        )
        updated = _webhook(row)
        assert updated is not None
        return updated

    async def rotate_webhook_secret(
        self,
        conn: asyncpg.Connection,
        webhook_id: UUID,
        encrypted_secret: str,
        *,
        overlap_seconds: float,
    ) -> WebhookRow:
        row = await self._rotate.one(
            conn,
            webhook_id=webhook_id,
            encrypted_secret=encrypted_secret,
            overlap_seconds=overlap_seconds,
        )
        rotated = _webhook(row)
        assert rotated is not None
        return rotated

    async def delete_webhook(self, conn: asyncpg.Connection, webhook_id: UUID) -> None:
        await self._delete.exec(conn, webhook_id=webhook_id)
