"""The delivery worker that runs inside every service process: the loop that drives the
delivery use case (service/usecases/webhooks/deliveries.py).

It claims due deliveries with FOR UPDATE SKIP LOCKED under a lease (so several processes
share one queue and never attempt a delivery at the same time), runs at most
WEBHOOK_CONCURRENCY attempts at once, and sleeps until the next delivery is due, a
NOTIFY on channel webhook_deliveries says new ones are queued, an attempt finishes, or
the poll interval passes (the safety net when a notification is missed).

A lease lasts longer than any attempt can (2 x WEBHOOK_TIMEOUT_SECONDS + 5 s), so a
live worker always records its result first; a crashed worker's deliveries become due
again when their leases end. On stop, in-flight attempts may finish within the timeout;
any still running after that are cancelled and their claims released, so none is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import uuid
from typing import Any

import asyncpg

from service.base.errors import ServiceError
from service.base.tasks import cancel_and_wait
from service.db.errors import is_unavailable
from service.db.pool import connect
from service.observability.logs import get_logger
from service.repositories.deliveries import Claim
from service.usecases.common.deps import Deps
from service.usecases.webhooks.deliveries import DeliveryAttempts
from service.webhooks.sender import WebhookSender

log = get_logger("service.webhooks")
CHANNEL = "webhook_deliveries"
POLL_SECONDS = 5.0
# Past-due deliveries that another worker is claiming right now: look again shortly.
MIN_SLEEP_SECONDS = 0.05
LISTEN_RETRY_SECONDS = 5.0


def lease_seconds(timeout: float) -> float:
    return 2 * timeout + 5


class DeliveryWorker:
    def __init__(
        self,
        deps: Deps,
        sender: WebhookSender,
        *,
        concurrency: int,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self.deps = deps
        self.name = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"
        self.concurrency = concurrency
        self.poll_seconds = poll_seconds
        self.timeout = deps.settings.webhook_timeout_seconds
        self.lease = lease_seconds(self.timeout)
        self.attempts = DeliveryAttempts(deps, sender, self.name)
        self._wake = asyncio.Event()
        self._stopped = asyncio.Event()
        self._inflight: dict[asyncio.Task[None], Claim] = {}
        self._loop: asyncio.Task[None] | None = None
        self._listener: asyncpg.Connection | None = None
        self._listen_after = 0.0

    @property
    def in_flight(self) -> int:
        return len(self._inflight)

    def start(self) -> None:
        self._loop = asyncio.create_task(self._run(), name="webhook-delivery-worker")
        log.info("delivery worker started", worker=self.name, concurrency=self.concurrency)

    def wake(self) -> None:
        self._wake.set()

    def stop_claiming(self) -> None:
        """Claim no more deliveries; attempts under way go on (stop() waits for them)."""
        self._stopped.set()
        self._wake.set()

    async def stop(self) -> None:
        """Stop claiming; let attempts finish within the timeout, release the rest."""
        self.stop_claiming()
        if self._loop is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._loop), self.timeout + 5)
            except TimeoutError:
                await cancel_and_wait(self._loop)
        pending = set(self._inflight)
        if pending:
            _, pending = await asyncio.wait(pending, timeout=self.timeout + 1)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
        await self._close_listener()
        log.info("delivery worker stopped", worker=self.name, released=len(pending))

    async def _run(self) -> None:
        failures = 0
        while not self._stopped.is_set():
            self._wake.clear()
            try:
                await self._ensure_listener()
                free = self.concurrency - len(self._inflight)
                claimed = await self._claim(free) if free > 0 else 0
                if free > 0 and claimed == free:
                    continue  # a full batch: more may be due right now
                wait = await self._idle_seconds(at_capacity=free <= 0)
                failures = 0
            except Exception as exc:
                failures += 1
                wait = min(30.0, 0.5 * 2 ** min(failures, 6))
                log.warning(
                    "delivery worker cannot reach the database",
                    worker=self.name, error=type(exc).__name__, retry_in=wait,
                )  # fmt: skip
            if self._stopped.is_set():
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)

    async def _claim(self, free: int) -> int:
        claims = await self.attempts.claim(free, self.lease)
        for claim in claims:
            task = asyncio.create_task(self._attempt(claim), name=f"webhook-delivery-{claim.id}")
            self._inflight[task] = claim
        return len(claims)

    async def _idle_seconds(self, *, at_capacity: bool) -> float:
        if at_capacity:
            return self.poll_seconds  # a finishing attempt wakes the loop
        seconds = await self.attempts.seconds_until_next()
        if seconds is None:
            return self.poll_seconds
        return min(max(seconds, MIN_SLEEP_SECONDS), self.poll_seconds)

    async def _attempt(self, claim: Claim) -> None:
        task = asyncio.current_task()
        try:
            await self.attempts.run(claim)
        except asyncio.CancelledError:
            await self._release(claim)
            raise
        except Exception as exc:
            # The lease stays: the delivery is due again when it runs out.
            if is_unavailable(exc) or isinstance(exc, ServiceError):
                log.warning(
                    "delivery outcome not recorded: database unavailable; due again when "
                    "its lease ends",
                    delivery_id=str(claim.id), error=type(exc).__name__,
                )  # fmt: skip
            else:
                log.exception("delivery attempt crashed", delivery_id=str(claim.id))
        finally:
            if task is not None:
                self._inflight.pop(task, None)
            self._wake.set()

    async def _release(self, claim: Claim) -> None:
        try:
            await self.attempts.release(claim)
            log.info("delivery released", delivery_id=str(claim.id))
        except Exception as exc:
            log.warning(
                "delivery not released; it is due again when its lease ends",
                delivery_id=str(claim.id), error=type(exc).__name__,
            )  # fmt: skip

    async def _ensure_listener(self) -> None:
        """LISTEN on a connection of its own; polling covers the gaps while it is down."""
        if self._listener is not None and not self._listener.is_closed():
            return
        loop = asyncio.get_running_loop()
        if loop.time() < self._listen_after:
            return
        self._listen_after = loop.time() + LISTEN_RETRY_SECONDS
        dsn = self.deps.settings.direct_database_url
        if dsn is None:
            return
        try:
            self._listener = await connect(
                dsn, timeout=self.deps.settings.db_acquire_timeout_seconds
            )
            await self._listener.add_listener(CHANNEL, self._notified)
        except Exception as exc:
            log.warning("delivery worker cannot LISTEN; polling", error=type(exc).__name__)
            await self._close_listener()

    def _notified(self, *_: Any) -> None:
        self._wake.set()

    async def _close_listener(self) -> None:
        if self._listener is not None:
            listener, self._listener = self._listener, None
            with contextlib.suppress(Exception):
                await listener.close(timeout=2)
