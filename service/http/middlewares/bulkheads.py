"""A bulkhead for writes: at most `per_resource` writes to one resource (the id in the
path) run at once in a process; the others wait here, outside the pool, for up to
`wait_seconds` and then answer 503 with Retry-After.

Writers to one row that another transaction holds locked would otherwise each take a
pooled connection and wait on the lock with it, until the pool is theirs and every
other request (other tenants' reads and writes) times out waiting for a connection.
With the bulkhead only `per_resource` of them hold connections, each for at most
DB_LOCK_TIMEOUT_MS (service/db/pool.py), and the rest queue where they cost nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web
from aiohttp.typedefs import Middleware

from service.auth.authorization import SAFE_METHODS
from service.base.slots import acquire_within
from service.db.errors import service_unavailable
from service.http.routing import Handler

RESOURCE_PARAMETER = "id"


class WriteBulkhead:
    def __init__(self, per_resource: int, wait_seconds: float) -> None:
        self.per_resource = per_resource
        self.wait_seconds = wait_seconds
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._users: dict[str, int] = {}

    @asynccontextmanager
    async def slot(self, resource: str) -> AsyncIterator[None]:
        slots = self._slots.get(resource)
        if slots is None:
            slots = self._slots[resource] = asyncio.Semaphore(self.per_resource)
        self._users[resource] = self._users.get(resource, 0) + 1
        try:
            try:
                await acquire_within(slots, self.wait_seconds)
            except TimeoutError as exc:
                raise service_unavailable() from exc
            try:
                yield
            finally:
                slots.release()
        finally:
            left = self._users[resource] - 1
            if left:
                self._users[resource] = left
            else:  # nobody holds or waits: forget it (ids are unbounded)
                del self._users[resource], self._slots[resource]

    def middleware(self) -> Middleware:
        @web.middleware
        async def bulkhead(request: web.Request, handler: Handler) -> web.StreamResponse:
            resource = request.match_info.get(RESOURCE_PARAMETER)
            if request.method in SAFE_METHODS or resource is None:
                return await handler(request)
            async with self.slot(resource):
                return await handler(request)

        return bulkhead
