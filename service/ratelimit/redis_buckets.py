"""Token buckets in Redis: one atomic Lua script per request (EVALSHA, loaded once).

The script reads the clock of the Redis server, so processes on several hosts agree on
time, and stores milli-precision state under REDIS_KEY_PREFIX + "ratelimit:" + bucket,
expiring once the bucket would be full again anyway.
"""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from service.ratelimit.buckets import Decision, Limit

# KEYS[1] bucket; ARGV capacity, window seconds, cost (0 = only ask).
# Returns {allowed (0/1), tokens left in thousandths}: Redis turns Lua numbers into
# integers, so the fraction travels scaled.
TAKE_SCRIPT = """
local capacity = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local rate = capacity / window
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = capacity
  ts = now
end
if now > ts then
  tokens = tokens + (now - ts) * rate
end
if tokens > capacity then
  tokens = capacity
end
local allowed = 0
if cost == 0 then
  if tokens >= 1 then allowed = 1 end
else
  if tokens >= cost then
    tokens = tokens - cost
    allowed = 1
  end
  redis.call('HSET', KEYS[1], 'tokens', string.format('%.6f', tokens),
             'ts', string.format('%.6f', now))
  redis.call('PEXPIRE', KEYS[1], math.ceil(window * 1000) + 1000)
end
return {allowed, math.floor(tokens * 1000)}
"""


class RedisBuckets:
    def __init__(self, url: str, prefix: str, *, timeout_seconds: float = 0.25) -> None:
        self.prefix = prefix
        # No retries inside the client: a failed call falls back at once (the limiter
        # decides when to try Redis again), so an outage never stalls requests.
        self.client: Redis = Redis.from_url(
            url,
            socket_timeout=timeout_seconds,
            socket_connect_timeout=timeout_seconds,
            retry=Retry(NoBackoff(), 0),
        )
        self._take: Any = self.client.register_script(TAKE_SCRIPT)

    async def take(self, bucket: str, limit: Limit, cost: int) -> Decision:
        allowed, milli_tokens = await self._take(
            keys=[f"{self.prefix}ratelimit:{bucket}"],
            args=[limit.max, limit.window_seconds, cost],
        )
        return Decision.from_tokens(bool(allowed), int(milli_tokens) / 1000, limit)

    async def close(self) -> None:
        await self.client.aclose()
