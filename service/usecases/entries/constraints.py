"""What config writes check beyond locks (docs/constraints.md): the value schemas on the
written tenant's path, and the budgets a write can break.

Callers hold the key locks of their writes first (usecases/entries/writes.py): a schema
or budget declared at an ancestor takes the same key locks exclusively, so the two take
turns and the second sees the first's committed rows. Allocations of siblings, which
share their key locks, take turns on the parent's budget row instead (lock_budgets).
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from uuid import UUID

import asyncpg
from jsonschema.exceptions import ValidationError, best_match
from referencing.exceptions import Unresolvable

from service.base.crypto import DecryptionError
from service.base.errors import FieldError, ServiceError
from service.repositories.config_constraints import FIRST_ID, BudgetUse, ConfigSchema, KeyEntry
from service.usecases.common.deps import Deps
from service.usecases.entries.values import try_decrypt

# Entries judged per round trip when a whole subtree is checked against a schema.
SCAN_BATCH = 500
# A refused schema declaration or move names at most this many breaking entries.
MAX_BREACHES = 100


def pointer(parts: Sequence[Any]) -> str:
    return "#" + "".join(f"/{str(p).replace('~', '~0').replace('/', '~1')}" for p in parts)


@dataclass(frozen=True, slots=True)
class Breach:
    """An entry a schema refuses: where, and why (no value text for a sensitive one)."""

    tenant_id: UUID
    key: str
    schema_tenant_id: UUID
    schema_path: str
    message: str

    def detail(self) -> FieldError:
        return FieldError(
            f"config/{self.key}",
            self.message,
            tenant_id=str(self.tenant_id),
            info={
                "key": self.key,
                "schema_path": self.schema_path,
                "schema_tenant_id": str(self.schema_tenant_id),
            },
        )


@dataclass(frozen=True, slots=True)
class Written:
    """A tenant whose own values of some keys a write sets (or removes: value None)."""

    tenant_id: UUID
    parent_id: UUID | None
    values: Mapping[str, Any]


def as_number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class ConfigConstraints:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.repo = deps.repos.constraints

    # --- value schemas -------------------------------------------------------------

    def judge(self, schema: ConfigSchema, value: Any) -> ValidationError | None:
        """The most relevant failure of value under schema, None when it passes."""
        validator = self.deps.schemas.validator(schema.digest, schema.schema)
        try:
            if validator.is_valid(value):
                return None
            failure: ValidationError | None = best_match(validator.iter_errors(value))
        except (RecursionError, Unresolvable):
            # A schema that cannot judge this value (declared checks make it rare) refuses it.
            return ValidationError("the schema cannot judge this value", validator="$ref")
        return failure

    def breach(
        self, schema: ConfigSchema, tenant_id: UUID, value: Any, *, sensitive: bool
    ) -> Breach | None:
        error = self.judge(schema, value)
        if error is None:
            return None
        # A secret's value never appears in an answer, only the rule it broke.
        message = f"breaks `{error.validator}` of the schema" if sensitive else error.message[:500]
        return Breach(
            tenant_id, schema.key, schema.tenant_id, pointer(error.absolute_schema_path), message
        )

    async def schema_refusals(
        self,
        conn: asyncpg.Connection,
        path_tenant_id: UUID,
        tenant_id: UUID,
        values: Mapping[str, Any],
        *,
        sensitive: Container[str] = (),
    ) -> list[Breach]:
        """Per key, the refusal of the enforced schema nearest the root that the value
        breaks (the schemas applying at path_tenant_id: the tenant written, or the
        parent of one being created)."""
        if not values:
            return []
        schemas = await self.repo.list_path_config_schemas(conn, path_tenant_id, list(values))
        return self._refusals(schemas, tenant_id, values, sensitive)

    def _refusals(
        self,
        schemas: Sequence[ConfigSchema],
        tenant_id: UUID,
        values: Mapping[str, Any],
        sensitive: Container[str],
    ) -> list[Breach]:
        refused: dict[str, Breach] = {}
        for schema in schemas:  # per key, the one nearest the root first
            if not schema.enforce or schema.key in refused or values[schema.key] is None:
                continue
            found = self.breach(
                schema, tenant_id, values[schema.key], sensitive=schema.key in sensitive
            )
            if found is not None:
                refused[schema.key] = found
        return [refused[k] for k in sorted(refused)]

    async def check_values(
        self,
        conn: asyncpg.Connection,
        path_tenant_id: UUID,
        tenant_id: UUID,
        values: Mapping[str, Any],
        *,
        sensitive: Container[str] = (),
    ) -> None:
        """422 CONFIG_SCHEMA_VIOLATION naming the tenant whose schema refuses a value."""
        refused = await self.schema_refusals(
            conn, path_tenant_id, tenant_id, values, sensitive=sensitive
        )
        if refused:
            raise schema_violation(refused)

    def _plain(self, entry: KeyEntry) -> Any:
        if not entry.sensitive:
            return entry.value
        assert entry.encrypted_value is not None
        return try_decrypt(self.deps.keyring.encryptor, entry.tenant_id, entry.key,
                           entry.encrypted_value)  # fmt: skip

    async def scan(
        self,
        conn: asyncpg.Connection,
        tenant_id: UUID,
        schemas: Sequence[ConfigSchema],
        *,
        after: UUID = FIRST_ID,
        limit: int = MAX_BREACHES,
    ) -> tuple[list[Breach], UUID | None]:
        """The entries at tenant_id and below (in tenant id order after `after`) that
        the schemas (all of one key) refuse: up to limit, and the cursor of the rest."""
        if not schemas:
            return [], None
        key = schemas[0].key
        found: list[Breach] = []
        while True:
            batch = await self.repo.list_subtree_entries_of_key(
                conn, tenant_id, key, after=after, batch=SCAN_BATCH
            )
            for entry in batch:
                try:
                    value = self._plain(entry)
                except DecryptionError:
                    continue  # unreadable: judged when it is next written
                for schema in schemas:
                    hit = self.breach(schema, entry.tenant_id, value, sensitive=entry.sensitive)
                    if hit is not None:
                        found.append(hit)
                        break
                if len(found) > limit:
                    return found[:limit], found[limit - 1].tenant_id
            if len(batch) < SCAN_BATCH:
                return found, None
            after = batch[-1].tenant_id

    async def check_move(
        self, conn: asyncpg.Connection, tenant_id: UUID, new_parent_id: UUID | None
    ) -> None:
        """409 CONFIG_SCHEMA_CONFLICT when entries of the moved subtree break an enforced
        schema of the new ancestors (runs under the move's tree locks)."""
        if new_parent_id is None:
            return
        by_key: dict[str, list[ConfigSchema]] = {}
        for schema in await self.repo.list_path_config_schemas(conn, new_parent_id, None):
            if schema.enforce:
                by_key.setdefault(schema.key, []).append(schema)
        found: list[Breach] = []
        more = False
        for key in sorted(by_key):
            hits, rest = await self.scan(
                conn, tenant_id, by_key[key], limit=MAX_BREACHES - len(found)
            )
            found += hits
            if rest is not None or len(found) >= MAX_BREACHES:
                more = rest is not None or key != max(by_key)
                break
        if found:
            raise ServiceError(
                "CONFIG_SCHEMA_CONFLICT",
                f"{'more than ' if more else ''}{len(found)} config entr"
                f"{'y' if len(found) == 1 else 'ies'} of the moved subtree break a schema of "
                "the new ancestors",
                details=[b.detail() for b in found],
            )

    # --- budgets ---------------------------------------------------------------------

    async def lock_budgets(self, conn: asyncpg.Connection, written: Sequence[Written]) -> bool:
        """Take turns with other allocations from the parents' budgets of these keys;
        whether any budget of the keys exists (none: check_budgets has nothing to do)."""
        parents = [w.parent_id for w in written if w.parent_id is not None and w.values]
        keys = {k for w in written for k in w.values}
        return await self.repo.lock_config_budgets(conn, parents, sorted(keys))

    async def check_one_and_lock_budgets(
        self, conn: asyncpg.Connection, written: Written, *, sensitive: Container[str] = ()
    ) -> bool:
        """check_values then lock_budgets for one tenant's own values, in one round trip
        (a single-entry write): 422 when a schema on its path refuses a value, else
        whether any budget of the keys exists."""
        if not written.values:
            return False
        parents = [] if written.parent_id is None else [written.parent_id]
        any_budget, schemas = await self.repo.lock_config_budgets_with_schemas(
            conn, written.tenant_id, parents, list(written.values)
        )
        refused = self._refusals(schemas, written.tenant_id, written.values, sensitive)
        if refused:
            raise schema_violation(refused)
        return any_budget

    async def budget_refusals(
        self, conn: asyncpg.Connection, written: Sequence[Written], keys: Sequence[str] | None
    ) -> list[ServiceError]:
        """What the budgets concerned say now (after the write, inside its transaction)."""
        ids = [w.tenant_id for w in written]
        if not ids or (keys is not None and not keys):
            return []
        uses = await self.repo.measure_config_budgets(conn, ids, keys)
        return [e for e in (budget_error(u, written) for u in uses) if e is not None]

    async def check_budgets(
        self,
        conn: asyncpg.Connection,
        written: Sequence[Written],
        keys: Sequence[str] | None,
    ) -> None:
        refused = await self.budget_refusals(conn, written, keys)
        if refused:
            raise refused[0]


def schema_violation(refused: Sequence[Breach]) -> ServiceError:
    first = refused[0]
    return ServiceError(
        "CONFIG_SCHEMA_VIOLATION",
        f"the value of {first.key!r} breaks the schema declared at tenant "
        f"{first.schema_tenant_id} ({first.schema_path}): {first.message}",
        details=[
            FieldError(
                "value",
                b.message,
                tenant_id=str(b.schema_tenant_id),
                info={"key": b.key, "schema_path": b.schema_path},
            )
            for b in refused
        ],
    )


def _own_value(use: BudgetUse, written: Sequence[Written]) -> Decimal:
    """What the written child of the budget's holder now holds itself (0: nothing)."""
    for w in written:
        if w.parent_id == use.tenant_id:
            value = w.values.get(use.key)
            if is_number(value):
                return Decimal(str(value))
    return Decimal(0)


def budget_error(use: BudgetUse, written: Sequence[Written]) -> ServiceError | None:
    holder = str(use.tenant_id)
    if use.non_numeric:
        return ServiceError(
            "BUDGET_NOT_NUMERIC",
            f"{use.key!r} is a budget at tenant {holder}: its children's values must be "
            "plain numbers",
            details=[
                FieldError("value", "must be a number", tenant_id=holder, info={"key": use.key})
            ],
        )
    if use.present and not is_number(use.capacity):
        return ServiceError(
            "BUDGET_NOT_NUMERIC",
            f"{use.key!r} is a budget at tenant {holder}: its value there must be a plain number",
            details=[
                FieldError("value", "must be a number", tenant_id=holder, info={"key": use.key})
            ],
        )
    capacity = Decimal(str(use.capacity)) if use.present else Decimal(0)
    if use.allocated <= capacity:
        return None
    others = use.allocated - _own_value(use, written)
    return ServiceError(
        "BUDGET_EXCEEDED",
        f"the children of tenant {holder} would hold {as_number(use.allocated)} of "
        f"{use.key!r}, past its {as_number(capacity)}",
        details=[
            FieldError(
                "value",
                f"{as_number(capacity - others)} left",
                tenant_id=holder,
                info={
                    "key": use.key,
                    "capacity": as_number(capacity),
                    "allocated": as_number(others),
                    "remaining": as_number(capacity - others),
                },
            )
        ],
    )
