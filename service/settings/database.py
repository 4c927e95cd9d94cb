"""The settings of read replicas, PgBouncer and the direct connection (docs/scaling.md).

Declared on Settings (service/settings/options.py) and read there with every other option;
this module checks the URLs and works out the statement cache's default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from service.settings.reader import EnvironmentReader
from service.settings.table import option_of

if TYPE_CHECKING:
    from service.settings.options import Settings

DEFAULT_STATEMENT_CACHE_SIZE = 1024


def _is_postgres_url(url: str) -> bool:
    return urlsplit(url).scheme in ("postgres", "postgresql")


def database_settings(reader: EnvironmentReader, settings: Settings) -> dict[str, object]:
    for index, url in enumerate(settings.database_replica_urls):
        if not _is_postgres_url(url):
            # Never echo the value: it may carry a password.
            reader.errors.append(
                f"DATABASE_REPLICA_URLS entry {index + 1} is not a postgresql:// URL"
            )
    listen_url = settings.database_listen_url
    if listen_url is not None and not _is_postgres_url(listen_url):
        reader.errors.append("DATABASE_LISTEN_URL is not a postgresql:// URL")
    # PgBouncer before 1.21 (Debian 12 ships 1.18) loses prepared statements between
    # transactions: asyncpg's statement cache must be off. From 1.21 with
    # max_prepared_statements set, DATABASE_STATEMENT_CACHE_SIZE may be raised again.
    cache = option_of(settings, "database_statement_cache_size")
    size = reader.integer(
        cache.env,
        0 if settings.database_pgbouncer else cache.default,
        int(cache.low),
        int(cache.high),
    )
    return {"database_statement_cache_size": size}
