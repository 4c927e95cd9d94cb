"""API keys, roles, webhooks, audit logs, consents, GDPR and maintenance. The async twin
(_aops_admin.py) is this file with `async`/`await` added (see _ops_core.py)."""

from __future__ import annotations

from typing import Any, TypeVar, Unpack

from tenant_context._core import Call, CallOptions, segment
from tenant_context._ops_core import V1, _given, _query
from tenant_context.models import (
    JSON,
    ApiKey,
    ApiKeyPage,
    ApiKeyPatch,
    ApiKeyWithPlaintext,
    AuditEntry,
    Consent,
    DeliveryStats,
    Role,
    RolePatch,
    Webhook,
    WebhookPatch,
    WebhookWithSecret,
)

T = TypeVar("T")
Body = dict[str, JSON]


class AdminOperations:
    def _run(self, call: Call[T], options: CallOptions) -> T:
        raise NotImplementedError

    # API keys and roles

    def create_api_key(
        self,
        name: str,
        *,
        tenant_id: str | None = None,
        scopes: list[str] | None = None,
        environment: str | None = None,
        rate_limit_max: int | None = None,
        rate_limit_window: str | None = None,
        expires_at: str | None = None,
        role_id: str | None = None,
        **options: Unpack[CallOptions],
    ) -> ApiKeyWithPlaintext:
        body = _given(
            name=name,
            tenant_id=tenant_id,
            scopes=scopes,
            environment=environment,
            rate_limit_max=rate_limit_max,
            rate_limit_window=rate_limit_window,
            expires_at=expires_at,
            role_id=role_id,
        )
        call = Call[ApiKeyWithPlaintext]("POST", f"{V1}/api-keys", json=body, write=True)
        return self._run(call, options)

    def list_api_keys(
        self,
        *,
        tenant_id: str | None = None,
        include_revoked: bool | None = None,
        cursor: str | None = None,
        limit: int | None = None,
        **options: Unpack[CallOptions],
    ) -> ApiKeyPage:
        params = _query(
            tenant_id=tenant_id, include_revoked=include_revoked, cursor=cursor, limit=limit
        )
        return self._run(Call[ApiKeyPage]("GET", f"{V1}/api-keys", params=params), options)

    def dormant_api_keys(self, days: int, **options: Unpack[CallOptions]) -> list[ApiKey]:
        call = Call[list[ApiKey]]("GET", f"{V1}/api-keys/dormant", params={"days": days})
        return self._run(call, options)

    def get_api_key(self, key_id: str, **options: Unpack[CallOptions]) -> ApiKey:
        return self._run(Call[ApiKey]("GET", f"{V1}/api-keys/{key_id}"), options)

    def update_api_key(
        self, key_id: str, changes: ApiKeyPatch, **options: Unpack[CallOptions]
    ) -> ApiKey:
        return self._run(Call[ApiKey]("PATCH", f"{V1}/api-keys/{key_id}", json=changes), options)

    def revoke_api_key(self, key_id: str, **options: Unpack[CallOptions]) -> None:
        return self._run(Call[None]("DELETE", f"{V1}/api-keys/{key_id}"), options)

    def rotate_api_key(
        self,
        key_id: str,
        *,
        grace_period_seconds: int | None = None,
        **options: Unpack[CallOptions],
    ) -> ApiKeyWithPlaintext:
        call = Call[ApiKeyWithPlaintext](
            "POST",
            f"{V1}/api-keys/{key_id}/rotate",
            write=True,
            json=_given(grace_period_seconds=grace_period_seconds),
        )
        return self._run(call, options)

    def assign_role(self, key_id: str, role_id: str, **options: Unpack[CallOptions]) -> ApiKey:
        call = Call[ApiKey]("PUT", f"{V1}/api-keys/{key_id}/role", json={"role_id": role_id})
        return self._run(call, options)

    def remove_role(self, key_id: str, **options: Unpack[CallOptions]) -> ApiKey:
        return self._run(Call[ApiKey]("DELETE", f"{V1}/api-keys/{key_id}/role"), options)

    def effective_scopes(self, key_id: str, **options: Unpack[CallOptions]) -> Body:
        return self._run(Call[Body]("GET", f"{V1}/api-keys/{key_id}/scopes"), options)

    def create_role(
        self,
        name: str,
        scopes: list[str],
        *,
        description: str | None = None,
        tenant_id: str | None = None,
        **options: Unpack[CallOptions],
    ) -> Role:
        body = _given(name=name, scopes=scopes, description=description, tenant_id=tenant_id)
        return self._run(Call[Role]("POST", f"{V1}/roles", json=body, write=True), options)

    def list_roles(
        self, *, tenant_id: str | None = None, **options: Unpack[CallOptions]
    ) -> list[Role]:
        call = Call[list[Role]]("GET", f"{V1}/roles", params=_query(tenant_id=tenant_id))
        return self._run(call, options)

    def get_role(self, role_id: str, **options: Unpack[CallOptions]) -> Role:
        return self._run(Call[Role]("GET", f"{V1}/roles/{role_id}"), options)

    def update_role(self, role_id: str, changes: RolePatch, **options: Unpack[CallOptions]) -> Role:
        return self._run(Call[Role]("PATCH", f"{V1}/roles/{role_id}", json=changes), options)

    def delete_role(self, role_id: str, **options: Unpack[CallOptions]) -> None:
        return self._run(Call[None]("DELETE", f"{V1}/roles/{role_id}"), options)

    # Webhooks

    def create_webhook(
        self,
        url: str,
        events: list[str],
        *,
        tenant_id: str | None = None,
        secret: str | None = None,
        description: str | None = None,
        active: bool | None = None,
        include_descendants: bool | None = None,
        **options: Unpack[CallOptions],
    ) -> WebhookWithSecret:
        body = _given(
            url=url,
            events=events,
            tenant_id=tenant_id,
            secret=secret,
            description=description,
            active=active,
            include_descendants=include_descendants,
        )
        call = Call[WebhookWithSecret]("POST", f"{V1}/webhooks", json=body, write=True)
        return self._run(call, options)

    def list_webhooks(
        self, *, tenant_id: str | None = None, **options: Unpack[CallOptions]
    ) -> list[Webhook]:
        call = Call[list[Webhook]]("GET", f"{V1}/webhooks", params=_query(tenant_id=tenant_id))
        return self._run(call, options)

    def get_webhook(self, webhook_id: str, **options: Unpack[CallOptions]) -> Webhook:
        return self._run(Call[Webhook]("GET", f"{V1}/webhooks/{webhook_id}"), options)

    def update_webhook(
        self, webhook_id: str, changes: WebhookPatch, **options: Unpack[CallOptions]
    ) -> Webhook:
        call = Call[Webhook]("PATCH", f"{V1}/webhooks/{webhook_id}", json=changes)
        return self._run(call, options)

    def delete_webhook(self, webhook_id: str, **options: Unpack[CallOptions]) -> None:
        return self._run(Call[None]("DELETE", f"{V1}/webhooks/{webhook_id}"), options)

    def test_webhook(self, webhook_id: str, **options: Unpack[CallOptions]) -> Body:
        call = Call[Body]("POST", f"{V1}/webhooks/{webhook_id}/test", write=True)
        return self._run(call, options)

    def rotate_webhook_secret(
        self, webhook_id: str, rotation: Body | None = None, **options: Unpack[CallOptions]
    ) -> WebhookWithSecret:
        call = Call[WebhookWithSecret](
            "POST", f"{V1}/webhooks/{webhook_id}/rotate-secret", json=rotation or {}, write=True
        )
        return self._run(call, options)

    def recover_webhook(
        self, webhook_id: str, recovery: Body, **options: Unpack[CallOptions]
    ) -> Body:
        call = Call[Body]("POST", f"{V1}/webhooks/{webhook_id}/recover", json=recovery, write=True)
        return self._run(call, options)

    def list_deliveries(
        self,
        webhook_id: str,
        *,
        status: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
        **options: Unpack[CallOptions],
    ) -> Body:
        params = _query(status=status, cursor=cursor, limit=limit)
        call = Call[Body]("GET", f"{V1}/webhooks/{webhook_id}/deliveries", params=params)
        return self._run(call, options)

    def delivery_stats(
        self, *, webhook_id: str | None = None, **options: Unpack[CallOptions]
    ) -> DeliveryStats:
        call = Call[DeliveryStats](
            "GET", f"{V1}/webhooks/deliveries/stats", params=_query(webhook_id=webhook_id)
        )
        return self._run(call, options)

    def failed_deliveries(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        webhook_id: str | None = None,
        **options: Unpack[CallOptions],
    ) -> list[Body]:
        params = _query(limit=limit, cursor=cursor, webhook_id=webhook_id)
        call = Call[list[Body]]("GET", f"{V1}/webhooks/deliveries/failed", params=params)
        return self._run(call, options)

    def retry_all_deliveries(
        self, *, webhook_id: str | None = None, **options: Unpack[CallOptions]
    ) -> Body:
        call = Call[Body](
            "POST",
            f"{V1}/webhooks/deliveries/retry-all",
            params=_query(webhook_id=webhook_id),
            write=True,
        )
        return self._run(call, options)

    def retry_delivery(self, delivery_id: str, **options: Unpack[CallOptions]) -> Body:
        call = Call[Body]("POST", f"{V1}/webhooks/deliveries/{delivery_id}/retry", write=True)
        return self._run(call, options)

    # Audit logs

    def list_audit_logs(
        self,
        *,
        tenant_id: str | None = None,
        action: str | None = None,
        resource_type: str | None = None,
        actor_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        **options: Unpack[CallOptions],
    ) -> list[AuditEntry]:
        params = _query(
            tenant_id=tenant_id,
            action=action,
            resource_type=resource_type,
            actor_id=actor_id,
            limit=limit,
            cursor=cursor,
        )
        params.update(_given(**{"from": since, "to": until}))
        return self._run(Call[list[AuditEntry]]("GET", f"{V1}/audit-logs", params=params), options)

    def get_audit_log(self, entry_id: str, **options: Unpack[CallOptions]) -> AuditEntry:
        return self._run(Call[AuditEntry]("GET", f"{V1}/audit-logs/{entry_id}"), options)

    def verify_audit_chain(
        self,
        *,
        from_seq: int | None = None,
        to_seq: int | None = None,
        **options: Unpack[CallOptions],
    ) -> Body:
        params = _query(from_seq=from_seq, to_seq=to_seq)
        return self._run(Call[Body]("GET", f"{V1}/audit-logs/verify", params=params), options)

    # Consents, GDPR, regions, maintenance

    def grant_consent(
        self,
        tenant_id: str,
        purpose: str,
        *,
        expires_at: str | None = None,
        metadata: Body | None = None,
        **options: Unpack[CallOptions],
    ) -> Consent:
        body = _given(purpose=purpose, expires_at=expires_at, metadata=metadata)
        call = Call[Consent]("POST", f"{V1}/tenants/{tenant_id}/consent", json=body, write=True)
        return self._run(call, options)

    def list_consents(
        self, tenant_id: str, *, purpose: str | None = None, **options: Unpack[CallOptions]
    ) -> list[Consent]:
        call = Call[list[Consent]](
            "GET", f"{V1}/tenants/{tenant_id}/consent", params=_query(purpose=purpose)
        )
        return self._run(call, options)

    def revoke_consent(self, tenant_id: str, purpose: str, **options: Unpack[CallOptions]) -> None:
        path = f"{V1}/tenants/{tenant_id}/consent/{segment(purpose)}"
        return self._run(Call[None]("DELETE", path), options)

    def export_tenant(
        self,
        tenant_id: str,
        *,
        include_secrets: bool | None = None,
        **options: Unpack[CallOptions],
    ) -> Body:
        call = Call[Body](
            "GET",
            f"{V1}/tenants/{tenant_id}/export",
            params=_query(include_secrets=include_secrets),
        )
        return self._run(call, options)

    def purge_tenant(self, tenant_id: str, body: Body, **options: Unpack[CallOptions]) -> Body:
        call = Call[Body]("POST", f"{V1}/tenants/{tenant_id}/purge", json=body, write=True)
        return self._run(call, options)

    def migrate_region(self, tenant_id: str, body: Body, **options: Unpack[CallOptions]) -> Body:
        call = Call[Body]("POST", f"{V1}/tenants/{tenant_id}/migrate-region", json=body, write=True)
        return self._run(call, options)

    def list_regions(self, **options: Unpack[CallOptions]) -> list[Body]:
        return self._run(Call[list[Body]]("GET", f"{V1}/regions"), options)

    def purge_expired(self, body: Body | None = None, **options: Unpack[CallOptions]) -> Body:
        call = Call[Body]("POST", f"{V1}/maintenance/purge-expired", json=body or {}, write=True)
        return self._run(call, options)

    def rotate_encryption_key(
        self, old_key: str, new_key: str, **options: Unpack[CallOptions]
    ) -> Body:
        call = Call[Body](
            "POST",
            f"{V1}/maintenance/rotate-encryption-key",
            write=True,
            json={"old_key": old_key, "new_key": new_key},
        )
        return self._run(call, options)

    def me(self, **options: Unpack[CallOptions]) -> Body:
        """Who the credentials are (their scopes and tenant)."""
        return self._run(Call[Body]("GET", f"{V1}/me"), options)

    def raw(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: JSON = None,
        **options: Unpack[CallOptions],
    ) -> JSON:
        """Any operation by path (errors still raise ApiError)."""
        call = Call[JSON](
            method.upper(), path, params=params, json=json, write=method.upper() == "POST"
        )
        return self._run(call, options)
