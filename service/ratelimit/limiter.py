"""The rate limiter the authentication middleware asks: Redis when configured, this
process's buckets otherwise, and this process's buckets while Redis is unreachable.

When Redis fails the service keeps serving: requests are limited per process, exactly
as without REDIS_URL, until Redis answers again. The outage is logged once when it
starts and once when it ends, never per request; Redis is tried again at most once a
second meanwhile, so no request waits on a dead connection more than once per second.

Buckets in this process are this process's alone: under `serve --workers N` each worker
would allow the whole limit, N times the configured rate in all. So every limit taken
from local buckets (no REDIS_URL, or Redis down) is the worker's share, limit // N and at
least 1; the supervisor warns about it at start. With Redis the limit stays whole.
"""

from __future__ import annotations

import time

from redis.exceptions import RedisError

from service.observability.logs import get_logger
from service.ratelimit.buckets import Decision, Limit, LocalBuckets
from service.ratelimit.redis_buckets import RedisBuckets
from service.settings.options import Settings

log = get_logger("service.ratelimit")
RETRY_REDIS_SECONDS = 1.0


def worker_share(limit: Limit, workers: int) -> Limit:
    """What one of `workers` processes with buckets of their own may allow."""
    if workers <= 1:
        return limit
    return Limit(max(1, limit.max // workers), limit.window_seconds)


class RateLimiter:
    def __init__(self, settings: Settings, *, workers: int | None = None) -> None:
        self.default = Limit(settings.rate_limit_max, settings.rate_limit_window_seconds)
        self.workers = settings.workers if workers is None else workers
        self.local = LocalBuckets()
        self.redis: RedisBuckets | None = None
        if settings.redis_url is not None:
            self.redis = RedisBuckets(settings.redis_url, settings.redis_key_prefix)
        self._down_until = 0.0
        self._in_outage = False

    def limit_for(self, max_: int | None, window_seconds: int | None) -> Limit:
        return Limit(max_ or self.default.max, window_seconds or self.default.window_seconds)

    async def hit(self, bucket: str, limit: Limit) -> Decision:
        """Count one request against the bucket."""
        if self.redis is None:  # every request takes this path without Redis: keep it short
            return self.local.take(bucket, worker_share(limit, self.workers), 1)
        return await self._take(bucket, limit, 1)

    async def take(self, bucket: str, limit: Limit, cost: int) -> Decision:
        """Count `cost` requests at once (all or none): a batch of items."""
        return await self._take(bucket, limit, cost)

    async def peek(self, bucket: str, limit: Limit) -> Decision:
        """Whether one more request would pass, without counting one."""
        return await self._take(bucket, limit, 0)

    async def _take(self, bucket: str, limit: Limit, cost: int) -> Decision:
        if self.redis is not None and time.monotonic() >= self._down_until:
            try:
                decision = await self.redis.take(bucket, limit, cost)
            except (RedisError, OSError, TimeoutError) as exc:
                self._down_until = time.monotonic() + RETRY_REDIS_SECONDS
                if not self._in_outage:
                    self._in_outage = True
                    log.warning(
                        "rate limiter: Redis unreachable; limiting per process until it "
                        "answers again",
                        error=type(exc).__name__,
                    )
            else:
                if self._in_outage:
                    self._in_outage = False
                    log.warning("rate limiter: Redis answers again; buckets are shared")
                return decision
        return self.local.take(bucket, worker_share(limit, self.workers), cost)

    async def close(self) -> None:
        if self.redis is not None:
            await self.redis.close()
