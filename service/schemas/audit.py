"""Audit log query strings."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import msgspec

from service.schemas.common import NO_NUL, Strict, check_text
from service.schemas.times import AwareDatetime, check_utc

FilterText = Annotated[str, msgspec.Meta(min_length=1, max_length=255, extra_json_schema=NO_NUL)]
# A token's actor is `issuer#subject`, each up to 255 characters.
ActorText = Annotated[str, msgspec.Meta(min_length=1, max_length=511, extra_json_schema=NO_NUL)]


class AuditLogQuery(Strict):
    tenant_id: UUID | None = None
    action: FilterText | None = None
    resource_type: FilterText | None = None
    actor_id: ActorText | None = None
    # `from` is inclusive and `to` exclusive, so consecutive windows never overlap.
    from_: AwareDatetime | None = msgspec.field(default=None, name="from")
    to: AwareDatetime | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 50
    cursor: UUID | None = None

    def __post_init__(self) -> None:
        for name, value in (
            ("action", self.action),
            ("resource_type", self.resource_type),
            ("actor_id", self.actor_id),
        ):
            if value is not None:
                check_text(value, name)
        check_utc(self.from_, "from")
        check_utc(self.to, "to")
        if self.from_ is not None and self.to is not None and self.from_ >= self.to:
            raise ValueError("to: must be later than from")


ChainSeq = Annotated[int, msgspec.Meta(ge=1, le=2**62)]


class AuditChainVerifyQuery(Strict):
    """The links to check (default: all kept); both ends inclusive."""

    from_seq: ChainSeq | None = None
    to_seq: ChainSeq | None = None

    def __post_init__(self) -> None:
        if self.from_seq is not None and self.to_seq is not None and self.from_seq > self.to_seq:
            raise ValueError("to_seq: must not be less than from_seq")


class AuditChainExportQuery(Strict):
    """One page of links from from_seq (the X-Next-Cursor of the page before)."""

    from_seq: ChainSeq | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100
