-- The history trigger plans its statements once per connection (a generic plan) instead
-- of at every commit. PostgreSQL chose a custom plan for each run of their statements,
-- whose parameters are the trigger's own arrays, so every write planned them again:
-- measured with pg_stat_statements (track_planning) on 100,000 tenants after a few
-- thousand config writes, the history trigger's config_history statement took 3.1 ms to
-- plan and 0.16 ms to run, and the planning grew with the history (the planner probes
-- the ends of the valid_to indexes, past the versions each write closes). The history
-- trigger runs under the commit-order lock, so every other write waited for that
-- planning too. The generic plans are the index probes of the custom ones
-- (tests/test_write_trigger_plans.py: no whole-table read at commit, and the history
-- statements run with their parameters, that is, a generic plan;
-- docs/decisions/revisions.md, "Plans of the write triggers"). The entry triggers keep
-- custom plans: a generic plan of their anti-join over the touched tenants, made for a
-- few, took 90 s for the 30,000 of a bulk load (the bench's seed of 100,000 tenants).

ALTER FUNCTION record_context_history() SET plan_cache_mode = force_generic_plan;
