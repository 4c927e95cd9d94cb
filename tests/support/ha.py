"""The documented high-availability topology, built from the package registries for a
test: etcd (Debian's etcd-server), three Patroni nodes (Patroni from PyPI, the `ha`
extra) running PostgreSQL as the unprivileged `postgres` user, HAProxy (Debian) in front
of the nodes checking Patroni's `GET /primary`, and, in front of the service processes,
checking `GET /ready/reads`. Every port comes from one band (PORTS) on 127.0.0.1.

`skip_reason()` says what is missing (a binary, Patroni, the user to run PostgreSQL
as), so the test skips with that reason instead of failing.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.request
from pathlib import Path

from tests.support.cluster import OS_USER, find_binaries

_BASE = int(os.environ.get("HA_TEST_PORT_BASE", "18500"))
PORTS = range(_BASE, _BASE + 100)
ETCD = Path("/usr/bin/etcd")
HAPROXY = Path("/usr/sbin/haproxy")
PATRONI = Path(sys.executable).parent / "patroni"
# Patroni runs as the nodes' user, who may not enter the folder of this interpreter
# (a pyenv build under /root): the system's Python of the same version runs it, with
# this environment's packages on its path.
SITE_PACKAGES = sysconfig.get_paths()["purelib"]
TTL = 20  # Patroni's minimum
LOOP_WAIT = 1
RETRY_TIMEOUT = 5


def skip_reason() -> str | None:
    binaries, why = find_binaries()
    if binaries is None:
        return why
    for path, package in ((ETCD, "etcd-server"), (HAPROXY, "haproxy")):
        if not path.exists():
            return f"{path} is missing (apt-get install {package}; .ci/run does)"
    if not PATRONI.exists():
        return "patroni is not installed (pip install -e '.[ha]'; make install does)"
    if node_python() is None:
        return f"no Python {PYTHON_VERSION} that the {OS_USER} user can run Patroni with"
    from tests.support.pgbouncer import skip_reason as pgbouncer_missing

    return pgbouncer_missing()


PYTHON_VERSION = f"{sys.version_info[0]}.{sys.version_info[1]}"


@functools.cache
def node_python() -> str | None:
    """An interpreter of this version the nodes' user can run: this one, or the system's."""
    for candidate in (sys.executable, f"/usr/bin/python{PYTHON_VERSION}"):
        probe = subprocess.run(
            _as_user([candidate, "-c", "import sys; print(sys.version_info[:2])"]),
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if probe.returncode == 0:
            return candidate
    return None


def _patroni(code: str, *args: str) -> list[str]:
    python = node_python()
    assert python is not None
    # -S: not the system's own packages (its pyOpenSSL does not match this cryptography).
    return _as_user(["env", f"PYTHONPATH={SITE_PACKAGES}", python, "-S", "-c", code, *args])


class Ports:
    """Free ports of the band, each handed out once."""

    def __init__(self) -> None:
        self._given: set[int] = set()

    def take(self) -> int:
        for port in PORTS:
            if port in self._given:
                continue
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
            self._given.add(port)
            return port
        raise RuntimeError(f"no free port in {PORTS}")


def _as_user(args: list[str]) -> list[str]:
    return ["runuser", "-u", OS_USER, "--", *args] if os.geteuid() == 0 else args


def wait_port(port: int, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} does not listen on {port}") from None
            time.sleep(0.1)


class Node:
    def __init__(self, name: str, folder: Path, ports: Ports, etcd_port: int) -> None:
        self.name = name
        self.folder = folder / name
        self.folder.mkdir(mode=0o700)
        self.pg_port, self.api_port = ports.take(), ports.take()
        self.data = self.folder / "data"
        self.config = self.folder / "patroni.yml"
        self.log = self.folder / "patroni.log"
        bin_dir, _ = find_binaries()
        hba = [
            "local all all trust",
            "host all all 127.0.0.1/32 trust",
            "host replication all 127.0.0.1/32 trust",
        ]
        config = {
            "scope": "tsvc",
            "name": name,
            "restapi": {
                "listen": f"127.0.0.1:{self.api_port}",
                "connect_address": f"127.0.0.1:{self.api_port}",
            },
            "etcd3": {"hosts": f"127.0.0.1:{etcd_port}"},
            "bootstrap": {
                "dcs": {
                    "ttl": TTL,
                    "loop_wait": LOOP_WAIT,
                    "retry_timeout": RETRY_TIMEOUT,
                    "maximum_lag_on_failover": 1048576,
                    "synchronous_mode": True,
                    "postgresql": {
                        "use_pg_rewind": False,
                        "parameters": {
                            "wal_level": "replica",
                            "hot_standby": "on",
                            "hot_standby_feedback": "on",
                            "max_connections": 100,
                            "max_wal_senders": 10,
                            "max_replication_slots": 10,
                            "wal_keep_size": "128MB",
                            "synchronous_commit": "on",
                            "fsync": "off",
                            "full_page_writes": "off",
                            "shared_buffers": "32MB",
                            "wal_receiver_status_interval": "1s",
                        },
                    },
                },
                "initdb": [{"encoding": "UTF8"}, {"locale": "C"}, "no-sync"],
                "pg_hba": hba,
            },
            "postgresql": {
                "listen": f"127.0.0.1:{self.pg_port}",
                "connect_address": f"127.0.0.1:{self.pg_port}",
                "data_dir": str(self.data),
                "bin_dir": str(bin_dir),
                "pgpass": str(self.folder / "pgpass"),
                "authentication": {
                    "superuser": {"username": "postgres"},
                    "replication": {"username": "postgres"},
                },
                "parameters": {"unix_socket_directories": str(self.folder)},
                "pg_hba": hba,
                "basebackup": [{"checkpoint": "fast"}],
            },
        }
        # JSON is YAML: no YAML writer needed.
        self.config.write_text(json.dumps(config, indent=1))
        if os.geteuid() == 0:
            for path in (self.folder, self.config):
                shutil.chown(path, user=OS_USER)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                _patroni("from patroni.__main__ import main; main()", str(self.config)),
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.pg_port}/postgres"

    def api(self, path: str) -> tuple[int, dict[str, object]]:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.api_port}{path}", timeout=2
            ) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")
        except OSError:
            return 0, {}

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None

    def kill_postmaster(self) -> None:
        pid = self.postmaster_pid()
        assert pid is not None, f"{self.name} has no postmaster"
        os.kill(pid, signal.SIGKILL)

    def lose(self) -> None:
        """The host is gone: Patroni and PostgreSQL killed at once, nothing restarts."""
        assert self.proc is not None
        pid = self.postmaster_pid()
        os.killpg(self.proc.pid, signal.SIGKILL)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(os.getpgid(pid), signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        pid = self.postmaster_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(os.getpgid(pid), signal.SIGKILL)


class Etcd:
    def __init__(self, folder: Path, ports: Ports) -> None:
        self.port, peer = ports.take(), ports.take()
        self.folder = folder / "etcd"
        self.log = folder / "etcd.log"
        url, peer_url = f"http://127.0.0.1:{self.port}", f"http://127.0.0.1:{peer}"
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    str(ETCD), "--name", "e1", "--data-dir", str(self.folder),
                    "--listen-client-urls", url, "--advertise-client-urls", url,
                    "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                    "--initial-cluster", f"e1={peer_url}", "--unsafe-no-fsync",
                ],
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        wait_port(self.port, 30, "etcd")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


class HaProxy:
    """One listener to the current primary (Patroni's GET /primary) and one to the
    service processes (GET /ready/reads): the example's haproxy.cfg in small."""

    def __init__(self, folder: Path, ports: Ports, nodes: list[Node]) -> None:
        self.pg_port, self.http_port = ports.take(), ports.take()
        self.folder = folder
        self.config = folder / "haproxy.cfg"
        self.nodes = nodes
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, services: list[int]) -> None:
        pg = "\n".join(
            f"    server {n.name} 127.0.0.1:{n.pg_port} check port {n.api_port}" for n in self.nodes
        )
        http = "\n".join(f"    server s{i} 127.0.0.1:{p} check" for i, p in enumerate(services))
        self.config.write_text(
            HAPROXY_CONFIG.format(pg_port=self.pg_port, http_port=self.http_port)
            .replace("@PG_SERVERS@", pg)
            .replace("@HTTP_SERVERS@", http)
        )
        with (self.folder / "haproxy.log").open("ab") as out:
            self.proc = subprocess.Popen(
                [str(HAPROXY), "-f", str(self.config), "-db"],
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        wait_port(self.http_port, 20, "haproxy")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)


HAPROXY_CONFIG = """
global
    maxconn 2000

defaults
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout check 2s
    retries 2

listen postgres_primary
    bind 127.0.0.1:{pg_port}
    mode tcp
    option httpchk GET /primary
    http-check expect status 200
    default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
@PG_SERVERS@

listen service
    bind 127.0.0.1:{http_port}
    mode http
    option httpchk GET /ready/reads
    http-check expect status 200
    option redispatch
    retry-on conn-failure empty-response
    default-server inter 500ms fall 2 rise 1
@HTTP_SERVERS@
"""


def make_folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="tsvc-ha-"))
    os.chmod(folder, 0o755)  # noqa: S103 - the nodes' user must enter it
    return folder


def leader_of(nodes: list[Node]) -> Node | None:
    for node in nodes:
        status, _ = node.api("/primary")
        if status == 200:
            return node
    return None


def patronictl(node: Node, *args: str) -> str:
    done = subprocess.run(
        _patroni("from patroni.ctl import ctl; ctl()", "-c", str(node.config), *args),
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"patronictl {args}: {done.stdout}{done.stderr}")
    return done.stdout
