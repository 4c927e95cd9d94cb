"""Waiting for the change listener: a test that reads after a change made outside the
app waits until the change's announcement has been heard, instead of assuming it
arrives before the read (the app's own writes already wait:
service/http/middlewares/freshness.py)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from aiohttp import web

from service.http.appkeys import READ_CACHE, REPOSITORIES


async def all_heard(app: web.Application, conn: Any, within: float = 30.0) -> None:
    """Return once the app's listener has heard every change committed so far.

    PostgreSQL delivers notifications in commit order, so once a marker sent now has
    arrived, so has the announcement of every earlier commit (and the read cache has
    dropped what it touched). The deadline only turns a lost listener into a failure."""
    cache = app[READ_CACHE]
    token = uuid.uuid4().hex
    heard = cache.expect(token)
    try:
        await app[REPOSITORIES].read_cache.announce_marker(conn, token)
        async with asyncio.timeout(within):
            await heard
    except TimeoutError:
        raise AssertionError("the change listener never heard the marker") from None
    finally:
        cache.forget(token)
