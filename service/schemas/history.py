"""Requests of the history of the resolved view (docs/history.md): a moment named by a
time or a revision."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated

import msgspec

from service.base.errors import validation_error
from service.schemas.common import Strict
from service.schemas.times import AwareDatetime, check_utc

Revision = Annotated[int, msgspec.Meta(ge=0, le=9_223_372_036_854_775_806)]
# A diff's end: a revision (digits) or an RFC 3339 date-time with an offset.
Moment = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
_DIGITS = re.compile(r"[0-9]{1,18}")
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})"
)


def parse_moment(text: str, field: str) -> int | datetime:
    """A revision number or an aware date-time; ValueError otherwise."""
    if _DIGITS.fullmatch(text):
        return int(text)
    if _RFC3339.fullmatch(text):
        # Python reads at most microseconds: finer digits are cut, not rounded.
        head, dot, rest = text.partition(".")
        if dot:
            digits = re.match(r"[0-9]+", rest)
            assert digits is not None
            text = f"{head}.{digits.group()[:6].ljust(6, '0')}{rest[len(digits.group()) :]}"
        value = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
        check_utc(value, field)
        return value
    raise ValueError(f"{field}: a revision number or an RFC 3339 date-time with an offset")


def check_one_moment(as_of: datetime | None, revision: int | None) -> None:
    check_utc(as_of, "as_of")


class ContextQuery(Strict):
    reveal: bool = False
    # The context as it was then (docs/history.md); masked, so not with reveal.
    as_of: AwareDatetime | None = None
    revision: Revision | None = None

    def __post_init__(self) -> None:
        check_one_moment(self.as_of, self.revision)


class HistoryPointQuery(Strict):
    # The answer as it was then (docs/history.md).
    as_of: AwareDatetime | None = None
    revision: Revision | None = None

    def __post_init__(self) -> None:
        check_one_moment(self.as_of, self.revision)


class RevertQuery(Strict):
    # Answer the impact only; nothing is written.
    dry_run: bool = False


class RevertBody(Strict):
    # Revert even though later revisions changed the same keys at the same tenants.
    force: bool = False


class ContextDiffQuery(Strict):
    from_: Moment = msgspec.field(name="from")
    to: Moment

    def __post_init__(self) -> None:
        parse_moment(self.from_, "from")
        parse_moment(self.to, "to")


def moment_of(as_of: datetime | None, revision: int | None) -> tuple[int | datetime, str] | None:
    """The moment a request names and the parameter naming it (None: the present);
    ServiceError VALIDATION_ERROR when both are given."""
    if as_of is not None and revision is not None:
        raise validation_error("revision", "give as_of or revision, not both")
    if as_of is not None:
        return as_of, "as_of"
    if revision is not None:
        return revision, "revision"
    return None
