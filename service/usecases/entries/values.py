"""Sensitive config values: encrypted at rest, masked on the way out, revealed only to
admins who ask (docs/api.md, inheritance)."""

from __future__ import annotations

from typing import Any, Protocol
from uuid import UUID

import orjson

from service.auth.principal import Principal
from service.base.crypto import PURPOSE_CONFIG, DecryptionError, Encryptor, config_aad
from service.base.errors import ServiceError
from service.observability.logs import get_logger
from service.views.base import SENSITIVE_MASK

log = get_logger("service.config_values")


def check_reveal(principal: Principal, reveal: bool) -> bool:
    """Whether to show sensitive values; asking without the admin scope is a 403."""
    if reveal and not principal.has_scope("admin"):
        raise ServiceError(
            "INSUFFICIENT_SCOPE", "?reveal=true needs the admin scope; without it values are masked"
        )
    return reveal


def same_json(a: Any, b: Any) -> bool:
    """JSON equality: unlike ==, true is not 1 and 1.0 is not 1."""
    option = orjson.OPT_SORT_KEYS
    return orjson.dumps(a, option=option) == orjson.dumps(b, option=option)


def encrypt_value(encryptor: Encryptor, tenant_id: UUID, key: str, value: Any) -> str:
    return encryptor.encrypt(
        orjson.dumps(value), purpose=PURPOSE_CONFIG, aad=config_aad(tenant_id, key)
    )


def try_decrypt(encryptor: Encryptor, tenant_id: UUID, key: str, token: str) -> Any:
    """The plaintext value, or raises DecryptionError (no known key opens it for this row)."""
    return orjson.loads(
        encryptor.decrypt(token, purpose=PURPOSE_CONFIG, aad=config_aad(tenant_id, key))
    )


def decrypt_value(encryptor: Encryptor, tenant_id: UUID, key: str, token: str) -> Any:
    try:
        return try_decrypt(encryptor, tenant_id, key, token)
    except DecryptionError:
        # Stored data the configured keys cannot open (wrong SERVICE_ENCRYPTION_KEY, a
        # tampered or copied ciphertext): a server-side fault, never the caller's input.
        log.error("sensitive value does not decrypt", tenant_id=str(tenant_id), key=key)
        raise ServiceError(
            "INTERNAL_ERROR",
            "a stored sensitive value cannot be decrypted with the configured keys",
        ) from None


class StoredValue(Protocol):
    """A config value as stored: a tenant's own entry, or a resolved one."""

    @property
    def key(self) -> str: ...
    @property
    def value(self) -> Any: ...
    @property
    def encrypted_value(self) -> str | None: ...
    @property
    def sensitive(self) -> bool: ...


def shown_value(encryptor: Encryptor, stored: StoredValue, tenant_id: UUID, reveal: bool) -> Any:
    """The value as shown: masked when sensitive, unless revealed (decrypted with the
    key of `tenant_id`, the tenant whose entry it is; a value no configured key opens is
    a server fault, a 500)."""
    if not stored.sensitive:
        return stored.value
    if not reveal or stored.encrypted_value is None:
        return SENSITIVE_MASK
    return decrypt_value(encryptor, tenant_id, stored.key, stored.encrypted_value)
