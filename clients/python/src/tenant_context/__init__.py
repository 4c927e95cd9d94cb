"""Python client of the Tenant Hierarchy Service.

- `Client` / `AsyncClient`: the whole HTTP API, typed, with retries.
- `ContextCache`: every resolved context of a subtree in memory, fed by the change stream.
- `tenant_context.openfeature.TenantContextProvider`: config values through OpenFeature.
"""

from __future__ import annotations

from tenant_context._core import CallOptions, Response, ResponseMeta, RetryPolicy
from tenant_context.aio import AsyncClient
from tenant_context.cache import ChangeCallback, ContextCache
from tenant_context.client import Client
from tenant_context.errors import (
    ApiError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    GoneError,
    NotFoundError,
    PermissionDeniedError,
    PreconditionFailedError,
    RateLimitedError,
    ServerError,
    ServiceUnavailableError,
    TenantServiceError,
    TransportError,
)

__all__ = [
    "ApiError",
    "AsyncClient",
    "AuthenticationError",
    "BadRequestError",
    "CallOptions",
    "ChangeCallback",
    "Client",
    "ConflictError",
    "ContextCache",
    "GoneError",
    "NotFoundError",
    "PermissionDeniedError",
    "PreconditionFailedError",
    "RateLimitedError",
    "Response",
    "ResponseMeta",
    "RetryPolicy",
    "ServerError",
    "ServiceUnavailableError",
    "TenantServiceError",
    "TransportError",
]
