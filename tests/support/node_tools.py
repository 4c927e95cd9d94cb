"""The npm tools of tools/node (openapi-typescript, tsc, Redocly, Spectral), installed with
`npm ci` from the committed lock file into .data/node-tools/<lock hash> (ignored by git,
kept between runs) and run from there. Tests skip, saying why, without node and npm."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.processes import REPO_ROOT

SOURCE = REPO_ROOT / "tools" / "node"
# Quiet, and nothing sent anywhere: no update checks, no usage reports.
NODE_ENV = {
    **os.environ,
    "REDOCLY_TELEMETRY": "off",
    "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true",
    "NO_UPDATE_NOTIFIER": "1",
    "NPM_CONFIG_UPDATE_NOTIFIER": "false",
    "NO_COLOR": "1",
    "FORCE_COLOR": "0",
}
_NETWORK = ("ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "ECONNREFUSED", "ECONNRESET")


def node_tools() -> Path:
    """The folder holding node_modules/.bin of tools/node, installed when missing."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed (Debian: apt-get install nodejs npm)")
    lock = (SOURCE / "package-lock.json").read_bytes()
    digest = hashlib.sha256(lock + (SOURCE / "package.json").read_bytes()).hexdigest()[:16]
    target = REPO_ROOT / ".data" / "node-tools" / digest
    if (target / ".installed").exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(SOURCE / name, target / name)
    result = subprocess.run(
        ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=target, env=NODE_ENV, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    if result.returncode != 0:
        if any(code in output for code in _NETWORK):
            pytest.skip(f"the npm registry cannot be reached: {output[-300:]}")
        raise AssertionError(f"npm ci failed:\n{output}")
    (target / ".installed").touch()
    return target


def run_tool(tools: Path, name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run node_modules/.bin/<name> with these arguments; the caller judges the result."""
    return subprocess.run(
        [str(tools / "node_modules" / ".bin" / name), *args],
        cwd=cwd, env=NODE_ENV, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
