"""The webhook machinery of one process: the sender and the delivery worker, started
after the database and stopped before it (a cleanup context of the app)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from service.delivery.worker import DeliveryWorker
from service.usecases.common.deps import Deps
from service.webhooks.sender import WebhookNetwork, WebhookSender


class WebhookRuntime:
    def __init__(self, deps: Deps, network: WebhookNetwork | None = None) -> None:
        self.sender = WebhookSender(deps.settings, network)
        concurrency = deps.settings.webhook_concurrency
        # WEBHOOK_CONCURRENCY=0 makes a process that serves the API without delivering.
        self.worker = (
            DeliveryWorker(deps, self.sender, concurrency=concurrency) if concurrency else None
        )

    def stop_claiming(self) -> None:
        """Shutdown began (SIGTERM): claim nothing new while requests drain."""
        if self.worker is not None:
            self.worker.stop_claiming()

    async def cleanup_ctx(self, app: web.Application) -> AsyncIterator[None]:
        if self.worker is not None:
            self.worker.start()
        try:
            yield
        finally:
            if self.worker is not None:
                await self.worker.stop()
            await self.sender.close()
