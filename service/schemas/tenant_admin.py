"""Admin tenant operations (export, purge, regions) and maintenance bodies."""

from __future__ import annotations

from typing import Annotated

import msgspec

from service.schemas.common import Strict, check_text


class ExportQuery(Strict):
    include_secrets: bool = False


class PurgeBody(Strict):
    # The tenant's slug, typed again: a purge cannot be undone.
    confirm: Annotated[str, msgspec.Meta(max_length=255)]
    cascade: bool = False

    def __post_init__(self) -> None:
        check_text(self.confirm, "confirm")


class MigrateRegionBody(Strict):
    region: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
    include_descendants: bool = True

    def __post_init__(self) -> None:
        check_text(self.region, "region")


class PurgeExpiredBody(Strict):
    dry_run: bool = False
