"""Reading webhooks, and the test call (a synthetic event sent at once, then audited)."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

import asyncpg
from msgspec import UNSET

from service.auth.principal import Actor, Principal
from service.base.ids import uuid7
from service.repositories.webhooks import WebhookRow
from service.schemas.webhooks import TEST_EVENT, ListWebhooksQuery
from service.usecases.common.deps import Deps
from service.usecases.common.tenant_access import visible
from service.usecases.webhooks.access import unsafe_url, visible_webhook
from service.views.base import document
from service.views.webhooks import WebhookTestResult
from service.webhooks.envelope import SealedSecrets, event_body
from service.webhooks.sender import WebhookSender
from service.webhooks.urlguard import UnsafeUrl


class WebhookQueries:
    def __init__(self, deps: Deps) -> None:
        self.db = deps.db
        self.webhooks = deps.repos.webhooks
        self.tenants = deps.repos.tenants

    async def get(self, principal: Principal, webhook_id: UUID) -> WebhookRow:
        return visible_webhook(
            principal, await self.db.read(lambda c: self.webhooks.get_webhook(c, webhook_id))
        )

    async def list(self, principal: Principal, query: ListWebhooksQuery) -> list[WebhookRow]:
        async with self.db.read_connection() as conn:
            if query.tenant_id is not None:
                nodes = await self.tenants.get_tenant_nodes(conn, [query.tenant_id])
                visible(principal, nodes.get(query.tenant_id))
            return await self.webhooks.list_webhooks(
                conn, scope=principal.tenant_id, tenant_id=query.tenant_id
            )


class WebhookTesting:
    def __init__(self, deps: Deps, sender: WebhookSender) -> None:
        self.deps = deps
        self.sender = sender
        self.webhooks = deps.repos.webhooks

    async def test(self, principal: Principal, actor: Actor, webhook_id: UUID) -> WebhookTestResult:
        """Send `webhook.test` to the webhook now; 200 with the outcome whatever it is."""
        webhook = visible_webhook(
            principal, await self.deps.db.run(lambda c: self.webhooks.get_webhook(c, webhook_id))
        )
        try:
            await self.sender.guard.check(webhook.url)
        except UnsafeUrl as exc:
            raise unsafe_url(exc) from None
        now = datetime.now(UTC)
        # A test is an event of its own: a fresh id, no row in the outbox.
        body = event_body(uuid7(), TEST_EVENT, now, {"webhook_id": str(webhook.id)})
        sealed = SealedSecrets(
            webhook.id,
            webhook.encrypted_secret,
            webhook.previous_encrypted_secret,
            webhook.previous_secret_expires_at,
        )
        result = await self.sender.send_signed(
            self.deps.keyring.encryptor,
            webhook.url,
            sealed,
            body,
            delivery_id=uuid7(),
            event_type=TEST_EVENT,
            now=now,
        )
        outcome = WebhookTestResult(
            success=result.success,
            response_code=result.response_code,
            duration_ms=result.duration_ms,
            error=UNSET if result.error is None else result.error,
        )
        audited = {k: v for k, v in document(outcome).items() if k != "duration_ms"}

        async def work(conn: asyncpg.Connection) -> None:
            await self.deps.recorder.record_owned(
                conn, actor, "webhook.tested", "webhook", webhook, {"result": audited}
            )

        await self.deps.db.transaction(work)
        return outcome
