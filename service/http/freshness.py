"""Read-your-writes for the read cache: a request that may have changed data empties
this process's cache before its answer leaves, so the client's next read of a tenant or
a context sees the change without waiting for the database's announcement
(service/usecases/read_cache.py). Outermost of the data middlewares, so it runs
after an Idempotency-Key request's held transaction is committed."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import READ_CACHE
from service.http.middleware import PRINCIPAL
from service.http.routing import Handler

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@web.middleware
async def forget_reads_after_writes(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method in SAFE_METHODS:
        return await handler(request)
    try:
        return await handler(request)
    finally:
        # Only an authenticated caller can have changed anything: a flood of refused
        # writes must not keep emptying the cache.
        if request.get(PRINCIPAL) is not None:
            request.app[READ_CACHE].clear()
