"""JSON shapes of audit entries and consent records.

Kept apart from service/representations.py (tenants, keys) so each area's shapes change
in one place.
"""

from __future__ import annotations

from typing import Any

from service.repositories.audit_logs import AuditEntry
from service.repositories.consents import Consent
from service.representations import opt_str
from service.timefmt import iso, iso_or_none


def audit_entry_json(e: AuditEntry) -> dict[str, Any]:
    return {
        "id": str(e.id),
        "tenant_id": opt_str(e.tenant_id),
        "actor_id": e.actor_id,
        "actor_type": e.actor_type,
        "action": e.action,
        "resource_type": e.resource_type,
        "resource_id": e.resource_id,
        "changes": e.changes,
        "request_id": e.request_id,
        "ip_address": e.ip_address,
        "created_at": iso(e.created_at),
    }


def consent_json(c: Consent) -> dict[str, Any]:
    return {
        "id": str(c.id),
        "tenant_id": str(c.tenant_id),
        "purpose": c.purpose,
        "status": c.status,
        "granted_at": iso(c.granted_at),
        "granted_by": c.granted_by,
        "revoked_at": iso_or_none(c.revoked_at),
        "revoked_by": c.revoked_by,
        "expires_at": iso_or_none(c.expires_at),
        "metadata": c.metadata,
    }
