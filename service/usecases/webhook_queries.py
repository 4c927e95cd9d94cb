"""Reading webhooks, and the test call (a synthetic event sent at once, then audited)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import asyncpg
import orjson

from service.auth.principal import Actor, Principal
from service.crypto import DecryptionError
from service.ids import uuid7
from service.repositories.webhooks import Webhook
from service.schemas.webhooks import ListWebhooksQuery
from service.timefmt import iso
from service.usecases.deps import Deps
from service.usecases.recording import AuditRecord
from service.usecases.tenant_access import visible
from service.usecases.webhook_access import unsafe_url, visible_webhook
from service.webhooks.envelope import SealedSecrets, signed_request
from service.webhooks.sender import AttemptResult, WebhookSender
from service.webhooks.urlguard import UnsafeUrl

TEST_EVENT = "webhook.test"


class WebhookQueries:
    def __init__(self, deps: Deps) -> None:
        self.db = deps.db
        self.webhooks = deps.repos.webhooks
        self.tenants = deps.repos.tenants

    async def get(self, principal: Principal, webhook_id: UUID) -> Webhook:
        return visible_webhook(
            principal, await self.db.run(lambda c: self.webhooks.get_webhook(c, webhook_id))
        )

    async def list(self, principal: Principal, query: ListWebhooksQuery) -> list[Webhook]:
        async with self.db.connection() as conn:
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

    async def test(self, principal: Principal, actor: Actor, webhook_id: UUID) -> dict[str, Any]:
        """Send `webhook.test` to the webhook now; 200 with the outcome whatever it is."""
        webhook = visible_webhook(
            principal, await self.deps.db.run(lambda c: self.webhooks.get_webhook(c, webhook_id))
        )
        try:
            await self.sender.guard.check(webhook.url)
        except UnsafeUrl as exc:
            raise unsafe_url(exc) from None
        now = datetime.now(UTC)
        body = orjson.dumps(
            {"event": TEST_EVENT, "timestamp": iso(now), "data": {"webhook_id": str(webhook.id)}}
        )
        sealed = SealedSecrets(
            webhook.id,
            webhook.encrypted_secret,
            webhook.previous_encrypted_secret,
            webhook.previous_secret_expires_at,
        )
        try:
            headers = signed_request(
                self.deps.keyring.encryptor,
                sealed,
                delivery_id=uuid7(),
                event_type=TEST_EVENT,
                body=body,
                now=now,
            )
        except DecryptionError:
            result = AttemptResult(
                False, 0, "the webhook secret cannot be decrypted with the configured keys",
                0.0, "secret",
            )  # fmt: skip
        else:
            result = await self.sender.post(webhook.url, body, headers)
        outcome: dict[str, Any] = {
            "success": result.success,
            "response_code": result.response_code,
        }
        if result.error is not None:
            outcome["error"] = result.error
        outcome["duration_ms"] = result.duration_ms

        async def work(conn: asyncpg.Connection) -> None:
            await self.deps.recorder.record(
                conn,
                actor,
                AuditRecord(
                    "webhook.tested",
                    "webhook",
                    webhook.id,
                    webhook.tenant_id,
                    {"result": {k: v for k, v in outcome.items() if k != "duration_ms"}},
                ),
            )

        await self.deps.db.transaction(work)
        return outcome
