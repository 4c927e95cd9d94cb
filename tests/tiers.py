"""Which test modules are not in the quick tier, and why: one table, applied by conftest.

`make quick` runs everything else (in-process tests on a real PostgreSQL); `make test`
runs all of it. A module that starts a process must be listed under "processes" (or
"browser", "cluster"): tests/test_tiers.py reads every module and fails otherwise.

- processes: starts the service, the CLI, a PostgreSQL server or another program
  (psql, pg_dump, pgbouncer, node, a code generator) as an OS process.
- browser: drives Chromium.
- cluster: builds a high-availability cluster (etcd, Patroni, PgBouncer, HAProxy).
- slow: in process, but long (property tests, races, fuzzing against every operation).
"""

from __future__ import annotations

TIERS: dict[str, frozenset[str]] = {
    "processes": frozenset(
        {
            "test_api_linters",
            "test_audit_chain",
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

QUICK = "not processes and not browser and not cluster and not slow"


def marks_of(module: str) -> list[str]:
    """The tier markers of a test module (its file name without .py)."""
    return [tier for tier, modules in TIERS.items() if module in modules]
