"""SQL-level comparison of three ways to answer the hierarchy questions.

    python -m bench.sqlcompare --dsn DSN [--repeats N] [--output-json FILE]

On seeded data it times ancestors, descendants and the resolved context of sample
tenants three ways (sql/bench/hierarchy_comparison.sql): the closure table the service
uses, a recursive CTE over parent_id alone, and ltree with a GiST index (a bench-only
table built for the run and dropped after it, when the extension can be installed). Each
query runs as a prepared statement, WARMUPS times untimed and then `repeats` times timed,
the strategies taking turns so drift on a shared machine hits them alike. Times are
client round trips on loopback, row decoding included. Every strategy must return the
same answer; the exit status is 1 when one does not.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import asyncpg
import msgspec
import orjson

from bench.results import (
    DepthPick,
    Ltree,
    Operation,
    Samples,
    Sampling,
    SqlComparison,
    SubtreePick,
    Timing,
    encode,
)
from bench.sqlfiles import bench_queries
from service.db.pool import connect
from service.db.queries import Queries, Query

STRATEGIES = ("closure", "cte", "ltree")
# Each strategy's queries are named <strategy>_<operation> in sql/bench (the closure
# context is the service's own resolve_tenant_context).
OPERATIONS = ("list_ancestors", "list_descendants", "resolve_tenant_context")
WARMUPS = 2
DEPTH_TARGETS = (1, 5, 10)
SUBTREE_TARGETS = (100, 10_000)
# About this many tenant_closure rows are sampled to estimate subtree sizes, and this
# many candidates per target are then counted exactly: cheap whatever the seed's size.
SAMPLED_ROWS = 50_000
CANDIDATES = 30
SAMPLE_SEED = 7

Normalize = Callable[[list[asyncpg.Record]], Any]


def _ms(ns: int | float) -> float:
    return round(ns / 1e6, 3)


def summarize(samples_ns: Sequence[int], rows: int) -> Timing:
    ordered = sorted(samples_ns)
    # Nearest rank: with 20 samples the 99th percentile is the slowest one.
    p99 = ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]
    return Timing(
        p50_ms=_ms(statistics.median(ordered)),
        p99_ms=_ms(p99),
        max_ms=_ms(ordered[-1]),
        mean_ms=_ms(statistics.fmean(ordered)),
        rows=rows,
    )


def _json_value(value: Any) -> Any:
    # json/jsonb come back as text on a bare connection, decoded with the service's codec.
    return orjson.loads(value) if isinstance(value, str | bytes) else value


def ids_in_order(rows: list[asyncpg.Record]) -> Any:
    return [str(row["id"]) for row in rows]


def ids_as_set(rows: list[asyncpg.Record]) -> Any:
    return sorted(str(row["id"]) for row in rows)


def context_answer(rows: list[asyncpg.Record]) -> Any:
    return [
        {key: str(value) if key == "id" else value for key, value in row.items()}
        | {"config": _json_value(row["config"]), "permissions": _json_value(row["permissions"])}
        for row in rows
    ]


async def pick_depth_samples(conn: asyncpg.Connection, q: Queries) -> list[DepthPick]:
    """A tenant at each of DEPTH_TARGETS, the deepest level standing in for deeper ones."""
    levels = [row["depth"] for row in await q["count_tenants_by_depth"].many(conn)]
    if not levels:
        raise ValueError("no tenants: seed the database first")
    picks: list[DepthPick] = []
    for target in DEPTH_TARGETS:
        depth = target if target in levels else max(levels)
        if any(pick.depth == depth for pick in picks):
            continue
        row = await q["pick_tenant_at_depth"].one(conn, depth=depth)
        assert row is not None  # the level was just counted
        picks.append(DepthPick(target=target, id=str(row["id"]), depth=depth))
    return picks


async def pick_subtree_samples(
    conn: asyncpg.Connection, q: Queries
) -> tuple[list[SubtreePick], Sampling]:
    """Per SUBTREE_TARGETS size, the tenant whose descendant count is nearest to it among
    candidates estimated from a row sample of tenant_closure, counted exactly."""
    estimate = await q["estimate_closure_rows"].value(conn) or 0
    percent = 100.0 if estimate <= SAMPLED_ROWS else 100.0 * SAMPLED_ROWS / estimate
    candidates = await q["sample_subtree_candidates"].many(
        conn,
        sample_percent=percent,
        sample_seed=SAMPLE_SEED,
        target_sizes=list(SUBTREE_TARGETS),
        per_target=CANDIDATES,
    )
    picks: list[SubtreePick] = []
    for target in SUBTREE_TARGETS:
        counted: list[SubtreePick] = []
        for candidate in (c for c in candidates if c["target"] == target):
            row = await q["count_subtree"].one(conn, tenant_id=candidate["id"])
            assert row is not None  # closure rows reference existing tenants
            counted.append(
                SubtreePick(
                    target=target,
                    id=str(candidate["id"]),
                    depth=row["depth"],
                    descendants=row["descendants"],
                )
            )
        if counted:
            picks.append(min(counted, key=lambda c: abs(c.descendants - target)))
    return picks, Sampling(percent=round(percent, 3), closure_rows_estimate=estimate)


async def build_ltree(conn: asyncpg.Connection, q: Queries) -> Ltree:
    """Install ltree if needed and build bench_ltree_paths, timing each step."""
    state = await q["ltree_extension_state"].one(conn)
    assert state is not None
    if not state["available"]:
        return Ltree(
            available=False,
            extension_installed_by_run=False,
            error="the server does not offer the ltree extension",
        )
    steps: dict[str, float] = {}
    installed = False
    rows: int | None = None
    try:
        if not state["installed"]:
            started = time.perf_counter_ns()
            await q["create_ltree_extension"].exec(conn)
            steps["extension_ms"] = _ms(time.perf_counter_ns() - started)
            installed = True
        # A run that died before its cleanup may have left the table behind.
        await q["drop_ltree_paths_table"].exec(conn)
        for step, name in (
            ("create_ms", "create_ltree_paths_table"),
            ("fill_ms", "fill_ltree_paths"),
            ("index_ms", "index_ltree_paths"),
            ("analyze_ms", "analyze_ltree_paths"),
        ):
            started = time.perf_counter_ns()
            status = await q[name].exec(conn)
            steps[step] = _ms(time.perf_counter_ns() - started)
            if name == "fill_ltree_paths":
                rows = int(status.split()[-1])  # "INSERT 0 <rows>"
    except asyncpg.PostgresError as exc:
        return Ltree(
            available=False,
            extension_installed_by_run=installed,
            rows=rows,
            error=f"{type(exc).__name__}: {exc}",
        )
    return Ltree(
        available=True,
        extension_installed_by_run=installed,
        build_ms=steps | {"total_ms": round(sum(steps.values()), 3)},
        rows=rows,
    )


async def drop_ltree(conn: asyncpg.Connection, q: Queries, info: Ltree) -> Ltree:
    """Drop the table, and the extension when this run installed it; info with any
    error of the cleanup."""
    await q["drop_ltree_paths_table"].exec(conn)
    if info.extension_installed_by_run:
        try:
            await q["drop_ltree_extension"].exec(conn)
        except asyncpg.PostgresError as exc:
            # Something else came to depend on it meanwhile: leave it installed.
            error = f"ltree left installed: {type(exc).__name__}: {exc}"
            return msgspec.structs.replace(info, error=error)
    return info


async def time_statements(
    conn: asyncpg.Connection, statements: dict[str, Query], tenant_id: str, repeats: int
) -> tuple[dict[str, list[int]], dict[str, list[asyncpg.Record]]]:
    """Run each query (taking tenant_id) as a prepared statement WARMUPS times untimed,
    then `repeats` times timed (ns); returns the samples and each one's last rows."""
    prepared = {s: await conn.prepare(query.sql) for s, query in statements.items()}
    args = {s: query.args(tenant_id=tenant_id) for s, query in statements.items()}
    for s, statement in prepared.items():
        for _ in range(WARMUPS):
            await statement.fetch(*args[s])
    names = list(prepared)
    samples: dict[str, list[int]] = {s: [] for s in names}
    answers: dict[str, list[asyncpg.Record]] = {}
    for i in range(repeats):
        # Take turns at going first, so no strategy always runs on a colder cache.
        for s in names[i % len(names) :] + names[: i % len(names)]:
            started = time.perf_counter_ns()
            answers[s] = await prepared[s].fetch(*args[s])
            samples[s].append(time.perf_counter_ns() - started)
    return samples, answers


