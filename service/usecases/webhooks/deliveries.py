"""The delivery worker's use case: claim due deliveries under a lease, run one attempt of
a claimed delivery (sign with the secrets as they are now, send, and record the outcome
while the claim is still ours), and release claims the worker gives up. The loop that
drives it lives in service/delivery/worker.py; sending and signing in service/webhooks/.

Backoff (docs/api.md, Conventions; Webhooks): after failure k the next attempt comes after
min(base * 2^(k-1), max) +- 20 %; after WEBHOOK_MAX_ATTEMPTS failures the delivery is
failed (dead letter). Logs name the delivery, never the URL, secrets or signatures.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

from service.observability.logs import get_logger
from service.repositories.deliveries import Claim
from service.usecases.common.deps import Deps
from service.usecases.webhooks.health import WebhookHealth
from service.webhooks.envelope import SealedSecrets, event_body
from service.webhooks.sender import AttemptResult, WebhookSender

log = get_logger("service.webhooks")
INACTIVE = "the webhook is inactive; retry the delivery once it is active again"


def retry_delay(failures: int, base: float, cap: float) -> float:
    """Seconds before the next attempt after `failures` failed attempts (≥ 1)."""
    exponent = min(max(failures - 1, 0), 62)
    return min(base * 2.0**exponent, cap) * random.uniform(0.8, 1.2)  # noqa: S311 - jitter


class DeliveryAttempts:
    def __init__(self, deps: Deps, sender: WebhookSender, worker: str) -> None:
        self.deps = deps
        self.sender = sender
        self.worker = worker
        self.deliveries = deps.repos.deliveries
        self.health = WebhookHealth(deps)

    async def claim(self, limit: int, lease_seconds: float) -> list[Claim]:
        """Up to `limit` due deliveries, leased to this worker for `lease_seconds`."""
        return await self.deps.db.run(
            lambda c: self.deliveries.claim_due_deliveries(c, self.worker, limit, lease_seconds)
        )

    async def seconds_until_next(self) -> float | None:
        """Seconds until the next pending delivery is due; None when none is pending."""
        return await self.deps.db.run(self.deliveries.seconds_until_next_delivery)

    async def release(self, claim: Claim) -> None:
        """Give a claim back at once (the attempt was cancelled), due again now."""
        await self.deps.db.run(lambda c: self.deliveries.release_delivery(c, claim, self.worker))

    async def run(self, claim: Claim) -> None:
        if not claim.active:
            await self.deps.db.run(
                lambda c: self.deliveries.park_delivery(c, claim, self.worker, INACTIVE)
            )
            log.info("delivery parked", delivery_id=str(claim.id), reason="webhook inactive")
            return
        result = await self._send(claim)
        await self._record(claim, result)

    async def _send(self, claim: Claim) -> AttemptResult:
        body = event_body(claim.event_id, claim.event_type, claim.event_created_at, claim.payload)
        sealed = SealedSecrets(
            claim.webhook_id,
            claim.encrypted_secret,
            claim.previous_encrypted_secret,
            claim.previous_secret_expires_at,
        )
        return await self.sender.send_signed(
            self.deps.keyring.encryptor,
            claim.url,
            sealed,
            body,
            delivery_id=claim.id,
            event_type=claim.event_type,
            now=datetime.now(UTC),
        )

    async def _record(self, claim: Claim, result: AttemptResult) -> None:
        seconds = result.duration_ms / 1000
        attempt = claim.attempts + 1
        fields = {
            "delivery_id": str(claim.id),
            "webhook_id": str(claim.webhook_id),
            "event_type": claim.event_type,
            "attempt": attempt,
            "response_code": result.response_code,
            "kind": result.kind,
            "duration_ms": result.duration_ms,
        }
        if result.success:
            ours = await self.deps.db.run(
                lambda c: self.deliveries.record_delivery_success(
                    c, claim, self.worker, seconds=seconds, code=result.response_code
                )
            )
            if ours:
                self._count("success", seconds)
            log.info("delivery succeeded" if ours else "delivery result dropped", **fields)
            if ours:
                await self.health.note_attempt(
                    claim.webhook_id, claim.event_id, succeeded=True, dead=False
                )
            return
        settings = self.deps.settings
        delay = retry_delay(
            attempt, settings.webhook_retry_base_seconds, settings.webhook_retry_max_seconds
        )
        status = await self.deps.db.run(
            lambda c: self.deliveries.record_delivery_failure(
                c,
                claim,
                self.worker,
                seconds=seconds,
                code=result.response_code or None,
                error=result.error or "failed",
                retry_in=delay,
            )
        )
        if status is not None:
            await self.health.note_attempt(
                claim.webhook_id, claim.event_id, succeeded=False, dead=status == "failed"
            )
        if status is None:
            log.info("delivery result dropped", **fields)
        elif status == "failed":
            self._count("dead_letter", seconds)
            log.error("delivery failed; moved to the dead letters", **fields)
        else:
            self._count("failure", seconds)
            log.warning("delivery attempt failed", retry_in=round(delay, 3), **fields)

    def _count(self, outcome: str, seconds: float) -> None:
        if self.deps.metrics is not None:
            self.deps.metrics.count_webhook_attempt(outcome, seconds)
