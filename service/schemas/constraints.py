"""Bodies and query strings of value schemas, budgets and "who resolves to what"."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

import msgspec
import orjson

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


class ResolvedQuery(Strict):
    """GET .../resolved: which tenants of the subtree the key resolves at, and to what.
    value is JSON text (value=%22pro%22 for "pro"); without limit the whole list is
    streamed, with it one page (cursor: the X-Next-Cursor of the page before)."""

    key: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z][A-Za-z0-9_.:-]{0,127}$")]
    # Bounded as a URL is: the whole request line must stay under 8 KiB.
    value: Annotated[str, msgspec.Meta(min_length=1, max_length=2048)] | None = None
    source_tenant_id: UUID | None = None
    inherited: bool | None = None
    locked: bool | None = None
    cursor: UUID | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] | None = None

    def parsed_value(self) -> Any:
        """The value filter as JSON; ValueError when it is not JSON text."""
        assert self.value is not None
        try:
            value = orjson.loads(self.value)
        except orjson.JSONDecodeError:
            raise ValueError("value: not JSON text (a string is quoted: %22pro%22)") from None
        if value is None:
            raise ValueError("value: config values are never null")
        check_config_value(value, "value")
        return value

    def __post_init__(self) -> None:
        if self.value is not None:
            self.parsed_value()
