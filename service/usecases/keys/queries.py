"""Reading API keys: one key, keyset pages, dormant keys and effective scopes."""

from __future__ import annotations

from uuid import UUID

from service.auth.principal import Principal
from service.repositories.api_keys import StoredKey
from service.schemas.api_keys import ListApiKeysQuery
from service.usecases.common.deps import Deps
from service.usecases.common.pages import Page, page_of
from service.usecases.common.tenant_access import visible
from service.usecases.keys.access import visible_key
from service.views.keys import EffectiveScopes


class ApiKeyQueries:
    def __init__(self, deps: Deps) -> None:
        self.db = deps.db
        self.keys = deps.repos.api_keys
        self.tenants = deps.repos.tenants

    async def get(self, principal: Principal, key_id: UUID) -> StoredKey:
        found = await self.db.read(lambda c: self.keys.get_api_key(c, key_id))
        return visible_key(principal, found)

    async def list_page(self, principal: Principal, query: ListApiKeysQuery) -> Page[StoredKey]:
        async with self.db.read_connection() as conn:
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
        return Page(*page_of(rows, query.limit, lambda row: row.key.id))

    async def dormant(self, principal: Principal, days: int) -> list[StoredKey]:
        return await self.db.run(
            lambda c: self.keys.list_dormant_api_keys(c, days=days, subtree_of=principal.tenant_id)
        )

    async def effective_scopes(self, principal: Principal, key_id: UUID) -> EffectiveScopes:
        return EffectiveScopes.of(await self.get(principal, key_id))
