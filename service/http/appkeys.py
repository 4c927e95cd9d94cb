"""Typed application state: everything the app factory builds lives under one of these.
Use cases sit together under USE_CASES; handlers reach them with use_cases(request)."""

from __future__ import annotations

import asyncio

from aiohttp import web

from service.auth.authenticator import Authenticator
from service.base.crypto import KeyRing
from service.caches.read_cache import ReadCache
from service.caches.revision_feed import RevisionFeed
from service.console.assets import ConsoleAssets
from service.db.pool import Database
from service.db.queries import Queries
from service.http.event_streams import StreamSlots
from service.http.heavy_reads import HeavyReads
from service.http.openapi.document import DocumentCache
from service.http.routing import Endpoint
from service.observability.metrics import Metrics
from service.ratelimit.limiter import RateLimiter
from service.repositories.registry import Repositories
from service.settings.options import Settings
from service.usecases.common.deps import Deps
from service.usecases.registry import UseCases

SETTINGS = web.AppKey("settings", Settings)
QUERIES = web.AppKey("queries", Queries)
REPOSITORIES = web.AppKey("repositories", Repositories)
KEYRING = web.AppKey("keyring", KeyRing)
ENDPOINTS = web.AppKey("endpoints", dict[tuple[str, str], Endpoint])
DATABASE = web.AppKey("database", Database)
MIGRATION_HEAD = web.AppKey("migration_head", int)
DEPS = web.AppKey("deps", Deps)
USE_CASES = web.AppKey("use_cases", UseCases)
AUTHENTICATOR = web.AppKey("authenticator", Authenticator)
READ_CACHE = web.AppKey("read_cache", ReadCache)
HEAVY_READS = web.AppKey("heavy_reads", HeavyReads)
# The newest revision this process heard, and the bound on streams of context changes.
REVISION_FEED = web.AppKey("revision_feed", RevisionFeed)
CONTEXT_STREAMS = web.AppKey("context_streams", StreamSlots)
RATE_LIMITER = web.AppKey("rate_limiter", RateLimiter)
METRICS = web.AppKey("metrics", Metrics)
OPENAPI = web.AppKey("openapi", DocumentCache)
# Set when shutdown begins (SIGTERM): background workers stop taking new work.
STOPPING = web.AppKey("stopping", asyncio.Event)
CONSOLE_ASSETS = web.AppKey("console_assets", ConsoleAssets)


def use_cases(request: web.Request) -> UseCases:
    return request.app[USE_CASES]
