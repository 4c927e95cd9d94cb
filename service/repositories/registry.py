"""Every repository, built once from the loaded queries (a missing name fails here)."""

from __future__ import annotations

from dataclasses import dataclass

from service.db.migrations import MigrationsRepository
from service.db.queries import Queries
from service.repositories.api_keys import ApiKeysRepository
from service.repositories.config_entries import ConfigEntriesRepository
from service.repositories.context import ContextRepository
from service.repositories.encryption_keys import EncryptionKeysRepository
from service.repositories.health import HealthRepository
from service.repositories.metrics import MetricsRepository
from service.repositories.outbox import OutboxRepository
from service.repositories.permissions import PermissionsRepository
from service.repositories.roles import RolesRepository
from service.repositories.tenants import TenantsRepository


@dataclass(frozen=True, slots=True)
class Repositories:
    tenants: TenantsRepository
    config: ConfigEntriesRepository
    outbox: OutboxRepository
    api_keys: ApiKeysRepository
    health: HealthRepository
    migrations: MigrationsRepository
    permissions: PermissionsRepository
    context: ContextRepository
    encryption_keys: EncryptionKeysRepository
    roles: RolesRepository
    metrics: MetricsRepository

    @classmethod
    def build(cls, queries: Queries) -> Repositories:
        return cls(
            tenants=TenantsRepository(queries),
            config=ConfigEntriesRepository(queries),
            outbox=OutboxRepository(queries),
            api_keys=ApiKeysRepository(queries),
            health=HealthRepository(queries),
            migrations=MigrationsRepository(queries),
            permissions=PermissionsRepository(queries),
            context=ContextRepository(queries),
            encryption_keys=EncryptionKeysRepository(queries),
            roles=RolesRepository(queries),
            metrics=MetricsRepository(queries),
        )
