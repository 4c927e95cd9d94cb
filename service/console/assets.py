"""The console's static files, read once when the app is built and served from memory.

The folder is flat: a file is addressed by its name alone, so no request path can
reach anything outside it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

STATIC_DIR = Path(__file__).parent / "static"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
INDEX = "index.html"


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    content_type: str
    etag: str


class ConsoleAssets:
    def __init__(self, assets: dict[str, Asset]) -> None:
        self._assets = assets

    @classmethod
    def load(cls, directory: Path = STATIC_DIR) -> ConsoleAssets:
        assets: dict[str, Asset] = {}
        for path in sorted(directory.iterdir()):
            content_type = CONTENT_TYPES.get(path.suffix)
            if content_type is None or not path.is_file():
                continue
            body = path.read_bytes()
            digest = hashlib.blake2b(body, digest_size=16).hexdigest()
            assets[path.name] = Asset(body, content_type, f'"{digest}"')
        if INDEX not in assets:
            raise FileNotFoundError(f"the console has no {INDEX} in {directory}")
        return cls(assets)

    def get(self, name: str) -> Asset | None:
        return self._assets.get(name)

    def names(self) -> list[str]:
        return sorted(self._assets)
