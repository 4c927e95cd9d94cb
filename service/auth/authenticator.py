"""Turning request headers into a Principal and a rate-limit decision, or a 401/429.

Order of work, cheapest first (DESIGN.md section 5):
1. A key's shape and checksum are checked without the database.
2. A cached key (service.auth.key_cache) costs no database round trip.
3. Before a key is looked up, the client address's bucket for bad credentials is
   consulted: an address over its limit gets 429 and causes no lookup (brute force).
4. Missing or bad credentials count against that address bucket; valid ones against
   the caller's own bucket (the key's limits, else the global defaults).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import asyncpg

from service.auth.jwt_tokens import decode_token
from service.auth.key_cache import KeyCache
from service.auth.key_listener import KeyChangeListener
from service.auth.keys import hash_key, parse_key
from service.auth.principal import Principal
from service.auth.usage import UsageRecorder
from service.config import Settings
from service.db.pool import Database
from service.errors import ServiceError
from service.ratelimit.buckets import Decision
from service.ratelimit.limiter import RateLimiter
from service.repositories.api_keys import ApiKeysRepository, KeyCredentials
from service.usecases.read_cache import ReadCache

_CHALLENGE = 'Bearer realm="tenant-service", ApiKey realm="tenant-service"'


def missing_credentials() -> ServiceError:
    return ServiceError(
        "UNAUTHORIZED",
        "authentication required: send X-API-Key or Authorization: Bearer <JWT>",
        headers={"WWW-Authenticate": _CHALLENGE},
    )


def invalid_key() -> ServiceError:
    return ServiceError(
        "INVALID_CREDENTIALS",
        "the API key is invalid, revoked or expired",
        headers={"WWW-Authenticate": _CHALLENGE},
    )


def rate_limited(decision: Decision) -> ServiceError:
    return ServiceError(
        "RATE_LIMITED",
        f"too many requests; retry in {decision.retry_after} s",
        headers={"Retry-After": str(decision.retry_after)},
    )


def principal_for_key(creds: KeyCredentials, now: datetime) -> Principal | None:
    """The principal a stored key stands for, or None when it may not be used now."""
    if creds.revoked_at is not None and creds.revoked_at <= now:
        return None
    if creds.expires_at is not None and creds.expires_at <= now:
        return None
    scopes = creds.role_scopes if creds.role_scopes is not None else creds.scopes
    return Principal(
        actor_id=str(creds.id),
        actor_type="api_key",
        scopes=frozenset(scopes),
        tenant_id=creds.tenant_id,
        api_key_id=creds.id,
        rate_limit_max=creds.rate_limit_max,
        rate_limit_window_seconds=creds.rate_limit_window_seconds,
        expires_at=creds.expires_at,
    )


def bucket_of(principal: Principal) -> str:
    if principal.api_key_id is not None:
        return f"key:{principal.api_key_id}"
    # A JWT sub is free text of up to 255 characters: a digest keeps bucket ids short.
    return "jwt:" + hashlib.sha256(principal.actor_id.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Admission:
    """Who is calling (or the error to answer) and the rate-limit decision to report."""

    principal: Principal | None
    error: ServiceError | None
    decision: Decision | None


class Authenticator:
    def __init__(
        self,
        settings: Settings,
        db: Database,
        keys: ApiKeysRepository,
        limiter: RateLimiter,
        ping: Callable[[asyncpg.Connection], Awaitable[object]],
        reads: ReadCache | None = None,
    ) -> None:
        self.settings = settings
        self.reads = reads
        self.db = db
        self.keys = keys
        self.limiter = limiter
        self.ping = ping
        self.cache = KeyCache()
        self.usage = UsageRecorder(db, keys)
        self.listener: KeyChangeListener | None = None

    async def start(self, dsn: str) -> None:
        self.usage.start()
        self.listener = KeyChangeListener(dsn, self.cache, self.ping, self.reads)
        await self.listener.start()

    async def stop(self) -> None:
        if self.listener is not None:
            await self.listener.stop()
            self.listener = None
        await self.usage.stop()

    async def admit(
        self, api_key: str | None, authorization: str | None, address: str | None
    ) -> Admission:
        guard = f"addr:{address or 'unknown'}"
        principal: Principal | None = None
        failure: ServiceError
        if api_key is not None:
            found = await self._from_api_key(api_key.strip(), guard)
            if isinstance(found, Decision):
                return Admission(None, rate_limited(found), found)
            principal, failure = found, invalid_key()
        elif authorization is not None:
            try:
                principal = self._from_bearer(authorization)
            except ServiceError as err:
                failure = err
        else:
            failure = missing_credentials()
        if principal is None:
            decision = await self.limiter.hit(guard, self.limiter.default)
            error = failure if decision.allowed else rate_limited(decision)
            return Admission(None, error, decision)
        limit = self.limiter.limit_for(
            principal.rate_limit_max, principal.rate_limit_window_seconds
        )
        decision = await self.limiter.hit(bucket_of(principal), limit)
        if not decision.allowed:
            return Admission(None, rate_limited(decision), decision)
        return Admission(principal, None, decision)

    def _from_bearer(self, authorization: str) -> Principal:
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ServiceError(
                "INVALID_CREDENTIALS",
                "the Authorization header must be 'Bearer <JWT>'",
                headers={"WWW-Authenticate": _CHALLENGE},
            )
        return decode_token(token.strip(), self.settings)

    async def _from_api_key(self, key: str, guard: str) -> Principal | Decision | None:
        """The key's principal; None for a bad key; the guard's Decision when the client
        address is over its limit and the key would need a lookup."""
        # Shape and checksum first: a mistyped or forged key costs no database work, nor
        # does a key of an environment this deployment does not accept (live-only).
        if parse_key(key) not in self.settings.api_key_environments:
            return None
        digest = hash_key(self.settings.api_key_hmac_secret, key)
        creds = self.cache.get(digest)
        if creds is None:
            guard_state = await self.limiter.peek(guard, self.limiter.default)
            if not guard_state.allowed:
                return guard_state
            generation = self.cache.generation
            creds = await self.db.run(lambda c: self.keys.get_api_key_for_auth(c, digest))
            if creds is None:
                return None
            self.cache.put(digest, creds, generation)
        now = datetime.now(UTC)
        principal = principal_for_key(creds, now)
        if principal is not None:
            self.usage.record(creds.id, creds.last_used_at, now)
        return principal
