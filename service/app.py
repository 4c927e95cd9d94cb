"""The app factory: create_app(settings) builds every object; the cleanup context opens
and closes the database with the app. Nothing is created at import time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from aiohttp import web

from service.auth.authenticator import Authenticator
from service.base.crypto import Encryptor, KeyRing
from service.bootstrap import prepare_database
from service.caches.read_cache import ReadCache
from service.caches.revision_feed import RevisionFeed
from service.console.assets import ConsoleAssets
from service.db.migrations import load_migrations
from service.db.pool import Database, connect
from service.db.queries import Queries
from service.delivery.runtime import WebhookRuntime
from service.handlers import (
    api_keys,
    audit_logs,
    change_requests,
    config,
    consents,
    console,
    constraints,
    context,
    context_delivery,
    encryption_keys,
    gdpr,
    health,
    impact,
    maintenance,
    observability,
    ofrep,
    protection,
    regions,
    revisions,
    roles,
    session,
    tenants,
    webhooks,
)
from service.http import appkeys as keys
from service.http.event_streams import StreamSlots
from service.http.heavy_reads import HeavyReads
from service.http.middlewares.bulkheads import WriteBulkhead
from service.http.middlewares.consistency import consistency
from service.http.middlewares.data_layers import data_layers
from service.http.middlewares.freshness import forget_reads_after_writes
from service.http.middlewares.idempotency import idempotency
from service.http.middlewares.pipeline import Pipeline
from service.http.openapi.document import DocumentCache
from service.http.routing import Api, register
from service.observability import tracing
from service.observability.logs import get_logger
from service.observability.metrics import Metrics
from service.ratelimit.limiter import RateLimiter
from service.repositories.registry import Repositories
from service.scheduler.worker import Scheduler
from service.settings.options import Settings
from service.usecases.common.deps import Deps
from service.usecases.common.recording import ChangeRecorder
from service.usecases.registry import UseCases
from service.webhooks.sender import WebhookNetwork

log = get_logger("service.app")
# The delivery worker and its sender: an entry point of its own, so its key lives here.
WEBHOOK_RUNTIME = web.AppKey("webhook_runtime", WebhookRuntime)
SCHEDULER = web.AppKey("scheduler", Scheduler)


def apis() -> list[Api]:
    return [
        health.api,
        observability.api,
        tenants.api,
        protection.api,
        change_requests.api,
        config.api,
        constraints.api,
        impact.api,
        context.api,
        context_delivery.api,
        encryption_keys.api,
        api_keys.api,
        roles.api,
        webhooks.api,
        audit_logs.api,
        consents.api,
        gdpr.api,
        regions.api,
        maintenance.api,
        revisions.api,
        ofrep.api,
        console.api,
        session.api,
    ]


def create_app(
    settings: Settings,
    *,
    webhook_network: WebhookNetwork | None = None,
) -> web.Application:
    if settings.database_url is None:
        raise ValueError("create_app needs settings.database_url (the CLI starts one if unset)")
    app = web.Application(client_max_size=settings.max_body_bytes)
    queries = Queries.load()
    repos = Repositories.build(queries)
    database = Database(settings, queries)
    keyring = KeyRing(Encryptor(settings.encryption_key, settings.encryption_keys_previous))
    recorder = ChangeRecorder(repos.outbox, webhook_max_attempts=settings.webhook_max_attempts)
    metrics = Metrics()
    # Set at start in every worker, so the sum under --workers counts each one's pool.
    metrics.pool_capacity.set(settings.db_pool_max_size)
    deps = Deps(settings, database, repos, recorder, keyring, metrics)
    webhook_runtime = WebhookRuntime(deps, webhook_network)

    app[keys.SETTINGS] = settings
    app[keys.QUERIES] = queries
    app[keys.REPOSITORIES] = repos
    app[keys.DATABASE] = database
    app[keys.MIGRATION_HEAD] = max((m.version for m in load_migrations()), default=0)
    app[keys.KEYRING] = keyring
    app[keys.DEPS] = deps
    limiter = RateLimiter(settings)
    reads = ReadCache(settings.read_cache_size)
    if settings.database_replica_urls:
        # Each change heard gets the primary's position, so replica reads can fill the
        # cache. Without replicas nothing reads positions: no write pays for a sample.
        reads.track_positions(database.write_position)
    reads.track_revisions(repos.revisions.current_revision)
    app[keys.READ_CACHE] = reads
    app[keys.HEAVY_READS] = HeavyReads(
        settings.heavy_reads_per_process,
        settings.heavy_reads_per_caller,
        settings.heavy_read_wait_seconds,
        settings.heavy_read_rows,
    )
    authenticator = Authenticator(
        settings, database, repos.api_keys, limiter, repos.health.ping, reads
    )
    app[keys.RATE_LIMITER] = limiter
    app[keys.AUTHENTICATOR] = authenticator
    app[keys.USE_CASES] = UseCases.build(
        deps, reads=reads, keys=authenticator.cache, sender=webhook_runtime.sender
    )
    app[WEBHOOK_RUNTIME] = webhook_runtime
    use_cases = app[keys.USE_CASES]
    app[SCHEDULER] = Scheduler(
        [
            ("entry_expiry", use_cases.entry_expiry.expire_due),
            ("missed_change_requests", use_cases.change_request_apply.fail_missed),
            ("due_change_requests", use_cases.change_request_apply.apply_due),
        ],
        poll_seconds=settings.scheduler_poll_seconds,
    )
    app[keys.CONSOLE_ASSETS] = ConsoleAssets.load()
    app[keys.METRICS] = metrics
    metrics.watch_replicas(lambda: database.replicas.replicas)
    app[keys.OPENAPI] = DocumentCache()
    app[keys.REVISION_FEED] = RevisionFeed(repos.revisions.current_revision, repos.health.ping)
    app[keys.CONTEXT_STREAMS] = StreamSlots(
        settings.context_streams_per_process, settings.context_streams_per_caller
    )
    app[keys.STOPPING] = asyncio.Event()
    app.on_shutdown.append(_stopping)
    bulkhead = WriteBulkhead(settings.db_writes_per_resource, settings.db_acquire_timeout_seconds)
    pipeline = Pipeline(
        metrics,
        authenticator,
        settings.trusted_proxies,
        # forget_reads_after_writes wraps idempotency: it runs after held commits.
        data_layers(bulkhead.middleware(), consistency, forget_reads_after_writes, idempotency),
    )
    app[keys.ENDPOINTS] = register(app, apis(), pipeline)
    # None unless OTEL_* turned tracing on: without middlewares aiohttp calls the route's
    # handler (the pipeline) directly.
    app.middlewares.extend(tracing.middlewares())
    app.cleanup_ctx.append(_database_lifecycle)
    app.cleanup_ctx.append(_auth_lifecycle)
    app.cleanup_ctx.append(_revision_feed_lifecycle)
    # After the database: the delivery worker stops (releasing its claims) before it closes.
    app.cleanup_ctx.append(webhook_runtime.cleanup_ctx)
    app.cleanup_ctx.append(_scheduler_lifecycle)
    return app


async def _scheduler_lifecycle(app: web.Application) -> AsyncIterator[None]:
    """Expiring entries and scheduled change requests: after the database, stopped
    before it closes."""
    app[SCHEDULER].start()
    try:
        yield
    finally:
        await app[SCHEDULER].stop()


async def _stopping(app: web.Application) -> None:
    """Shutdown began: the listener is closed and in-flight requests are finishing.
    Background work takes on nothing new from here (the delivery worker claims no more;
    attempts under way go on) and stops in its cleanup context, before the pool closes.
    STOPPING is there for any other background work to watch."""
    app[keys.STOPPING].set()
    app[keys.REVISION_FEED].heard(0)  # wakes every stream of context changes: they end
    app[WEBHOOK_RUNTIME].stop_claiming()
    app[SCHEDULER].stop_claiming()


async def _database_lifecycle(app: web.Application) -> AsyncIterator[None]:
    settings = app[keys.SETTINGS]
    assert settings.database_url is not None
    assert settings.direct_database_url is not None
    # Migrations hold a session advisory lock: a direct connection, never PgBouncer's.
    conn = await connect(settings.direct_database_url)
    try:
        await prepare_database(conn, app[keys.QUERIES])
    finally:
        await conn.close()
    await app[keys.DATABASE].open(settings.database_url)
    log.info("database ready", pool_max=settings.db_pool_max_size)
    try:
        yield
    finally:
        await app[keys.READ_CACHE].stop()
        await app[keys.DATABASE].close()
        log.info("database closed")


async def _revision_feed_lifecycle(app: web.Application) -> AsyncIterator[None]:
    """The LISTEN that wakes streams of context changes: a session of its own
    (DATABASE_LISTEN_URL bypasses PgBouncer)."""
    settings = app[keys.SETTINGS]
    assert settings.direct_database_url is not None
    feed = app[keys.REVISION_FEED]
    await feed.start(settings.direct_database_url)
    try:
        yield
    finally:
        await feed.stop()


async def _auth_lifecycle(app: web.Application) -> AsyncIterator[None]:
    """The key-change listener, the last_used_at writer and the Redis client: started
    after the database, stopped before it closes (pending usage is written first)."""
    settings = app[keys.SETTINGS]
    assert settings.direct_database_url is not None
    authenticator = app[keys.AUTHENTICATOR]
    authenticator.count_jwks_fetches(app[keys.METRICS].count_jwks_fetch)
    # LISTEN needs a session of its own: DATABASE_LISTEN_URL bypasses PgBouncer.
    await authenticator.start(settings.direct_database_url)
    try:
        yield
    finally:
        await authenticator.stop()
        await app[keys.RATE_LIMITER].close()
