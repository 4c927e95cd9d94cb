-- How bench/sqlcompare.py picks its sample tenants from whatever data is seeded: a
-- tenant per chosen depth, and tenants whose subtree is close to a target size, found
-- from a row sample of tenant_closure instead of counting every subtree.

-- name: count_tenants_by_depth :many
-- How many tenants each depth level holds (one pass over tenants).
SELECT depth, count(*)::bigint AS tenants
FROM tenants
GROUP BY depth
ORDER BY depth;

-- name: pick_tenant_at_depth :one
-- One tenant at depth depth: the first a scan meets, so the pick is stable between runs.
SELECT id, depth
FROM tenants
WHERE depth = :'depth'
LIMIT 1;

-- name: estimate_closure_rows :value
-- The planner's row estimate for tenant_closure (-1 or 0 when never analyzed).
SELECT reltuples::bigint AS estimate
FROM pg_class
WHERE oid = 'tenant_closure'::regclass;

-- name: sample_subtree_candidates :many
-- For each target subtree size in target_sizes, the per_target tenants whose size,
-- estimated from a sample_percent % row sample of tenant_closure (seed sample_seed), is
-- nearest to it.
WITH
-- 1. The sample: an ancestor shows up about sample_percent % of (descendants + 1) times,
--    so large subtrees show up most and one pass replaces a count over every subtree.
sampled AS (
    SELECT c.ancestor_id AS id, count(*) AS hits
    FROM tenant_closure c
         TABLESAMPLE BERNOULLI (:'sample_percent') REPEATABLE (:'sample_seed')
    GROUP BY c.ancestor_id
),
-- 2. Each target turned into expected hits, candidates ranked by their distance from it
--    on a log scale (100 vs 200 is as far as 10,000 vs 20,000).
ranked AS (
    SELECT tg.size AS target, s.id, s.hits,
           row_number() OVER (
               PARTITION BY tg.size
               ORDER BY abs(ln(s.hits)
                            - ln((tg.size + 1) * :'sample_percent'::float8 / 100)),
                        s.id
           ) AS rank
    FROM unnest(:'target_sizes'::bigint[]) AS tg(size)
    CROSS JOIN sampled s
)
SELECT target, id, hits
FROM ranked
WHERE rank <= :'per_target'
ORDER BY target, rank;

-- name: count_subtree :one
-- A tenant's depth and exact descendant count (itself excluded): one index-only range of
-- tenant_closure_pkey.
SELECT t.depth,
       (SELECT count(*) FROM tenant_closure c
        WHERE c.ancestor_id = t.id AND c.depth > 0)::bigint AS descendants
FROM tenants t
WHERE t.id = :'tenant_id';

-- name: table_visibility :many
-- Share of each hierarchy table's pages marked all-visible (as of the last VACUUM or
-- ANALYZE): below 1, index-only scans still read the heap, as on a fresh unvacuumed seed.
SELECT c.relname::text AS relname,
       CASE WHEN c.relpages > 0
            THEN round(c.relallvisible::numeric / c.relpages, 3)::float8
            ELSE 1.0::float8 END AS all_visible
FROM pg_class c
WHERE c.oid IN ('tenants'::regclass, 'tenant_closure'::regclass)
ORDER BY c.relname;

-- name: echo_tenant_id :many
-- The round-trip floor: a prepared statement that reads nothing and returns one id.
SELECT :'tenant_id'::uuid AS id;
