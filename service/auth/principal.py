"""Who is calling, with what scopes, restricted to which subtree."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal
from uuid import UUID

ActorType = Literal["api_key", "jwt", "system"]
SCOPES = ("read", "write", "admin")


@dataclass(frozen=True, slots=True)
class Principal:
    actor_id: str
    actor_type: ActorType
    scopes: frozenset[str]
    # A tenant-scoped caller reaches only this tenant and its descendants.
    tenant_id: UUID | None = None
    api_key_id: UUID | None = None
    rate_limit_max: int | None = None
    rate_limit_window_seconds: int | None = None
    expires_at: datetime | None = None

    @property
    def is_scoped(self) -> bool:
        return self.tenant_id is not None

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes

    def can_see_path(self, ancestry_path: str) -> bool:
        """Whether a tenant with this ancestry path lies inside the caller's subtree.

        Path segments are '/' plus a fixed-length UUID, so a substring match is an
        exact segment match.
        """
        return self.tenant_id is None or f"/{self.tenant_id}" in ancestry_path


@dataclass(frozen=True, slots=True)
class Actor:
    """The principal plus the request it acted through, as the audit log records it."""

    actor_id: str
    actor_type: ActorType
    request_id: str | None = None
    ip_address: str | None = None


SYSTEM_ACTOR = Actor(actor_id="system", actor_type="system")
