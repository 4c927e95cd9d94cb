"""python -m bench: the benchmark suite (docs/performance.md).

python -m bench run --quick            100,000 tenants, under 5 minutes (make bench)
python -m bench run --full             1,000,000 tenants (make bench-full)
python -m bench curve                  10k, 100k, 1M and 10M tenants (make bench-huge)
python -m bench mixed                  the mixed workload alone (contexts read while writes arrive)
python -m bench replicas               replicas: routing overhead, a lagging one (bench/replicas.py)
python -m bench markdown FILE          markdown tables of a results file
python -m bench plots FILE...          PNG charts of results files (docs/performance/)
python -m bench seed --dsn DSN --tenants N
python -m bench.sqlcompare --dsn DSN   the SQL comparison alone, on seeded data
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench.curve import CURVE_SCALES, CurveOptions, format_curve, run_curve
from bench.environment import PostgresServer
from bench.http_suite import LoadSettings
from bench.markdown import render
from bench.replicas import add_options as add_replica_options
from bench.replicas import run as run_replicas
from bench.report import format_report
from bench.results import encode, load_run
from bench.runner import RunOptions, run_suite
from bench.seed import seed_database
from bench.shapes import SeedPlan
from bench.sqlcompare import format_table

# Ignored by git: a run leaves the tree clean; --output-json bench/results/NAME.json keeps
# a run worth committing.
RESULTS_DIR = Path(".data/bench-results")
PLOTS_DIR = Path("docs/performance")
PROFILES = {
    # tenants, seconds per load, warm-up seconds, sequential samples, creates, batches
    "quick": (100_000, 5.0, 1.0, 200, 100, 20),
    "full": (1_000_000, 10.0, 2.0, 400, 200, 30),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="seed, measure, compare with baselines, judge the targets")
    _add_run_options(run)
    mixed = sub.add_parser(
        "mixed",
        help="the mixed workload alone: seed, B_db, contexts read while writes arrive "
        "(run --only mixed --skip-sql)",
    )
    _add_run_options(mixed)
    curve = sub.add_parser(
        "curve",
        help="the cost curve: the full run's measurements at each of --scales tenants, each "
        "scale side by side with the one before (make bench-huge)",
    )
    _add_curve_options(curve)
    markdown = sub.add_parser("markdown", help="markdown tables of a results file")
    markdown.add_argument("results", type=Path, help="a bench/results/*.json file")
    plots = sub.add_parser("plots", help="PNG charts of results files (the bench extra)")
    plots.add_argument("results", type=Path, nargs="+", help="bench/results/*.json files")
    plots.add_argument(
        "--out", type=Path, default=PLOTS_DIR, help=f"where to write them ({PLOTS_DIR})"
    )
    replicas = sub.add_parser(
        "replicas",
        help="replica routing overhead against the primary, and a lagging replica "
        "(a primary and streaming standby of the machine's PostgreSQL)",
    )
    add_replica_options(replicas)
    seed = sub.add_parser("seed", help="seed a migrated, empty database")
    seed.add_argument("--dsn", required=True)
    seed.add_argument("--tenants", type=int, default=100_000)
    seed.add_argument("--seed", type=int, default=20261122, help="random seed")
    return parser


def _add_run_options(run: argparse.ArgumentParser) -> None:
    profile = run.add_mutually_exclusive_group()
    profile.add_argument(
        "--quick",
        dest="mode",
        action="store_const",
        const="quick",
        help="100,000 tenants, short loads (default)",
    )
    profile.add_argument(
        "--full",
        dest="mode",
        action="store_const",
        const="full",
        help="1,000,000 tenants, longer loads",
    )
    run.set_defaults(mode="quick")
    run.add_argument("--tenants", type=int, help="override the profile's tenant count")
    run.add_argument("--duration", type=float, help="seconds per load (after warm-up)")
    run.add_argument("--connections", type=int, default=32, help="load connections (32)")
    run.add_argument(
        "--tool",
        choices=("auto", "wrk", "python"),
        default="auto",
        help="load generator: wrk when installed (auto), or the Python one",
    )
    run.add_argument(
        "--pool-size",
        type=int,
        default=10,
        help="database pool of the service and of B_db (10, the service's default)",
    )
    run.add_argument(
        "--database-url",
        help="a PostgreSQL server to create the bench_* "
        "databases on (default: the embedded one under --data-dir)",
    )
    run.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".data/bench"),
        help="embedded PostgreSQL data (default .data/bench)",
    )
    run.add_argument("--sql-repeats", type=int, default=20, help="runs per SQL query (20)")
    run.add_argument(
        "--only",
        help="comma-separated steps to run: sql, reads, writes, moves, mixed, depths, scale, "
        "or read endpoints by name (get_tenant, context_depth10, ...); baselines always run",
    )
    run.add_argument("--skip-sql", action="store_true", help="leave out the SQL comparison")
    run.add_argument(
        "--output-json",
        type=Path,
        help="where to write the results (default .data/bench-results/<mode>-<timestamp>.json)",
    )


def _add_curve_options(curve: argparse.ArgumentParser) -> None:
    curve.add_argument(
        "--scales",
        default=",".join(str(n) for n in CURVE_SCALES),
        help="comma-separated tenant counts, ascending (10000,100000,1000000,10000000)",
    )
    curve.add_argument("--duration", type=float, help="seconds per load (the full run's 10)")
    curve.add_argument("--connections", type=int, default=32, help="load connections (32)")
    curve.add_argument("--tool", choices=("auto", "wrk", "python"), default="auto")
    curve.add_argument("--pool-size", type=int, default=10, help="database pool (10)")
    curve.add_argument("--database-url", help="a PostgreSQL server for the bench_curve_* databases")
    curve.add_argument("--data-dir", type=Path, default=Path(".data/bench"))
    curve.add_argument(
        "--keep-databases",
        action="store_true",
        help="keep every scale's database (default: only the largest is kept)",
    )
    curve.add_argument(
        "--output-json",
        type=Path,
        help="where to write the curve (default .data/bench-results/curve-<timestamp>.json)",
    )


def _curve(args: argparse.Namespace) -> int:
    _tenants, duration, warmup, samples, creates, batches = PROFILES["full"]
    scales = tuple(sorted(int(n) for n in args.scales.split(",")))
    options = CurveOptions(
        scales=scales,
        database_url=args.database_url,
        data_dir=args.data_dir,
        pool_size=args.pool_size,
        load=LoadSettings(
            connections=args.connections, duration_s=args.duration or duration,
            warmup_s=warmup, latency_samples=samples, tool=args.tool,
            write_samples=creates, batch_samples=batches,
        ),
        results_dir=RESULTS_DIR,
        keep_databases=args.keep_databases,
    )  # fmt: skip
    with PostgresServer(options.database_url, options.data_dir) as server:
        result = asyncio.run(run_curve(options, server))
    output = args.output_json or RESULTS_DIR / f"curve-{time.strftime('%Y%m%dT%H%M%S')}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(encode(result))
    print()
    print(format_curve(result))
    print(f"\ncurve: {output}; each scale's run beside it (python -m bench plots ...)")
    kept = scales if args.keep_databases else scales[-1:]
    names = ", ".join(f"bench_curve_{n}" for n in kept)
    if options.database_url is None:
        print(f"databases {names} are in the embedded PostgreSQL's files in {options.data_dir} "
              f"({_megabytes(options.data_dir):,.0f} MB); remove them with: "
              f"rm -rf {options.data_dir}")  # fmt: skip
    else:
        print(f"databases {names} are kept on the --database-url server; remove each with: "
              "DROP DATABASE <name>")  # fmt: skip
    return 0


def _options(args: argparse.Namespace) -> RunOptions:
    tenants, duration, warmup, samples, creates, batches = PROFILES[args.mode]
    return RunOptions(
        mode=args.mode,
        tenants=args.tenants or tenants,
        database_url=args.database_url,
        data_dir=args.data_dir,
        pool_size=args.pool_size,
        load=LoadSettings(
            connections=args.connections,
            duration_s=args.duration or duration,
            warmup_s=warmup,
            latency_samples=samples,
            tool=args.tool,
            write_samples=creates,
            batch_samples=batches,
        ),
        sql_repeats=args.sql_repeats,
        skip_sql=args.skip_sql or args.command == "mixed",
        only=_only(args),
    )


def _label(args: argparse.Namespace) -> str:
    return "mixed" if args.command == "mixed" else str(args.mode)


def _only(args: argparse.Namespace) -> frozenset[str] | None:
    if args.command == "mixed":
        return frozenset({"mixed"})
    return None if args.only is None else frozenset(args.only.split(","))


def _run(args: argparse.Namespace) -> int:
    options = _options(args)
    # The embedded server starts outside the event loop (it runs its own to set up).
    with PostgresServer(options.database_url, options.data_dir) as server:
        result = asyncio.run(run_suite(options, server))
    output = (
        args.output_json or RESULTS_DIR / f"{_label(args)}-{time.strftime('%Y%m%dT%H%M%S')}.json"
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(encode(result))
    print()
    print(format_report(result))
    if result.sql is not None:
        print()
        print(format_table(result.sql))
    print(f"\nresults: {output}")
    if options.database_url is None:
        print(
            f"database: the embedded PostgreSQL's files in {options.data_dir} "
            f"({_megabytes(options.data_dir):,.0f} MB; a later run starts it again); "
            f"remove them with: rm -rf {options.data_dir}"
        )
    return 0


def _megabytes(folder: Path) -> float:
    total = 0
    for path in folder.rglob("*"):
        with contextlib.suppress(OSError):  # a file the server removed meanwhile
            total += path.stat().st_size if path.is_file() else 0
    return total / 1e6


def _seed(args: argparse.Namespace) -> int:
    report = asyncio.run(seed_database(args.dsn, SeedPlan.for_total(args.tenants, args.seed)))
    print(encode(report.figures()).decode(), end="")
    return 0


def _markdown(args: argparse.Namespace) -> int:
    print(render(load_run(args.results)))
    return 0


def _plots(args: argparse.Namespace) -> int:
    from bench.plots import draw_plots  # matplotlib: the bench extra

    for path in draw_plots([load_run(path) for path in args.results], args.out):
        print(path)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    commands = {
        "run": _run,
        "mixed": _run,
        "replicas": run_replicas,
        "curve": _curve,
        "seed": _seed,
        "markdown": _markdown,
        "plots": _plots,
    }
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
