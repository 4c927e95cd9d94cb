"""The settings of read replicas, PgBouncer and the direct connection (docs/scaling.md).

Read by Settings.from_env (service/settings/options.py) as one block of its fields.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from service.settings.reader import EnvironmentReader

DEFAULT_STATEMENT_CACHE_SIZE = 1024


def _is_postgres_url(url: str) -> bool:
    return urlsplit(url).scheme in ("postgres", "postgresql")


def database_settings(reader: EnvironmentReader) -> dict[str, object]:
    replicas = tuple(u.strip() for u in reader.text("DATABASE_REPLICA_URLS", "").split(","))
    replicas = tuple(u for u in replicas if u)
    for index, url in enumerate(replicas):
        if not _is_postgres_url(url):
            # Never echo the value: it may carry a password.
            reader.errors.append(
                f"DATABASE_REPLICA_URLS entry {index + 1} is not a postgresql:// URL"
            )
    listen_url = reader.optional("DATABASE_LISTEN_URL")
    if listen_url is not None and not _is_postgres_url(listen_url):
        reader.errors.append("DATABASE_LISTEN_URL is not a postgresql:// URL")
    pgbouncer = reader.boolean("DATABASE_PGBOUNCER", False)
    # PgBouncer before 1.21 (Debian 12 ships 1.18) loses prepared statements between
    # transactions: asyncpg's statement cache must be off. From 1.21 with
    # max_prepared_statements set, DATABASE_STATEMENT_CACHE_SIZE may be raised again.
    cache = reader.integer(
        "DATABASE_STATEMENT_CACHE_SIZE",
        0 if pgbouncer else DEFAULT_STATEMENT_CACHE_SIZE,
        0,
        100_000,
    )
    return {
        "database_replica_urls": replicas,
        "database_replica_max_lag_seconds": reader.number(
            "DATABASE_REPLICA_MAX_LAG_SECONDS", 5.0, 0.0, 86400
        ),
        "database_replica_check_seconds": reader.number(
            "DATABASE_REPLICA_CHECK_SECONDS", 1.0, 0.05, 60
        ),
        "database_listen_url": listen_url,
        "database_pgbouncer": pgbouncer,
        "database_statement_cache_size": cache,
        "db_lock_timeout_ms": reader.integer("DB_LOCK_TIMEOUT_MS", 2000, 0, 3_600_000),
        "db_writes_per_resource": reader.integer("DB_WRITES_PER_RESOURCE", 2, 1, 1000),
        "db_dead_connection_seconds": reader.number("DB_DEAD_CONNECTION_SECONDS", 10.0, 0, 3600),
    }
