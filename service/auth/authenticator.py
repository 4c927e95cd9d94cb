"""Turning request headers into a Principal, or a 401."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

from service.auth.jwt_tokens import decode_token
from service.auth.keys import hash_key, parse_key
from service.auth.principal import Principal
from service.config import Settings
from service.db.pool import Database
from service.errors import ServiceError
from service.repositories.api_keys import ApiKeysRepository, KeyCredentials

TOUCH_INTERVAL = timedelta(minutes=1)
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


class Authenticator:
    def __init__(self, settings: Settings, db: Database, keys: ApiKeysRepository) -> None:
        self.settings = settings
        self.db = db
        self.keys = keys
        self._touched: dict[UUID, datetime] = {}

    async def authenticate(self, api_key: str | None, authorization: str | None) -> Principal:
        if api_key is not None:
            return await self.from_api_key(api_key.strip())
        if authorization is None:
            raise missing_credentials()
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ServiceError(
                "INVALID_CREDENTIALS",
                "the Authorization header must be 'Bearer <JWT>'",
                headers={"WWW-Authenticate": _CHALLENGE},
            )
        return decode_token(token.strip(), self.settings)

    async def from_api_key(self, key: str) -> Principal:
        # Shape and checksum first: a mistyped or forged key costs no database work.
        if parse_key(key) is None:
            raise invalid_key()
        digest = hash_key(self.settings.api_key_hmac_secret, key)
        creds = await self.db.run(lambda c: self.keys.get_api_key_for_auth(c, digest))
        now = datetime.now(UTC)
        principal = None if creds is None else principal_for_key(creds, now)
        if creds is None or principal is None:
            raise invalid_key()
        await self._touch(creds, now)
        return principal

    async def _touch(self, creds: KeyCredentials, now: datetime) -> None:
        last = self._touched.get(creds.id) or creds.last_used_at
        if last is not None and now - last < TOUCH_INTERVAL:
            return
        self._touched[creds.id] = now
        await self.db.run(lambda c: self.keys.touch_api_key(c, creds.id))
