"""Token buckets (docs/api.md, Authentication and scopes): capacity = max, refilled max per window.

`LocalBuckets` keeps the state in this process; `service.ratelimit.redis_buckets` keeps
it in Redis with the same arithmetic, so several processes share one bucket.
"""

from __future__ import annotations

import functools
import math
import time
from collections import OrderedDict
from dataclasses import dataclass

import msgspec


@dataclass(frozen=True, slots=True)
class Limit:
    max: int
    window_seconds: int

    @property
    def rate(self) -> float:
        """Tokens refilled per second."""
        return self.max / self.window_seconds


# The name of the one quota policy in the IETF RateLimit-Policy / RateLimit headers.
POLICY = "default"


class Decision(msgspec.Struct, frozen=True):
    """The outcome for one request and what the rate-limit headers say about it."""

    allowed: bool
    limit: int
    window_seconds: int
    remaining: int
    # Seconds until Remaining grows by one (0 when the bucket is full). When a request is
    # refused that is when the next one can pass, so Reset and Retry-After agree.
    reset_seconds: int
    # Seconds until the next request can pass (0 when this one passed).
    retry_after: int

    # A Struct: made on every request, and a frozen dataclass's __init__ costs several
    # times as much.
    @classmethod
    def from_tokens(cls, allowed: bool, tokens: float, limit: Limit) -> Decision:
        # Made on every request: the arithmetic of refill and the headers written out
        # with plain comparisons (min, max and math.floor cost as much again).
        cap = limit.max
        if tokens <= 0.0:
            tokens = 0.0
        elif tokens > cap:
            tokens = float(cap)
        remaining = int(tokens)  # floor: tokens is not negative here
        if remaining >= cap:
            reset = 0
        else:
            # Seconds to the next token: more than 0, as remaining + 1 > tokens.
            reset = math.ceil((remaining + 1 - tokens) / limit.rate - 1e-9)
            if reset < 1:
                reset = 1
        return cls(
            allowed,
            cap,
            limit.window_seconds,
            remaining,
            reset,
            0 if allowed else (reset if reset > 1 else 1),
        )

    def headers(self) -> dict[str, str]:
        """The X-RateLimit-* headers and the IETF RateLimit-Policy / RateLimit fields
        (draft-ietf-httpapi-ratelimit-headers) with the same numbers."""
        limit, policy = _limit_texts(self.limit, self.window_seconds)
        remaining = str(self.remaining)
        reset = str(self.reset_seconds)
        headers = {
            "X-RateLimit-Limit": limit,
            "X-RateLimit-Remaining": remaining,
            "X-RateLimit-Reset": reset,
            "RateLimit-Policy": policy,
            "RateLimit": f'"{POLICY}";r={remaining};t={reset}',
        }
        if not self.allowed:
            headers["Retry-After"] = str(self.retry_after)
        return headers

    def header_lines(self) -> str:
        """headers() as the lines of an HTTP head, for an allowed request (the answers
        of service/http/rendered_answers.py)."""
        limit, policy = _limit_texts(self.limit, self.window_seconds)
        remaining = self.remaining
        reset = self.reset_seconds
        return (
            f"X-RateLimit-Limit: {limit}\r\nX-RateLimit-Remaining: {remaining}\r\n"
            f"X-RateLimit-Reset: {reset}\r\nRateLimit-Policy: {policy}\r\n"
            f'RateLimit: "{POLICY}";r={remaining};t={reset}\r\n'
        )


@functools.lru_cache(maxsize=1024)
def _limit_texts(limit: int, window_seconds: int) -> tuple[str, str]:
    """A limit's X-RateLimit-Limit and RateLimit-Policy values: the same few limits on
    every request."""
    return str(limit), f'"{POLICY}";q={limit};w={window_seconds}'


class LocalBuckets:
    """Buckets of this process. Least recently used ones are dropped past max_buckets
    (a dropped bucket comes back full, which only ever favours the caller)."""

    def __init__(self, max_buckets: int = 100_000) -> None:
        self.max_buckets = max_buckets
        # bucket id -> (tokens, monotonic time of that count)
        self._state: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, bucket: str, limit: Limit, cost: int) -> Decision:
        """Take `cost` tokens (0 only asks whether one would pass). No await inside, so
        the read and write are atomic on the event loop."""
        now = time.monotonic()
        state = self._state
        held = state.get(bucket)
        if held is None:
            tokens = float(limit.max)
        else:  # refilled for the time since: capacity at most
            tokens = held[0]
            elapsed = now - held[1]
            if elapsed > 0.0:
                tokens += elapsed * limit.rate
            if tokens > limit.max:
                tokens = float(limit.max)
        allowed = tokens >= 1.0 if cost == 0 else tokens >= cost
        if cost > 0:
            if allowed:
                tokens -= cost
            state[bucket] = (tokens, now)
            if held is not None:
                state.move_to_end(bucket)
            elif len(state) > self.max_buckets:
                while len(state) > self.max_buckets:
                    state.popitem(last=False)
        return Decision.from_tokens(allowed, tokens, limit)
