"""Reading API keys: one key, keyset pages, dormant keys and effective scopes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from service.auth.principal import Principal
from service.repositories.api_keys import StoredKey
from service.schemas.api_keys import ListApiKeysQuery
from service.usecases.deps import Deps
from service.usecases.key_access import visible_key
from service.usecases.tenant_access import visible


@dataclass(frozen=True, slots=True)
class KeyPage:
    items: list[StoredKey]
    next_cursor: UUID | None

    @property
    def has_more(self) -> bool:
        return self.next_cursor is not None


class ApiKeyQueries:
    def __init__(self, deps: Deps) -> None:
        self.db = deps.db
        self.keys = deps.repos.api_keys
        self.tenants = deps.repos.tenants

    async def get(self, principal: Principal, key_id: UUID) -> StoredKey:
        return visible_key(principal, await self.db.run(lambda c: self.keys.get_api_key(c, key_id)))

    async def list_page(self, principal: Principal, query: ListApiKeysQuery) -> KeyPage:
        async with self.db.connection() as conn:
            if query.tenant_id is not None:
                # Keys of an archived tenant are still listed: they may need revoking.
                nodes = await self.tenants.get_tenant_nodes(conn, [query.tenant_id])
                visible(principal, nodes.get(query.tenant_id))
            rows = await self.keys.list_api_keys(
                conn,
                tenant_id=query.tenant_id,
                subtree_of=principal.tenant_id,
                include_revoked=query.include_revoked,
                cursor=query.cursor,
                limit=query.limit + 1,
            )
        if len(rows) > query.limit:
            return KeyPage(rows[: query.limit], rows[query.limit - 1].key.id)
        return KeyPage(rows, None)

    async def dormant(self, principal: Principal, days: int) -> list[StoredKey]:
        return await self.db.run(
            lambda c: self.keys.list_dormant_api_keys(c, days=days, subtree_of=principal.tenant_id)
        )

    async def effective_scopes(self, principal: Principal, key_id: UUID) -> dict[str, Any]:
        stored = await self.get(principal, key_id)
        role_id = stored.key.role_id
        return {
            "api_key_id": str(stored.key.id),
            "scopes": stored.effective_scopes,
            "source": "role" if stored.role_scopes is not None else "key",
            "role_id": None if role_id is None else str(role_id),
        }
