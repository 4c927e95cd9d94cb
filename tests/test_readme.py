"""The README walkthrough, run: every `sh` block between the walkthrough markers, in
order, in one bash, against a live service with the key that service printed. A
comment `# => TEXT` in a block is what the commands print: the output must show each
one, in order. A block added to the walkthrough is simply run too."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import base_env
from tests.support.processes import KEY_PATTERN, REPO_ROOT, ServiceProcess

README = REPO_ROOT / "README.md"
START = "<!-- walkthrough"
END = "<!-- /walkthrough -->"
_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.DOTALL | re.MULTILINE)
_EXPECT = re.compile(r"#\s*=>\s*(.+?)\s*$", re.MULTILINE)
_KEY_LINE = re.compile(r"^export KEY=.*$", re.MULTILINE)
_API_LINE = re.compile(r"^export API=.*$", re.MULTILINE)


def walkthrough_blocks() -> list[str]:
    text = README.read_text()
    assert text.count(START) == 1, "one walkthrough, marked"
    assert text.count(END) == 1, "one walkthrough, marked"
    section = text[text.index(START) : text.index(END)]
    return _BLOCK.findall(section)


def script_for(blocks: list[str], key: str, api: str) -> str:
    body = "\n".join(f"{block}\necho '--- block {i} done'" for i, block in enumerate(blocks))
    assert len(_KEY_LINE.findall(body)) == 1, "the walkthrough sets KEY once"
    assert len(_API_LINE.findall(body)) == 1, "the walkthrough sets API once"
    body = _KEY_LINE.sub(f"export KEY={key}", body)
    body = _API_LINE.sub(f"export API={api}", body)
    return "set -euo pipefail\n" + body + "\n"


def test_the_walkthrough_has_its_steps() -> None:
    blocks = walkthrough_blocks()
    assert len(blocks) >= 6
    text = "\n".join(blocks)
    for step in ("/api-keys", "/tenants", "/config/theme", '"locked": true', "/context"):
        assert step in text, step
    assert len(_EXPECT.findall(text)) >= 10


def test_the_walkthrough_runs_against_a_live_service(fresh_db_url: str, tmp_path: Path) -> None:
    for tool in ("bash", "curl", "jq"):
        assert shutil.which(tool), f"the walkthrough needs {tool}"
    bin_dir = str(Path(sys.executable).parent)  # tenant-service lives beside python
    env = {
        **base_env(fresh_db_url, tmp_path, LOG_LEVEL="warning"),
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
    }
    service = ServiceProcess(env, tmp_path, cwd=tmp_path)
    try:
        service.wait_ready()
        printed = KEY_PATTERN.findall(service.output())
        assert len(printed) == 1, "the service prints its development key on a fresh database"
        blocks = walkthrough_blocks()
        script = script_for(blocks, printed[0], f"{service.url}/api/v1")
        result = subprocess.run(
            ["bash", "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
    finally:
        assert service.stop() == 0, service.output()[-4000:]
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    for i in range(len(blocks)):
        assert f"--- block {i} done" in result.stdout, result.stdout
    position = 0
    for expected in _EXPECT.findall("\n".join(blocks)):
        found = result.stdout.find(expected, position)
        assert found >= 0, f"expected {expected!r} after:\n{result.stdout[position:]}"
        position = found + len(expected)


@pytest.mark.parametrize("marker", [START, END])
def test_markers_are_not_inside_a_code_block(marker: str) -> None:
    before = README.read_text().split(marker)[0]
    assert before.count("```") % 2 == 0
