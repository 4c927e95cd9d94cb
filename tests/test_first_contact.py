"""What a new user meets first: GET / says where the console and the interface
description are; `make help` lists the targets."""

from __future__ import annotations

import subprocess

from tests.conftest import JWT_SECRET
from tests.support.keys import bearer, make_token
from tests.support.processes import REPO_ROOT

TENANT = "01a20214-0000-7000-8000-0000000000aa"


async def test_the_root_points_at_the_console_and_the_openapi_document(client) -> None:
    resp = await client.get("/")
    assert resp.status == 200
    assert await resp.json() == {
        "service": "tenant-hierarchy-service",
        "console": "/console",
        "openapi": "/api/v1/openapi.json",
        "health": "/health",
        "documentation": (
            "docs/api.md in the repository; the OpenAPI document describes every endpoint"
        ),
    }
    for target in ("/console", "/api/v1/openapi.json", "/health"):
        assert (await client.get(target)).status == 200, target


def test_make_help_lists_the_targets() -> None:
    result = subprocess.run(
        ["make", "--no-print-directory", "help"], cwd=REPO_ROOT, capture_output=True,
        text=True, check=True, timeout=30,
    )  # fmt: skip
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Targets")
    listed = [line.split()[1] for line in lines[1:]]
    for target in ("run", "test", "unit", "lint", "typecheck", "migrate", "bench", "clean"):
        assert target in listed, target
    # `make` alone is `make help`: it neither installs nor starts anything.
    bare = subprocess.run(
        ["make", "--no-print-directory"], cwd=REPO_ROOT, capture_output=True, text=True,
        check=True, timeout=30,
    )  # fmt: skip
    assert bare.stdout == result.stdout


async def test_me_names_the_calling_key_without_its_text(client, admin) -> None:
    resp = await client.post(
        "/api/v1/api-keys",
        json={"name": "console user", "scopes": ["read", "write"]},
        headers=admin,
    )
    created = await resp.json()
    assert resp.status == 201, created
    resp = await client.get("/api/v1/me", headers={"X-API-Key": created["plaintext_key"]})
    body = await resp.json()
    assert resp.status == 200, body
    assert body == {
        "kind": "api_key",
        "id": created["id"],
        "name": "console user",
        "prefix": created["plaintext_key"][:12],
        "environment": "test",
        "scopes": ["read", "write"],
        "tenant_id": None,
    }
    assert created["plaintext_key"] not in await resp.text()
    assert (await client.get("/api/v1/me")).status == 401


async def test_me_shows_a_tokens_subject_and_subtree(client) -> None:
    token = make_token(JWT_SECRET, sub="user-7", scopes=["read"], tenant_id=TENANT)
    resp = await client.get("/api/v1/me", headers=bearer(token))
    body = await resp.json()
    assert resp.status == 200, body
    assert body == {
        "kind": "jwt", "id": "user-7", "name": None, "prefix": None, "environment": None,
        "scopes": ["read"], "tenant_id": TENANT,
    }  # fmt: skip
