"""Which test modules are not in the quick tier, and why: one table, applied by conftest.

`make quick` runs everything else (in-process tests on a real PostgreSQL); `make test`
runs all of it. A module that starts a process must be listed under "processes" (or
"browser", "cluster"): tests/test_tiers.py reads every module and fails otherwise.

- processes: starts the service, the CLI, a PostgreSQL server or another program
  (psql, pg_dump, pgbouncer, node, a code generator) as an OS process.
- browser: drives Chromium.
- cluster: builds a high-availability cluster (etcd, Patroni, PgBouncer, HAProxy).
- slow: in process, but long (property tests, races, fuzzing against every operation);
  single slow tests of otherwise quick modules are in SLOW_TESTS, with their times.
"""

from __future__ import annotations

TIERS: dict[str, frozenset[str]] = {
    "processes": frozenset(
        {
            "test_api_linters",
            "test_audit_chain",
            "test_bench_instructions",
            "test_cli",
            "test_cli_admin",
            "test_cli_help",
            "test_client_ofrep",
            "test_console_identity",
            "test_failover",
            "test_faults",
            "test_first_contact",
            "test_first_start",
            "test_generated_client",
            "test_hangs",
            "test_hostile_connections",
            "test_key_cli",
            "test_key_cli_names",
            "test_log_lines",
            "test_log_secrecy",
            "test_log_stream",
            "test_multiprocess_auth",
            "test_pgbouncer",
            "test_pgbouncer_outage",
            "test_pgbouncer_switchover",
            "test_query_psql",
            "test_readme",
            "test_reads_through_outage",
            "test_replica_cache",
            "test_replica_lag",
            "test_replicas",
            "test_schema_file",
            "test_schemathesis",
            "test_shutdown",
            "test_streaming_memory",
            "test_tracing",
            "test_typescript_client",
            "test_webhook_processes",
            "test_worker_budget",
            "test_workers",
        }
    ),
    "browser": frozenset(
        {
            "test_console_browser",
            "test_console_change_requests",
            "test_console_constraints",
            "test_console_history",
            "test_console_views",
        }
    ),
    "cluster": frozenset({"test_ha_cluster"}),
    "slow": frozenset(
        {
            "test_history",
            "test_move_race",
            "test_schemathesis",
            "test_tenant_tree_options",
            "test_tree_properties",
            "test_webhook_processes",
        }
    ),
}

# Single tests of quick modules that are slow on their own: marked "slow" one by one, the
# rest of their module stays quick. Each with its time (setup + call + teardown, the mean
# of two runs of the quick tier on 2 shared cores under a load of about 3.5, November
# 2026) and what the time goes to. A parametrized test is named once, for all its cases.
SLOW_TESTS: dict[str, str] = {
    "test_bulkheads::test_a_locked_row_leaves_other_tenants_and_readiness_answering": (
        "9.6 s: writers wait out a row lock held for LOCK_SECONDS"
    ),
    "test_config_holders::test_first_entries_of_a_tenant_written_at_once_count_once_each": (
        "8 to 9 s (alone, same load): 2,400 first entries, two connections at each tenant at once"
    ),
    "test_hostile_input::test_no_route_answers_5xx_to_hostile_input": (
        "7.0 s: hostile bodies and query strings to every registered route"
    ),
    "test_revision_groups::test_a_page_reads_the_log_from_the_position_and_stops": (
        "6.0 s: builds a long revision log to EXPLAIN a page of it"
    ),
    "test_entry_expiry::test_two_processes_expire_each_entry_once": (
        "5.2 s: two apps race to expire 60 entries, each write with its own expiry"
    ),
    "test_change_request_schedule::test_two_apps_apply_each_scheduled_request_once": (
        "5.2 s: two apps and their schedulers wait for requests to fall due"
    ),
    "test_rate_limits::test_key_limit_429_then_passes_after_retry_after": (
        "4.9 s (2 cases): each waits out the Retry-After of a 429"
    ),
    "test_webhook_standard::test_real_deliveries_verify_with_the_library_and_name_their_event": (
        "4.3 s (4 cases): real deliveries to a receiver, one per secret form"
    ),
    "test_tree_concurrency::test_concurrent_tree_changes_keep_every_invariant": (
        "4.2 s: 8 workers, 240 random tree changes, then every invariant"
    ),
    "test_audit_query_plans::test_the_audit_purge_batch_uses_indexes": (
        "4.0 s: seeds a large audit log to EXPLAIN the purge"
    ),
    "test_context_stream::test_a_stream_fed_cache_equals_get_context_after_random_changes": (
        "3.9 s: random changes, then GET /context of every tenant against the stream's cache"
    ),
    "test_context_queries::test_explain_uses_indexes_at_depth_10": (
        "3.8 s: seeds a deep, wide tree to EXPLAIN the context queries"
    ),
    "test_resolved_values::test_every_filter_matches_the_brute_force": (
        "3.6 s: every filter against GET /context of every tenant"
    ),
    "test_schema_strictness::test_the_duration_pattern_is_the_parser": (
        "3.6 s: Hypothesis examples of the duration pattern and parser"
    ),
    "test_history_expiry::test_expiry_in_as_of_diff_and_revert": (
        "3.4 s: waits for entries to expire, then reads history as of each moment"
    ),
    "test_client_cache::test_stream_fed_cache_equals_get_context": (
        "3.3 s (2 cases): random changes, then the client's cache against GET /context"
    ),
}

QUICK = "not processes and not browser and not cluster and not slow"


def marks_of(module: str) -> list[str]:
    """The tier markers of a test module (its file name without .py)."""
    return [tier for tier, modules in TIERS.items() if module in modules]


def marks_of_test(module: str, function: str) -> list[str]:
    """The tier markers of one test function: its module's, and "slow" if listed."""
    marks = marks_of(module)
    if f"{module}::{function}" in SLOW_TESTS and "slow" not in marks:
        marks.append("slow")
    return marks


def left_out_of(markexpr: str, module: str) -> bool:
    """Whether `-m markexpr` is the quick tier's and leaves the whole module out: such a
    module is not even imported (collecting test_schemathesis alone builds Hypothesis
    tests for every operation, about 25 s of the quick tier's 31 s of collection)."""
    return " ".join(markexpr.split()) == QUICK and bool(marks_of(module))
