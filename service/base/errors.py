"""Domain errors: every code of docs/api.md, Errors with its HTTP status.

Use cases raise ServiceError; one middleware turns it into the JSON error body.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

STATUS_BY_CODE: dict[str, int] = {
    "VALIDATION_ERROR": 400,
    "UNSAFE_WEBHOOK_URL": 400,
    "AMBIGUOUS_CREDENTIALS": 400,
    "UNAUTHORIZED": 401,
    "INVALID_CREDENTIALS": 401,
    "INSUFFICIENT_SCOPE": 403,
    "TENANT_ACCESS_DENIED": 403,
    "EXCEEDS_CALLER_LIMITS": 403,
    "TENANT_NOT_FOUND": 404,
    "WEBHOOK_NOT_FOUND": 404,
    "DELIVERY_NOT_FOUND": 404,
    "WEBHOOK_INACTIVE": 409,
    "API_KEY_NOT_FOUND": 404,
    "ROLE_NOT_FOUND": 404,
    "AUDIT_LOG_NOT_FOUND": 404,
    "CONFIG_NOT_FOUND": 404,
    "CONFIG_SCHEMA_NOT_FOUND": 404,
    "CONFIG_BUDGET_NOT_FOUND": 404,
    "PERMISSION_NOT_FOUND": 404,
    "CONSENT_NOT_FOUND": 404,
    "CHANGE_REQUEST_NOT_FOUND": 404,
    "SELF_APPROVAL": 403,
    "CHANGE_REQUEST_REQUIRED": 409,
    "CHANGE_REQUEST_STATE": 409,
    "ALREADY_APPROVED": 409,
    "IMPACT_DRIFT": 409,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
    "CONFLICT": 409,
    "HAS_CHILDREN": 409,
    "CYCLE_DETECTED": 409,
    "CONFIG_LOCKED": 409,
    "PERMISSION_LOCKED": 409,
    "CONFIG_SCHEMA_CONFLICT": 409,
    "BUDGET_EXCEEDED": 409,
    "PARENT_ARCHIVED": 409,
    "DEPTH_LIMIT_EXCEEDED": 409,
    "API_KEY_REVOKED": 409,
    "ROLE_OUTSIDE_SUBTREE": 409,
    "ENCRYPTION_KEY_MISMATCH": 409,
    "ALREADY_IN_REGION": 409,
    "IDEMPOTENCY_KEY_REUSED": 422,
    "CONFIG_SCHEMA_VIOLATION": 422,
    "BUDGET_NOT_NUMERIC": 422,
    "IDEMPOTENCY_KEY_IN_USE": 409,
    "TENANT_ARCHIVED": 410,
    "HISTORY_UNAVAILABLE": 410,
    "REVERT_CONFLICT": 409,
    "REVERT_UNSUPPORTED": 422,
    "PRECONDITION_FAILED": 412,
    "PAYLOAD_TOO_LARGE": 413,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "RATE_LIMITED": 429,
    "INTERNAL_ERROR": 500,
    "SERVICE_UNAVAILABLE": 503,
}

# The refusals of value schemas and budgets (docs/constraints.md): their details name the
# deciding or breaking tenants, and a preview reports them as the write would answer them.
CONSTRAINT_CODES = frozenset(
    ("CONFIG_SCHEMA_VIOLATION", "CONFIG_SCHEMA_CONFLICT", "BUDGET_EXCEEDED", "BUDGET_NOT_NUMERIC")
)


@dataclass(frozen=True, slots=True)
class FieldError:
    field: str
    message: str
    # The tenant a constraint answer names (the deciding or the breaking one).
    tenant_id: str | None = None
    # Further facts of that answer (schema_path, capacity, allocated, remaining...).
    info: Mapping[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"field": self.field, "message": self.message}
        if self.tenant_id is not None:
            body["tenant_id"] = self.tenant_id
        if self.info:
            body.update(self.info)
        return body


class ServiceError(Exception):
    """An error with a documented code; its HTTP status follows from the code."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        details: Sequence[FieldError] = (),
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        if code not in STATUS_BY_CODE:
            raise KeyError(f"undocumented error code {code}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = tuple(details)
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})

    @property
    def status(self) -> int:
        return STATUS_BY_CODE[self.code]

    def __repr__(self) -> str:
        return f"ServiceError({self.code!r}, {self.message!r})"


def validation_error(field: str, message: str) -> ServiceError:
    return ServiceError(
        "VALIDATION_ERROR", f"{field}: {message}", details=[FieldError(field, message)]
    )


def tenant_not_found() -> ServiceError:
    return ServiceError("TENANT_NOT_FOUND", "tenant not found")


def tenant_archived() -> ServiceError:
    return ServiceError("TENANT_ARCHIVED", "tenant is archived")


class RetryTransaction(Exception):
    """Raised inside a transaction whose optimistic read went stale; the runner retries."""
