"""Views of protected subtrees and change requests (docs/change-requests.md)."""

from __future__ import annotations

from uuid import UUID

from service.repositories.protection import Protection
from service.views.base import Instant, View, instant


class TenantProtection(View):
    tenant_id: UUID
    protected: bool
    protected_at: Instant
    protected_by: str

    @classmethod
    def of(cls, row: Protection) -> TenantProtection:
        return cls(
            tenant_id=row.tenant_id,
            protected=True,
            protected_at=instant(row.protected_at),
            protected_by=row.protected_by,
        )
