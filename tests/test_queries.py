"""The named-query loader: every name the code uses exists, every query is used."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.db.queries import Queries, QueryFileError, parse_query_file, sql_root
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
    (tmp_path / "a.sql").write_text("-- name: get_thing\n-- One thing.\nSELECT 1;\n")
    (tmp_path / "b.sql").write_text("-- name: get_thing\n-- Another.\nSELECT 2;\n")
    with pytest.raises(QueryFileError, match="get_thing"):
        Queries.load(tmp_path)


def test_a_missing_description_or_body_fails() -> None:
    with pytest.raises(QueryFileError, match="description"):
        parse_query_file("-- name: get_thing\nSELECT 1;\n", "x.sql")
    with pytest.raises(QueryFileError, match="no SQL"):
        parse_query_file("-- name: get_thing\n-- Describe.\n\n", "x.sql")


def test_an_unknown_name_fails_when_the_repository_is_built(tmp_path: Path) -> None:
    (tmp_path / "a.sql").write_text("-- name: get_thing\n-- One thing.\nSELECT 1;\n")
    with pytest.raises(QueryFileError, match="no query named"):
        Repositories.build(Queries.load(tmp_path))


def test_parsing_keeps_text_and_strips_the_semicolon() -> None:
    [query] = parse_query_file(
        "-- header comment\n\n-- name: list_things\n-- All things,\n-- in order.\n"
        "SELECT *\nFROM things;\n",
        "t.sql",
    )
    assert query.name == "list_things"
    assert query.description == "All things, in order."
    assert query.sql == "SELECT *\nFROM things"


def test_sql_root_is_the_repository_sql_folder() -> None:
    assert (sql_root() / "queries" / "tenants.sql").is_file()
