"""The resolved context of a tenant (DESIGN.md section 4), read in one statement."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from service.auth.principal import Principal
from service.repositories.context import ResolvedContext
from service.usecases.config_values import check_reveal, shown_value
from service.usecases.deps import Deps
from service.usecases.read_cache import CachedRead, ReadCache, Rendered
from service.usecases.tenant_access import visible_active


class TenantContext:
    def __init__(self, deps: Deps, cache: ReadCache) -> None:
        self.deps = deps
        self.context = deps.repos.context
        self.cache = cache

    async def rendered(self, principal: Principal, tenant_id: UUID, *, reveal: bool) -> Rendered:
        """The context as the API answers it. Masked documents come from the cache when
        it holds them; the caller's access is checked on every request either way."""
        reveal = check_reveal(principal, reveal)
        if not reveal:
            cached = self.cache.get("context", tenant_id)
            if cached is not None:
                visible_active(principal, cached.node)
                return cached.rendered
        generation = self.cache.generation
        found = await self.deps.db.run(lambda c: self.context.resolve_tenant_context(c, tenant_id))
        resolved = visible_active(principal, found)
        document = self._document(resolved, reveal)
        rendered = Rendered.of(document)
        if not reveal:
            self.cache.put("context", tenant_id, CachedRead(resolved, rendered), generation)
        return rendered

    def _document(self, ctx: ResolvedContext, reveal: bool) -> dict[str, Any]:
        encryptor = self.deps.keyring.encryptor
        config = {
            c.key: {
                "key": c.key,
                "value": shown_value(
                    encryptor,
                    tenant_id=c.source_tenant_id,
                    key=c.key,
                    value=c.value,
                    encrypted_value=c.encrypted_value,
                    sensitive=c.sensitive,
                    reveal=reveal,
                ),
                "source_tenant_id": str(c.source_tenant_id),
                "inherited": c.source_tenant_id != ctx.id,
                "locked": c.locked,
            }
            for c in ctx.config
        }
        permissions = {}
        for p in ctx.permissions:
            inherited = p.source_tenant_id != ctx.id
            permissions[p.key] = {
                "key": p.key,
                "value": p.value,
                "mode": p.mode,
                "source_tenant_id": str(p.source_tenant_id),
                "locked": p.mode == "LOCKED",
                # Inherited and still overridable here: this tenant may set its own policy.
                "delegated": inherited and p.mode != "LOCKED",
            }
        return {
            "tenant_id": str(ctx.id),
            "ancestry_path": ctx.ancestry_path,
            "depth": ctx.depth,
            "isolation_strategy": ctx.isolation_strategy,
            "resolved_config": config,
            "resolved_permissions": permissions,
        }
