"""Typed application state: everything the app factory builds lives under one of these."""

from __future__ import annotations

import asyncio

from aiohttp import web

from service.auth.authenticator import Authenticator
from service.config import Settings
from service.console.assets import ConsoleAssets
from service.crypto import KeyRing
from service.db.pool import Database
from service.db.queries import Queries
from service.http.openapi import DocumentCache
from service.http.routing import Endpoint
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

SETTINGS = web.AppKey("settings", Settings)
QUERIES = web.AppKey("queries", Queries)
REPOSITORIES = web.AppKey("repositories", Repositories)
KEYRING = web.AppKey("keyring", KeyRing)
ENDPOINTS = web.AppKey("endpoints", dict[tuple[str, str], Endpoint])
DATABASE = web.AppKey("database", Database)
MIGRATION_HEAD = web.AppKey("migration_head", int)
DEPS = web.AppKey("deps", Deps)
AUTHENTICATOR = web.AppKey("authenticator", Authenticator)
TENANT_QUERIES = web.AppKey("tenant_queries", TenantQueries)
TENANT_CREATION = web.AppKey("tenant_creation", TenantCreation)
TENANT_CHANGES = web.AppKey("tenant_changes", TenantChanges)
TENANT_MOVES = web.AppKey("tenant_moves", TenantMoves)
WEBHOOK_RUNTIME = web.AppKey("webhook_runtime", WebhookRuntime)
WEBHOOK_CHANGES = web.AppKey("webhook_changes", WebhookChanges)
WEBHOOK_QUERIES = web.AppKey("webhook_queries", WebhookQueries)
WEBHOOK_TESTING = web.AppKey("webhook_testing", WebhookTesting)
DELIVERY_ADMIN = web.AppKey("delivery_admin", DeliveryAdmin)
CONFIG_ENTRIES = web.AppKey("config_entries", ConfigEntries)
PERMISSION_POLICIES = web.AppKey("permission_policies", PermissionPolicies)
READ_CACHE = web.AppKey("read_cache", ReadCache)
TENANT_CONTEXT = web.AppKey("tenant_context", TenantContext)
ENCRYPTION_KEY_ROTATION = web.AppKey("encryption_key_rotation", EncryptionKeyRotation)
RATE_LIMITER = web.AppKey("rate_limiter", RateLimiter)
API_KEY_COMMANDS = web.AppKey("api_key_commands", ApiKeyCommands)
API_KEY_QUERIES = web.AppKey("api_key_queries", ApiKeyQueries)
ROLE_MANAGEMENT = web.AppKey("role_management", RoleManagement)
METRICS = web.AppKey("metrics", Metrics)
OPENAPI = web.AppKey("openapi", DocumentCache)
# Set when shutdown begins (SIGTERM): background workers stop taking new work.
STOPPING = web.AppKey("stopping", asyncio.Event)
AUDIT_QUERIES = web.AppKey("audit_queries", AuditQueries)
CONSENTS = web.AppKey("consents", Consents)
TENANT_EXPORT = web.AppKey("tenant_export", TenantExport)
TENANT_PURGE = web.AppKey("tenant_purge", TenantPurge)
REGION_MIGRATIONS = web.AppKey("region_migrations", RegionMigrations)
RETENTION = web.AppKey("retention", Retention)
IDEMPOTENT_ANSWERS = web.AppKey("idempotent_answers", IdempotentAnswers)
CONSOLE_ASSETS = web.AppKey("console_assets", ConsoleAssets)
