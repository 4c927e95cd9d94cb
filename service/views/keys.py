"""Views of API keys and roles. Never a key's secret, except the one `plaintext_key`
field of the answer that creates (or rotates) it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

from service.repositories.api_keys import ApiKeyRow, StoredKey
from service.schemas.api_keys import Scope
from service.views.base import Instant, RowView, View, instant, instant_or_none

KeyStatus = Literal["active", "revoked", "expired"]


def api_key_status(key: ApiKeyRow, now: datetime | None = None) -> KeyStatus:
    now = now or datetime.now(UTC)
    if key.revoked_at is not None and key.revoked_at <= now:
        return "revoked"
    if key.expires_at is not None and key.expires_at <= now:
        return "expired"
    return "active"


class ApiKey(View):
    id: UUID
    tenant_id: UUID | None
    name: str
    prefix: str
    environment: Literal["live", "test"]
    scopes: list[Scope]
    role_id: UUID | None
    effective_scopes: list[Scope]
    rate_limit_max: int | None
    rate_limit_window: str | None
    status: KeyStatus
    created_at: Instant
    last_used_at: Instant | None
    expires_at: Instant | None
    revoked_at: Instant | None
    rotated_from: UUID | None

    @classmethod
    def of(cls, stored: StoredKey, now: datetime | None = None) -> ApiKey:
        return cls(**_key_fields(stored.key, stored.role_scopes, now))


class ApiKeyWithPlaintext(ApiKey):
    plaintext_key: str

    @classmethod
    def issued(
        cls, key: ApiKeyRow, plaintext: str, *, role_scopes: list[str] | None = None
    ) -> ApiKeyWithPlaintext:
        return cls(**_key_fields(key, role_scopes, None), plaintext_key=plaintext)


def _key_fields(key: ApiKeyRow, role_scopes: list[str] | None, now: datetime | None) -> Any:
    return {
        "id": key.id,
        "tenant_id": key.tenant_id,
        "name": key.name,
        "prefix": key.prefix,
        "environment": key.environment,
        "scopes": key.scopes,
        "role_id": key.role_id,
        "effective_scopes": role_scopes if role_scopes is not None else key.scopes,
        "rate_limit_max": key.rate_limit_max,
        "rate_limit_window": key.rate_limit_window,
        "status": api_key_status(key, now),
        "created_at": instant(key.created_at),
        "last_used_at": instant_or_none(key.last_used_at),
        "expires_at": instant_or_none(key.expires_at),
        "revoked_at": instant_or_none(key.revoked_at),
        "rotated_from": key.rotated_from,
    }


class ApiKeyPage(View):
    data: list[ApiKey]
    next_cursor: UUID | None
    has_more: bool


class EffectiveScopes(View):
    api_key_id: UUID
    scopes: list[Scope]
    source: Literal["role", "key"]
    role_id: UUID | None

    @classmethod
    def of(cls, stored: StoredKey) -> EffectiveScopes:
        return cls(
            api_key_id=stored.key.id,
            scopes=stored.effective_scopes,  # type: ignore[arg-type]
            source="role" if stored.role_scopes is not None else "key",
            role_id=stored.key.role_id,
        )


class Role(RowView):
    id: UUID
    tenant_id: UUID | None
    name: str
    description: str
    scopes: list[Scope]
    created_at: Instant
    updated_at: Instant
