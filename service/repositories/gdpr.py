"""GDPR purge: locking the subtree, deleting every row of its tenants, redacting events
of other tenants that name them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class PurgedRows:
    """Rows deleted per table, and the credentials among them (for the key cache)."""

    counts: dict[str, int]
    api_key_ids: list[UUID]
    role_ids: list[UUID]


@dataclass(frozen=True, slots=True)
class EventPayload:
    id: UUID
    payload: dict[str, Any]


class GdprRepository(Repository):
    _lock_subtree = NamedSql("lock_subtree_for_purge")
    _mentioning = NamedSql("find_events_mentioning_tenants")
    _replace_payloads = NamedSql("replace_event_payloads")
    _deliveries = NamedSql("delete_deliveries_of_tenants")
    _events = NamedSql("delete_events_of_tenants")
    _webhooks_gone = NamedSql("delete_webhooks_of_tenants")
    _consents = NamedSql("delete_consents_of_tenants")
    _config = NamedSql("delete_config_of_tenants")
    _permissions_gone = NamedSql("delete_permissions_of_tenants")
    _keys = NamedSql("delete_api_keys_of_tenants")
    _roles_gone = NamedSql("delete_roles_of_tenants")
    _closure = NamedSql("delete_closure_of_tenants")
    _tenants = NamedSql("delete_tenants")

    async def lock_subtree_for_purge(self, conn: asyncpg.Connection, tenant_id: UUID) -> list[UUID]:
        return [r["id"] for r in await self._lock_subtree.many(conn, tenant_id=tenant_id)]

    async def find_events_mentioning_tenants(
        self, conn: asyncpg.Connection, tenant_ids: Sequence[UUID]
    ) -> list[EventPayload]:
        rows = await self._mentioning.many(conn, tenant_ids=list(tenant_ids))
        return [EventPayload(r["id"], r["payload"]) for r in rows]

    async def replace_event_payloads(
        self, conn: asyncpg.Connection, payloads: Sequence[EventPayload]
    ) -> None:
        if payloads:
            await self._replace_payloads.exec(
                conn, event_ids=[p.id for p in payloads], payloads=[p.payload for p in payloads]
            )

    async def delete_rows_of_tenants(
        self, conn: asyncpg.Connection, tenant_ids: Sequence[UUID]
    ) -> PurgedRows:
        """Every row of these tenants, table by table: children of a table before the
        table (deliveries before events and webhooks, closure rows before tenants), so
        every count is exact."""
        ids = list(tenant_ids)
        counts: dict[str, int] = {}

        def count(label: str, row: asyncpg.Record | None) -> asyncpg.Record:
            assert row is not None
            counts[label] = int(row["deleted"])
            return row

        count("webhook_deliveries", await self._deliveries.one(conn, tenant_ids=ids))
        count("events", await self._events.one(conn, tenant_ids=ids))
        count("webhooks", await self._webhooks_gone.one(conn, tenant_ids=ids))
        count("consents", await self._consents.one(conn, tenant_ids=ids))
        count("config_entries", await self._config.one(conn, tenant_ids=ids))
        count("permission_policies", await self._permissions_gone.one(conn, tenant_ids=ids))
        keys = count("api_keys", await self._keys.one(conn, tenant_ids=ids))
        roles = count("roles", await self._roles_gone.one(conn, tenant_ids=ids))
        count("closure_rows", await self._closure.one(conn, tenant_ids=ids))
        count("tenants", await self._tenants.one(conn, tenant_ids=ids))
        return PurgedRows(counts, list(keys["ids"]), list(roles["ids"]))
