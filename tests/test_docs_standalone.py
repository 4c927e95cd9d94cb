"""The project's documents stand alone: no link to, or citation of, files outside the
repository (a reader of a clone has only the clone), and the docs they name exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.processes import REPO_ROOT

OUTSIDE = re.compile(r"\.\./shared|DESIGN\.md|interface-spec", re.IGNORECASE)


def _documents() -> list[Path]:
    docs = sorted((REPO_ROOT / "docs").glob("*.md"))
    code = sorted((REPO_ROOT / "service").rglob("*.py"))
    return [REPO_ROOT / "README.md", REPO_ROOT / "bench" / "README.md", *docs, *code]


@pytest.mark.parametrize("path", _documents(), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_no_reference_leaves_the_repository(path: Path) -> None:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        assert not OUTSIDE.search(line), f"{path.relative_to(REPO_ROOT)}:{number}: {line}"


def test_every_document_the_readme_names_exists() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    named = set(re.findall(r"`?((?:docs|bench)/[\w./-]+\.(?:md|png))`?", readme))
    named |= set(re.findall(r"\]\(((?:docs|bench)/[^)#]+)\)", readme))
    assert "docs/api.md" in named
    missing = sorted(n for n in named if not (REPO_ROOT / n).exists())
    assert missing == []


def test_the_api_page_cites_the_openapi_document() -> None:
    text = (REPO_ROOT / "docs" / "api.md").read_text()
    assert "/api/v1/openapi.json" in text
    for topic in ("## Errors", "## Tenants", "Pagination", "ETag", "## Idempotency",
                  "inheritance", "## Webhooks"):  # fmt: skip
        assert topic in text, topic
