-- The same hierarchy answers computed three ways, side by side, for bench/sqlcompare.py:
--   closure   tenant_closure, as the service reads it (sql/queries/tenants.sql, context.sql);
--   cte       a recursive CTE over tenants.parent_id alone, one index probe per step;
--   ltree     a bench-only copy of the paths as ltree with a GiST index (bench_ltree_paths),
--             built from tenants.ancestry_path and dropped after the run.
-- Each strategy returns the same shape so the runs can be checked against each other:
-- ancestors as ids root first (the tenant itself excluded), descendants as ids in no
-- particular order (the tenant itself excluded), context as resolve_tenant_context's row.
-- Not loaded by the service: its loader reads sql/queries only.

-- ---------------------------------------------------------------------------------------
-- Closure table
-- ---------------------------------------------------------------------------------------

-- name: closure_list_ancestors :many
-- Ancestor ids, root first: one range of tenant_closure_descendant_idx, index-only.
SELECT c.ancestor_id AS id
FROM tenant_closure c
WHERE c.descendant_id = :'tenant_id'
  AND c.depth > 0
ORDER BY c.depth DESC;

-- name: closure_list_descendants :many
-- Descendant ids: one range of tenant_closure_pkey on ancestor_id, index-only.
SELECT c.descendant_id AS id
FROM tenant_closure c
WHERE c.ancestor_id = :'tenant_id'
  AND c.depth > 0;

-- The closure table's context is the service's own query, resolve_tenant_context in
-- sql/queries/context.sql: bench/sqlcompare.py runs that one, so the comparison can never
-- drift from what the service does.

-- ---------------------------------------------------------------------------------------
-- Recursive CTE on parent_id only
-- ---------------------------------------------------------------------------------------

-- name: cte_list_ancestors :many
-- Ancestor ids, root first, walking up parent_id: one tenants_pkey probe per level.
WITH RECURSIVE
-- 1. Start at the parent (none for a root), then step to each parent's parent; distance
--    counts the steps so the order can be turned root first.
up AS (
    SELECT t.parent_id AS id, 1 AS distance
    FROM tenants t
    WHERE t.id = :'tenant_id'
      AND t.parent_id IS NOT NULL
    UNION ALL
    SELECT p.parent_id, up.distance + 1
    FROM up
    JOIN tenants p ON p.id = up.id
    WHERE p.parent_id IS NOT NULL
)
SELECT up.id
FROM up
ORDER BY up.distance DESC;

-- name: cte_list_descendants :many
-- Descendant ids, walking down parent_id level by level through tenants_parent_id_idx.
WITH RECURSIVE
-- 1. The children of tenant_id, then the children of every row found so far: each step
--    is one range of tenants_parent_id_idx (parent_id, id) per node, index-only.
down AS (
    SELECT t.id
    FROM tenants t
    WHERE t.parent_id = :'tenant_id'
    UNION ALL
    SELECT c.id
    FROM down d
    JOIN tenants c ON c.parent_id = d.id
)
SELECT down.id
FROM down;

-- name: cte_resolve_tenant_context :many
-- resolve_tenant_context with the chain found by walking up parent_id instead.
WITH RECURSIVE
-- 1. The chain: the tenant itself at distance 0, then each parent one step further, one
--    tenants_pkey probe per level (parent_id carried along to take the next step).
chain AS (
    SELECT t.id AS tenant_id, t.parent_id, 0 AS distance
    FROM tenants t
    WHERE t.id = :'tenant_id'
    UNION ALL
    SELECT p.id, p.parent_id, ch.distance + 1
    FROM chain ch
    JOIN tenants p ON p.id = ch.parent_id
),
-- 2. Config winners, the same rules as resolve_tenant_context
--    (migration 0052's rank functions).
config_winners AS (
    SELECT DISTINCT ON (ce.key)
           ce.key, ce.value, ce.encrypted_value, ce.sensitive, ce.locked,
           ce.reveal_to_descendants, ce.expires_at, ce.tenant_id AS source_tenant_id
    FROM chain ch
    JOIN config_entries ce ON ce.tenant_id = ch.tenant_id
    ORDER BY ce.key, config_entry_rank(ce.locked, ch.distance)
),
-- 3. Permission winners, the same rules as resolve_tenant_context
--    (migration 0052's rank functions).
permission_winners AS (
    SELECT DISTINCT ON (pp.key)
           pp.key, pp.value, pp.mode, pp.expires_at, pp.tenant_id AS source_tenant_id
    FROM chain ch
    JOIN permission_policies pp ON pp.tenant_id = ch.tenant_id
    WHERE permission_policy_counts(pp.mode, ch.distance)
    ORDER BY pp.key, permission_policy_rank(pp.mode, ch.distance)
)
-- 4. The tenant row with both winner sets, as in resolve_tenant_context.
SELECT t.id, t.ancestry_path, t.depth, t.isolation_strategy, t.status,
       coalesce((SELECT jsonb_agg(to_jsonb(w) ORDER BY w.key) FROM config_winners w),
                '[]'::jsonb) AS config,
       coalesce((SELECT jsonb_agg(to_jsonb(p) ORDER BY p.key) FROM permission_winners p),
                '[]'::jsonb) AS permissions
FROM tenants t
WHERE t.id = :'tenant_id';

-- ---------------------------------------------------------------------------------------
-- ltree (bench-only table, when the extension is available)
-- ---------------------------------------------------------------------------------------

-- name: ltree_extension_state :one
-- Whether the server offers ltree, and whether this database already has it.
SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'ltree') AS available,
       EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'ltree') AS installed;

