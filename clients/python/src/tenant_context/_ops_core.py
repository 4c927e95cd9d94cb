"""Tenants, context, config, permissions, context delivery and OFREP: one method per
operation. The async twin (_aops_core.py) is this file with `async`/`await` added
(tests/test_client_http.py checks they agree; `python -m tenant_context._mirror` rewrites it).
"""

from __future__ import annotations

from typing import Any, TypeVar, Unpack

from tenant_context._core import Call, CallOptions, segment
from tenant_context.models import (
    JSON,
    BulkEvaluation,
    ConfigEntry,
    ContextBatch,
    FlagEvaluation,
    IsolationStrategy,
    PermissionMode,
    PermissionPolicy,
    Tenant,
    TenantBatchResult,
    TenantContext,
    TenantCreate,
    TenantPage,
    TenantPatch,
)

T = TypeVar("T")
V1 = "/api/v1"


def _query(**params: Any) -> dict[str, Any]:
    return {
        k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items() if v is not None
    }


def _given(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


class CoreOperations:
    def _run(self, call: Call[T], options: CallOptions) -> T:
        raise NotImplementedError

    # Tenants

    def list_tenants(
        self,
        *,
        cursor: str | None = None,
        limit: int | None = None,
        status: str | None = None,
        parent_id: str | None = None,
        slug: str | None = None,
        roots: bool | None = None,
        search: str | None = None,
        include_child_counts: bool | None = None,
        **options: Unpack[CallOptions],
    ) -> TenantPage:
        params = _query(
            cursor=cursor,
            limit=limit,
            status=status,
            parent_id=parent_id,
            slug=slug,
            roots=roots,
            search=search,
            include_child_counts=include_child_counts,
        )
        return self._run(Call[TenantPage]("GET", f"{V1}/tenants", params=params), options)

    def create_tenant(
        self,
        name: str,
        slug: str,
        *,
        parent_id: str | None = None,
        isolation_strategy: IsolationStrategy | None = None,
        config: dict[str, JSON] | None = None,
        metadata: dict[str, JSON] | None = None,
        **options: Unpack[CallOptions],
    ) -> Tenant:
        body = _given(
            name=name,
            slug=slug,
            parent_id=parent_id,
            isolation_strategy=isolation_strategy,
            config=config,
            metadata=metadata,
        )
        return self._run(Call[Tenant]("POST", f"{V1}/tenants", json=body, write=True), options)

    def create_tenants(
        self, tenants: list[TenantCreate], **options: Unpack[CallOptions]
    ) -> TenantBatchResult:
        call = Call[TenantBatchResult](
            "POST", f"{V1}/tenants/batch", json={"tenants": tenants}, write=True
        )
        return self._run(call, options)

    def get_tenant(
        self,
        tenant_id: str,
        *,
        include_archived: bool | None = None,
        **options: Unpack[CallOptions],
    ) -> Tenant:
        params = _query(include_archived=include_archived)
        return self._run(Call[Tenant]("GET", f"{V1}/tenants/{tenant_id}", params=params), options)

    def update_tenant(
        self, tenant_id: str, changes: TenantPatch, **options: Unpack[CallOptions]
    ) -> Tenant:
        return self._run(Call[Tenant]("PATCH", f"{V1}/tenants/{tenant_id}", json=changes), options)

    def archive_tenant(self, tenant_id: str, **options: Unpack[CallOptions]) -> None:
        return self._run(Call[None]("DELETE", f"{V1}/tenants/{tenant_id}"), options)

    def restore_tenant(self, tenant_id: str, **options: Unpack[CallOptions]) -> Tenant:
        call = Call[Tenant]("POST", f"{V1}/tenants/{tenant_id}/restore", write=True)
        return self._run(call, options)

    def move_tenant(
        self, tenant_id: str, new_parent_id: str | None, **options: Unpack[CallOptions]
    ) -> Tenant:
        call = Call[Tenant](
            "POST",
            f"{V1}/tenants/{tenant_id}/move",
            json={"new_parent_id": new_parent_id},
            write=True,
        )
        return self._run(call, options)

    def ancestors(self, tenant_id: str, **options: Unpack[CallOptions]) -> list[Tenant]:
        call = Call[list[Tenant]]("GET", f"{V1}/tenants/{tenant_id}/ancestors")
        return self._run(call, options)

    def descendants(
        self,
        tenant_id: str,
        *,
        include_archived: bool | None = None,
        max_depth: int | None = None,
        cursor: str | None = None,
        limit: int | None = None,
        **options: Unpack[CallOptions],
    ) -> list[Tenant]:
        params = _query(
            include_archived=include_archived, max_depth=max_depth, cursor=cursor, limit=limit
        )
        call = Call[list[Tenant]]("GET", f"{V1}/tenants/{tenant_id}/descendants", params=params)
        return self._run(call, options)

    def children(
        self,
        tenant_id: str,
        *,
        include_archived: bool | None = None,
        cursor: str | None = None,
        limit: int | None = None,
        include_child_counts: bool | None = None,
        **options: Unpack[CallOptions],
    ) -> list[Tenant]:
        params = _query(
            include_archived=include_archived,
            cursor=cursor,
            limit=limit,
            include_child_counts=include_child_counts,
        )
        call = Call[list[Tenant]]("GET", f"{V1}/tenants/{tenant_id}/children", params=params)
        return self._run(call, options)

    # Resolved context and its delivery

    def get_context(
        self, tenant_id: str, *, reveal: bool | None = None, **options: Unpack[CallOptions]
    ) -> TenantContext:
        call = Call[TenantContext](
            "GET", f"{V1}/tenants/{tenant_id}/context", params=_query(reveal=reveal)
        )
        return self._run(call, options)

    def subtree_contexts(
        self, tenant_id: str, **options: Unpack[CallOptions]
    ) -> list[TenantContext]:
        """Every resolved context of the subtree; `last_response.revision` is the revision
        they reflect (follow the change stream from there)."""
        call = Call[list[TenantContext]]("GET", f"{V1}/tenants/{tenant_id}/contexts")
        return self._run(call, options)

    def contexts_batch(self, tenant_ids: list[str], **options: Unpack[CallOptions]) -> ContextBatch:
        call = Call[ContextBatch]("POST", f"{V1}/contexts/batch", json={"tenant_ids": tenant_ids})
        return self._run(call, options)

    # Config

    def list_config(
        self, tenant_id: str, *, reveal: bool | None = None, **options: Unpack[CallOptions]
    ) -> list[ConfigEntry]:
        call = Call[list[ConfigEntry]](
            "GET", f"{V1}/tenants/{tenant_id}/config", params=_query(reveal=reveal)
        )
        return self._run(call, options)

    def get_config(
        self,
        tenant_id: str,
        key: str,
        *,
        reveal: bool | None = None,
        **options: Unpack[CallOptions],
    ) -> ConfigEntry:
        path = f"{V1}/tenants/{tenant_id}/config/{segment(key)}"
        return self._run(Call[ConfigEntry]("GET", path, params=_query(reveal=reveal)), options)

    def put_config(
        self,
        tenant_id: str,
        key: str,
        value: JSON,
        *,
        locked: bool | None = None,
        sensitive: bool | None = None,
        reveal_to_descendants: bool | None = None,
        **options: Unpack[CallOptions],
    ) -> ConfigEntry:
        body = {
            "value": value,
            **_given(
                locked=locked, sensitive=sensitive, reveal_to_descendants=reveal_to_descendants
            ),
        }
        path = f"{V1}/tenants/{tenant_id}/config/{segment(key)}"
        return self._run(Call[ConfigEntry]("PUT", path, json=body), options)

    def delete_config(self, tenant_id: str, key: str, **options: Unpack[CallOptions]) -> None:
        path = f"{V1}/tenants/{tenant_id}/config/{segment(key)}"
        return self._run(Call[None]("DELETE", path), options)

    def preview_config_change(
        self, tenant_id: str, key: str, change: dict[str, JSON], **options: Unpack[CallOptions]
    ) -> dict[str, JSON]:
        path = f"{V1}/tenants/{tenant_id}/config/{segment(key)}/preview"
        return self._run(Call[dict[str, JSON]]("POST", path, json=change, write=True), options)

    # Permissions

    def list_permissions(
        self, tenant_id: str, **options: Unpack[CallOptions]
    ) -> list[PermissionPolicy]:
        call = Call[list[PermissionPolicy]]("GET", f"{V1}/tenants/{tenant_id}/permissions")
        return self._run(call, options)

    def get_permission(
        self, tenant_id: str, key: str, **options: Unpack[CallOptions]
    ) -> PermissionPolicy:
        path = f"{V1}/tenants/{tenant_id}/permissions/{segment(key)}"
        return self._run(Call[PermissionPolicy]("GET", path), options)

    def put_permission(
        self,
        tenant_id: str,
        key: str,
        value: bool,
        *,
        mode: PermissionMode | None = None,
        **options: Unpack[CallOptions],
    ) -> PermissionPolicy:
        path = f"{V1}/tenants/{tenant_id}/permissions/{segment(key)}"
        body = {"value": value, **_given(mode=mode)}
        return self._run(Call[PermissionPolicy]("PUT", path, json=body), options)

    def delete_permission(self, tenant_id: str, key: str, **options: Unpack[CallOptions]) -> None:
        path = f"{V1}/tenants/{tenant_id}/permissions/{segment(key)}"
        return self._run(Call[None]("DELETE", path), options)

    def preview_permission_change(
        self, tenant_id: str, key: str, change: dict[str, JSON], **options: Unpack[CallOptions]
    ) -> dict[str, JSON]:
        path = f"{V1}/tenants/{tenant_id}/permissions/{segment(key)}/preview"
        return self._run(Call[dict[str, JSON]]("POST", path, json=change, write=True), options)

    def preview_move(
        self, tenant_id: str, new_parent_id: str | None, **options: Unpack[CallOptions]
    ) -> dict[str, JSON]:
        call = Call[dict[str, JSON]](
            "POST",
            f"{V1}/tenants/{tenant_id}/move/preview",
            json={"new_parent_id": new_parent_id},
            write=True,
        )
        return self._run(call, options)

    # OpenFeature Remote Evaluation Protocol

    def evaluate_flag(
        self, key: str, context: dict[str, JSON], **options: Unpack[CallOptions]
    ) -> FlagEvaluation:
        """One flag (a config key) for `context["targetingKey"]` (a tenant id)."""
        call = Call[FlagEvaluation](
            "POST",
            f"/ofrep/v1/evaluate/flags/{segment(key)}",
            json={"context": context},
            accept=frozenset({400, 404}),
        )
        return self._run(call, options)

    def evaluate_flags(
        self,
        context: dict[str, JSON],
        *,
        etag: str | None = None,
        **options: Unpack[CallOptions],
    ) -> BulkEvaluation | None:
        """Every flag of the tenant; None when `etag` still matches (304)."""
        headers = {"If-None-Match": etag} if etag else {}
        call = Call[BulkEvaluation | None](
            "POST",
            "/ofrep/v1/evaluate/flags",
            headers=headers,
            json={"context": context},
            accept=frozenset({304}),
        )
        return self._run(call, options)
