"""Requests that cost more than one rate-limit token: a batch of N items costs N.

`authenticate` takes one token per request; a handler whose request does the work of
several calls `charge_items` before that work, so a batch is never cheaper than the
single requests it stands for (a batch of 100 slugs would otherwise probe 100 slugs at
the price of one request).
"""

from __future__ import annotations

import math

import msgspec
from aiohttp import web

from service.auth.authenticator import bucket_of, rate_limited
from service.base.errors import validation_error
from service.http.appkeys import RATE_LIMITER
from service.http.middlewares.exchange import exchange_of, principal_of


async def charge_items(request: web.Request, count: int, field: str) -> None:
    """Count `count` requests in all against the caller's bucket (the one `authenticate`
    took included): 429 when the bucket lacks them (nothing is done), 400 naming `field`
    when the caller's whole budget is smaller than `count` (it could never pass)."""
    principal = principal_of(request)
    limiter = request.app[RATE_LIMITER]
    limit = limiter.limit_for(principal.rate_limit_max, principal.rate_limit_window_seconds)
    if count > limit.max:
        raise validation_error(
            field,
            f"at most {limit.max} items: each item counts as one request against this "
            f"caller's rate limit of {limit.max} per {limit.window_seconds} s",
        )
    extra = count - 1
    if extra <= 0:
        return
    decision = await limiter.take(bucket_of(principal), limit, extra)
    if not decision.allowed:
        # Retry-After: until the whole batch fits, not merely one more request.
        wait = math.ceil((extra - decision.remaining) / limit.rate - 1e-9)
        decision = msgspec.structs.replace(decision, retry_after=max(1, wait))
    exchange_of(request).rate_limit = decision
    if not decision.allowed:
        raise rate_limited(decision)
