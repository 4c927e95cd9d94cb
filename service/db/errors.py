"""Database errors become domain errors here, and only here, by constraint name."""

from __future__ import annotations

import asyncio

import asyncpg
from asyncpg.exceptions import _base as asyncpg_base

from service.base.errors import FieldError, ServiceError

_BY_CONSTRAINT: dict[str, tuple[str, str]] = {
    "tenants_slug_key": ("CONFLICT", "a tenant with this slug already exists"),
    "tenants_parent_fk": ("TENANT_NOT_FOUND", "parent tenant not found"),
    "roles_name_key": ("CONFLICT", "a role with this name already exists in its scope"),
    "api_keys_role_fk": ("ROLE_NOT_FOUND", "role not found"),
    "api_keys_tenant_fk": ("TENANT_NOT_FOUND", "tenant not found"),
    "roles_tenant_fk": ("TENANT_NOT_FOUND", "tenant not found"),
    "config_entries_tenant_fk": ("TENANT_NOT_FOUND", "tenant not found"),
    "permission_policies_tenant_fk": ("TENANT_NOT_FOUND", "tenant not found"),
    "webhooks_tenant_fk": ("TENANT_NOT_FOUND", "tenant not found"),
    "tenant_closure_ancestor_fk": ("TENANT_NOT_FOUND", "tenant not found"),
    "tenant_closure_descendant_fk": ("TENANT_NOT_FOUND", "tenant not found"),
    "consents_tenant_fk": ("TENANT_NOT_FOUND", "tenant not found"),
}

# Check constraints that mirror request validation: reaching them means input slipped
# past the validators, which is still the caller's mistake, not a server error.
_CHECK_FIELDS: dict[str, str] = {
    "tenants_name_length": "name",
    "tenants_slug_format": "slug",
    "tenants_isolation_strategy_check": "isolation_strategy",
    "config_entries_key_format": "key",
    "permission_policies_key_format": "key",
    "permission_policies_mode_check": "mode",
    "api_keys_name_length": "name",
    "roles_name_length": "name",
    "consents_purpose_format": "purpose",
    "consents_metadata_object": "metadata",
}

_UNAVAILABLE = (
    asyncpg.PostgresConnectionError,
    asyncpg.CannotConnectNowError,
    asyncpg.TooManyConnectionsError,
    asyncpg.OperatorInterventionError,
    asyncpg.InsufficientResourcesError,
    asyncpg.QueryCanceledError,
    ConnectionError,
    OSError,
    asyncio.TimeoutError,
    # A pooled connection that ended up on a standby (a failover demoted its server),
    # or no host of a multi-host DATABASE_URL is the primary yet: retry shortly.
    asyncpg.ReadOnlySQLTransactionError,
    asyncpg.TargetServerAttributeNotMatched,
    # A row lock held past DB_LOCK_TIMEOUT_MS: the writer gives its connection back.
    asyncpg.LockNotAvailableError,
)


# Interface errors raised before anything is sent, about the values given: the
# connection is as good as before.
_INPUT_ERRORS = (
    asyncpg_base.DataError,
    asyncpg_base.ClientConfigurationError,
    asyncpg_base.UnsupportedClientFeatureError,
)


def leaves_connection_broken(exc: BaseException) -> bool:
    """Errors after which a connection's protocol state is unknown: an unsolicited
    ErrorResponse (PgBouncer writes one to an idle client connection when its server
    goes away) leaves asyncpg waiting for a ReadyForQuery that never comes, so every
    later statement fails with InternalClientError; a timeout leaves a statement in
    flight; a closed socket is gone. Such a connection is terminated, never pooled
    again (service/db/pool.py), and the request answers 503."""
    if isinstance(exc, asyncpg.InterfaceError):
        return not isinstance(exc, _INPUT_ERRORS)
    return isinstance(
        exc,
        asyncpg.InternalClientError
        | asyncpg.PostgresConnectionError
        | ConnectionError
        | OSError
        | TimeoutError,
    )


def is_unavailable(exc: BaseException) -> bool:
    """Errors meaning the database is unreachable or overloaded, or the connection is
    broken: answer 503, retry later."""
    return leaves_connection_broken(exc) or isinstance(exc, _UNAVAILABLE)


def service_unavailable() -> ServiceError:
    return ServiceError(
        "SERVICE_UNAVAILABLE",
        "the database is unavailable; retry shortly",
        headers={"Retry-After": "1"},
    )


def translate_db_error(exc: BaseException) -> ServiceError | None:
    """The domain error for a database error, or None when it is a bug to report as 500."""
    if is_unavailable(exc):
        return service_unavailable()
    if isinstance(exc, asyncpg.IntegrityConstraintViolationError):
        name = getattr(exc, "constraint_name", None) or ""
        if name in _BY_CONSTRAINT:
            code, message = _BY_CONSTRAINT[name]
            return ServiceError(code, message)
        if name in _CHECK_FIELDS:
            field = _CHECK_FIELDS[name]
            return ServiceError(
                "VALIDATION_ERROR",
                f"{field}: invalid value",
                details=[FieldError(field, "invalid value")],
            )
    if isinstance(
        exc,
        asyncpg.UntranslatableCharacterError
        | asyncpg.CharacterNotInRepertoireError
        | asyncpg.InvalidTextRepresentationError,
    ):
        return ServiceError("VALIDATION_ERROR", "a value contains characters that cannot be stored")
    return None
