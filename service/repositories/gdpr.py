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


# The order a purge deletes in: children of a table before the table (deliveries before
# events and webhooks, closure rows before tenants), so every count is exact.
# Each step is (count label, GdprRepository attribute holding the query).
PURGE_STEPS: tuple[tuple[str, str], ...] = (
    ("webhook_deliveries", "_deliveries"),
    ("events", "_events"),
    ("webhooks", "_webhooks_gone"),
    ("consents", "_consents"),
    ("config_entries", "_config"),
    ("permission_policies", "_permissions_gone"),
    ("api_keys", "_keys"),
    ("roles", "_roles_gone"),
    ("closure_rows", "_closure"),
    ("tenants", "_tenants"),
)


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
        return [r["id"] for r in await conn.fetch(self._lock_subtree, tenant_id)]

    async def find_events_mentioning_tenants(
        self, conn: asyncpg.Connection, tenant_ids: Sequence[UUID]
    ) -> list[EventPayload]:
        rows = await conn.fetch(self._mentioning, list(tenant_ids))
        return [EventPayload(r["id"], r["payload"]) for r in rows]

    async def replace_event_payloads(
        self, conn: asyncpg.Connection, payloads: Sequence[EventPayload]
    ) -> None:
        if payloads:
            await conn.execute(
                self._replace_payloads, [p.id for p in payloads], [p.payload for p in payloads]
            )

    async def delete_rows_of_tenants(
        self, conn: asyncpg.Connection, tenant_ids: Sequence[UUID]
    ) -> PurgedRows:
        """Every row of these tenants, table by table (PURGE_STEPS)."""
        ids = list(tenant_ids)
        counts: dict[str, int] = {}
        removed: dict[str, list[UUID]] = {}
        for label, attribute in PURGE_STEPS:
            sql: str = getattr(self, attribute)
            row = await conn.fetchrow(sql, ids)
            assert row is not None
            counts[label] = int(row["deleted"])
            if "ids" in row.keys():  # noqa: SIM118 - a Record is also a sequence
                removed[label] = list(row["ids"])
        return PurgedRows(counts, removed["api_keys"], removed["roles"])
