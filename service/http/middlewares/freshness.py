"""Read-your-writes for the read cache: a request that may have changed data waits,
before its answer leaves, until this process has heard the database's announcements of
its commits (service/caches/read_cache.py), so the client's next read of a tenant or a
context sees the change. It sends a marker on the announcement channel after the
request's work and waits for it: notifications arrive in commit order, so once the
marker is heard every change committed before it has been applied to this process's
cache. Exactly what the database announced is dropped, nothing more. Outermost of the
data middlewares, so it runs after an Idempotency-Key request's held transaction is
committed."""

from __future__ import annotations

import asyncio
import uuid

from aiohttp import web

from service.auth.authorization import SAFE_METHODS
from service.http.appkeys import DATABASE, ENDPOINTS, READ_CACHE, REPOSITORIES
from service.http.middlewares.exchange import exchange_of
from service.http.routing import Handler, endpoint_for
from service.observability.logs import get_logger

log = get_logger("service.http.freshness")
# Announcements arrive in milliseconds; past this the listener is stuck or the database
# unreachable, and forgetting everything is the safe answer.
MARKER_TIMEOUT_SECONDS = 2.0
# The primary's WAL position the marker's statement read: the write's consistency token
# (service/http/middlewares/consistency.py) without a round trip of its own.
WRITE_POSITION = web.RequestKey("write_position", int)
# The newest revision the same statement read: the write's X-Revision.
WRITE_REVISION = web.RequestKey("write_revision", int)


@web.middleware
async def forget_reads_after_writes(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method in SAFE_METHODS:
        return await handler(request)
    endpoint = endpoint_for(request, request.app[ENDPOINTS])
    if endpoint is not None and not endpoint.writes:  # a preview: it changes nothing
        return await handler(request)
    try:
        return await handler(request)
    finally:
        # Only an authenticated caller can have changed anything: a flood of refused
        # writes must not cost a round trip each.
        if exchange_of(request).principal is not None:
            heard = await hear_own_changes(request.app)
            if heard is not None:
                request[WRITE_POSITION], request[WRITE_REVISION] = heard


async def hear_own_changes(app: web.Application) -> tuple[int, int] | None:
    """Wait until this process has heard every change committed so far. The primary's
    WAL position and the newest revision when the marker was sent (past all those
    commits), or None when no marker was sent or its answer is unknown."""
    cache = app[READ_CACHE]
    if not cache.enabled:
        return None  # nothing is cached, nothing to drop
    token = uuid.uuid4().hex
    heard = cache.expect(token)
    repository = app[REPOSITORIES].read_cache
    position: tuple[int, int] | None = None
    try:
        async with asyncio.timeout(MARKER_TIMEOUT_SECONDS):
            position = await app[DATABASE].run(lambda conn: repository.announce_marker(conn, token))
            await heard
    except BaseException as exc:
        # Cannot tell what was heard: forget everything this process holds.
        cache.clear()
        if not isinstance(exc, Exception):
            raise
        log.warning("read cache emptied: own changes not heard in time", error=type(exc).__name__)
    finally:
        cache.forget(token)
    return position
