"""A key never hands out more than it has: no later expiry and no higher rate limit than
its own (scopes are contained by keys.access.require_scopes).

The rule binds API-key callers. A JWT's `exp` is the lifetime of a signed-in session, not
a limit on what its holder may create, and its holder is an identity the operator signed;
the CLI (system) is the operator. Limits of a key are judged as it will be after the
change: a key that would still outlive or outpace the caller may not be created,
changed, rotated or given a role, and a role whose holders would do so may not be
changed or deleted (docs/decisions/keys.md, "Keys within their creator's limits").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from service.auth.principal import Principal
from service.base.errors import FieldError, ServiceError
from service.base.timefmt import iso
from service.settings.options import Settings


@dataclass(frozen=True, slots=True)
class KeyLimits:
    """A key's expiry and rate limit; None fields follow the global defaults (rate) or
    never expire."""

    expires_at: datetime | None
    rate_limit_max: int | None
    rate_limit_window_seconds: int | None


def exceeds(field: str, message: str) -> ServiceError:
    return ServiceError(
        "EXCEEDS_CALLER_LIMITS", message, details=[FieldError(field, "beyond the caller's own")]
    )


def require_within(principal: Principal, settings: Settings, target: KeyLimits, doing: str) -> None:
    """403 EXCEEDS_CALLER_LIMITS when an API-key caller would leave `target` with a later
    expiry (or none) or a higher rate limit (more requests per window, or a faster
    refill) than its own."""
    if principal.actor_type != "api_key":
        return
    own = principal.expires_at
    if own is not None and (target.expires_at is None or target.expires_at > own):
        raise exceeds(
            "expires_at",
            f"{doing}: a key may not outlive the key acting on it; expires_at must be set "
            f"and no later than {iso(own)}",
        )
    own_max = principal.rate_limit_max or settings.rate_limit_max
    own_window = principal.rate_limit_window_seconds or settings.rate_limit_window_seconds
    new_max = target.rate_limit_max or settings.rate_limit_max
    new_window = target.rate_limit_window_seconds or settings.rate_limit_window_seconds
    if new_max > own_max:
        raise exceeds(
            "rate_limit_max",
            f"{doing}: a key may not get a higher rate limit than the key acting on it "
            f"({own_max} requests per {own_window} s)",
        )
    # Same or smaller burst but a faster refill: compare max/window without division.
    if new_max * own_window > own_max * new_window:
        raise exceeds(
            "rate_limit_window",
            f"{doing}: a key may not refill faster than the key acting on it "
            f"({own_max} requests per {own_window} s)",
        )
