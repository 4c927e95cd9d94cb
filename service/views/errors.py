"""Views of error answers (docs/api.md, Errors), rendered by service/http/responses.py."""

from __future__ import annotations

from service.base.errors import FieldError
from service.views.base import View
from service.views.tenants import BatchItemError, Tenant


class FieldProblem(View, omit_defaults=True):
    field: str
    message: str
    # Constraint answers (docs/constraints.md): the tenant named, and the facts.
    tenant_id: str | None = None
    key: str | None = None
    schema_path: str | None = None
    schema_tenant_id: str | None = None
    capacity: float | None = None
    allocated: float | None = None
    remaining: float | None = None

    @classmethod
    def of(cls, error: FieldError) -> FieldProblem:
        """What the error body says of it (FieldError.as_dict): the facts given, no nulls."""
        return cls(**error.as_dict())


class ErrorDetail(View):
    code: str
    message: str
    request_id: str
    details: list[FieldProblem] | None = None


class Error(View):
    error: ErrorDetail


class TenantBatchError(View):
    """A refused batch names every failing item; other 400s carry only `error`."""

    error: ErrorDetail
    created: list[Tenant] | None = None
    errors: list[BatchItemError] | None = None
