"""The app factory: create_app(settings) builds every object; the cleanup context opens
and closes the database with the app. Nothing is created at import time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from aiohttp import web

from service.auth.authenticator import Authenticator
from service.bootstrap import prepare_database
from service.config import Settings
from service.console.assets import ConsoleAssets
from service.crypto import Encryptor, KeyRing
from service.db.migrations import load_migrations
from service.db.pool import Database, connect
from service.db.queries import Queries
from service.handlers import (
    api_keys,
    audit_logs,
    config,
    consents,
    console,
    context,
    encryption_keys,
    gdpr,
    health,
    maintenance,
    observability,
    regions,
    roles,
    tenants,
    webhooks,
)
from service.http import appkeys as keys
from service.http.freshness import forget_reads_after_writes
from service.http.idempotency import idempotency
from service.http.middleware import authenticate, request_context
from service.http.openapi import DocumentCache
from service.http.routing import Api, register
from service.logs import get_logger
from service.metrics import Metrics
from service.ratelimit.limiter import RateLimiter
from service.repositories.registry import Repositories
from service.usecases.api_key_commands import ApiKeyCommands
from service.usecases.api_key_queries import ApiKeyQueries
from service.usecases.audit_queries import AuditQueries
from service.usecases.config_entries import ConfigEntries
from service.usecases.consents import Consents
from service.usecases.context import TenantContext
from service.usecases.delivery_admin import DeliveryAdmin
from service.usecases.deps import Deps
from service.usecases.encryption_keys import EncryptionKeyRotation
from service.usecases.idempotency import IdempotentAnswers
from service.usecases.permissions import PermissionPolicies
from service.usecases.read_cache import ReadCache
from service.usecases.recording import ChangeRecorder
from service.usecases.region_migration import RegionMigrations
from service.usecases.retention import Retention
from service.usecases.role_management import RoleManagement
from service.usecases.tenant_changes import TenantChanges
from service.usecases.tenant_creation import TenantCreation
from service.usecases.tenant_export import TenantExport
from service.usecases.tenant_moves import TenantMoves
from service.usecases.tenant_purge import TenantPurge
from service.usecases.tenant_queries import TenantQueries
from service.usecases.webhook_changes import WebhookChanges
from service.usecases.webhook_queries import WebhookQueries, WebhookTesting
from service.webhooks.runtime import WebhookRuntime
from service.webhooks.sender import WebhookNetwork

log = get_logger("service.app")
BOOTSTRAP_KEY = web.AppKey("bootstrap_key", bool)


def apis() -> list[Api]:
    return [
        health.api,
        observability.api,
        tenants.api,
        config.api,
        context.api,
        encryption_keys.api,
        api_keys.api,
        roles.api,
        webhooks.api,
        audit_logs.api,
        consents.api,
        gdpr.api,
        regions.api,
        maintenance.api,
        console.api,
    ]


def create_app(
    settings: Settings,
    *,
    bootstrap_key: bool = False,
    webhook_network: WebhookNetwork | None = None,
) -> web.Application:
    if settings.database_url is None:
        raise ValueError("create_app needs settings.database_url (the CLI starts one if unset)")
    app = web.Application(
        client_max_size=settings.max_body_bytes,
        # forget_reads_after_writes wraps idempotency: it runs after held commits.
        middlewares=[request_context, forget_reads_after_writes, authenticate, idempotency],
    )
    queries = Queries.load()
    repos = Repositories.build(queries)
    database = Database(settings)
    keyring = KeyRing(Encryptor(settings.encryption_key, settings.encryption_keys_previous))
    recorder = ChangeRecorder(repos.outbox, webhook_max_attempts=settings.webhook_max_attempts)
    deps = Deps(settings, database, repos, recorder, keyring)
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
    app[keys.READ_CACHE] = reads
    authenticator = Authenticator(
        settings, database, repos.api_keys, limiter, repos.health.ping, reads
    )
    app[keys.RATE_LIMITER] = limiter
    app[keys.AUTHENTICATOR] = authenticator
    app[keys.API_KEY_COMMANDS] = ApiKeyCommands(deps, authenticator.cache)
    app[keys.API_KEY_QUERIES] = ApiKeyQueries(deps)
    app[keys.ROLE_MANAGEMENT] = RoleManagement(deps, authenticator.cache)
    app[keys.TENANT_QUERIES] = TenantQueries(deps, reads)
    app[keys.TENANT_CREATION] = TenantCreation(deps)
    app[keys.TENANT_CHANGES] = TenantChanges(deps)
    app[keys.TENANT_MOVES] = TenantMoves(deps)
    app[keys.CONFIG_ENTRIES] = ConfigEntries(deps)
    app[keys.PERMISSION_POLICIES] = PermissionPolicies(deps)
    app[keys.TENANT_CONTEXT] = TenantContext(deps, reads)
    app[keys.ENCRYPTION_KEY_ROTATION] = EncryptionKeyRotation(deps)
    app[keys.WEBHOOK_RUNTIME] = webhook_runtime
    app[keys.WEBHOOK_CHANGES] = WebhookChanges(deps, webhook_runtime.sender.guard)
    app[keys.WEBHOOK_QUERIES] = WebhookQueries(deps)
    app[keys.WEBHOOK_TESTING] = WebhookTesting(deps, webhook_runtime.sender)
    app[keys.DELIVERY_ADMIN] = DeliveryAdmin(deps)
    app[keys.AUDIT_QUERIES] = AuditQueries(deps)
    app[keys.CONSENTS] = Consents(deps)
    app[keys.TENANT_EXPORT] = TenantExport(deps)
    app[keys.TENANT_PURGE] = TenantPurge(deps, authenticator.cache)
    app[keys.REGION_MIGRATIONS] = RegionMigrations(deps)
    app[keys.RETENTION] = Retention(deps, authenticator.cache)
    app[keys.IDEMPOTENT_ANSWERS] = IdempotentAnswers(deps)
    app[keys.CONSOLE_ASSETS] = ConsoleAssets.load()
    app[BOOTSTRAP_KEY] = bootstrap_key
    app[keys.METRICS] = Metrics()
    app[keys.OPENAPI] = DocumentCache()
    app[keys.STOPPING] = asyncio.Event()
    app.on_shutdown.append(_stopping)
    app[keys.ENDPOINTS] = register(app, apis())
    app.cleanup_ctx.append(_database_lifecycle)
    app.cleanup_ctx.append(_auth_lifecycle)
    # After the database: the delivery worker stops (releasing its claims) before it closes.
    app.cleanup_ctx.append(webhook_runtime.cleanup_ctx)
    return app


async def _stopping(app: web.Application) -> None:
    """Shutdown began: the listener is closed and in-flight requests are finishing.
    Background work takes on nothing new from here (the delivery worker claims no more;
    attempts under way go on) and stops in its cleanup context, before the pool closes.
    STOPPING is there for any other background work to watch."""
    app[keys.STOPPING].set()
    app[keys.WEBHOOK_RUNTIME].stop_claiming()


async def _database_lifecycle(app: web.Application) -> AsyncIterator[None]:
    settings = app[keys.SETTINGS]
    assert settings.database_url is not None
    conn = await connect(settings.database_url)
    try:
        await prepare_database(conn, settings, app[keys.QUERIES], bootstrap_key=app[BOOTSTRAP_KEY])
    finally:
        await conn.close()
    await app[keys.DATABASE].open(settings.database_url)
    log.info("database ready", pool_max=settings.db_pool_max_size)
    try:
        yield
    finally:
        await app[keys.DATABASE].close()
        log.info("database closed")


async def _auth_lifecycle(app: web.Application) -> AsyncIterator[None]:
    """The key-change listener, the last_used_at writer and the Redis client: started
    after the database, stopped before it closes (pending usage is written first)."""
    settings = app[keys.SETTINGS]
    assert settings.database_url is not None
    authenticator = app[keys.AUTHENTICATOR]
    await authenticator.start(settings.database_url)
    try:
        yield
    finally:
        await authenticator.stop()
        await app[keys.RATE_LIMITER].close()
