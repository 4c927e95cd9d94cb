"""Every use case, built once by the app factory (the one wiring table; handlers reach it
through service.http.appkeys.use_cases)."""

from __future__ import annotations

from dataclasses import dataclass

from service.caches.key_cache import KeyCache
from service.caches.read_cache import ReadCache
from service.usecases.changes.applying import ChangeRequestApply
from service.usecases.changes.execution import ChangeExecution
from service.usecases.changes.requests import ChangeRequests
from service.usecases.common.deps import Deps
from service.usecases.common.idempotency import IdempotentAnswers
from service.usecases.compliance.audit import AuditQueries
from service.usecases.compliance.audit_chain import AuditChain
from service.usecases.compliance.consents import Consents
from service.usecases.compliance.export import TenantExports
from service.usecases.compliance.key_rotation import EncryptionKeyRotations
from service.usecases.compliance.purge import TenantPurge
from service.usecases.compliance.regions import RegionMigrations
from service.usecases.compliance.retention import Retention
from service.usecases.entries.config_budgets import ConfigBudgets
from service.usecases.entries.config_entries import ConfigEntries
from service.usecases.entries.config_impact import ConfigImpact
from service.usecases.entries.config_schemas import ConfigSchemas
from service.usecases.entries.expiry import EntryExpiry
from service.usecases.entries.permission_impact import PermissionImpact
from service.usecases.entries.permissions import PermissionPolicies
from service.usecases.keys.commands import ApiKeyCommands
from service.usecases.keys.queries import ApiKeyQueries
from service.usecases.keys.roles import RoleManagement
from service.usecases.keys.signed_in import SessionReads
from service.usecases.tenants.changes import TenantChanges
from service.usecases.tenants.context import ContextReads
from service.usecases.tenants.context_delivery import ContextDelivery
from service.usecases.tenants.creation import TenantCreation
from service.usecases.tenants.flags import FlagEvaluation
from service.usecases.tenants.history import ContextHistory
from service.usecases.tenants.move_preview import MovePreviews
from service.usecases.tenants.moves import TenantMoves
from service.usecases.tenants.protection import TenantProtections
from service.usecases.tenants.queries import TenantQueries
from service.usecases.tenants.resolved import ResolvedValues
from service.usecases.tenants.revert import RevisionReverts
from service.usecases.webhooks.changes import WebhookChanges
from service.usecases.webhooks.delivery_admin import DeliveryAdmin
from service.usecases.webhooks.health import WebhookHealth
from service.usecases.webhooks.queries import WebhookQueries, WebhookTesting
from service.webhooks.sender import WebhookSender


@dataclass(frozen=True, slots=True)
class UseCases:
    # tenants
    tenant_queries: TenantQueries
    tenant_creation: TenantCreation
    tenant_changes: TenantChanges
    tenant_moves: TenantMoves
    tenant_protection: TenantProtections
    # change requests
    change_requests: ChangeRequests
    change_request_apply: ChangeRequestApply
    move_preview: MovePreviews
    tenant_context: ContextReads
    context_delivery: ContextDelivery
    flag_evaluation: FlagEvaluation
    context_history: ContextHistory
    revision_reverts: RevisionReverts
    # a tenant's entries
    config_entries: ConfigEntries
    config_schemas: ConfigSchemas
    config_budgets: ConfigBudgets
    resolved_values: ResolvedValues
    config_impact: ConfigImpact
    permission_impact: PermissionImpact
    permission_policies: PermissionPolicies
    entry_expiry: EntryExpiry
    # keys and roles
    api_key_commands: ApiKeyCommands
    api_key_queries: ApiKeyQueries
    role_management: RoleManagement
    signed_in: SessionReads
    # webhooks
    webhook_changes: WebhookChanges
    webhook_queries: WebhookQueries
    webhook_testing: WebhookTesting
    delivery_admin: DeliveryAdmin
    webhook_health: WebhookHealth
    # compliance
    audit_queries: AuditQueries
    audit_chain: AuditChain
    consents: Consents
    tenant_export: TenantExports
    tenant_purge: TenantPurge
    region_migrations: RegionMigrations
    retention: Retention
    encryption_key_rotation: EncryptionKeyRotations
    # shared
    idempotent_answers: IdempotentAnswers

    @classmethod
    def build(
        cls, deps: Deps, *, reads: ReadCache, keys: KeyCache, sender: WebhookSender
    ) -> UseCases:
        execution = ChangeExecution(deps)
        requests = ChangeRequests(deps, execution)
        return cls(
            tenant_queries=TenantQueries(deps, reads),
            tenant_creation=TenantCreation(deps),
            tenant_changes=TenantChanges(deps),
            tenant_moves=TenantMoves(deps),
            tenant_protection=TenantProtections(deps),
            change_requests=requests,
            change_request_apply=ChangeRequestApply(deps, execution, requests),
            move_preview=MovePreviews(deps),
            tenant_context=ContextReads(deps, reads),
            context_delivery=ContextDelivery(deps, reads),
            flag_evaluation=FlagEvaluation(ContextReads(deps, reads)),
            context_history=ContextHistory(deps),
            revision_reverts=RevisionReverts(deps, ContextHistory(deps)),
            config_entries=ConfigEntries(deps),
            config_schemas=ConfigSchemas(deps),
            config_budgets=ConfigBudgets(deps),
            resolved_values=ResolvedValues(deps),
            config_impact=ConfigImpact(deps),
            permission_impact=PermissionImpact(deps),
            permission_policies=PermissionPolicies(deps),
            entry_expiry=EntryExpiry(deps),
            api_key_commands=ApiKeyCommands(deps, keys),
            api_key_queries=ApiKeyQueries(deps),
            role_management=RoleManagement(deps, keys),
            signed_in=SessionReads(deps),
            webhook_changes=WebhookChanges(deps, sender.guard),
            webhook_queries=WebhookQueries(deps),
            webhook_testing=WebhookTesting(deps, sender),
            delivery_admin=DeliveryAdmin(deps),
            webhook_health=WebhookHealth(deps),
            audit_queries=AuditQueries(deps),
            audit_chain=AuditChain(deps),
            consents=Consents(deps),
            tenant_export=TenantExports(deps),
            tenant_purge=TenantPurge(deps, keys),
            region_migrations=RegionMigrations(deps),
            retention=Retention(deps, keys),
            encryption_key_rotation=EncryptionKeyRotations(deps),
            idempotent_answers=IdempotentAnswers(deps),
        )
