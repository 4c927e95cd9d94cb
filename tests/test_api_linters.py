"""Redocly and Spectral, each with its own defaults (Redocly's `recommended` rules,
Spectral's `spectral:oas` ruleset), find no error in the served document. Their warnings
are printed (pytest -s shows them) and bounded, so a new kind of warning is noticed."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from aiohttp.test_utils import TestClient

from tests.support.node_tools import node_tools, run_tool

# The one judgement left: operation-4xx-response, allowed for the public operations that
# answer no 4xx of their own (the probes, /console, the document), counted from the
# document itself (`_public_without_4xx`).
SPECTRAL_WARNINGS_AT_MOST: dict[str, int] = {}


async def _document(client: TestClient, folder: Path) -> Path:
    resp = await client.get("/api/v1/openapi.json")
    assert resp.status == 200
    path = folder / "openapi.json"
    path.write_bytes(await resp.read())
    return path


def _public_without_4xx(document: Path) -> int:
    """Operations needing no credentials whose responses list no 4xx status."""
    paths = json.loads(document.read_text())["paths"]
    return sum(
        1
        for item in paths.values()
        for method, operation in item.items()
        if method in ("get", "put", "post", "patch", "delete", "head")
        and operation.get("security") == []
        and not any(str(status).startswith("4") for status in operation["responses"])
    )


async def test_redocly_finds_no_error(client: TestClient, tmp_path: Path) -> None:
    tools = node_tools()
    document = await _document(client, tmp_path)
    result = run_tool(tools, "redocly", "lint", document.name, "--format", "json", cwd=tmp_path)
    report = json.loads(result.stdout)
    problems = Counter((p["severity"], p["ruleId"]) for p in report["problems"])
    print("redocly:", dict(problems))
    errors = {rule: n for (severity, rule), n in problems.items() if severity == "error"}
    assert errors == {}, [p for p in report["problems"] if p["severity"] == "error"][:5]
    warnings = {rule: n for (severity, rule), n in problems.items() if severity == "warn"}
    allowed = {"operation-4xx-response": _public_without_4xx(document)}
    assert all(n <= allowed.get(rule, 0) for rule, n in warnings.items()), (warnings, allowed)
    assert result.returncode == 0, result.stderr


async def test_spectral_finds_no_error(client: TestClient, tmp_path: Path) -> None:
    tools = node_tools()
    document = await _document(client, tmp_path)
    (tmp_path / ".spectral.yaml").write_text('extends: ["spectral:oas"]\n')
    result = run_tool(
        tools, "spectral", "lint", document.name, "--format", "json", "--quiet", cwd=tmp_path
    )
    # Spectral prints "No results with a severity of ..." instead of [] when clean.
    match = re.search(r"\[.*\]", result.stdout, re.DOTALL)
    report = json.loads(match.group(0)) if match else []
    names = {0: "error", 1: "warn", 2: "info", 3: "hint"}
    problems = Counter((names[p["severity"]], p["code"]) for p in report)
    print("spectral:", dict(problems))
    errors = {rule: n for (severity, rule), n in problems.items() if severity == "error"}
    assert errors == {}, [p for p in report if p["severity"] == 0][:5]
    warnings = {rule: n for (severity, rule), n in problems.items() if severity == "warn"}
    assert all(n <= SPECTRAL_WARNINGS_AT_MOST.get(rule, 0) for rule, n in warnings.items()), (
        warnings
    )
