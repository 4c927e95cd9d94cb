"""Maintenance: rotating the encryption key of values at rest (admin scope)."""

from __future__ import annotations

from aiohttp import web

from service.base.errors import ServiceError
from service.http.appkeys import use_cases
from service.http.middlewares.exchange import actor_of, principal_of
from service.http.requests import read_body
from service.http.responses import json_response
from service.http.routing import Api
from service.schemas.config import RotateEncryptionKey
from service.views.compliance import EncryptionKeyRotation

api = Api("maintenance")


@api.route(
    "POST", "/api/v1/maintenance/rotate-encryption-key",
    summary="Re-encrypt every sensitive config value and webhook secret under a new key",
    body=RotateEncryptionKey, response=EncryptionKeyRotation,
    errors=("VALIDATION_ERROR", "INSUFFICIENT_SCOPE", "TENANT_ACCESS_DENIED",
            "ENCRYPTION_KEY_MISMATCH"),
)  # fmt: skip
async def rotate_encryption_key(request: web.Request) -> web.Response:
    # The key protects every tenant's values: a tenant-scoped admin may not touch it.
    if principal_of(request).is_scoped:
        raise ServiceError(
            "TENANT_ACCESS_DENIED",
            "the encryption key is global; a tenant-scoped caller cannot rotate it",
        )
    body = await read_body(request, RotateEncryptionKey)
    result = await use_cases(request).encryption_key_rotation.rotate(actor_of(request), body)
    return json_response(
        EncryptionKeyRotation(
            config_entries_rotated=result.config_entries_rotated,
            webhooks_rotated=result.webhooks_rotated,
        )
    )
