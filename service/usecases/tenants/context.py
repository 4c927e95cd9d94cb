"""The resolved context of a tenant (docs/api.md, inheritance), read in one statement."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from service.auth.principal import Principal
from service.base.etags import Rendered
from service.caches.read_cache import CachedRead, ReadCache
from service.repositories.context import ResolvedContext
from service.usecases.common.cache_fill import fill_read
from service.usecases.common.deps import Deps
from service.usecases.common.tenant_access import visible_active
from service.usecases.entries.values import check_reveal, shown_value
from service.views.base import render
from service.views.entries import TenantContext


class ContextReads:
    def __init__(self, deps: Deps, cache: ReadCache) -> None:
        self.deps = deps
        self.context = deps.repos.context
        self.cache = cache

    async def rendered(self, principal: Principal, tenant_id: UUID, *, reveal: bool) -> Rendered:
        """The context as the API answers it. Masked documents come from the cache when
        it holds them; the caller's access is checked on every request either way."""
        reveal = check_reveal(principal, reveal)
        if reveal:  # decrypted in Python, never cached
            # Never cached, so a replica may answer (docs/scaling.md).
            found = await self.deps.db.read(
                lambda c: self.context.resolve_tenant_context(c, tenant_id)
            )
            return render(self._view(visible_active(principal, found), principal))
        cached = self.cache.get("context", tenant_id)
        if cached is not None:
            visible_active(principal, cached.node)
            return cached.rendered
        generation = self.cache.generation
        # Masked: PostgreSQL renders the whole document (docs/decisions/caching.md).
        masked, replayed = await fill_read(
            self.deps.db,
            self.cache,
            "context",
            tenant_id,
            lambda c: self.context.render_tenant_context(c, tenant_id),
        )
        node = visible_active(principal, masked)
        rendered = Rendered.of_text(node.document)
        self.cache.put("context", tenant_id, CachedRead(node, rendered), generation, replayed)
        return rendered

    def _view(self, ctx: ResolvedContext, revealer: Principal | None) -> TenantContext:
        """The context view; `revealer` is the caller of a ?reveal=true request (None:
        every sensitive value masked, the document the cache may keep)."""
        encryptor = self.deps.keyring.encryptor
        reaches = _sources_within_reach(revealer, ctx.ancestry_path)
        shown: dict[str, Any] = {}
        masked_outside: list[str] = []
        for c in ctx.config:
            # A reveal decrypts what the caller could read at its source, or what the
            # source shares down the tree; a secret of an ancestor above the caller's
            # subtree stays masked and says so.
            reveal = revealer is not None and (
                reaches is None or c.source_tenant_id in reaches or c.reveal_to_descendants
            )
            shown[c.key] = shown_value(encryptor, c, c.source_tenant_id, reveal)
            if revealer is not None and c.sensitive and not reveal:
                masked_outside.append(c.key)
        return TenantContext.of(ctx, shown, masked_outside)


def _sources_within_reach(revealer: Principal | None, ancestry_path: str) -> set[UUID] | None:
    """The tenants on the chain whose values this caller may read at their source: its
    own tenant and those below it (None: every tenant, an unscoped caller)."""
    if revealer is None or revealer.tenant_id is None:
        return None
    chain = [UUID(part) for part in ancestry_path.split("/")[1:]]
    # The caller can see this tenant, so its own tenant lies on the chain.
    return set(chain[chain.index(revealer.tenant_id) :])
