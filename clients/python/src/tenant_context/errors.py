"""Errors as typed exceptions: every refusal of the service carries its error code."""

from __future__ import annotations

from typing import Any


class TenantServiceError(Exception):
    """Base of every error this client raises."""


class TransportError(TenantServiceError):
    """The service could not be reached, or the connection broke (after any retries)."""


class ApiError(TenantServiceError):
    """A non-2xx answer: `code` is the service's error code (TENANT_NOT_FOUND, ...)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        request_id: str | None = None,
        details: list[dict[str, Any]] | None = None,
        retry_after: float | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.details = details or []
        self.retry_after = retry_after
        self.body = body


class BadRequestError(ApiError):
    """400: the request is invalid (VALIDATION_ERROR and friends)."""


class AuthenticationError(ApiError):
    """401: missing, invalid, expired or revoked credentials."""


class PermissionDeniedError(ApiError):
    """403: the credentials lack a scope, or the tenant lies outside the key's subtree."""


class NotFoundError(ApiError):
    """404: TENANT_NOT_FOUND, NOT_FOUND, ..."""


class ConflictError(ApiError):
    """409: CONFLICT, CYCLE_DETECTED, HAS_CHILDREN, CONFIG_LOCKED, ..."""


class GoneError(ApiError):
    """410: TENANT_ARCHIVED."""


class PreconditionFailedError(ApiError):
    """412: an If-Match that no longer holds."""


class RateLimitedError(ApiError):
    """429 after the client's retries were used up; `retry_after` in seconds."""


class ServiceUnavailableError(ApiError):
    """503 after the client's retries were used up."""


class ServerError(ApiError):
    """Any other 5xx."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    412: PreconditionFailedError,
    429: RateLimitedError,
    503: ServiceUnavailableError,
}


def error_class(status: int) -> type[ApiError]:
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServerError if status >= 500 else ApiError
