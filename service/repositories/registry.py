"""Every repository, built once from the loaded queries (a missing name fails here)."""

from __future__ import annotations

from dataclasses import dataclass

from service.db.migrations import MigrationsRepository
from service.db.queries import Queries
from service.repositories.api_keys import ApiKeysRepository
from service.repositories.audit_chain import AuditChainRepository
from service.repositories.audit_logs import AuditLogsRepository
from service.repositories.change_requests import ChangeRequestsRepository
from service.repositories.config_constraints import ConfigConstraintsRepository
from service.repositories.config_entries import ConfigEntriesRepository
from service.repositories.consents import ConsentsRepository
from service.repositories.context import ContextRepository
from service.repositories.deliveries import DeliveriesRepository
from service.repositories.encryption_keys import EncryptionKeysRepository
from service.repositories.gdpr import GdprRepository
from service.repositories.health import HealthRepository
from service.repositories.history import HistoryRepository
from service.repositories.idempotency import IdempotencyRepository
from service.repositories.impact import ImpactRepository
from service.repositories.metrics import MetricsRepository
from service.repositories.outbox import OutboxRepository
from service.repositories.permissions import PermissionsRepository
from service.repositories.protection import ProtectionRepository
from service.repositories.read_cache import ReadCacheRepository
from service.repositories.regions import RegionsRepository
from service.repositories.resolved import ResolvedRepository
from service.repositories.retention import RetentionRepository
from service.repositories.revisions import RevisionsRepository
from service.repositories.roles import RolesRepository
from service.repositories.tenant_documents import TenantDocumentsRepository
from service.repositories.tenants import TenantsRepository
from service.repositories.webhook_health import WebhookHealthRepository
from service.repositories.webhooks import WebhooksRepository


@dataclass(frozen=True, slots=True)
class Repositories:
    tenants: TenantsRepository
    documents: TenantDocumentsRepository
    config: ConfigEntriesRepository
    constraints: ConfigConstraintsRepository
    resolved: ResolvedRepository
    outbox: OutboxRepository
    api_keys: ApiKeysRepository
    health: HealthRepository
    migrations: MigrationsRepository
    webhooks: WebhooksRepository
    webhook_health: WebhookHealthRepository
    deliveries: DeliveriesRepository
    permissions: PermissionsRepository
    context: ContextRepository
    encryption_keys: EncryptionKeysRepository
    roles: RolesRepository
    metrics: MetricsRepository
    audit_logs: AuditLogsRepository
    audit_chain: AuditChainRepository
    consents: ConsentsRepository
    gdpr: GdprRepository
    regions: RegionsRepository
    retention: RetentionRepository
    idempotency: IdempotencyRepository
    impact: ImpactRepository
    read_cache: ReadCacheRepository
    revisions: RevisionsRepository
    protection: ProtectionRepository
    change_requests: ChangeRequestsRepository
    history: HistoryRepository

    @classmethod
    def build(cls, queries: Queries) -> Repositories:
        return cls(
            tenants=TenantsRepository(queries),
            documents=TenantDocumentsRepository(queries),
            config=ConfigEntriesRepository(queries),
            constraints=ConfigConstraintsRepository(queries),
            resolved=ResolvedRepository(queries),
            outbox=OutboxRepository(queries),
            api_keys=ApiKeysRepository(queries),
            health=HealthRepository(queries),
            migrations=MigrationsRepository(queries),
            webhooks=WebhooksRepository(queries),
            webhook_health=WebhookHealthRepository(queries),
            deliveries=DeliveriesRepository(queries),
            permissions=PermissionsRepository(queries),
            context=ContextRepository(queries),
            encryption_keys=EncryptionKeysRepository(queries),
            roles=RolesRepository(queries),
            metrics=MetricsRepository(queries),
            audit_logs=AuditLogsRepository(queries),
            audit_chain=AuditChainRepository(queries),
            consents=ConsentsRepository(queries),
            gdpr=GdprRepository(queries),
            regions=RegionsRepository(queries),
            retention=RetentionRepository(queries),
            idempotency=IdempotencyRepository(queries),
            impact=ImpactRepository(queries),
            read_cache=ReadCacheRepository(queries),
            revisions=RevisionsRepository(queries),
            protection=ProtectionRepository(queries),
            change_requests=ChangeRequestsRepository(queries),
            history=HistoryRepository(queries),
        )
