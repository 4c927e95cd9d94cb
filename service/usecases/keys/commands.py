"""Changing API keys: create, patch, revoke, rotate, role assignment and removal.

Each change runs in one transaction with its audit entry. After the commit the change
is dropped from this process's key cache at once; migration 0006's triggers announce it
to every other process (service.auth.key_listener).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import asyncpg
from msgspec import UNSET

from service.auth.keys import default_environment
from service.auth.principal import Actor, Principal
from service.base.errors import ServiceError, validation_error
from service.base.timefmt import iso
from service.repositories.api_keys import KeySettings, StoredKey
from service.repositories.roles import RoleRow
from service.schemas.api_keys import ApiKeyCreate, ApiKeyPatch
from service.usecases.keys.access import (
    KeyStoreChanges,
    change_then_forget,
    changed_fields,
    check_expiry,
    held_by,
    key_audit_view,
    owning_tenant,
    require_scopes,
    require_usable,
    role_fits_key,
    settled_path,
    visible_key,
    visible_role,
    window_seconds,
)
from service.usecases.keys.issuing import issue_api_key
from service.usecases.keys.limits import KeyLimits, require_within


@dataclass(frozen=True, slots=True)
class CreatedKey:
    """A new key and its text, which exists only in this answer."""

    stored: StoredKey
    plaintext: str


class ApiKeyCommands(KeyStoreChanges):
    async def create(self, principal: Principal, actor: Actor, body: ApiKeyCreate) -> CreatedKey:
        seconds = window_seconds(body.rate_limit_window)
        check_expiry(body.expires_at)
        settings = self.deps.settings
        environment = body.environment or default_environment(
            settings.is_production, settings.api_key_environments
        )
        if environment not in settings.api_key_environments:
            raise validation_error(
                "environment", f"this deployment does not accept {environment} keys"
            )
        require_scopes(principal, body.scopes, "a key with these scopes")
        self._within(
            principal,
            KeyLimits(body.expires_at, body.rate_limit_max, seconds),
            "creating this key",
        )

        async def work(conn: asyncpg.Connection) -> CreatedKey:
            node = await owning_tenant(conn, self.tenants, principal, body.tenant_id, "API keys")
            if body.role_id is not None:
                role = await self._assignable_role(conn, principal, body.role_id)
                path = None if node is None else node.ancestry_path
                role_fits_key(role, await settled_path(conn, self.tenants, body.tenant_id, path))
            issued = await issue_api_key(
                conn,
                keys=self.keys,
                recorder=self.deps.recorder,
                hmac_secret=self.deps.settings.api_key_hmac_secret,
                actor=actor,
                name=body.name,
                scopes=body.scopes,
                tenant_id=body.tenant_id,
                environment=environment,
                role_id=body.role_id,
                rate_limit_max=body.rate_limit_max,
                rate_limit_window=body.rate_limit_window,
                rate_limit_window_seconds=seconds,
                expires_at=body.expires_at,
            )
            return CreatedKey(await self._reread(conn, issued.key.id), issued.plaintext)

        return await self.deps.db.transaction(work)

    async def update(
        self, principal: Principal, actor: Actor, key_id: UUID, patch: ApiKeyPatch
    ) -> StoredKey:
        window_text = None if patch.rate_limit_window is UNSET else patch.rate_limit_window
        seconds = window_seconds(window_text)
        if patch.expires_at is not UNSET:
            check_expiry(patch.expires_at)
        if patch.scopes is not UNSET:
            require_scopes(principal, patch.scopes, "giving a key these scopes")

        async def work(conn: asyncpg.Connection) -> StoredKey:
            stored = visible_key(principal, await self.keys.lock_api_key(conn, key_id))
            require_usable(stored, "change it")
            require_scopes(principal, held_by(stored), "changing this key")
            key = stored.key
            settings = KeySettings(
                name=key.name if patch.name is UNSET else patch.name,
                scopes=key.scopes if patch.scopes is UNSET else sorted(set(patch.scopes)),
                rate_limit_max=key.rate_limit_max
                if patch.rate_limit_max is UNSET
                else patch.rate_limit_max,
                rate_limit_window=key.rate_limit_window
                if patch.rate_limit_window is UNSET
                else patch.rate_limit_window,
                rate_limit_window_seconds=key.rate_limit_window_seconds
                if patch.rate_limit_window is UNSET
                else seconds,
                expires_at=key.expires_at if patch.expires_at is UNSET else patch.expires_at,
            )
            limits = KeyLimits(
                settings.expires_at, settings.rate_limit_max, settings.rate_limit_window_seconds
            )
            self._within(principal, limits, "changing this key")
            old, new = changed_fields(
                key_audit_view(key), key_audit_view(replace(key, **asdict(settings)))
            )
            if not new:
                return stored  # nothing changes: nothing to write or record
            await self.keys.update_api_key(conn, key_id, settings)
            after = await self._reread(conn, key_id)
            await self._audit(conn, actor, "api_key.updated", after, {"before": old, "after": new})
            return after

        return await change_then_forget(self.deps.db, work, self.cache.invalidate_key, key_id)

    async def revoke(self, principal: Principal, actor: Actor, key_id: UUID) -> None:
        """Revoke now; a key already revoked stays as it is (DELETE is idempotent). A key
        in its rotation grace period is revoked at once, ending the grace."""

        async def work(conn: asyncpg.Connection) -> None:
            stored = visible_key(principal, await self.keys.lock_api_key(conn, key_id))
            old = stored.key.revoked_at
            if old is not None and old <= datetime.now(UTC):
                return
            revoked_at = await self.keys.revoke_api_key(conn, key_id)
            await self._audit(
                conn,
                actor,
                "api_key.revoked",
                stored,
                {
                    "before": {"revoked_at": None if old is None else iso(old)},
                    "after": {"revoked_at": iso(revoked_at)},
                },
            )

        await change_then_forget(self.deps.db, work, self.cache.invalidate_key, key_id)

    async def rotate(
        self, principal: Principal, actor: Actor, key_id: UUID, grace_period_seconds: int
    ) -> CreatedKey:
        """A new key with the old one's settings; the old one is revoked at once or when
        the grace period ends."""

        async def work(conn: asyncpg.Connection) -> CreatedKey:
            old = visible_key(principal, await self.keys.lock_api_key(conn, key_id))
            require_usable(old, "rotate it")
            key = old.key
            if key.expires_at is not None and key.expires_at <= datetime.now(UTC):
                raise ServiceError(
                    "API_KEY_REVOKED",
                    "cannot rotate it: the key has expired (extend expires_at with PATCH, "
                    "or create a new key)",
                )
            require_scopes(principal, held_by(old), "rotating this key")
            # The new key copies the old one's limits: it is a key the caller creates.
            self._within(principal, _limits_of(old), "rotating this key")
            issued = await issue_api_key(
                conn,
                keys=self.keys,
                recorder=self.deps.recorder,
                hmac_secret=self.deps.settings.api_key_hmac_secret,
                actor=actor,
                name=key.name,
                scopes=key.scopes,
                tenant_id=key.tenant_id,
                environment="test" if key.environment == "test" else "live",
                role_id=key.role_id,
                rate_limit_max=key.rate_limit_max,
                rate_limit_window=key.rate_limit_window,
                rate_limit_window_seconds=key.rate_limit_window_seconds,
                expires_at=key.expires_at,
                rotated_from=key.id,
            )
            revoked_at = await self.keys.revoke_api_key(
                conn, key_id, after_seconds=grace_period_seconds
            )
            await self._audit(
                conn,
                actor,
                "api_key.rotated",
                old,
                {
                    "before": {"revoked_at": None},
                    "after": {
                        "revoked_at": iso(revoked_at),
                        "grace_period_seconds": grace_period_seconds,
                        "replaced_by": str(issued.key.id),
                    },
                },
            )
            return CreatedKey(await self._reread(conn, issued.key.id), issued.plaintext)

        return await change_then_forget(self.deps.db, work, self.cache.invalidate_key, key_id)

    async def assign_role(
        self, principal: Principal, actor: Actor, key_id: UUID, role_id: UUID
    ) -> StoredKey:
        async def work(conn: asyncpg.Connection) -> StoredKey:
            stored = visible_key(principal, await self.keys.lock_api_key(conn, key_id))
            require_usable(stored, "assign a role")
            role = await self._assignable_role(conn, principal, role_id)
            path = await settled_path(conn, self.tenants, stored.key.tenant_id, stored.tenant_path)
            role_fits_key(role, path)
            require_scopes(principal, held_by(stored), "changing this key")
            self._within(principal, _limits_of(stored), "changing this key")
            if stored.key.role_id == role_id:
                return stored
            await self.keys.set_api_key_role(conn, key_id, role_id)
            after = await self._reread(conn, key_id)
            await self._audit(conn, actor, "role.assigned", after, _role_change(stored, after))
            return after

        return await change_then_forget(self.deps.db, work, self.cache.invalidate_key, key_id)

    async def remove_role(self, principal: Principal, actor: Actor, key_id: UUID) -> StoredKey:
        async def work(conn: asyncpg.Connection) -> StoredKey:
            stored = visible_key(principal, await self.keys.lock_api_key(conn, key_id))
            require_usable(stored, "remove its role")
            if stored.key.role_id is None:
                return stored
            # The key falls back to its own scopes: the caller must hold those too.
            require_scopes(principal, held_by(stored), "changing this key")
            self._within(principal, _limits_of(stored), "changing this key")
            await self.keys.set_api_key_role(conn, key_id, None)
            after = await self._reread(conn, key_id)
            await self._audit(conn, actor, "role.removed", after, _role_change(stored, after))
            return after

        return await change_then_forget(self.deps.db, work, self.cache.invalidate_key, key_id)

    async def _assignable_role(
        self, conn: asyncpg.Connection, principal: Principal, role_id: UUID
    ) -> RoleRow:
        # Locked so the role's scopes cannot change between this check and the commit.
        role = visible_role(principal, await self.roles.lock_role(conn, role_id))
        require_scopes(principal, role.scopes, "assigning this role")
        return role

    def _within(self, principal: Principal, limits: KeyLimits, doing: str) -> None:
        require_within(principal, self.deps.settings, limits, doing)

    async def _reread(self, conn: asyncpg.Connection, key_id: UUID) -> StoredKey:
        stored = await self.keys.get_api_key(conn, key_id)
        assert stored is not None
        return stored

    async def _audit(
        self,
        conn: asyncpg.Connection,
        actor: Actor,
        action: str,
        stored: StoredKey,
        changes: dict[str, Any],
    ) -> None:
        await self.deps.recorder.record_owned(conn, actor, action, "api_key", stored.key, changes)


def _limits_of(stored: StoredKey) -> KeyLimits:
    key = stored.key
    return KeyLimits(key.expires_at, key.rate_limit_max, key.rate_limit_window_seconds)


def _role_change(before: StoredKey, after: StoredKey) -> dict[str, Any]:
    def view(stored: StoredKey) -> dict[str, Any]:
        role_id = stored.key.role_id
        return {
            "role_id": None if role_id is None else str(role_id),
            "effective_scopes": stored.effective_scopes,
        }

    return {"before": view(before), "after": view(after)}