async def time_operation(
    conn: asyncpg.Connection,
    statements: dict[str, Query],
    pick: DepthPick | SubtreePick,
    normalize: Normalize,
    repeats: int,
) -> tuple[Operation, Any]:
    """Time each strategy's statement on one sample tenant and check they agree; returns
    the figures and the closure strategy's answer."""
    samples, answers = await time_statements(conn, statements, pick.id, repeats)
    normalized = {s: normalize(rows) for s, rows in answers.items()}
    disagreeing = [s for s in normalized if normalized[s] != normalized["closure"]]
    strategies = {s: summarize(samples[s], len(answers[s])) for s in samples}
    closure_p50 = strategies["closure"].p50_ms
    ratios = {
        f"{s}/closure": round(strategies[s].p50_ms / closure_p50, 2)
        if s in strategies and closure_p50 > 0
        else None
        for s in STRATEGIES[1:]
    }
    figures = Operation(
        tenant_id=pick.id,
        tenant_depth=pick.depth,
        strategies=strategies,
        ratios_p50=ratios,
        agree=not disagreeing,
        disagreeing=disagreeing,
    )
    return figures, normalized["closure"]


async def compare_strategies(conn: asyncpg.Connection, *, repeats: int = 20) -> SqlComparison:
    """Time closure, recursive CTE and ltree on sample tenants picked from the seeded
    data; see the module docstring."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    q = bench_queries()
    depth_picks = await pick_depth_samples(conn, q)
    subtree_picks, sampling = await pick_subtree_samples(conn, q)
    visibility = {
        row["relname"]: row["all_visible"] for row in await q["table_visibility"].many(conn)
    }
    ltree = await build_ltree(conn, q)
    strategies = [s for s in STRATEGIES if s != "ltree" or ltree.available]
    # The closure context is the service's own query, so it cannot drift from it.
    service_context = Queries.load()["resolve_tenant_context"]
    operations: dict[str, Operation] = {}

    async def run(
        op: str, operation: str, pick: DepthPick | SubtreePick, normalize: Normalize
    ) -> Any:
        statements = {
            s: service_context
            if (s, operation) == ("closure", "resolve_tenant_context")
            else q[f"{s}_{operation}"]
            for s in strategies
        }
        operations[op], answer = await time_operation(conn, statements, pick, normalize, repeats)
        return answer

    try:
        for pick in depth_picks:
            await run(f"ancestors@depth{pick.depth}", "list_ancestors", pick, ids_in_order)
        for subtree in subtree_picks:
            await run(f"descendants_{subtree.target}", "list_descendants", subtree, ids_as_set)
        for pick in depth_picks:
            await run(f"context@depth{pick.depth}", "resolve_tenant_context", pick,
                      context_answer)  # fmt: skip
        # What every figure carries for the round trip, protocol and decoding alone
        # (measured last, on a connection as warm as the one the strategies ran on).
        floor_samples, floor_rows = await time_statements(
            conn, {"floor": q["echo_tenant_id"]}, depth_picks[0].id, repeats
        )
        floor = summarize(floor_samples["floor"], len(floor_rows["floor"]))
    finally:
        ltree = await drop_ltree(conn, q, ltree)
    return SqlComparison(
        repeats=repeats,
        warmups=WARMUPS,
        server_version=conn.get_server_version().major,
        all_visible_fraction=visibility,
        round_trip_floor=floor,
        ltree=ltree,
        samples=Samples(depth=depth_picks, subtree=subtree_picks, sampling=sampling),
        operations=operations,
        all_agree=all(e.agree for e in operations.values()),
    )


def format_table(result: SqlComparison) -> str:
    """A side-by-side text table of compare_strategies' result."""
    ltree = result.ltree
    names = [s for s in STRATEGIES if s != "ltree" or ltree.available]
    lines = [
        f"Hierarchy queries: {' vs '.join(names)} "
        f"({result.repeats} runs after {result.warmups} warm-ups; "
        "times in ms, p50 / p99 / mean; ratios of p50s)",
    ]
    if ltree.available and ltree.build_ms is not None:
        build = ltree.build_ms
        steps = ", ".join(f"{k[:-3]} {v:,.0f}" for k, v in build.items() if k != "total_ms")
        lines.append(
            f"ltree table: {ltree.rows or 0:,} rows built in {build['total_ms']:,.0f} ms ({steps})"
        )
    else:
        lines.append(f"ltree: not compared ({ltree.error})")
    visible = ", ".join(f"{k} {v:.0%}" for k, v in result.all_visible_fraction.items())
    lines.append(f"all-visible pages (index-only scans skip the heap): {visible}")
    floor = result.round_trip_floor
    lines.append(
        f"round-trip floor (a statement reading no table): p50 {floor.p50_ms:.3f} ms, "
        f"p99 {floor.p99_ms:.3f} ms, mean {floor.mean_ms:.3f} ms"
    )
    lines.append("")
    header = f"{'operation':<20}{'rows':>7}"
    for s in names:
        header += f" | {s + ' p50/p99/mean':>24}"
    header += " | " + "  ".join(f"{s}/closure" for s in names[1:]) + " | same"
    lines += [header, "-" * len(header)]
    for op, entry in result.operations.items():
        stats = entry.strategies
        line = f"{op:<20}{stats['closure'].rows:>7}"
        for s in names:
            st = stats[s]
            cell = f"{st.p50_ms:.3f}/{st.p99_ms:.3f}/{st.mean_ms:.3f}"
            line += f" | {cell:>24}"
        ratios = [entry.ratios_p50.get(f"{s}/closure") for s in names[1:]]
        line += " | " + "  ".join(
            f"{'-' if r is None else f'{r:.2f}x':>{len(s) + 8}}"
            for s, r in zip(names[1:], ratios, strict=True)
        )
        lines.append(line + (" | yes" if entry.agree else f" | NO {entry.disagreeing}"))
    lines += ["", "samples:"]
    for pick in result.samples.depth:
        lines.append(f"  depth {pick.depth:>2} (asked {pick.target:>2}): {pick.id}")
    for subtree in result.samples.subtree:
        lines.append(
            f"  {subtree.descendants:>6,} descendants (asked {subtree.target:,}): "
            f"{subtree.id} at depth {subtree.depth}"
        )
    return "\n".join(lines)


