"""Creating, changing, deleting webhooks and rotating their secrets.

The URL is checked (syntax and DNS) before the transaction opens, so no lock is held
while a name resolves. Secrets are encrypted with the webhook id as associated data and
returned only by create and rotate-secret; audit entries show them as "***".
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from uuid import UUID

import asyncpg
from msgspec import UNSET

from service.auth.principal import Actor, Principal
from service.base.errors import ServiceError
from service.base.ids import uuid7
from service.base.timefmt import iso_or_none
from service.repositories.webhooks import NewWebhook, WebhookRow, WebhookWrite
from service.schemas.webhooks import SecretRotation, WebhookCreate, WebhookPatch, unique_events
from service.usecases.common.deps import Deps
from service.usecases.common.tenant_access import visible_active
from service.usecases.webhooks.access import unsafe_url, visible_webhook
from service.views.base import SENSITIVE_MASK, document
from service.views.webhooks import Webhook
from service.webhooks.envelope import seal_secret
from service.webhooks.signing import generate_secret
from service.webhooks.urlguard import UnsafeUrl, UrlGuard

# How long the secret before a rotation keeps signing deliveries (docs/api.md, Webhooks).
ROTATION_OVERLAP_SECONDS = 24 * 3600.0
_EDITABLE = ("url", "events", "description", "active", "include_descendants")


def _webhook_document(webhook: WebhookRow) -> dict[str, Any]:
    """The webhook as its audit entries record it (its view: never the secret)."""
    found: dict[str, Any] = document(Webhook.of(webhook))
    return found


@dataclass(frozen=True, slots=True)
class CreatedWebhook:
    webhook: WebhookRow
    secret: str


class WebhookChanges:
    def __init__(self, deps: Deps, guard: UrlGuard) -> None:
        self.deps = deps
        self.guard = guard
        self.webhooks = deps.repos.webhooks
        self.tenants = deps.repos.tenants

    async def _record(
        self,
        conn: asyncpg.Connection,
        actor: Actor,
        action: str,
        webhook: WebhookRow,
        changes: dict[str, Any],
    ) -> None:
        """The audit entry of a change to `webhook` (as it is after the change, or as it
        was before a delete)."""
        await self.deps.recorder.record_owned(conn, actor, action, "webhook", webhook, changes)

    async def _check_url(self, url: str) -> None:
        try:
            await self.guard.check(url)
        except UnsafeUrl as exc:
            raise unsafe_url(exc) from None

    async def create(
        self, principal: Principal, actor: Actor, body: WebhookCreate
    ) -> CreatedWebhook:
        if body.tenant_id is None and principal.is_scoped:
            raise ServiceError(
                "TENANT_ACCESS_DENIED", "a tenant-scoped caller cannot create global webhooks"
            )
        if body.tenant_id is not None:
            # 404 or 410 before any DNS work; checked again under a lock below.
            tenant_id = body.tenant_id
            nodes = await self.deps.db.run(lambda c: self.tenants.get_tenant_nodes(c, [tenant_id]))
            visible_active(principal, nodes.get(tenant_id))
        await self._check_url(body.url)
        secret = body.secret or generate_secret()

        async def work(conn: asyncpg.Connection) -> WebhookRow:
            if body.tenant_id is not None:
                # Shared lock: the tenant cannot be archived or purged under the insert.
                nodes = await self.tenants.lock_tenant_nodes_shared(conn, [body.tenant_id])
                visible_active(principal, nodes.get(body.tenant_id))
            webhook_id = uuid7()
            created = await self.webhooks.insert_webhook(
                conn,
                NewWebhook(
                    id=webhook_id,
                    tenant_id=body.tenant_id,
                    url=body.url,
                    events=unique_events(list(body.events)),
                    encrypted_secret=seal_secret(self.deps.keyring.encryptor, webhook_id, secret),
                    description=body.description,
                    active=body.active,
                    include_descendants=body.include_descendants,
                ),
            )
            await self._record(
                conn,
                actor,
                "webhook.created",
                created,
                {
                    "before": None,
                    "after": {**_webhook_document(created), "secret": SENSITIVE_MASK},
                },
            )
            return created

        return CreatedWebhook(await self.deps.db.transaction(work), secret)

    async def update(
        self, principal: Principal, actor: Actor, webhook_id: UUID, patch: WebhookPatch
    ) -> WebhookRow:
        if patch.url is not UNSET:
            current = await self.deps.db.run(lambda c: self.webhooks.get_webhook(c, webhook_id))
            visible_webhook(principal, current)  # 404 before any DNS work
            await self._check_url(patch.url)

        async def work(conn: asyncpg.Connection) -> WebhookRow:
            before = visible_webhook(principal, await self.webhooks.lock_webhook(conn, webhook_id))
            write = self._write_for(before, patch)
            changed = [f for f in _EDITABLE if getattr(write, f) != getattr(before, f)]
            secret_changed = patch.secret is not UNSET
            if not changed and not secret_changed:
                return before
            after = await self.webhooks.update_webhook(conn, webhook_id, write)
            if after.active and not before.active:  # re-enabled: a fresh start
                await self.deps.repos.webhook_health.reset_streak(conn, webhook_id)
            old, new = _webhook_document(before), _webhook_document(after)
            changes: dict[str, Any] = {
                "before": {f: old[f] for f in changed},
                "after": {f: new[f] for f in changed},
            }
            if secret_changed:
                changes["before"]["secret"] = changes["after"]["secret"] = SENSITIVE_MASK
            await self._record(conn, actor, "webhook.updated", after, changes)
            return after

        return await self.deps.db.transaction(work)

    def _write_for(self, before: WebhookRow, patch: WebhookPatch) -> WebhookWrite:
        write = WebhookWrite(
            url=before.url if patch.url is UNSET else patch.url,
            events=before.events if patch.events is UNSET else unique_events(list(patch.events)),
            description=before.description if patch.description is UNSET else patch.description,
            active=before.active if patch.active is UNSET else patch.active,
            include_descendants=before.include_descendants
            if patch.include_descendants is UNSET
            else patch.include_descendants,
            encrypted_secret=before.encrypted_secret,
            previous_encrypted_secret=before.previous_encrypted_secret,
            previous_secret_expires_at=before.previous_secret_expires_at,
        )
        if patch.secret is not UNSET:
            # A secret set by PATCH replaces the old one at once (no overlap): the caller
            # chose it; rotate-secret is the way to change secrets without a gap.
            write = replace(
                write,
                encrypted_secret=seal_secret(self.deps.keyring.encryptor, before.id, patch.secret),
                previous_encrypted_secret=None,
                previous_secret_expires_at=None,
            )
        return write

    async def delete(self, principal: Principal, actor: Actor, webhook_id: UUID) -> None:
        async def work(conn: asyncpg.Connection) -> None:
            before = visible_webhook(principal, await self.webhooks.lock_webhook(conn, webhook_id))
            await self.webhooks.delete_webhook(conn, webhook_id)
            changes = {"before": _webhook_document(before), "after": None}
            await self._record(conn, actor, "webhook.deleted", before, changes)

        await self.deps.db.transaction(work)

    async def rotate_secret(
        self,
        principal: Principal,
        actor: Actor,
        webhook_id: UUID,
        body: SecretRotation | None,
    ) -> CreatedWebhook:
        secret = (body.secret if body else None) or generate_secret()

        async def work(conn: asyncpg.Connection) -> WebhookRow:
            visible_webhook(principal, await self.webhooks.lock_webhook(conn, webhook_id))
            rotated = await self.webhooks.rotate_webhook_secret(
                conn,
                webhook_id,
                seal_secret(self.deps.keyring.encryptor, webhook_id, secret),
                overlap_seconds=ROTATION_OVERLAP_SECONDS,
            )
            await self._record(
                conn,
                actor,
                "webhook.updated",
                rotated,
                {
                    "before": {"secret": SENSITIVE_MASK},
                    "after": {"secret": SENSITIVE_MASK},
                    "previous_secret_expires_at": iso_or_none(rotated.previous_secret_expires_at),
                },
            )
            return rotated

        return CreatedWebhook(await self.deps.db.transaction(work), secret)
