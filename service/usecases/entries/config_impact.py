"""Impact preview of a config entry change (impact.py's shared path): besides the lock and
a missing entry, it reports the value schema or budget refusal the write would meet."""

from __future__ import annotations

from typing import Any

import asyncpg
from msgspec import UNSET

from service.base.errors import ServiceError
from service.repositories.config_entries import ConfigEntryRow, ConfigWrite
from service.repositories.impact import OwnEntry, ResolvedChange
from service.repositories.tenants import TenantNode
from service.schemas.config import ConfigPreviewBody
from service.usecases.common.deps import Deps
from service.usecases.entries.config_entries import config_not_found
from service.usecases.entries.constraints import ConfigConstraints, Written, schema_violation
from service.usecases.entries.impact import EntryImpact, ImpactKind
from service.usecases.entries.values import encrypt_value

# The own entry a set would leave: (value, locked, sensitive); the value of a sensitive
# entry is None (its ciphertext is never compared).
Proposed = tuple[Any, bool, bool]


class _Undo(Exception):
    """Rolls back the trial write of a preview, carrying what the budgets said."""

    def __init__(self, refused: list[ServiceError]) -> None:
        super().__init__("undo")
        self.refused = refused


def _proposed(body: ConfigPreviewBody, before: ConfigEntryRow | None) -> Proposed:
    locked = body.locked if body.locked is not UNSET else bool(before and before.locked)
    sensitive = body.sensitive if body.sensitive is not UNSET else bool(before and before.sensitive)
    return (None if sensitive else body.value, locked, sensitive)


class ConfigImpact(
    EntryImpact[ConfigPreviewBody, ConfigEntryRow, Proposed, ResolvedChange, OwnEntry]
):
    def __init__(self, deps: Deps) -> None:
        self.repos = deps.repos
        self.keyring = deps.keyring
        self.constraints = ConfigConstraints(deps)
        impact = deps.repos.impact
        super().__init__(
            deps,
            ImpactKind(
                locked_code="CONFIG_LOCKED",
                kind="config",
                not_found=config_not_found,
                get=deps.repos.config.get_config_entry,
                find_locked=deps.repos.config.find_locked_config_keys,
                proposed=_proposed,
                locks=lambda new: new[1],
                changes=impact.preview_config_change,
                shadowed=impact.list_shadowed_config_entries,
                constraint_refusal=self._constraint_refusal,
            ),
        )

    async def _constraint_refusal(
        self,
        conn: asyncpg.Connection,
        node: TenantNode,
        key: str,
        body: ConfigPreviewBody,
        new: Proposed | None,
    ) -> ServiceError | None:
        """The schema or budget refusal the write would meet. The budgets are judged by
        making the write in a savepoint, measuring, and rolling the savepoint back: the
        same check the write runs, so the same answer."""
        value = body.value if new is not None else None
        sensitive = new is not None and new[2]
        if new is not None:
            breaches = await self.constraints.schema_refusals(
                conn, node.id, node.id, {key: value}, sensitive={key} if sensitive else ()
            )
            if breaches:
                return schema_violation(breaches)
        written = [Written(node.id, node.parent_id, {key: value})]
        try:
            async with conn.transaction():
                if new is None:
                    await self.repos.config.delete_config_entry(conn, node.id, key)
                else:
                    token = encrypt_value(self.keyring.encryptor, node.id, key, value)
                    write = (
                        ConfigWrite(key, None, token, True)
                        if sensitive
                        else ConfigWrite(key, value, None, False)
                    )
                    await self.repos.config.upsert_config_entry(
                        conn, node.id, write, locked=new[1], reveal_to_descendants=False
                    )
                raise _Undo(await self.constraints.budget_refusals(conn, written, [key]))
        except _Undo as undo:
            return undo.refused[0] if undo.refused else None
