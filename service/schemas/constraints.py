"""Bodies and query strings of value schemas, budgets and "who resolves to what"."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

import msgspec

from service.schemas.common import Strict, check_config_value


class ConfigSchemaPut(Strict):
    """PUT .../config-schemas/{key}: a JSON Schema (draft 2020-12) for the key's values."""

    schema: Annotated[
        dict[str, Any],
        msgspec.Meta(
            description="A JSON Schema, draft 2020-12, self-contained (references only "
            "inside it, #...). Applies to the key's values at the tenant and below.",
            extra_json_schema={"example": {"type": "integer", "minimum": 0, "maximum": 100}},
        ),
    ]

    def __post_init__(self) -> None:
        check_config_value(self.schema, "schema")


class ConfigSchemaQuery(Strict):
    """enforce=false: audit-only (writes go through; the violations report lists them)."""

    enforce: bool = True


class ConfigBudgetPut(Strict):
    """PUT .../config-budgets/{key} takes an empty object."""


class ViolationsQuery(Strict):
    """A page of the violations report (cursor: next_cursor of the page before)."""

    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100
    cursor: UUID | None = None
