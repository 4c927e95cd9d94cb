"""Headless Chromium for the console tests: Debian's browser driven by Playwright.

Playwright never downloads a browser here: it launches the system Chromium by its path.
Without Playwright or Chromium the browser tests skip with the reason below.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

# Flags that keep a headless Chromium quiet and local: no network of its own, no
# updates, no sync, no first-run work (Playwright adds --headless and a fresh profile).
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def chromium_path() -> str | None:
    """CHROMIUM_PATH when set, else Debian's /usr/bin/chromium, else one on PATH."""
    configured = os.environ.get("CHROMIUM_PATH")
    if configured:
        return configured if Path(configured).is_file() else None
    for candidate in (
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def skip_reason() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "browser tests need Playwright: pip install -e '.[dev]'"
    if chromium_path() is None:
        return (
            "browser tests need Chromium: apt-get install chromium "
            "(or set CHROMIUM_PATH to a Chromium binary)"
        )
    return None


def screenshot_dir(default: Path) -> Path:
    """docs/screenshots when UPDATE_SCREENSHOTS=1 (to refresh the committed pictures),
    else a temporary folder, so a test run leaves the work tree as it was."""
    if os.environ.get("UPDATE_SCREENSHOTS") == "1":
        target = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
    else:
        target = default
    target.mkdir(parents=True, exist_ok=True)
    return target
