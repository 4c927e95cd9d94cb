"""Turning request headers into a Principal and a rate-limit decision, or a 401/429.

Order of work, cheapest first (docs/api.md, Authentication and scopes):
1. A key's shape and checksum are checked without the database: garbage (and a key of
   an environment this deployment refuses) costs nothing and counts only against the
   client address's anonymous bucket (`anon:`), as do missing credentials and bad JWTs.
2. A cached key (service.caches.key_cache) costs no database round trip.
3. A well-formed key that is not cached is looked up. A lookup that finds no usable key
   counts against the address's lookup bucket (`lookup:`); past its limit such failures
   are answered 429. A valid key is never refused by either address bucket: an address
   over its lookup budget still has its keys looked up, one at a time per process, so
   a flood of forged keys from it costs at most one database connection.
4. A valid caller counts against its own bucket (the key's limits, else the defaults).
The address is the client's as TRUSTED_PROXIES establishes it (service/http/middlewares/clients.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import NamedTuple

import asyncpg

from service.auth.jwks import JwksCache
from service.auth.jwt_tokens import TokenVerifier
from service.auth.key_listener import KeyChangeListener
from service.auth.keys import hash_key, parse_key
from service.auth.principal import Principal
from service.auth.usage import UsageRecorder
from service.base.errors import ServiceError
from service.caches.key_cache import KeyCache
from service.caches.read_cache import ReadCache
from service.db.pool import Database
from service.ratelimit.buckets import Decision, Limit
from service.ratelimit.limiter import RateLimiter
from service.repositories.api_keys import ApiKeysRepository, KeyCredentials
from service.settings.options import Settings

# Keys whose checksum and hash are remembered, and cached keys' callers (each map is
# emptied when full: only valid-shaped keys enter it).
MAX_REMEMBERED_KEYS = 10_000
_CHALLENGE = 'Bearer realm="tenant-service", ApiKey realm="tenant-service"'


def missing_credentials() -> ServiceError:
    return ServiceError(
        "UNAUTHORIZED",
        "authentication required: send X-API-Key or Authorization: Bearer <JWT>",
        headers={"WWW-Authenticate": _CHALLENGE},
    )


def ambiguous_credentials() -> ServiceError:
    # Which one was meant cannot be known, and trying both would let a stray default
    # header decide who the caller is: refuse (docs/decisions/identity.md).
    return ServiceError(
        "AMBIGUOUS_CREDENTIALS",
        "send either X-API-Key or Authorization, not both",
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


def principal_of_key(creds: KeyCredentials) -> Principal:
    """The principal a stored key stands for (whether it may be used now aside)."""
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


def usable_until(creds: KeyCredentials) -> float:
    """The moment (epoch seconds) from which the key may no longer be used: its
    revocation or expiry, whichever comes first; infinity for neither."""
    ends = [t.timestamp() for t in (creds.revoked_at, creds.expires_at) if t is not None]
    return min(ends, default=math.inf)


def bucket_of(principal: Principal) -> str:
    if principal.api_key_id is not None:
        return f"key:{principal.api_key_id}"
    # A JWT sub is free text of up to 255 characters: a digest keeps bucket ids short.
    return "jwt:" + hashlib.sha256(principal.actor_id.encode()).hexdigest()[:32]


class Admission(NamedTuple):
    """Who is calling (or the error to answer) and the rate-limit decision to report.
    A tuple: made on every request, and a frozen dataclass's __init__ costs several
    times as much."""

    principal: Principal | None
    error: ServiceError | None
    decision: Decision | None


@dataclass(frozen=True, slots=True)
class Caller:
    """A cached key's principal, bucket and limit. Valid while the key cache returns
    the very `creds` it was made from: a new lookup makes a new Caller."""

    creds: KeyCredentials
    principal: Principal
    bucket: str
    limit: Limit
    usable_until: float

    @classmethod
    def of(cls, creds: KeyCredentials, limiter: RateLimiter) -> Caller:
        principal = principal_of_key(creds)
        return cls(
            creds=creds,
            principal=principal,
            bucket=bucket_of(principal),
            limit=limiter.limit_for(creds.rate_limit_max, creds.rate_limit_window_seconds),
            usable_until=usable_until(creds),
        )


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
        # Lookups for addresses over their failed-lookup budget wait for each other.
        self._suspect_lookups = asyncio.Semaphore(1)
        self._digests: dict[bytes, bytes] = {}
        self._callers: dict[bytes, Caller] = {}
        self.jwks = JwksCache(settings) if settings.jwks_configured else None
        self.tokens = TokenVerifier(settings, self.jwks)

    def count_jwks_fetches(self, count: Callable[[str], None]) -> None:
        """Report each JWKS fetch's outcome (success, failure) to the metrics."""
        if self.jwks is not None:
            self.jwks.on_fetch = count

    async def start(self, dsn: str) -> None:
        self.usage.start()
        self.listener = KeyChangeListener(dsn, self.cache, self.ping, self.reads)
        await self.listener.start()

    async def stop(self) -> None:
        if self.listener is not None:
            await self.listener.stop()
            self.listener = None
        await self.usage.stop()
        if self.jwks is not None:
            await self.jwks.close()

    async def admit(
        self, api_key: str | None, authorization: str | None, address: str | None
    ) -> Admission:
        where = address or "unknown"
        if api_key is not None and authorization is not None:
            return Admission(None, ambiguous_credentials(), None)
        if api_key is not None:
            return await self._admit_key(api_key.strip(), where)
        if authorization is None:
            return await self._refuse(f"anon:{where}", missing_credentials())
        try:
            principal = await self._from_bearer(authorization)
        except ServiceError as err:
            if err.code == "SERVICE_UNAVAILABLE":
                return Admission(None, err, None)  # the provider's fault, not the caller's
            return await self._refuse(f"anon:{where}", err)
        return await self._charge(principal)

    async def still_admits(self, api_key: str | None, authorization: str | None) -> bool:
        """Whether these credentials would still be let in (a key not revoked or
        expired, a token still valid), without charging the caller's rate limit: asked
        again and again by long-lived streams."""
        try:
            if api_key is not None:
                digest = self._digest_of(api_key.strip())
                if digest is None:
                    return False
                creds = self.cache.get(digest)
                if creds is None:
                    creds = await self._look_up(digest, "stream")
                if creds is None:
                    return False
                caller = self._callers.get(digest)
                if caller is None or caller.creds is not creds:
                    caller = self._caller_for(digest, creds)
                return time.time() < caller.usable_until
            if authorization is not None:
                await self._from_bearer(authorization)
                return True
        except ServiceError as err:
            # The identity provider or the database is down: not the caller's fault.
            return err.code == "SERVICE_UNAVAILABLE"
        return False

    async def _refuse(self, bucket: str, error: ServiceError) -> Admission:
        decision = await self.limiter.hit(bucket, self.limiter.default)
        return Admission(None, error if decision.allowed else rate_limited(decision), decision)

    async def _charge(self, principal: Principal) -> Admission:
        limit = self.limiter.limit_for(
            principal.rate_limit_max, principal.rate_limit_window_seconds
        )
        decision = await self.limiter.hit(bucket_of(principal), limit)
        if not decision.allowed:
            return Admission(None, rate_limited(decision), decision)
        return Admission(principal, None, decision)

    async def _from_bearer(self, authorization: str) -> Principal:
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ServiceError(
                "INVALID_CREDENTIALS",
                "the Authorization header must be 'Bearer <JWT>'",
                headers={"WWW-Authenticate": _CHALLENGE},
            )
        return await self.tokens.principal(token.strip())

    async def _admit_key(self, key: str, where: str) -> Admission:
        digest = self._digest_of(key)
        if digest is None:
            return await self._refuse(f"anon:{where}", invalid_key())
        creds = self.cache.get(digest)
        if creds is None:
            creds = await self._look_up(digest, f"lookup:{where}")
            if creds is None:
                return await self._refuse(f"lookup:{where}", invalid_key())
        caller = self._callers.get(digest)
        if caller is None or caller.creds is not creds:
            caller = self._caller_for(digest, creds)
        if time.time() >= caller.usable_until:
            return await self._refuse(f"lookup:{where}", invalid_key())
        self.usage.record(creds.id, creds.last_used_at)
        decision = await self.limiter.hit(caller.bucket, caller.limit)
        if not decision.allowed:
            return Admission(None, rate_limited(decision), decision)
        return Admission(caller.principal, None, decision)

    def _digest_of(self, key: str) -> bytes | None:
        """The key's stored hash, or None for a key of the wrong shape, checksum or
        environment. Shape, checksum and HMAC are worked out once per key and process:
        the map is keyed by a BLAKE2b fingerprint, so no plaintext key stays in memory."""
        fingerprint = hashlib.blake2b(key.encode(), digest_size=16).digest()
        digest = self._digests.get(fingerprint)
        if digest is not None:
            return digest
        # Shape and checksum first: a mistyped or forged key costs no database work, nor
        # does a key of an environment this deployment does not accept (live-only).
        if parse_key(key) not in self.settings.api_key_environments:
            return None
        digest = hash_key(self.settings.api_key_hmac_secret, key)
        if len(self._digests) >= MAX_REMEMBERED_KEYS:
            self._digests.clear()  # well-formed unknown keys can fill it: stay bounded
        self._digests[fingerprint] = digest
        return digest

    def _caller_for(self, digest: bytes, creds: KeyCredentials) -> Caller:
        """What every request of a cached key needs, worked out once per cached lookup."""
        caller = Caller.of(creds, self.limiter)
        if len(self._callers) >= MAX_REMEMBERED_KEYS:
            self._callers.clear()
        self._callers[digest] = caller
        return caller

    async def _look_up(self, digest: bytes, bucket: str) -> KeyCredentials | None:
        generation = self.cache.generation
        state = await self.limiter.peek(bucket, self.limiter.default)

        async def lookup(conn: asyncpg.Connection) -> KeyCredentials | None:
            return await self.keys.get_api_key_for_auth(conn, digest)

        if state.allowed:
            creds = await self.db.read_primary_first(lookup)
        else:
            async with self._suspect_lookups:
                creds = await self.db.read_primary_first(lookup)
        if creds is not None:
            self.cache.put(digest, creds, generation)
        return creds
