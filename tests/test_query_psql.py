"""The DBA promise (docs/sql.md): every named query runs in psql as it stands in its
file, after a `\\set` per parameter. psql 15 plans each one (EXPLAIN, nothing executes)
with a sample value of the type PostgreSQL infers for the parameter, and runs a few for
real against rows the service wrote."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from uuid import UUID

import pytest

from service.db.pool import connect
from service.db.queries import Queries, Query
from service.repositories.tenants import NewTenant, TenantsRepository

PSQL_15 = "/usr/lib/postgresql/15/bin/psql"
PSQL = PSQL_15 if os.access(PSQL_15, os.X_OK) else shutil.which("psql")
pytestmark = pytest.mark.skipif(PSQL is None, reason="psql is not installed")

# A value a DBA could \set for each parameter type (arrays as '{...}').
SAMPLES = {
    "uuid": "0190a6c4-0000-7000-8000-000000000001",
    "text": "x",
    "bytea": "x",
    "varchar": "x",
    "int2": "1",
    "int4": "1",
    "int8": "1",
    "float8": "1.5",
    "numeric": "1.5",
    "bool": "true",
    "json": "{}",
    "jsonb": "{}",
    "timestamptz": "2026-01-01 00:00:00+00",
}
EXPLAINABLE = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH")


def sample(type_name: str) -> str:
    if type_name.endswith("[]"):
        return "{}"
    return SAMPLES[type_name]


def psql(dsn: str, script: str) -> str:
    assert PSQL is not None
    done = subprocess.run(
        [PSQL, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", dsn],
        input=script,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr + done.stdout[-2000:]
    return done.stdout


def quoted(value: str) -> str:
    """A value for \\set: psql's own quoting (doubled quotes inside)."""
    return "'" + value.replace("'", "''") + "'"


def set_lines(params: dict[str, str]) -> str:
    return "".join(f"\\set {name} {quoted(value)}\n" for name, value in params.items())


@pytest.fixture(scope="module")
def queries() -> Queries:
    return Queries.load()


@pytest.fixture(scope="module")
def parameter_types(db_url: str, queries: Queries) -> dict[str, list[str]]:
    """What PostgreSQL infers for each query's parameters, from the compiled text."""

    async def infer() -> dict[str, list[str]]:
        conn = await connect(db_url)
        try:
            types = {}
            for query in queries.values():
                if query.text.lstrip().upper().startswith(EXPLAINABLE):
                    statement = await conn.prepare(query.sql)
                    types[query.name] = [t.name for t in statement.get_parameters()]
            return types
        finally:
            await conn.close()

    return asyncio.run(infer())


def test_every_query_plans_in_psql_after_set(
    db_url: str, queries: Queries, parameter_types: dict[str, list[str]]
) -> None:
    script = ["BEGIN;\n"]
    for name, types in sorted(parameter_types.items()):
        query = queries[name]
        assert len(types) == len(query.params), name
        values = {p: sample(t) for p, t in zip(query.params, types, strict=True)}
        script.append(f"\\echo {name}\n{set_lines(values)}EXPLAIN\n{query.text};\n")
    script.append("ROLLBACK;\n")
    out = psql(db_url, "".join(script))
    # DDL has no plan; those two take no parameters.
    assert set(queries) - set(parameter_types) == {
        "create_migrations_table",
        "create_service_database",
    }
    for name in parameter_types:
        assert f"{name}\n" in out


async def _tenant(db_url: str, name: str, slug: str) -> UUID:
    tenant_id = UUID("0190a6c4-0000-7000-8000-00000000a001")
    conn = await connect(db_url)
    try:
        async with conn.transaction():
            await TenantsRepository(Queries.load()).insert_tenants(
                conn,
                [
                    NewTenant(
                        id=tenant_id,
                        parent_id=None,
                        name=name,
                        slug=slug,
                        ancestry_path=f"/{tenant_id}",
                        depth=0,
                        metadata={"tier": "gold"},
                        isolation_strategy="SHARED_RLS",
                        region="default",
                    )
                ],
            )
    finally:
        await conn.close()
    return tenant_id


def _run(query: Query, values: dict[str, str], nulls: tuple[str, ...] = ()) -> str:
    """The query as a DBA pastes it: \\set lines, then the text; a NULL parameter is
    written NULL in place of its :'name' (psql has no NULL variable)."""
    text = query.text
    for name in nulls:
        text = text.replace(f":'{name}'", "NULL")
    return f"{set_lines(values)}{text};\n"


def test_a_dba_runs_queries_by_hand(db_url: str, queries: Queries) -> None:
    tenant_id = asyncio.run(_tenant(db_url, "O'Brien & Co", "obrien"))
    out = psql(
        db_url,
        _run(queries["get_tenant"], {"tenant_id": str(tenant_id)})
        + _run(queries["find_existing_slugs"], {"slugs": "{obrien,nobody}"})
        + _run(
            queries["list_tenants"],
            {"status_filter": "active", "page_size": "10"},
            nulls=("cursor_id",),
        )
        + _run(
            queries["search_tenants"],
            {
                "search_text": "o'brien",
                "roots_only": "true",
                "status_filter": "all",
                "page_size": "5",
            },
            nulls=("subtree_root_id", "parent_id", "cursor_id"),
        ),
    )
    rows = out.splitlines()
    assert rows[0].startswith(f"{tenant_id}||O'Brien & Co|obrien|/{tenant_id}|0|")
    assert rows[1] == "obrien"
    assert rows[2] == rows[0]
    assert rows[3] == rows[0]
    assert len(rows) == 4
