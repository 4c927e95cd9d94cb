"""The signing keys of an OpenID Connect provider, fetched from its JWKS and cached.

One fetch at a time, and at most one every REFETCH_INTERVAL_SECONDS per process, whatever
the traffic: an unknown `kid` refreshes the set only when that interval has passed, so a
flood of tokens with made-up key ids costs the provider nothing. The set is refreshed in
the background of a request once it is older than JWT_JWKS_CACHE_TTL; when the provider
cannot be reached, the last set keeps serving until it is JWT_JWKS_MAX_STALE old.
Fetches use aiohttp (the event loop never blocks), with a timeout, no redirects and a
size limit; PyJWT's PyJWK turns each key into a verifier (no hand-written crypto).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import jwt

from service.observability.logs import get_logger
from service.settings.identity import ASYMMETRIC_ALGORITHMS
from service.settings.options import Settings

log = get_logger("service.auth.jwks")
REFETCH_INTERVAL_SECONDS = 30.0
MAX_DOCUMENT_BYTES = 512 * 1024
DISCOVERY_PATH = "/.well-known/openid-configuration"

# Which algorithms a key of each type (and curve) may verify.
_FAMILIES: dict[tuple[str, str | None], frozenset[str]] = {
    ("RSA", None): frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}),
    ("EC", "P-256"): frozenset({"ES256"}),
    ("EC", "P-384"): frozenset({"ES384"}),
    ("EC", "P-521"): frozenset({"ES512"}),
    ("OKP", "Ed25519"): frozenset({"EdDSA"}),
}


class KeysUnavailable(Exception):
    """No usable key set: never fetched, or the last one is older than the stale limit."""


class FetchFailed(Exception):
    """The provider's answer could not be used; the message names why (never a token)."""


@dataclass(frozen=True, slots=True)
class _KeySet:
    keys: dict[str, dict[str, Any]]  # kid -> the JWK as published (public keys only)
    fetched_at: float


def _fits(jwk: dict[str, Any], alg: str) -> bool:
    """Whether a published key may verify a token of this algorithm."""
    if alg not in ASYMMETRIC_ALGORITHMS:
        return False
    if jwk.get("use") not in (None, "sig"):
        return False
    published = jwk.get("alg")
    if published is not None and published != alg:
        return False
    kty = jwk.get("kty")
    family = _FAMILIES.get((kty, None) if kty == "RSA" else (str(kty), jwk.get("crv")))
    return family is not None and alg in family


