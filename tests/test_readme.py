"""The README walkthrough, pasted as a reader pastes it.

A service is started the way `make run` starts it (the recipe `make -n run` prints, in a
project folder of its own: embedded PostgreSQL under ./.data, a free port). Every `sh`
block between the walkthrough markers then runs, in order, in one fresh `bash` whose
environment holds only PATH, HOME and the locale: nothing the README does not set
itself. The only edits are the ones a reader makes: the key the service printed, and the
ports. A comment `# => TEXT` is everything the command before it prints (stdout and
stderr, as a terminal shows both); a command without one must print nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import (
    REPO_ROOT,
    START_TIMEOUT_SECONDS,
    STOP_TIMEOUT_SECONDS,
    development_key,
    free_port,
)

README = REPO_ROOT / "README.md"
START = "<!-- walkthrough"
END = "<!-- /walkthrough -->"
_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.DOTALL | re.MULTILINE)
_EXPECT = re.compile(r"\s*#\s*=>\s?(.*?)\s*$")
_MARK = re.compile(r"^@@@ (\d+)$\n", re.MULTILINE)
# What a reader's new terminal has: a system PATH, a home, a locale. No .venv/bin.
READER_PATH = "/usr/local/bin:/usr/bin:/bin"


def walkthrough_blocks() -> list[str]:
    text = README.read_text()
    assert text.count(START) == 1, "one walkthrough, marked"
    assert text.count(END) == 1, "one walkthrough, marked"
    section = text[text.index(START) : text.index(END)]
    return _BLOCK.findall(section)


def reader_edits(text: str, edits: dict[str, str]) -> str:
    """The lines a reader changes: `export NAME=value  # ...` gets the reader's value."""
    for name, value in edits.items():
        line = re.compile(rf"^export {name}=\S*", re.MULTILINE)
        assert len(line.findall(text)) == 1, f"the walkthrough sets {name} once"
        text = line.sub(f"export {name}={value}", text)
    return text


def instrumented(blocks: list[str]) -> tuple[str, list[str]]:
    """The blocks as one script that prints `@@@ n` after the command of the n-th
    `# =>` comment, and the texts those comments expect."""
    lines: list[str] = []
    expected: list[str] = []
    for block in blocks:
        for line in block.splitlines():
            found = _EXPECT.search(line)
            if found is None:
                lines.append(line)
                continue
            command = line[: found.start()]
            if command.strip():
                lines.append(command)
            lines.append(f"echo '@@@ {len(expected)}'")
            expected.append(found.group(1))
        lines.append(f"echo '@@@ {len(expected)}'")  # whatever a block prints unannounced
        expected.append("")
    return "\n".join(lines) + "\n", expected


def printed_by_each(output: str) -> list[str]:
    """What came before each marker, with its trailing newline."""
    texts: list[str] = []
    position = 0
    for mark in _MARK.finditer(output):
        assert int(mark.group(1)) == len(texts), output
        texts.append(output[position : mark.start()].rstrip("\n"))
        position = mark.end()
    assert output[position:] == "", f"printed after the last block:\n{output[position:]}"
    return texts


def make_run_command() -> str:
    """The command `make run` runs, with this test's virtual environment."""
    result = subprocess.run(
        ["make", "-s", "-n", "-o", "install", "run", f"VENV={sys.prefix}"],
        cwd=REPO_ROOT, capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    [command] = result.stdout.strip().splitlines()
    return command


@pytest.fixture
def project() -> Iterator[Path]:
    """A project folder of the reader's: its own ./.data, the installed .venv. Not under
    pytest's tmp_path: that is 0700 for root, and the embedded server runs as its own
    system user, which must reach its data directory."""
    folder = Path(tempfile.mkdtemp(prefix="tsvc-readme-"))
    (folder / ".venv").symlink_to(sys.prefix)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _reader_env(**extra: str) -> dict[str, str]:
    home = os.environ.get("HOME", "/root")
    return {"PATH": READER_PATH, "HOME": home, "LANG": "C.UTF-8", **extra}


def _wait_for_key(proc: subprocess.Popen[bytes], log: Path, port: int) -> str:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1):
                break
        except OSError:
            time.sleep(0.1)
    else:
        raise AssertionError(f"make run did not become ready:\n{log.read_text()[-4000:]}")
    # Its stdout is a file, not a terminal: the key is in ./.data (made before the first
    # answer), only its path in the log.
    return development_key(log.read_text(), log.parent / ".data")


def test_the_walkthrough_has_its_steps() -> None:
    blocks = walkthrough_blocks()
    assert len(blocks) >= 8
    text = "\n".join(blocks)
    for step in ("/api-keys", "/tenants", "/config/theme", '"locked": true', "/context",
                 ".venv/bin/tenant-service", "python3 -c", "/webhooks"):  # fmt: skip
        assert step in text, step
    script, expected = instrumented(blocks)
    assert len([e for e in expected if e]) >= 15
    assert "tenant-service" in script


def test_the_walkthrough_works_as_pasted(project: Path) -> None:
    for tool in ("bash", "curl", "jq", "make", "python3"):
        assert shutil.which(tool, path=READER_PATH), f"the walkthrough needs {tool}"
    port, hook_port = free_port(), free_port()
    log = project / "make-run.log"
    with log.open("w") as out:
        # `make run` as a reader starts it; HOST keeps this test's service on loopback.
        service = subprocess.Popen(
            ["bash", "-c", f"exec env {make_run_command()}"],
            env=_reader_env(PORT=str(port), HOST="127.0.0.1"),
            cwd=project, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        key = _wait_for_key(service, log, port)
        script, expected = instrumented(walkthrough_blocks())
        script = reader_edits(
            script,
            {"KEY": key, "API": f"http://localhost:{port}/api/v1", "HOOK_PORT": str(hook_port)},
        )
        pasted = project / "pasted.sh"  # a file, so no command can read the script as input
        pasted.write_text(script)
        result = subprocess.run(
            ["bash", str(pasted)], env=_reader_env(), cwd=project, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180,
            check=False,
        )  # fmt: skip
    finally:
        service.send_signal(signal.SIGTERM)
        try:
            code = service.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            service.kill()
            code = service.wait(10)
    assert result.returncode == 0, result.stdout
    assert printed_by_each(result.stdout) == expected
    assert code == 0, log.read_text()[-4000:]
    assert not (project / "delivery.txt").exists()


def test_the_instrumentation_compares_whole_outputs() -> None:
    script, expected = instrumented(["echo a b   # => a b\necho c\n  # => c\ntrue"])
    assert expected == ["a b", "c", ""]
    result = subprocess.run(["bash"], input=script, capture_output=True, text=True, check=True)
    assert printed_by_each(result.stdout) == expected
    # Anything more than the comment shows, or less, is a difference.
    noisy, _ = instrumented(["echo a b; echo extra   # => a b"])
    out = subprocess.run(["bash"], input=noisy, capture_output=True, text=True, check=True)
    assert printed_by_each(out.stdout) == ["a b\nextra", ""]


@pytest.mark.parametrize("marker", [START, END])
def test_markers_are_not_inside_a_code_block(marker: str) -> None:
    before = README.read_text().split(marker)[0]
    assert before.count("```") % 2 == 0


def test_the_readme_starts_with_make_run_and_make_test() -> None:
    text = README.read_text()
    first_block = _BLOCK.findall(text)[0]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()]
    assert commands[:2] == ["make run", "make test"]
    assert "PORT=" in text[: text.index(START)], "the README says how to change the port"
