"""The README walkthrough, run: every `sh` block between the walkthrough markers, in
order, in one bash, against a live service with the key that service printed. A
comment `# => TEXT` in a block is what the commands print: the output must show each
one, in order. A block added to the walkthrough is simply run too."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.conftest import base_env
from tests.support.processes import KEY_PATTERN, REPO_ROOT, ServiceProcess

README = REPO_ROOT / "README.md"
START = "<!-- walkthrough"
END = "<!-- /walkthrough -->"
_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.DOTALL | re.MULTILINE)
_EXPECT = re.compile(r"#\s*=>\s*(.+?)\s*$", re.MULTILINE)
# Lines a reader edits, set by the test instead: `export NAME=...` for these names.
SET_BY_TEST = ("KEY", "API", "HOOK_URL")


class Receiver(BaseHTTPRequestHandler):
    """A webhook receiver on loopback: records what arrives, answers 204."""

    received: ClassVar[list[tuple[str, dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.received.append((self.path, dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


def walkthrough_blocks() -> list[str]:
    text = README.read_text()
    assert text.count(START) == 1, "one walkthrough, marked"
    assert text.count(END) == 1, "one walkthrough, marked"
    section = text[text.index(START) : text.index(END)]
    return _BLOCK.findall(section)


def script_for(blocks: list[str], values: dict[str, str]) -> str:
    body = "\n".join(f"{block}\necho '--- block {i} done'" for i, block in enumerate(blocks))
    for name, value in values.items():
        line = re.compile(rf"^export {name}=.*$", re.MULTILINE)
        assert len(line.findall(body)) == 1, f"the walkthrough sets {name} once"
        body = line.sub(f"export {name}={value}", body)
    return "set -euo pipefail\n" + body + "\n"


def test_the_walkthrough_has_its_steps() -> None:
    blocks = walkthrough_blocks()
    assert len(blocks) >= 6
    text = "\n".join(blocks)
    for step in ("/api-keys", "/tenants", "/config/theme", '"locked": true', "/context",
                 "/webhooks"):  # fmt: skip
        assert step in text, step
    assert len(_EXPECT.findall(text)) >= 10


def test_the_walkthrough_runs_against_a_live_service(fresh_db_url: str, tmp_path: Path) -> None:
    for tool in ("bash", "curl", "jq"):
        assert shutil.which(tool), f"the walkthrough needs {tool}"
    bin_dir = str(Path(sys.executable).parent)  # tenant-service lives beside python
    env = {
        # The receiver is on loopback, which webhooks may reach only when told so.
        **base_env(fresh_db_url, tmp_path, LOG_LEVEL="warning", WEBHOOK_ALLOW_HTTP="true",
                   WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32"),
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
    }  # fmt: skip
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    Receiver.received.clear()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    service = ServiceProcess(env, tmp_path, cwd=tmp_path)
    try:
        service.wait_ready()
        printed = KEY_PATTERN.findall(service.output())
        assert len(printed) == 1, "the service prints its development key on a fresh database"
        blocks = walkthrough_blocks()
        hook_url = f"http://127.0.0.1:{receiver.server_address[1]}/tenant-events"
        values = {"KEY": printed[0], "API": f"{service.url}/api/v1", "HOOK_URL": hook_url}
        result = subprocess.run(
            ["bash", "-c", script_for(blocks, values)], env=env, cwd=tmp_path,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while not Receiver.received and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        receiver.shutdown()
        receiver.server_close()
        assert service.stop() == 0, service.output()[-4000:]
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    for i in range(len(blocks)):
        assert f"--- block {i} done" in result.stdout, result.stdout
    position = 0
    for expected in _EXPECT.findall("\n".join(blocks)):
        found = result.stdout.find(expected, position)
        assert found >= 0, f"expected {expected!r} after:\n{result.stdout[position:]}"
        position = found + len(expected)
    # The subscribed receiver got the signed delivery of the config change.
    assert Receiver.received, "no delivery reached the receiver"
    path, headers, body = Receiver.received[0]
    assert path == "/tenant-events"
    assert headers["X-Service-Event"] == "config.updated"
    assert headers["X-Service-Signature"].startswith("sha256=")
    assert json.loads(body)["data"]["key"] == "currency"


@pytest.mark.parametrize("marker", [START, END])
def test_markers_are_not_inside_a_code_block(marker: str) -> None:
    before = README.read_text().split(marker)[0]
    assert before.count("```") % 2 == 0
