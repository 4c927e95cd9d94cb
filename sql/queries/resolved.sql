-- "Who resolves to what": a key's resolved value across a subtree (docs/constraints.md).
-- The subtree is resolved in one pass (service/usecases/tenants/resolved.py): its
-- tenants in depth-first pre-order, merged with the key's entries in the same order,
-- the entries above carried down as a stack. No tenant walks its own chain.

-- name: stream_subtree_paths :many
-- The active tenants of the subtree at :'path' (itself included) in pre-order from the
-- path :'start' on (the subtree's own path, or a page cursor's path followed by ' ',
-- which sorts after it and before its descendants' '/'): one range scan of
-- tenants_ancestry_path_key, read through a cursor.
SELECT t.id, t.ancestry_path
FROM tenants t
WHERE t.ancestry_path >= :'start'::text
  AND t.ancestry_path < :'path'::text || '0'
  AND t.status = 'active'
ORDER BY t.ancestry_path;

-- name: list_chain_entries_of_key :many
-- The entries of :'key' on the chain of :'tenant_id' (itself included) whose tenant's
-- path sorts before :'start', root first (tenant_closure_descendant_idx, then
-- config_entries_pkey and tenants_pkey per ancestor); values masked as GET /context
-- masks them (a sensitive one is '***').
SELECT a.ancestry_path, ce.tenant_id, ce.locked,
       CASE WHEN ce.sensitive THEN '"***"'::jsonb ELSE ce.value END AS shown
FROM tenant_closure c
JOIN config_entries ce ON ce.tenant_id = c.ancestor_id AND ce.key = :'key'::text
JOIN tenants a ON a.id = c.ancestor_id
WHERE c.descendant_id = :'tenant_id'
  AND a.ancestry_path < :'start'::text
ORDER BY a.ancestry_path;

-- name: stream_range_entries_of_key :many
-- The entries of :'key' of the tenants whose path lies in [:'start', :'path' || '0'), in
-- path order: one range scan of tenant_config_holders (only tenants that have entries,
-- migration 0028), then config_entries_pkey once per holder (LIMIT 1 keeps the probe a
-- probe: the planner cannot turn it into a hash of every entry of the key), read
-- through a cursor after plan_resolution_as_ordered_scans; masked.
SELECT h.ancestry_path, e.tenant_id, e.locked, e.shown
FROM tenant_config_holders h
CROSS JOIN LATERAL (
    SELECT ce.tenant_id, ce.locked,
           CASE WHEN ce.sensitive THEN '"***"'::jsonb ELSE ce.value END AS shown
    FROM config_entries ce
    WHERE ce.tenant_id = h.tenant_id
      AND ce.key = :'key'::text
    LIMIT 1
) AS e
WHERE h.ancestry_path >= :'start'::text
  AND h.ancestry_path < :'path'::text || '0'
ORDER BY h.ancestry_path;

-- name: plan_resolution_as_ordered_scans :exec
-- For the rest of the transaction, read ranges in index order: the merge streams its two
-- ranges side by side, so neither may be sorted or hashed whole before its first row
-- (on a large range the planner would otherwise pick a bitmap scan and a sort). The
-- settings end with the transaction.
SELECT set_config('enable_sort', 'off', true) AS sort,
       set_config('enable_hashjoin', 'off', true) AS hashjoin,
       set_config('enable_bitmapscan', 'off', true) AS bitmapscan;
