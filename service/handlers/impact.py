"""Impact previews (dry runs) of changes to a tenant's context (docs/decisions/context.md
"Impact previews"): the answer describes the change; nothing is written."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar
from uuid import UUID

from aiohttp import web

from service.http.appkeys import use_cases
from service.http.middlewares.exchange import principal_of
from service.http.requests import parse_query, path_entry, path_uuid, read_body
from service.http.responses import json_response
from service.http.routing import Api
from service.repositories.impact import OwnEntry, OwnPolicy, PolicyChange, ResolvedChange
from service.schemas.config import (
    ConfigPreviewBody,
    PermissionPreviewBody,
    PreviewQuery,
)
from service.schemas.tenants import TenantMove
from service.usecases.entries.impact import (
    ChangedTenant,
    EntryImpact,
    EntryPreview,
    PreviewBody,
)
from service.views.impact import (
    ConfigChangePreview,
    MovePreview,
    PermissionChangePreview,
    PreviewRefusal,
    ResolvedPolicyChange,
    ResolvedValueChange,
    ShadowedEntry,
    ShadowedPolicy,
    move_preview,
)

api = Api("config")
ERRORS = ("VALIDATION_ERROR", "TENANT_NOT_FOUND", "TENANT_ARCHIVED")


B = TypeVar("B", bound=PreviewBody)
C = TypeVar("C", bound=ChangedTenant)
S = TypeVar("S")


async def _entry_preview(
    request: web.Request,
    body_type: type[B],
    impact: EntryImpact[B, Any, Any, C, S],
    view: Callable[[EntryPreview[C, S]], Any],
) -> web.Response:
    """A config or permission preview: the same path, parameterised by the kind's body,
    use case and view."""
    tenant_id, key = path_entry(request)
    query = parse_query(request, PreviewQuery)
    body = await read_body(request, body_type)
    preview = await impact.preview(principal_of(request), tenant_id, key, body, query)
    return _answer(view(preview), preview.next_cursor)


def _answer(document: Any, next_cursor: UUID | None) -> web.Response:
    headers = {} if next_cursor is None else {"X-Next-Cursor": str(next_cursor)}
    return json_response(document, headers=headers)


def _common(p: EntryPreview[Any, Any]) -> dict[str, Any]:
    """The fields a config and a permission preview share."""
    return {
        "dry_run": True,
        "tenant_id": p.tenant_id,
        "key": p.key,
        "change": p.change,
        "refused": PreviewRefusal.of(p.refused),
        "changed_tenants": p.changed_tenants,
        "shadowed_total": p.shadowed_total,
    }


def _config_view(p: EntryPreview[ResolvedChange, OwnEntry]) -> ConfigChangePreview:
    return ConfigChangePreview(
        **_common(p),
        changes=[ResolvedValueChange.of(c) for c in p.changes],
        shadowed_entries=[ShadowedEntry.of(e) for e in p.shadowed],
    )


def _permission_view(p: EntryPreview[PolicyChange, OwnPolicy]) -> PermissionChangePreview:
    return PermissionChangePreview(
        **_common(p),
        changes=[ResolvedPolicyChange.of(c) for c in p.changes],
        shadowed_policies=[ShadowedPolicy.of(e) for e in p.shadowed],
    )


@api.route(
    "POST", "/api/v1/tenants/{id}/config/{key}/preview",
    summary="Preview setting or deleting a config entry: the tenants whose resolved value "
    "would change (paged, X-Next-Cursor), the entries a lock would shadow, and whether the "
    "write would be refused; nothing is written",
    body=ConfigPreviewBody, query=PreviewQuery, response=ConfigChangePreview,
    errors=ERRORS, writes=False,
)  # fmt: skip
async def preview_config_change(request: web.Request) -> web.Response:
    impact = use_cases(request).config_impact
    return await _entry_preview(request, ConfigPreviewBody, impact, _config_view)


@api.route(
    "POST", "/api/v1/tenants/{id}/permissions/{key}/preview",
    summary="Preview setting or deleting a permission policy: the tenants whose resolved "
    "policy would change (paged, X-Next-Cursor), the policies a LOCKED one would shadow, "
    "and whether the write would be refused; nothing is written",
    body=PermissionPreviewBody, query=PreviewQuery, response=PermissionChangePreview,
    errors=ERRORS, writes=False,
)  # fmt: skip
async def preview_permission_change(request: web.Request) -> web.Response:
    impact = use_cases(request).permission_impact
    return await _entry_preview(request, PermissionPreviewBody, impact, _permission_view)


@api.route(
    "POST", "/api/v1/tenants/{id}/move/preview",
    summary="Preview moving a tenant: the subtree's tenants whose resolved config or "
    "permissions would change (paged, X-Next-Cursor) and whether the move would be "
    "refused; nothing is written",
    body=TenantMove, query=PreviewQuery, response=MovePreview,
    errors=(*ERRORS, "TENANT_ACCESS_DENIED"), writes=False,
)  # fmt: skip
async def preview_move(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    query = parse_query(request, PreviewQuery)
    body = await read_body(request, TenantMove)
    p = await use_cases(request).move_preview.preview(
        principal_of(request), tenant_id, body.new_parent_id, query
    )
    document = move_preview(p.tenant_id, p.new_parent_id, p.refused, p.changed_tenants, p.changes)
    return _answer(document, p.next_cursor)
