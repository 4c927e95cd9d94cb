"""Settings: one frozen object built from the environment (docs/api.md, Conventions)."""

from __future__ import annotations

import base64
import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from service.settings.database import DEFAULT_STATEMENT_CACHE_SIZE, database_settings
from service.settings.identity import identity_settings
from service.settings.reader import EnvironmentReader, IPNetwork, decode_encryption_key
from service.settings.secret_strength import GENERATE_HINT, weakness
from service.settings.table import (
    boolean,
    choice,
    cidrs,
    derived,
    duration,
    integer,
    keys,
    names,
    number,
    optional,
    options_of,
    path,
    read_options,
    subset,
    text,
)

Environment = Literal["development", "production"]
ENVIRONMENTS: tuple[Environment, ...] = ("development", "production")

SECRETS_FILE = "secrets.json"


class ConfigError(Exception):
    """The environment does not describe a valid configuration; the message says why."""


@dataclass(frozen=True, slots=True)
class Settings:
    """The service's settings. Each field the environment sets is declared once, here, by
    its kind (service/settings/table.py): environment name, default, bounds, secret."""

    port: int = integer("PORT", 8080, 0, 65535)
    host: str = text("HOST", "0.0.0.0")  # noqa: S104 - a service listens on every interface
    database_url: str | None = optional("DATABASE_URL", secret=True)  # may carry a password
    data_dir: Path = path("DATA_DIR", ".data")
    environment: Environment = choice("SERVICE_ENV", ENVIRONMENTS, "development")
    # The three secrets: from the environment, else (development only) DATA_DIR.
    jwt_secret: str = derived("JWT_SECRET", "", secret=True)
    jwt_issuer: str | None = optional("JWT_ISSUER")
    jwt_audience: str | None = optional("JWT_AUDIENCE")
    api_key_hmac_secret: bytes = derived("SERVICE_API_KEY_HMAC_SECRET", b"", secret=True)
    encryption_key: bytes = derived("SERVICE_ENCRYPTION_KEY", b"", secret=True)
    encryption_keys_previous: tuple[bytes, ...] = keys("SERVICE_ENCRYPTION_KEY_PREVIOUS")
    rate_limit_max: int = integer("RATE_LIMIT_MAX", 100, 1, 100_000)
    rate_limit_window_seconds: int = duration("RATE_LIMIT_WINDOW", "1 minute")
    redis_url: str | None = optional("REDIS_URL", secret=True)  # may carry a password
    # Peers whose X-Forwarded-For names the client (service/http/middlewares/clients.py).
    trusted_proxies: tuple[IPNetwork, ...] = cidrs("TRUSTED_PROXIES")
    # Which API-key environments authenticate here: a live-only deployment refuses
    # sk_test_ keys outright. Production defaults to live only, development to both.
    api_key_environments: tuple[str, ...] = subset(
        "API_KEY_ENVIRONMENTS", ("live", "test"), ("live", "test"), production=("live",)
    )
    # Every Redis key starts with this, so several deployments (or test runs) can share
    # one Redis without colliding.
    redis_key_prefix: str = text("REDIS_KEY_PREFIX", "tenant-service:")
    webhook_max_attempts: int = integer("WEBHOOK_MAX_ATTEMPTS", 6, 1, 100)
    webhook_retry_base_seconds: float = number("WEBHOOK_RETRY_BASE_SECONDS", 10.0, 0.0, 86400)
    webhook_retry_max_seconds: float = number("WEBHOOK_RETRY_MAX_SECONDS", 3600.0, 0.0, 604800)
    webhook_timeout_seconds: float = number("WEBHOOK_TIMEOUT_SECONDS", 10.0, 0.1, 300)
    webhook_allow_http: bool = boolean("WEBHOOK_ALLOW_HTTP", False)
    webhook_allowed_private_cidrs: tuple[IPNetwork, ...] = cidrs("WEBHOOK_ALLOWED_PRIVATE_CIDRS")
    # Delivery attempts one process runs at once (0: this process delivers nothing).
    webhook_concurrency: int = integer("WEBHOOK_CONCURRENCY", 16, 0, 1000)
    # An endpoint failing without a success this long, or with this many dead letters
    # since its last success (0: never by count), is disabled (docs/decisions/webhooks.md).
    webhook_disable_after_seconds: int = integer(
        "WEBHOOK_DISABLE_AFTER_SECONDS", 5 * 86400, 1, 10 * 365 * 86400
    )
    webhook_disable_after_dead_letters: int = integer(
        "WEBHOOK_DISABLE_AFTER_DEAD_LETTERS", 100, 0, 1_000_000
    )
    # How often each process looks for expired entries and due change requests
    # (0: this process runs none of that scheduled work).
    scheduler_poll_seconds: float = number("SCHEDULER_POLL_SECONDS", 5.0, 0.0, 3600)
    # Approvals a change request needs before it applies.
    change_request_approvals: int = integer("CHANGE_REQUEST_APPROVALS", 1, 1, 10)
    # A scheduled apply missed by more than this (service down) fails instead of running.
    change_request_apply_grace_seconds: int = duration("CHANGE_REQUEST_APPLY_GRACE", "1 hour")
    max_body_bytes: int = integer("MAX_BODY_BYTES", 1_048_576, 1024, 1 << 30)
    max_tenant_depth: int = integer("MAX_TENANT_DEPTH", 32, 1, 1000)
    regions: tuple[str, ...] = names("SERVICE_REGIONS", "default")
    # Default: the first of SERVICE_REGIONS.
    default_region: str = derived("DEFAULT_REGION", "default")
    audit_log_retention_days: int = integer("AUDIT_LOG_RETENTION_DAYS", 365, 0, 36500)
    delivery_retention_days: int = integer("DELIVERY_RETENTION_DAYS", 30, 0, 36500)
    consent_retention_days: int = integer("CONSENT_RETENTION_DAYS", 730, 0, 36500)
    archived_tenant_retention_days: int = integer("ARCHIVED_TENANT_RETENTION_DAYS", 0, 0, 36500)
    # The revision log (docs/context-delivery.md): how long a stream position can be
    # resumed exactly (0: forever).
    revision_retention_days: int = integer("REVISION_RETENTION_DAYS", 7, 0, 36500)
    # The history of the resolved view (docs/history.md): how far back as-of reads,
    # diffs and reverts reach (0: forever).
    history_retention_days: int = integer("HISTORY_RETENTION_DAYS", 90, 0, 36500)
    # Streams of context changes at once, per process and per caller (429 past the
    # caller's share, 503 when the process is full), and the heartbeat of an idle one.
    context_streams_per_process: int = integer("CONTEXT_STREAMS_PER_PROCESS", 2000, 1, 1_000_000)
    context_streams_per_caller: int = integer("CONTEXT_STREAMS_PER_CALLER", 50, 1, 1_000_000)
    context_stream_heartbeat_seconds: float = number(
        "CONTEXT_STREAM_HEARTBEAT_SECONDS", 15.0, 0.05, 3600
    )
    # A stream ends after this long (the client resumes with Last-Event-ID): connections
    # spread over processes again, and none outlives a deploy by much.
    context_stream_max_seconds: float = number("CONTEXT_STREAM_MAX_SECONDS", 3600.0, 0.1, 7 * 86400)
    db_pool_min_size: int = integer("DB_POOL_MIN_SIZE", 2, 0, 1000)
    db_pool_max_size: int = integer("DB_POOL_MAX_SIZE", 10, 1, 1000)
    # Transactions (writes, and the reads that need one) holding pooled connections at
    # once per process; the pool's other connections are left to single-statement reads,
    # so reads that miss the cache never queue behind writes waiting to commit
    # (service/db/pool.py). 0: half of DB_POOL_MAX_SIZE, at least 1.
    db_pool_transactions: int = integer("DB_POOL_TRANSACTIONS", 0, 0, 1000)
    # Rendered tenants and contexts kept per process (service/caches/read_cache.py);
    # 0 turns the cache off.
    read_cache_size: int = integer("READ_CACHE_SIZE", 20_000, 0, 10_000_000)
    # Heavy tree reads (whole descendants lists) at once, per process and per caller:
    # beyond the caller's share 429, no process slot within the wait 503
    # (service/http/heavy_reads.py).
    heavy_reads_per_process: int = integer("HEAVY_READS_PER_PROCESS", 4, 1, 1000)
    heavy_reads_per_caller: int = integer("HEAVY_READS_PER_CALLER", 2, 1, 1000)
    heavy_read_wait_seconds: float = number("HEAVY_READ_WAIT_SECONDS", 1.0, 0.0, 60)
    # A whole list of more than this many tenants is heavy; smaller ones take no slot.
    heavy_read_rows: int = integer("HEAVY_READ_ROWS", 1000, 1, 100_000)
    db_acquire_timeout_seconds: float = number("DB_ACQUIRE_TIMEOUT_SECONDS", 5.0, 0.1, 300)
    db_statement_timeout_ms: int = integer("DB_STATEMENT_TIMEOUT_MS", 30_000, 0, 3_600_000)
    log_level: str = choice("LOG_LEVEL", ("debug", "info", "warning", "error"), "info", lower=True)
    # SIGTERM: in-flight requests get this long to finish before they are cancelled.
    shutdown_timeout_seconds: float = number("SHUTDOWN_TIMEOUT_SECONDS", 30.0, 0.0, 3600)
    # Processes `serve` runs on the port (SO_REUSEPORT); --workers overrides it.
    workers: int = integer("WORKERS", 1, 1, 64)
    # /metrics: its own listener (0: none) on METRICS_HOST, and/or a bearer token that
    # opens GET /metrics on the main port (unset: 404 there).
    metrics_port: int = integer("METRICS_PORT", 0, 0, 65535)
    metrics_host: str = text("METRICS_HOST", "127.0.0.1")
    metrics_token: str | None = optional("METRICS_TOKEN", secret=True)
    # A request's head must arrive within this long, its body within the second.
    header_timeout_seconds: float = number("HEADER_TIMEOUT_SECONDS", 10.0, 0.1, 3600)
    body_timeout_seconds: float = number("BODY_TIMEOUT_SECONDS", 60.0, 0.1, 3600)
    # Names of secrets that came from DATA_DIR rather than the environment (for a warning).
    generated_secrets: tuple[str, ...] = ()
    # --- Tokens from an OpenID Connect provider (docs/identity.md, identity.py) ---
    jwt_jwks_url: str | None = optional("JWT_JWKS_URL")
    oidc_issuer: str | None = optional("OIDC_ISSUER")
    # Default: HS256, with a provider PROVIDER_DEFAULT_ALGORITHMS.
    jwt_algorithms: tuple[str, ...] = derived("JWT_ALGORITHMS", ("HS256",))
    jwt_scopes_claim: str | None = optional("JWT_SCOPES_CLAIM")
    # Provider scope name -> read/write/admin.
    jwt_scope_map: tuple[tuple[str, str], ...] = derived("JWT_SCOPE_MAP", ())
    jwt_tenant_claim: str = text("JWT_TENANT_CLAIM", "tenant_id")
    # A provider's token must name a tenant (on in production): none reaches every tenant.
    jwt_require_tenant_claim: bool = boolean("JWT_REQUIRE_TENANT_CLAIM", False, production=True)
    # A provider without JWT_AUDIENCE: its tokens for any application are accepted.
    jwt_allow_any_audience: bool = boolean("JWT_ALLOW_ANY_AUDIENCE", False)
    jwks_cache_seconds: int = duration("JWT_JWKS_CACHE_TTL", "5 minutes")
    # How long the last key set keeps serving while the provider cannot be reached.
    jwks_max_stale_seconds: int = duration("JWT_JWKS_MAX_STALE", "1 hour")
    jwks_timeout_seconds: float = number("JWT_JWKS_TIMEOUT_SECONDS", 5.0, 0.1, 60)
    # --- Replicas, PgBouncer, the direct connection (docs/scaling.md, database.py) ---
    database_replica_urls: tuple[str, ...] = names("DATABASE_REPLICA_URLS", "", secret=True)
    database_replica_max_lag_seconds: float = number(
        "DATABASE_REPLICA_MAX_LAG_SECONDS", 5.0, 0.0, 86400
    )
    database_replica_check_seconds: float = number("DATABASE_REPLICA_CHECK_SECONDS", 1.0, 0.05, 60)
    # LISTEN and migrations need a session of their own: never through PgBouncer.
    database_listen_url: str | None = optional("DATABASE_LISTEN_URL", secret=True)
    database_pgbouncer: bool = boolean("DATABASE_PGBOUNCER", False)
    # 0 by default with DATABASE_PGBOUNCER (database.py says why).
    database_statement_cache_size: int = derived(
        "DATABASE_STATEMENT_CACHE_SIZE", DEFAULT_STATEMENT_CACHE_SIZE, low=0, high=100_000
    )
    # A statement waits this long for a row lock, then the request answers 503: shorter
    # than the acquire timeout, so writes queued on one locked row give their pooled
    # connections back before other requests time out waiting for one (0: no limit).
    db_lock_timeout_ms: int = integer("DB_LOCK_TIMEOUT_MS", 2000, 0, 3_600_000)
    # Writes to one resource (the id in the path) at once per process; more wait outside
    # the pool up to DB_ACQUIRE_TIMEOUT_SECONDS, then 503 (service/http/middlewares/bulkheads.py).
    db_writes_per_resource: int = integer("DB_WRITES_PER_RESOURCE", 2, 1, 1000)
    # TCP keepalives and TCP_USER_TIMEOUT on database connections: a server host that
    # vanished without closing them is given up on within about this long (0: off).
    db_dead_connection_seconds: float = number("DB_DEAD_CONNECTION_SECONDS", 10.0, 0, 3600)

    @property
    def direct_database_url(self) -> str | None:
        return self.database_listen_url or self.database_url

    @property
    def jwks_configured(self) -> bool:
        return self.jwt_jwks_url is not None or self.oidc_issuer is not None

    @property
    def is_production(self) -> bool:
        return self.environment == "production"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from a mapping (os.environ by default).

        In development, secrets that are not set are generated once into DATA_DIR and
        reused; in production a missing or weak secret stops the start.
        """
        source = dict(os.environ if env is None else env)
        reader = EnvironmentReader(source)
        table = options_of(cls)
        environment = table["environment"].read(reader)
        values = read_options(
            reader,
            {name: option for name, option in table.items() if name != "environment"},
            production=environment == "production",
        )
        settings = cls(environment=environment, **values)  # type: ignore[arg-type]
        regions = settings.regions
        default_region = reader.text(
            table["default_region"].env, regions[0] if regions else table["default_region"].default
        )
        if not regions:
            reader.errors.append("SERVICE_REGIONS must name at least one region")
        elif default_region not in regions:
            reader.errors.append(f"DEFAULT_REGION {default_region!r} is not in SERVICE_REGIONS")
        settings = replace(settings, default_region=default_region)
        token_weakness = weakness((settings.metrics_token or "").encode())
        if settings.metrics_token is not None and token_weakness is not None:
            reader.errors.append(
                f"METRICS_TOKEN is weak ({token_weakness}); generate one with {GENERATE_HINT}"
            )
        if settings.db_pool_min_size > settings.db_pool_max_size:
            reader.errors.append("DB_POOL_MIN_SIZE must not exceed DB_POOL_MAX_SIZE")
        if settings.db_pool_transactions > settings.db_pool_max_size:
            reader.errors.append("DB_POOL_TRANSACTIONS must not exceed DB_POOL_MAX_SIZE")
        settings = replace(settings, **identity_settings(reader, settings))  # type: ignore[arg-type]
        settings = replace(settings, **database_settings(reader, settings))  # type: ignore[arg-type]
        secrets_ = _resolve_secrets(source, settings, reader)
        if reader.errors:
            raise ConfigError("invalid configuration: " + "; ".join(reader.errors))
        return replace(settings, **secrets_)  # type: ignore[arg-type]


def _resolve_secrets(
    source: Mapping[str, str], settings: Settings, reader: EnvironmentReader
) -> dict[str, object]:
    table = options_of(Settings)
    jwt_secret = source.get(table["jwt_secret"].env, "")
    hmac_secret = source.get(table["api_key_hmac_secret"].env, "")
    enc_text = source.get(table["encryption_key"].env, "")
    enc_key = b""
    if enc_text:
        try:
            enc_key = decode_encryption_key(enc_text)
        except ValueError as exc:
            reader.errors.append(f"SERVICE_ENCRYPTION_KEY {exc}")

    if settings.is_production:
        problems = []
        named = [("SERVICE_API_KEY_HMAC_SECRET", hmac_secret)]
        if "HS256" in settings.jwt_algorithms:  # without HS256 JWT_SECRET is not used
            named.insert(0, ("JWT_SECRET", jwt_secret))
        for name, value in named:
            why = weakness(value.encode()) if value else None
            if not value:
                problems.append(f"{name} is missing")
            elif why is not None:
                problems.append(f"{name} is weak ({why}); generate one with {GENERATE_HINT}")
        key_weakness = weakness(enc_key, min_length=32) if enc_key else None
        if not enc_text:
            problems.append("SERVICE_ENCRYPTION_KEY is missing")
        elif key_weakness is not None:
            problems.append(
                f"SERVICE_ENCRYPTION_KEY is weak ({key_weakness}); generate one with "
                "python -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())'"
            )
        if problems:
            reader.errors.append(
                "SERVICE_ENV=production refuses to start without strong secrets: "
                + ", ".join(problems)
            )
        return {
            "jwt_secret": jwt_secret,
            "api_key_hmac_secret": hmac_secret.encode(),
            "encryption_key": enc_key,
        }

    generated: list[str] = []
    stored: dict[str, str] = {}
    if not (jwt_secret and hmac_secret and enc_text):
        stored = _development_secrets(settings.data_dir)
    if not jwt_secret:
        jwt_secret = stored["jwt_secret"]
        generated.append("JWT_SECRET")
    if not hmac_secret:
        hmac_secret = stored["api_key_hmac_secret"]
        generated.append("SERVICE_API_KEY_HMAC_SECRET")
    if not enc_text:
        enc_key = decode_encryption_key(stored["encryption_key"])
        generated.append("SERVICE_ENCRYPTION_KEY")
    return {
        "jwt_secret": jwt_secret,
        "api_key_hmac_secret": hmac_secret.encode(),
        "encryption_key": enc_key,
        "generated_secrets": tuple(generated),
    }


def listen_address(env: Mapping[str, str]) -> tuple[str, int, int] | None:
    """(HOST, PORT, WORKERS) as Settings.from_env reads them, read alone so that `serve`
    can find a taken port before anything is written (DATA_DIR/secrets.json); None when
    they are invalid (Settings.from_env then says why)."""
    reader = EnvironmentReader(env)
    table = options_of(Settings)
    values = read_options(
        reader, {n: table[n] for n in ("host", "port", "workers")}, production=False
    )
    if reader.errors:
        return None
    read = Settings(**values)  # type: ignore[arg-type]
    return read.host, read.port, read.workers


def _development_secrets(data_dir: Path) -> dict[str, str]:
    """Read DATA_DIR/secrets.json, creating it (mode 0600) on first use."""
    path = data_dir / SECRETS_FILE
    if path.exists():
        loaded = json.loads(path.read_text())
        if (
            isinstance(loaded, dict)
            and {
                "jwt_secret",
                "api_key_hmac_secret",
                "encryption_key",
            }
            <= loaded.keys()
        ):
            return {k: str(v) for k, v in loaded.items()}
    data_dir.mkdir(parents=True, exist_ok=True)
    values = {
        "jwt_secret": secrets.token_urlsafe(48),
        "api_key_hmac_secret": secrets.token_urlsafe(48),
        "encryption_key": base64.b64encode(secrets.token_bytes(32)).decode(),
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(values, handle, indent=2)
    return values
