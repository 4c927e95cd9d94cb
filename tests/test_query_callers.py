"""Every named query's callers pass exactly its parameters, by keyword, through the method
its header declares; and every query is called somewhere.

Read from the source with `ast`, so a renamed parameter fails here, not on the first
request that runs it. Two call forms are resolved:
- in a class, `self._x.one(conn, a=..., b=...)` where `_x = NamedSql("name")`;
- anywhere, `<queries>["name"].one(conn, a=...)` (the bench and one-off callers).
`.one_as(Row, conn, a=...)` and `.many_as(Row, conn, a=...)` (each row as `Row(**row)`)
are checked as `.one` and `.many`. `.args(a=..., b=...)` (positional list for prepared
statements) is checked the same way, without a shape.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.sqlcompare import OPERATIONS, STRATEGIES
from bench.sqlfiles import bench_queries
from service.db.queries import SHAPES, Queries, Query

ROOT = Path(__file__).resolve().parent.parent
CALLER_DIRS = ("service", "bench")
RUN_METHODS = frozenset(SHAPES)
# The shape each method that makes rows into objects runs, and takes the maker first.
MAKING_METHODS = {"one_as": "one", "many_as": "many"}


@dataclass(frozen=True)
class Call:
    where: str
    query: str
    method: str
    positional: int
    keywords: frozenset[str]
    splat: bool


def _source_files() -> list[Path]:
    return sorted(p for d in CALLER_DIRS for p in (ROOT / d).rglob("*.py"))


def _named_sql_attributes(cls: ast.ClassDef) -> dict[str, str]:
    found = {}
    for statement in cls.body:
        value = getattr(statement, "value", None)
        if (
            isinstance(statement, ast.Assign)
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "NamedSql"
            and isinstance(value.args[0], ast.Constant)
        ):
            for target in statement.targets:
                assert isinstance(target, ast.Name)
                found[target.id] = str(value.args[0].value)
    return found


def _query_of(receiver: ast.expr, attributes: dict[str, str]) -> str | None:
    match receiver:
        case ast.Attribute(value=ast.Name(id="self"), attr=attr) if attr in attributes:
            return attributes[attr]
        case ast.Subscript(slice=ast.Constant(value=str() as name)):
            return name
    return None


def _calls_in(node: ast.AST, attributes: dict[str, str], where: str) -> list[Call]:
    calls = []
    for call in ast.walk(node):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            continue
        method = call.func.attr
        if method not in RUN_METHODS | MAKING_METHODS.keys() | {"args", "cursor"}:
            continue
        query = _query_of(call.func.value, attributes)
        if query is None:
            continue
        calls.append(
            Call(
                where=f"{where}:{call.lineno}",
                query=query,
                method=method,
                positional=len(call.args),
                keywords=frozenset(k.arg for k in call.keywords if k.arg is not None),
                splat=any(k.arg is None for k in call.keywords)
                or any(isinstance(a, ast.Starred) for a in call.args),
            )
        )
    return calls


def find_calls() -> list[Call]:
    calls: list[Call] = []
    for path in _source_files():
        where = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        in_classes = set()
        for cls in classes:
            attributes = _named_sql_attributes(cls)
            found = _calls_in(cls, attributes, where)
            calls += found
            in_classes |= {c.where for c in found}
        calls += [c for c in _calls_in(tree, {}, where) if c.where not in in_classes]
    return calls


@pytest.fixture(scope="module")
def all_queries() -> dict[str, Query]:
    return {**Queries.load(), **bench_queries()}


@pytest.fixture(scope="module")
def calls() -> list[Call]:
    return find_calls()


def test_callers_name_exactly_the_parameters_through_the_declared_shape(
    all_queries: dict[str, Query], calls: list[Call]
) -> None:
    problems = []
    for call in calls:
        query = all_queries.get(call.query)
        if query is None:
            problems.append(f"{call.where}: no query named {call.query!r}")
            continue
        if call.splat:
            problems.append(f"{call.where}: {call.query} gets *args or **kwargs")
        # .cursor() streams the rows of a :many query.
        shape = "many" if call.method == "cursor" else call.method
        shape = MAKING_METHODS.get(shape, shape)
        if call.method != "args" and shape != query.shape:
            problems.append(f"{call.where}: {call.query} is :{query.shape}, run .{call.method}")
        wanted = 0 if call.method == "args" else 2 if call.method in MAKING_METHODS else 1
        if call.positional != wanted:
            problems.append(
                f"{call.where}: {call.query} takes only the connection (after the maker of "
                "one_as and many_as) positionally"
            )
        if call.keywords != set(query.params):
            problems.append(
                f"{call.where}: {call.query} takes {sorted(query.params)}, "
                f"gets {sorted(call.keywords)}"
            )
    assert problems == []


def test_the_scan_finds_the_callers(calls: list[Call]) -> None:
    by_query = {c.query: c for c in calls}
    get_tenant = by_query["get_tenant"]
    assert get_tenant.where.startswith("service/repositories/tenants.py:")
    assert (get_tenant.method, get_tenant.keywords) == ("one_as", {"tenant_id"})
    assert by_query["count_seeded_rows"].where.startswith("bench/seed.py:")
    assert len(calls) > 150


def _dynamic_bench_names() -> set[str]:
    """Names bench code builds or lists as data rather than calling them literally: the
    strategies' queries of bench/sqlcompare.py and any name written as a string."""
    names = {f"{s}_{op}" for s in STRATEGIES for op in OPERATIONS}
    for path in (ROOT / "bench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value)
    return names


def test_every_query_is_called_somewhere(calls: list[Call]) -> None:
    called = {c.query for c in calls if c.method != "args"}
    unused = set(Queries.load()) - called
    assert not unused, f"service queries nothing runs: {sorted(unused)}"
    unused_bench = set(bench_queries()) - called - _dynamic_bench_names()
    assert not unused_bench, f"bench queries nothing runs: {sorted(unused_bench)}"
