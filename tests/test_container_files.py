"""Dockerfile, .dockerignore and compose.yaml, checked by reading them (no Docker engine
runs here): what the image copies exists and is not ignored, the final stage is small and
unprivileged with a HEALTHCHECK, and compose wires the service to PostgreSQL and Redis."""

from __future__ import annotations

import fnmatch
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.processes import REPO_ROOT


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    joined, pending = [], ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    result = []
    for line in joined:
        word, _, rest = line.partition(" ")
        result.append((word.upper(), rest.strip()))
    return result


def stages(steps: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    found: list[list[tuple[str, str]]] = []
    for word, rest in steps:
        if word == "FROM":
            found.append([])
        if found:
            found[-1].append((word, rest))
    return found


def ignored(relative: str, patterns: list[str]) -> bool:
    parts = Path(relative).parts
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        for candidate in candidates:
            if fnmatch.fnmatch(candidate, pattern) or fnmatch.fnmatch(
                candidate, pattern.removeprefix("**/")
            ):
                return True
    return False


@pytest.fixture(scope="module")
def dockerfile() -> list[tuple[str, str]]:
    return instructions(REPO_ROOT / "Dockerfile")


@pytest.fixture(scope="module")
def ignore_patterns() -> list[str]:
    lines = (REPO_ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_every_copy_source_exists_and_reaches_the_build_context(
    dockerfile: list[tuple[str, str]], ignore_patterns: list[str]
) -> None:
    copies = [shlex.split(rest) for word, rest in dockerfile if word == "COPY"]
    assert copies
    for args in copies:
        if any(a.startswith("--from=") for a in args):
            continue
        sources = [a for a in args if not a.startswith("--")][:-1]
        for source in sources:
            assert (REPO_ROOT / source).exists(), f"COPY {source}: no such file"
            assert not ignored(source, ignore_patterns), f"COPY {source} is in .dockerignore"
    # The wheel is built from pyproject.toml, which names README.md and carries sql/ along.
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert project["project"]["readme"] == "README.md"
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["force-include"] == {"sql": "service/_sql"}
    assert project["project"]["scripts"]["tenant-service"] == "service.cli:main"


def test_local_state_and_secrets_stay_out_of_the_context(ignore_patterns: list[str]) -> None:
    for path in (".git", ".venv", ".data", ".env", "tests", "service/__pycache__"):
        assert ignored(path, ignore_patterns), path


def test_the_final_stage_is_slim_unprivileged_and_checked(
    dockerfile: list[tuple[str, str]],
) -> None:
    build, final = stages(dockerfile)[0], stages(dockerfile)[-1]
    assert len(stages(dockerfile)) >= 2, "multi-stage"
    assert "slim" in (REPO_ROOT / "Dockerfile").read_text().split("PYTHON_IMAGE=")[1].split()[0]
    assert any(word == "RUN" and "pip wheel" in rest for word, rest in build)
    words = [word for word, _ in final]
    assert "COPY" not in words, "the final stage takes only the installed wheels"
    (user,) = [rest for word, rest in final if word == "USER"]
    # Numeric uid:gid (Kubernetes' runAsNonRoot can only verify a number), not root, and
    # the ids the stage creates its user and group with.
    uid, gid = re.fullmatch(r"(\d+):(\d+)", user).groups()  # type: ignore[union-attr]
    assert int(uid) != 0
    assert int(gid) != 0
    (setup,) = [rest for word, rest in final if word == "RUN" and "useradd" in rest]
    assert f"--uid {uid}" in setup
    assert f"--gid {gid}" in setup
    assert words.index("USER") < words.index("CMD")
    (healthcheck,) = [rest for word, rest in final if word == "HEALTHCHECK"]
    assert "/health" in healthcheck
    (cmd,) = [rest for word, rest in final if word == "CMD"]
    assert cmd == '["tenant-service", "serve"]'
    installs = [rest for word, rest in final if word == "RUN" and "pip install" in rest]
    assert installs
    assert all("--no-index" in rest for rest in installs), "nothing fetched in the final stage"
    env = " ".join(rest for word, rest in final if word == "ENV")
    assert re.search(r"\bSERVICE_ENV=production\b", env)
    assert re.search(r"\bPORT=8080\b", env)
    assert ("EXPOSE", "8080") in final


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((REPO_ROOT / "compose.yaml").read_text())
    return loaded


def test_compose_runs_the_service_with_postgresql_and_redis(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"service", "postgres", "redis"}
    service = services["service"]
    assert service["build"] == "."
    env = service["environment"]
    assert re.fullmatch(r"postgresql://tenant:\$\{[^}]+\}@postgres:5432/tenant_service",
                        env["DATABASE_URL"])  # fmt: skip
    assert env["REDIS_URL"].startswith("redis://redis:6379")
    assert service["depends_on"] == {
        "postgres": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
    }
    assert all(port.startswith("127.0.0.1:") for port in service["ports"])
    for name in ("postgres", "redis"):
        assert "healthcheck" in services[name]
    postgres_env = services["postgres"]["environment"]
    assert postgres_env["POSTGRES_DB"] == "tenant_service"
    assert postgres_env["POSTGRES_USER"] == "tenant"
    grace = int(str(service["stop_grace_period"]).removesuffix("s"))
    assert grace > 30, "longer than the default SHUTDOWN_TIMEOUT_SECONDS"
    assert set(compose["volumes"]) == {"data", "postgres"}


def test_compose_healthcheck_is_readiness(compose: dict[str, Any]) -> None:
    check = compose["services"]["service"]["healthcheck"]
    test = check["test"]
    assert test[0] == "CMD"
    assert test[1:3] == ["python", "-c"]
    program = test[3]
    assert "http://127.0.0.1:8080/ready" in program  # 8080: the port inside the container
    # urlopen raises on a 503 (not ready) and on no answer: the check fails either way.
    assert "urllib.request.urlopen(" in program
    assert "timeout=" in program
    compile(program, "healthcheck", "exec")
    assert int(check["retries"]) >= 1
    assert str(check["start_period"]).endswith("s")
