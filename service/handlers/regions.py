"""Regions (admin): the configured data-residency regions and migrating a tenant."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import SETTINGS, use_cases
from service.http.middlewares.exchange import actor_of, principal_of
from service.http.requests import path_uuid, read_body
from service.http.responses import json_response
from service.http.routing import Api
from service.schemas.tenant_admin import MigrateRegionBody
from service.views.compliance import Region, RegionMigration

api = Api("regions")


@api.route(
    "GET", "/api/v1/regions", summary="The configured regions (SERVICE_REGIONS)",
    response=list[Region],
)  # fmt: skip
async def list_regions(request: web.Request) -> web.Response:
    settings = request.app[SETTINGS]
    return json_response(
        [Region(name=r, default=r == settings.default_region) for r in settings.regions]
    )


@api.route(
    "POST", "/api/v1/tenants/{id}/migrate-region",
    summary="Move a tenant (and by default its subtree) to another region",
    body=MigrateRegionBody, response=RegionMigration,
    errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND", "TENANT_ARCHIVED", "ALREADY_IN_REGION"),
)  # fmt: skip
async def migrate_region(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    body = await read_body(request, MigrateRegionBody)
    result = await use_cases(request).region_migrations.migrate(
        principal_of(request), actor_of(request), tenant_id, body
    )
    return json_response(
        RegionMigration(
            tenant_id=result.tenant_id,
            from_region=result.from_region,
            to_region=result.to_region,
            tenants_migrated=result.tenants_migrated,
        )
    )
