"""Views of value schemas, budgets, their reports and "who resolves to what"."""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from uuid import UUID

from service.repositories.config_constraints import BudgetUse, ConfigBudget
from service.views.base import Instant, RowView, View, instant


class ConfigSchemaView(RowView):
    tenant_id: UUID
    key: str
    schema: dict[str, Any]
    # false: audit-only, writes go through and the violations report lists what it refuses
    enforce: bool
    created_at: Instant
    updated_at: Instant


class SchemaViolation(View):
    tenant_id: UUID
    key: str
    schema_path: str
    message: str


class SchemaViolationPage(View):
    """Entries at the schema's tenant and below that it refuses, in tenant id order."""

    schema: ConfigSchemaView
    data: list[SchemaViolation]
    next_cursor: UUID | None
    has_more: bool


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(value: Decimal | None) -> float | None:
    if value is None:
        return None
    return int(value) if value == value.to_integral_value() else float(value)


class ConfigBudgetView(View):
    tenant_id: UUID
    key: str
    # The tenant's resolved value of the key (null: none, or not a plain number).
    capacity: float | None
    # The sum of the children's own values of the key.
    allocated: float
    # capacity - allocated (null without a capacity).
    remaining: float | None
    created_at: Instant

    @classmethod
    def of(cls, row: ConfigBudget, use: BudgetUse | None) -> ConfigBudgetView:
        capacity: Decimal | None = None
        allocated = Decimal(0)
        if use is not None:
            allocated = use.allocated
            if use.present and is_number(use.capacity):
                capacity = Decimal(str(use.capacity))
        return cls(
            tenant_id=row.tenant_id,
            key=row.key,
            capacity=_number(capacity),
            allocated=_number(allocated) or 0,
            remaining=None if capacity is None else _number(capacity - allocated),
            created_at=instant(row.created_at),
        )


class ResolvedKeyValue(View):
    """One tenant where the key resolves: the value as GET /context shows it."""

    tenant_id: UUID
    key: str
    value: Any
    source_tenant_id: UUID
    inherited: bool
    locked: bool