class JwksCache:
    def __init__(
        self,
        settings: Settings,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_fetch: Callable[[str], None] | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.on_fetch = on_fetch
        self._set: _KeySet | None = None
        self._jwks_url = settings.jwt_jwks_url
        self._last_attempt: float | None = None
        self._lock = asyncio.Lock()
        self._session: aiohttp.ClientSession | None = None
        self._verifiers: dict[tuple[str, str], jwt.PyJWK] = {}
        self._background: asyncio.Task[_KeySet | None] | None = None

    async def close(self) -> None:
        if self._background is not None:
            self._background.cancel()
            await asyncio.gather(self._background, return_exceptions=True)
            self._background = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def settled(self) -> None:
        """Wait for a background refresh under way, if any (tests)."""
        if self._background is not None:
            await asyncio.gather(self._background, return_exceptions=True)

    async def key_for(self, kid: str, alg: str) -> jwt.PyJWK | None:
        """The verifier for this kid and algorithm; None when the provider has no such
        key. Raises KeysUnavailable when there is no usable key set at all."""
        current = self._usable()
        if current is None or kid not in current.keys:
            await self._refresh()
            current = self._usable()
        elif self._older_than(current, self.settings.jwks_cache_seconds):
            self._refresh_in_background()
        if current is None:
            raise KeysUnavailable
        jwk = current.keys.get(kid)
        if jwk is None or not _fits(jwk, alg):
            return None
        cached = self._verifiers.get((kid, alg))
        if cached is None:
            try:
                cached = jwt.PyJWK(jwk, algorithm=alg)
            except jwt.PyJWTError:
                return None
            self._verifiers[(kid, alg)] = cached
        return cached

    def _refresh_in_background(self) -> None:
        # The set in hand still serves: no request waits for this fetch.
        if (self._background is None or self._background.done()) and self._may_fetch():
            self._background = asyncio.create_task(self._refresh())

    def _may_fetch(self) -> bool:
        last = self._last_attempt
        return last is None or self.clock() - last >= REFETCH_INTERVAL_SECONDS

    def _usable(self) -> _KeySet | None:
        current = self._set
        if current is None or self._older_than(current, self.settings.jwks_max_stale_seconds):
            return None
        return current

    def _older_than(self, current: _KeySet, seconds: float) -> bool:
        return self.clock() - current.fetched_at >= seconds

    async def _refresh(self) -> _KeySet | None:
        """Fetch the set unless a fetch ran within the interval; the new set or None."""
        async with self._lock:
            if not self._may_fetch():
                return None  # someone fetched a moment ago (or failed to): use what is there
            self._last_attempt = self.clock()
            try:
                keys = await self._fetch()
            except FetchFailed as exc:
                self._count("failure")
                log.warning(
                    "jwks fetch failed",
                    reason=str(exc),
                    serving_cached=self._usable() is not None,
                )
                return None
            self._count("success")
            self._set = _KeySet(keys, self.clock())
            self._verifiers = {}
            return self._set

    def _count(self, outcome: str) -> None:
        if self.on_fetch is not None:
            self.on_fetch(outcome)

    async def _fetch(self) -> dict[str, dict[str, Any]]:
        if self._jwks_url is None:
            self._jwks_url = await self._discover()
        document = await self._get_json(self._jwks_url)
        raw = document.get("keys")
        if not isinstance(raw, list):
            raise FetchFailed("the JWKS has no keys array")
        keys: dict[str, dict[str, Any]] = {}
        for jwk in raw:
            # Public keys with an id only: a symmetric ("oct") key must never verify a
            # token, and a key without kid cannot be chosen safely among several.
            if (
                isinstance(jwk, dict)
                and isinstance(jwk.get("kid"), str)
                and jwk.get("kty")
                in (
                    "RSA",
                    "EC",
                    "OKP",
                )
            ):
                keys[jwk["kid"]] = jwk
        # An empty set is an answer, not a failure: the provider withdrew every key, and
        # every token is refused until it publishes one.
        return keys

    async def _discover(self) -> str:
        issuer = self.settings.oidc_issuer
        assert issuer is not None
        document = await self._get_json(issuer + DISCOVERY_PATH)
        if str(document.get("issuer", "")).rstrip("/") != issuer:
            raise FetchFailed("the discovery document names another issuer")
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri.startswith(("https://", "http://")):
            raise FetchFailed("the discovery document has no jwks_uri")
        return jwks_uri

    async def _get_json(self, url: str) -> dict[str, Any]:
        if self.settings.is_production and not url.startswith("https://"):
            raise FetchFailed("the provider must be reached over https in production")
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.settings.jwks_timeout_seconds)
            )
        try:
            async with self._session.get(
                url, allow_redirects=False, headers={"Accept": "application/json"}
            ) as resp:
                if resp.status != 200:
                    raise FetchFailed(f"the provider answered HTTP {resp.status}")
                body = await resp.content.read(MAX_DOCUMENT_BYTES + 1)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise FetchFailed(f"the provider could not be reached ({type(exc).__name__})") from exc
        if len(body) > MAX_DOCUMENT_BYTES:
            raise FetchFailed("the provider's document is too large")
        try:
            document = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise FetchFailed("the provider's document is not JSON") from exc
        if not isinstance(document, dict):
            raise FetchFailed("the provider's document is not a JSON object")
        return document
