"""Who is calling: the credential's kind, name, key prefix, effective scopes and
subtree, for a client (the console) to say who is signed in and offer only what the
credential can use. Never the key itself: only its public prefix."""

from __future__ import annotations

from typing import Literal, cast

from service.auth.principal import Principal
from service.usecases.common.deps import Deps
from service.views.session import SignedIn


class SessionReads:
    def __init__(self, deps: Deps) -> None:
        self.db = deps.db
        self.keys = deps.repos.api_keys

    async def describe(self, principal: Principal) -> SignedIn:
        name = prefix = None
        environment: Literal["live", "test"] | None = None
        key_id = principal.api_key_id
        if key_id is not None:
            stored = await self.db.read(lambda conn: self.keys.get_api_key(conn, key_id))
            if stored is not None:
                name, prefix = stored.key.name, stored.key.prefix
                environment = cast(Literal["live", "test"], stored.key.environment)
        return SignedIn(
            kind=principal.actor_type,
            id=principal.actor_id,
            name=name,
            prefix=prefix,
            environment=environment,
            scopes=sorted(principal.scopes),  # type: ignore[arg-type]
            tenant_id=principal.tenant_id,
        )