-- name: create_ltree_extension :exec
-- Install ltree in this database (needs the privilege to create extensions).
CREATE EXTENSION IF NOT EXISTS ltree;

-- name: drop_ltree_extension :exec
-- Remove ltree again, only when the run installed it (RESTRICT: fails if anything uses it).
DROP EXTENSION IF EXISTS ltree RESTRICT;

-- name: create_ltree_paths_table :exec
-- The bench-only ltree copy of every tenant's path.
CREATE TABLE bench_ltree_paths (
    id   uuid PRIMARY KEY,
    path ltree NOT NULL
);

-- name: fill_ltree_paths :exec
-- Copy the paths: '/<uuid>/<uuid>' becomes '<hex>.<hex>' (ltree labels allow no hyphens
-- before PostgreSQL 16, so each label is the uuid's hex without them).
INSERT INTO bench_ltree_paths (id, path)
SELECT t.id, text2ltree(replace(replace(substr(t.ancestry_path, 2), '-', ''), '/', '.'))
FROM tenants t;

-- name: index_ltree_paths :exec
-- GiST index serving @> (ancestors) and <@ (descendants).
CREATE INDEX bench_ltree_paths_path_gist ON bench_ltree_paths USING gist (path);

-- name: analyze_ltree_paths :exec
-- Statistics for the new table, so the planner sees its real size.
ANALYZE bench_ltree_paths;

-- name: drop_ltree_paths_table :exec
-- Remove the bench-only table (its index goes with it).
DROP TABLE IF EXISTS bench_ltree_paths;

-- name: ltree_list_ancestors :many
-- Ancestor ids, root first: the paths that contain the tenant's path (GiST @>).
SELECT a.id
FROM bench_ltree_paths self
JOIN bench_ltree_paths a ON a.path @> self.path
WHERE self.id = :'tenant_id'
  AND a.id <> self.id
ORDER BY nlevel(a.path);

-- name: ltree_list_descendants :many
-- Descendant ids: the paths inside the tenant's path (GiST <@).
SELECT d.id
FROM bench_ltree_paths self
JOIN bench_ltree_paths d ON d.path <@ self.path
WHERE self.id = :'tenant_id'
  AND d.id <> self.id;

-- name: ltree_resolve_tenant_context :many
-- resolve_tenant_context with the chain found by GiST @> on the ltree paths.
WITH
-- 1. The chain: every path containing the tenant's (itself included), the distance being
--    the difference in levels (0 = the tenant itself).
chain AS (
    SELECT a.id AS tenant_id, nlevel(self.path) - nlevel(a.path) AS distance
    FROM bench_ltree_paths self
    JOIN bench_ltree_paths a ON a.path @> self.path
    WHERE self.id = :'tenant_id'
),
-- 2. Config winners, the same rules as resolve_tenant_context (migration 0052's rank
--    functions). The planner cannot estimate @> against a path read from a row: it
--    expects 1 % of all paths in the chain (2,000 of 200,000, not a dozen) and then
--    hashes the whole of config_entries. OFFSET 0 keeps the lateral lookup as written,
--    one config_entries_pkey range per ancestor.
config_winners AS (
    SELECT DISTINCT ON (ce.key)
           ce.key, ce.value, ce.encrypted_value, ce.sensitive, ce.locked,
           ce.reveal_to_descendants, ce.expires_at, ce.tenant_id AS source_tenant_id
    FROM chain ch
    CROSS JOIN LATERAL (
        SELECT e.key, e.value, e.encrypted_value, e.sensitive, e.locked, e.reveal_to_descendants,
               e.expires_at, e.tenant_id
        FROM config_entries e
        WHERE e.tenant_id = ch.tenant_id
        OFFSET 0
    ) ce
    ORDER BY ce.key, config_entry_rank(ce.locked, ch.distance)
),
-- 3. Permission winners, the same rules as resolve_tenant_context (migration 0052's
--    rank functions); OFFSET 0 for the same reason, one permission_policies_pkey range
--    per ancestor.
permission_winners AS (
    SELECT DISTINCT ON (pp.key)
           pp.key, pp.value, pp.mode, pp.expires_at, pp.tenant_id AS source_tenant_id
    FROM chain ch
    CROSS JOIN LATERAL (
        SELECT r.key, r.value, r.mode, r.expires_at, r.tenant_id
        FROM permission_policies r
        WHERE r.tenant_id = ch.tenant_id
        OFFSET 0
    ) pp
    WHERE permission_policy_counts(pp.mode, ch.distance)
    ORDER BY pp.key, permission_policy_rank(pp.mode, ch.distance)
)
-- 4. The tenant row with both winner sets, as in resolve_tenant_context.
SELECT t.id, t.ancestry_path, t.depth, t.isolation_strategy, t.status,
       coalesce((SELECT jsonb_agg(to_jsonb(w) ORDER BY w.key) FROM config_winners w),
                '[]'::jsonb) AS config,
       coalesce((SELECT jsonb_agg(to_jsonb(p) ORDER BY p.key) FROM permission_winners p),
                '[]'::jsonb) AS permissions
FROM tenants t
WHERE t.id = :'tenant_id';
