"""Debian's PgBouncer, started by a test in front of a server of its own, in transaction
pooling mode. Like PostgreSQL it will not run as root: it runs as the `postgres` user."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.support.cluster import OS_USER
from tests.support.processes import free_port

BINARY = Path("/usr/sbin/pgbouncer")


def skip_reason() -> str | None:
    if not BINARY.exists() and shutil.which("pgbouncer") is None:
        return "pgbouncer is not installed (apt-get install pgbouncer; .ci/run does)"
    return None


def version() -> str:
    binary = str(BINARY) if BINARY.exists() else "pgbouncer"
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()[0]


class PgBouncer:
    def __init__(
        self,
        server_port: int,
        *,
        pool_size: int = 4,
        settings: dict[str, str] | None = None,
        port: int | None = None,
    ) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="tsvc-pgbouncer-"))
        self.port = port or free_port()
        (self.folder / "users.txt").write_text('"postgres" ""\n')
        (self.folder / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host=127.0.0.1 port={server_port}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\n"
            f"unix_socket_dir = {self.folder}\n"
            "auth_type = trust\n"
            f"auth_file = {self.folder / 'users.txt'}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {pool_size}\n"
            "max_client_conn = 200\n"
            # asyncpg sends no other startup parameter when DATABASE_PGBOUNCER is set.
            "ignore_startup_parameters = extra_float_digits\n"
            f"logfile = {self.folder / 'pgbouncer.log'}\n"
            + "".join(f"{name} = {value}\n" for name, value in (settings or {}).items())
        )
        if os.geteuid() == 0:
            for path in (self.folder, *self.folder.iterdir()):
                shutil.chown(path, user=OS_USER)
        binary = str(BINARY) if BINARY.exists() else "pgbouncer"
        command = [binary, str(self.folder / "pgbouncer.ini")]
        if os.geteuid() == 0:
            command = ["runuser", "-u", OS_USER, "--", *command]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self._wait_listening()

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    log = (self.folder / "pgbouncer.log").read_text(errors="replace")
                    raise RuntimeError(f"pgbouncer did not start: {log[-500:]}") from None
                time.sleep(0.05)

    def dsn_for(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.folder, ignore_errors=True)
