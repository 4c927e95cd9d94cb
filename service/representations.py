"""The JSON shapes of resources, shared by responses, ETags, events and audit entries."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import orjson

from service.repositories.api_keys import ApiKey, StoredKey
from service.repositories.roles import Role
from service.repositories.tenants import Tenant
from service.timefmt import iso, iso_or_none

SENSITIVE_MASK = "***"


def opt_str(value: object | None) -> str | None:
    """An optional id (or anything) as text, None staying None."""
    return None if value is None else str(value)


def tenant_json(t: Tenant) -> dict[str, Any]:
    return {
        "id": str(t.id),
        "parent_id": opt_str(t.parent_id),
        "name": t.name,
        "slug": t.slug,
        "ancestry_path": t.ancestry_path,
        "depth": t.depth,
        "config": t.config,
        "metadata": t.metadata,
        "isolation_strategy": t.isolation_strategy,
        "region": t.region,
        "status": t.status,
        "deleted_at": iso_or_none(t.deleted_at),
        "created_at": iso(t.created_at),
        "updated_at": iso(t.updated_at),
    }


def etag_of(document: Any) -> str:
    """A strong ETag: a digest of the canonical JSON of the representation."""
    digest = hashlib.blake2b(orjson.dumps(document, option=orjson.OPT_SORT_KEYS), digest_size=16)
    return f'"{digest.hexdigest()}"'


def tenant_etag(t: Tenant) -> str:
    return etag_of(tenant_json(t))


def if_match_satisfied(header: str | None, current: str) -> bool:
    """RFC 9110 If-Match with strong comparison; no header means no precondition."""
    if header is None:
        return True
    candidates = [part.strip() for part in header.split(",")]
    return "*" in candidates or current in candidates


def api_key_status(key: ApiKey, now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    if key.revoked_at is not None and key.revoked_at <= now:
        return "revoked"
    if key.expires_at is not None and key.expires_at <= now:
        return "expired"
    return "active"


def api_key_json(
    key: ApiKey, *, role_scopes: list[str] | None = None, now: datetime | None = None
) -> dict[str, Any]:
    return {
        "id": str(key.id),
        "tenant_id": opt_str(key.tenant_id),
        "name": key.name,
        "prefix": key.prefix,
        "environment": key.environment,
        "scopes": key.scopes,
        "role_id": opt_str(key.role_id),
        "effective_scopes": role_scopes if role_scopes is not None else key.scopes,
        "rate_limit_max": key.rate_limit_max,
        "rate_limit_window": key.rate_limit_window,
        "status": api_key_status(key, now),
        "created_at": iso(key.created_at),
        "last_used_at": iso_or_none(key.last_used_at),
        "expires_at": iso_or_none(key.expires_at),
        "revoked_at": iso_or_none(key.revoked_at),
        "rotated_from": opt_str(key.rotated_from),
    }


def stored_key_json(stored: StoredKey, now: datetime | None = None) -> dict[str, Any]:
    return api_key_json(stored.key, role_scopes=stored.role_scopes, now=now)


def role_json(role: Role) -> dict[str, Any]:
    return {
        "id": str(role.id),
        "tenant_id": None if role.tenant_id is None else str(role.tenant_id),
        "name": role.name,
        "description": role.description,
        "scopes": role.scopes,
        "created_at": iso(role.created_at),
        "updated_at": iso(role.updated_at),
    }
