"""Server-Sent Events for the stream of context changes (docs/context-delivery.md):
the bound on open streams (per process and per caller; 503 when the process is full,
429 past the caller's share, both with Retry-After), and the loop that writes a
subscription's events as the revision log grows."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web

from service.base.errors import ServiceError
from service.caches.revision_feed import RevisionFeed
from service.http.middlewares.exchange import answer_headers
from service.observability.logs import get_logger
from service.usecases.tenants.context_delivery import ContextDelivery, StreamEvent, StreamStart

log = get_logger("service.http.event_streams")
RETRY_AFTER = {"Retry-After": "5"}
# Log rows read per round trip while catching up.
PAGE_ROWS = 500


class StreamSlots:
    def __init__(self, per_process: int, per_caller: int) -> None:
        self.per_process = per_process
        self.per_caller = per_caller
        self.open = 0
        self._by_caller: dict[str, int] = {}

    @asynccontextmanager
    async def slot(self, caller: str) -> AsyncIterator[None]:
        held = self._by_caller.get(caller, 0)
        if held >= self.per_caller:
            raise ServiceError(
                "RATE_LIMITED",
                f"at most {self.per_caller} streams of context changes at once per caller",
                headers=RETRY_AFTER,
            )
        if self.open >= self.per_process:
            raise ServiceError(
                "SERVICE_UNAVAILABLE",
                "this process serves as many streams as it may; retry (another process may "
                "have room)",
                headers=RETRY_AFTER,
            )
        self._by_caller[caller] = held + 1
        self.open += 1
        try:
            yield
        finally:
            self.open -= 1
            left = self._by_caller[caller] - 1
            if left:
                self._by_caller[caller] = left
            else:
                del self._by_caller[caller]


def encode_event(event: StreamEvent) -> bytes:
    return f"id: {event.id}\nevent: {event.name}\ndata: {event.data}\n\n".encode()


async def serve_stream(
    request: web.Request,
    start: StreamStart,
    delivery: ContextDelivery,
    feed: RevisionFeed,
    *,
    heartbeat_seconds: float,
    max_seconds: float,
    stopping: asyncio.Event,
    still_admitted: Callable[[], Awaitable[bool]],
) -> web.StreamResponse:
    """Write the subscription's events from its position on, until the client goes,
    the service stops, max_seconds have passed, the caller's credential no longer admits
    it (checked at each heartbeat: a revoked key, an expired token), or (a reset) at
    once after saying so."""
    headers = {
        **answer_headers(request),
        "Content-Type": "text/event-stream",
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",  # proxies must pass each event on at once
        "X-Revision": str(start.after[0]),
    }
    response = web.StreamResponse(headers=headers)
    await response.prepare(request)
    if request.method == "HEAD":
        await response.write_eof()  # GET's headers, no body (and no endless wait)
        return response
    try:
        if start.reset is not None:
            await response.write(f'event: reset\ndata: {{"revision":{start.reset}}}\n\n'.encode())
            await response.write_eof()
            return response
        loop = asyncio.get_running_loop()
        await response.write(b": connected\n\n")
        last_sent = loop.time()
        ends = last_sent + max_seconds
        after = start.after
        while not stopping.is_set() and loop.time() < ends:
            page = await delivery.page(start.subscription, after, PAGE_ROWS)
            if page.events:
                await response.write(b"".join(encode_event(e) for e in page.events))
                last_sent = loop.time()
            after = page.after
            if not page.caught_up:
                continue
            now = loop.time()
            wait = min(heartbeat_seconds - (now - last_sent), ends - now)
            await feed.wait_past(after[0], max(0.0, wait))
            if stopping.is_set() or loop.time() >= ends:
                break
            if loop.time() - last_sent >= heartbeat_seconds:
                if not await still_admitted():
                    break
                await response.write(b": heartbeat\n\n")  # keeps proxies from closing it
                last_sent = loop.time()
        await response.write_eof()
    except (ConnectionResetError, OSError):
        pass  # the client went away
    except Exception as exc:
        # The status line has left: the client sees the stream end and resumes with
        # Last-Event-ID.
        log.warning("stream of context changes cut short", error=type(exc).__name__)
        if request.transport is not None:
            request.transport.abort()
    return response
