"""Admin tenant operations (export, purge, regions) and maintenance bodies."""

from __future__ import annotations

from typing import Annotated

import msgspec

from service.schemas.common import NO_NUL, Strict, check_text


class ExportQuery(Strict):
    include_secrets: bool = False


class PurgeBody(Strict):
    # The tenant's slug, typed again: a purge cannot be undone.
    confirm: Annotated[str, msgspec.Meta(max_length=255, extra_json_schema=NO_NUL)]
    cascade: bool = False

    def __post_init__(self) -> None:
        check_text(self.confirm, "confirm")


class MigrateRegionBody(Strict):
    # One of SERVICE_REGIONS: a deployment setting, so not an enum of the document.
    region: Annotated[str, msgspec.Meta(min_length=1, max_length=64, extra_json_schema=NO_NUL)]
    include_descendants: bool = True

    def __post_init__(self) -> None:
        check_text(self.region, "region")


class PurgeExpiredBody(Strict):
    dry_run: bool = False
