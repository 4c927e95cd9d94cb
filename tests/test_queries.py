"""The named-query loader: every name the code uses exists, every query is used."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from service.db.queries import (
    Executor,
    Queries,
    QueryFileError,
    QueryUsageError,
    parse_query_file,
    sql_root,
)
from service.db.repository import Repository
from service.embedded import AdminRepository
from service.repositories.registry import Repositories


def _all_repository_classes() -> set[type[Repository]]:
    found: set[type[Repository]] = set()
    pending = list(Repository.__subclasses__())
    while pending:
        cls = pending.pop()
        found.add(cls)
        pending.extend(cls.__subclasses__())
    return found


def test_every_name_the_code_uses_exists() -> None:
    queries = Queries.load()
    Repositories.build(queries)
    AdminRepository(queries)
    for cls in _all_repository_classes():
        missing = cls.query_names() - set(queries)
        assert not missing, f"{cls.__name__} uses undefined queries {missing}"


def test_every_query_is_used_by_some_repository() -> None:
    Repositories.build(Queries.load())  # imports every repository module
    used = set().union(*(cls.query_names() for cls in _all_repository_classes()))
    unused = set(Queries.load()) - used
    assert not unused, f"queries no repository runs: {sorted(unused)}"


def test_every_query_has_a_description_and_names_follow_verb_object() -> None:
    for query in Queries.load().values():
        assert query.description, query.name
        assert "_" in query.name, f"{query.name} is not verb_object"


def test_a_duplicate_name_across_files_fails(tmp_path: Path) -> None:
    (tmp_path / "a.sql").write_text("-- name: get_thing :value\n-- One thing.\nSELECT 1;\n")
    (tmp_path / "b.sql").write_text("-- name: get_thing :value\n-- Another.\nSELECT 2;\n")
    with pytest.raises(QueryFileError, match="get_thing"):
        Queries.load(tmp_path)


def test_a_missing_description_or_body_fails() -> None:
    with pytest.raises(QueryFileError, match="description"):
        parse_query_file("-- name: get_thing :value\nSELECT 1;\n", "x.sql")
    with pytest.raises(QueryFileError, match="no SQL"):
        parse_query_file("-- name: get_thing :exec\n-- Describe.\n\n", "x.sql")


def test_an_unknown_name_fails_when_the_repository_is_built(tmp_path: Path) -> None:
    (tmp_path / "a.sql").write_text("-- name: get_thing :value\n-- One thing.\nSELECT 1;\n")
    with pytest.raises(QueryFileError, match="no query named"):
        Repositories.build(Queries.load(tmp_path))


def test_parsing_keeps_text_and_strips_the_semicolon() -> None:
    [query] = parse_query_file(
        "-- header comment\n\n-- name: list_things :many\n-- All things,\n-- in order.\n"
        "SELECT *\nFROM things;\n",
        "t.sql",
    )
    assert query.name == "list_things"
    assert query.description == "All things, in order."
    assert query.sql == "SELECT *\nFROM things"
    assert query.shape == "many"


def test_sql_root_is_the_repository_sql_folder() -> None:
    assert (sql_root() / "queries" / "tenants.sql").is_file()


def test_named_parameters_compile_in_order_of_first_appearance() -> None:
    [query] = parse_query_file(
        "-- name: list_things :many\n-- Things.\n"
        "SELECT id, ':''not_a_param''' AS s, \"odd:'x'\" -- :'in_comment'\n"
        "FROM things WHERE tenant_id = :'tenant_id' AND (:'cursor_id'::uuid IS NULL\n"
        "  OR id > :'cursor_id') AND kind = ANY(:'kinds'::text[]) /* :'nor_here' */\n"
        "LIMIT :'page_size'::integer;\n",
        "t.sql",
    )
    assert query.shape == "many"
    assert query.params == ("tenant_id", "cursor_id", "kinds", "page_size")
    assert "tenant_id = $1 AND ($2::uuid IS NULL\n  OR id > $2)" in query.sql
    assert "ANY($3::text[])" in query.sql
    assert "LIMIT $4::integer" in query.sql
    assert "':''not_a_param'''" in query.sql
    assert "-- :'in_comment'" in query.sql
    assert "/* :'nor_here' */" in query.sql
    assert query.text.endswith("LIMIT :'page_size'::integer")
    assert query.args(page_size=5, kinds=[], cursor_id=None, tenant_id="t") == ["t", None, [], 5]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-- name: get_thing :row\n-- One.\nSELECT 1;\n", r"needs a shape.*\(not :row\)"),
        ("-- name: get_thing\n-- One.\nSELECT 1;\n", "needs a shape, one of :one, :value"),
        ("-- name: get thing :one\n-- One.\nSELECT 1;\n", "malformed header"),
        ("-- name: get_thing :one\n-- One.\nSELECT $1::int;\n", r"positional placeholder \$1"),
        ("-- name: get_thing :one\n-- One.\nSELECT :id::int;\n", "is not :'lower_snake_name'"),
        ("-- name: get_thing :one\n-- One.\nSELECT :'Id'::int;\n", "is not :'lower_snake_name'"),
    ],
)
def test_malformed_headers_and_placeholders_fail(text: str, message: str) -> None:
    with pytest.raises(QueryFileError, match=message):
        parse_query_file(text, "x.sql")


def test_casts_dollar_quotes_and_strings_are_not_parameters() -> None:
    [query] = parse_query_file(
        "-- name: run_thing :exec\n-- Run.\n"
        "DO $body$ BEGIN PERFORM $1; END $body$; SELECT 'a:b'::text, x::int\n",
        "x.sql",
    )
    assert query.params == ()
    assert "$body$ BEGIN PERFORM $1; END $body$" in query.sql


async def test_the_wrong_method_or_names_fail_before_any_round_trip() -> None:
    [query] = parse_query_file(
        "-- name: get_thing :one\n-- One.\nSELECT :'thing_id'::int AS id;\n", "x.sql"
    )
    conn = cast(Executor, object())  # never reached: the checks come first
    with pytest.raises(QueryUsageError, match=r"declared :one; run it with \.one\(\)"):
        await query.many(conn, thing_id=1)
    with pytest.raises(QueryUsageError, match=r"missing \['thing_id'\], unexpected \['id'\]"):
        await query.one(conn, id=1)
    with pytest.raises(QueryUsageError, match="missing"):
        query.args()