def is_loopback_dsn(dsn: str) -> bool:
    """Benchmarks talk to loopback only: a host name, address or socket path on this
    machine (no host at all means asyncpg's local default)."""
    parts = urlsplit(dsn)
    hosts = [parts.hostname] if parts.hostname else parse_qs(parts.query).get("host", [])
    for host in hosts:
        if host.startswith("/") or host == "localhost":
            continue
        try:
            if not ipaddress.ip_address(host).is_loopback:
                return False
        except ValueError:
            return False
    return True


async def _run(dsn: str, repeats: int) -> SqlComparison:
    conn = await connect(dsn)
    try:
        return await compare_strategies(conn, repeats=repeats)
    finally:
        await conn.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sqlcompare", description=__doc__)
    parser.add_argument("--dsn", required=True, help="PostgreSQL on loopback, seeded")
    parser.add_argument("--repeats", type=int, default=20, help="timed runs per query")
    parser.add_argument("--output-json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if not is_loopback_dsn(args.dsn):
        parser.error("--dsn must name a server on loopback (benchmarks stay on this machine)")
    result = asyncio.run(_run(args.dsn, args.repeats))
    print(format_table(result))
    if args.output_json:
        args.output_json.write_bytes(encode(result))
    return 0 if result.all_agree else 1


if __name__ == "__main__":
    sys.exit(main())
