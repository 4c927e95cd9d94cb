-- Value schemas and budgets of config keys (docs/constraints.md). Their writes take the
-- key locks of key_locks.sql first, so they take turns with the entry writes they judge.

-- name: upsert_config_schema :one
-- Declare (or replace) the schema of a key at a tenant; created: it was new.
INSERT INTO config_schemas (tenant_id, key, schema, digest, enforce)
VALUES (:'tenant_id', :'key', :'schema', :'digest', :'enforce')
ON CONFLICT (tenant_id, key) DO UPDATE
SET schema = excluded.schema,
    digest = excluded.digest,
    enforce = excluded.enforce,
    updated_at = now()
RETURNING tenant_id, key, schema, digest, enforce, created_at, updated_at,
          (xmax = 0) AS created;

-- name: get_config_schema :one
-- The schema a tenant declared for a key (no row: none).
SELECT tenant_id, key, schema, digest, enforce, created_at, updated_at
FROM config_schemas
WHERE tenant_id = :'tenant_id'
  AND key = :'key';

-- name: list_config_schemas :many
-- The schemas a tenant declared itself, in key order.
SELECT tenant_id, key, schema, digest, enforce, created_at, updated_at
FROM config_schemas
WHERE tenant_id = :'tenant_id'
ORDER BY key;

-- name: delete_config_schema :one
-- Remove a tenant's schema of a key; returns it (no row: there was none).
DELETE FROM config_schemas
WHERE tenant_id = :'tenant_id'
  AND key = :'key'
RETURNING tenant_id, key, schema, digest, enforce, created_at, updated_at;

-- name: list_path_config_schemas :many
-- The schemas that apply at tenant_id (its own and its ancestors'), per key the one
-- nearest the root first; keys NULL: every key.
SELECT cs.tenant_id, cs.key, cs.schema, cs.digest, cs.enforce, cs.created_at, cs.updated_at
FROM tenant_closure c
JOIN config_schemas cs ON cs.tenant_id = c.ancestor_id
WHERE c.descendant_id = :'tenant_id'
  AND (:'keys'::text[] IS NULL OR cs.key = ANY(:'keys'::text[]))
ORDER BY cs.key, c.depth DESC;

-- name: list_subtree_entries_of_key :many
-- A batch of the entries of a key at tenant_id and below, in tenant id order after
-- :'after' (sensitive ones still encrypted), for judging them against a schema.
SELECT ce.tenant_id, ce.key, ce.value, ce.encrypted_value, ce.sensitive
FROM tenant_closure c
JOIN config_entries ce ON ce.tenant_id = c.descendant_id AND ce.key = :'key'
WHERE c.ancestor_id = :'tenant_id'
  AND c.descendant_id > :'after'::uuid
ORDER BY c.descendant_id
LIMIT :'batch'::integer;

-- name: upsert_config_budget :one
-- Declare a key a budget at a tenant; created: it was new.
INSERT INTO config_budgets (tenant_id, key)
VALUES (:'tenant_id', :'key')
ON CONFLICT (tenant_id, key) DO UPDATE SET key = excluded.key
RETURNING tenant_id, key, created_at, (xmax = 0) AS created;

-- name: get_config_budget :one
-- A tenant's budget of a key (no row: none).
SELECT tenant_id, key, created_at
FROM config_budgets
WHERE tenant_id = :'tenant_id'
  AND key = :'key';

-- name: list_config_budgets :many
-- The budgets a tenant declared, in key order.
SELECT tenant_id, key, created_at
FROM config_budgets
WHERE tenant_id = :'tenant_id'
ORDER BY key;

-- name: delete_config_budget :one
-- Remove a tenant's budget of a key; returns it (no row: there was none).
DELETE FROM config_budgets
WHERE tenant_id = :'tenant_id'
  AND key = :'key'
RETURNING tenant_id, key, created_at;

-- name: lock_config_budgets :value
-- Take turns on budgets of these keys at these tenants (the parents of the tenants
-- written): siblings allocating from one budget wait for each other, nobody else does.
-- Rows in (tenant, key) order, so two writers never deadlock. Answers whether any budget
-- of the keys exists at all (config_budgets_key_idx): without one a write has nothing
-- to measure. Run after the key locks, so no budget the write concerns is being
-- declared meanwhile.
WITH held AS (
    -- the parents' budget rows, locked
    SELECT b.tenant_id, b.key
    FROM config_budgets b
    WHERE b.tenant_id = ANY(:'tenant_ids'::uuid[])
      AND b.key = ANY(:'keys'::text[])
    ORDER BY b.tenant_id, b.key
    FOR UPDATE
)
SELECT (SELECT count(*) FROM held) >= 0
       AND EXISTS (SELECT 1 FROM config_budgets b WHERE b.key = ANY(:'keys'::text[]))
       AS any_budget;

-- name: lock_config_budgets_with_schemas :many
-- lock_config_budgets and list_path_config_schemas (for :'tenant_id', the tenant
-- written) in one round trip, for a write of one tenant's keys. Every row carries
-- any_budget; then the schemas applying at the tenant, per key the one nearest the root
-- first, or one row whose schema columns are NULL when none applies.
WITH
-- 1. the parents' budget rows of the keys, locked in (tenant, key) order
held AS (
    SELECT b.tenant_id, b.key
    FROM config_budgets b
    WHERE b.tenant_id = ANY(:'parent_ids'::uuid[])
      AND b.key = ANY(:'keys'::text[])
    ORDER BY b.tenant_id, b.key
    FOR UPDATE
),
-- 2. whether any budget of the keys exists at all, once those rows are held
budgets AS (
    SELECT (SELECT count(*) FROM held) >= 0
           AND EXISTS (SELECT 1 FROM config_budgets b WHERE b.key = ANY(:'keys'::text[]))
           AS any_budget
),
-- 3. the schemas of the keys on the tenant's path (tenant_closure_descendant_idx)
schemas AS (
    SELECT cs.tenant_id, cs.key, cs.schema, cs.digest, cs.enforce, cs.created_at,
           cs.updated_at, c.depth
    FROM tenant_closure c
    JOIN config_schemas cs ON cs.tenant_id = c.ancestor_id
    WHERE c.descendant_id = :'tenant_id'
      AND cs.key = ANY(:'keys'::text[])
)
SELECT b.any_budget, s.tenant_id, s.key, s.schema, s.digest, s.enforce, s.created_at,
       s.updated_at
FROM budgets b
LEFT JOIN schemas s ON true
ORDER BY s.key, s.depth DESC;

-- name: measure_config_budgets :many
-- The budgets a write at these tenants can break (keys NULL: every key): those of their
-- parents and those at or below them, each with the holder's resolved value (capacity,
-- NULL when absent or sensitive) and what its children's own entries hold.
WITH
-- 1. The tenants written, with their parents (tenants_pkey).
written AS (
    SELECT t.id, t.parent_id
    FROM tenants t
    WHERE t.id = ANY(:'tenant_ids'::uuid[])
),
-- 2. The budgets concerned: at a parent (config_budgets_pkey), or at or below a written
--    tenant: every budget of the keys (config_budgets_key_idx) with one probe of
--    tenant_closure_pkey each. The subquery's LIMIT keeps it a probe per budget: a join
--    could read the written tenant's whole closure range (a root's: every tenant of its
--    tree) on every write, budgets or none.
holders AS (
    SELECT b.tenant_id, b.key
    FROM written w
    JOIN config_budgets b ON b.tenant_id = w.parent_id
    WHERE :'keys'::text[] IS NULL OR b.key = ANY(:'keys'::text[])
    UNION
    SELECT b.tenant_id, b.key
    FROM config_budgets b
    WHERE (:'keys'::text[] IS NULL OR b.key = ANY(:'keys'::text[]))
      AND (SELECT true
           FROM tenant_closure c
           WHERE c.ancestor_id = ANY(:'tenant_ids'::uuid[])
             AND c.descendant_id = b.tenant_id
           LIMIT 1)
)
-- 3. Per budget: the holder's resolved value (the highest lock, else the nearest entry,
--    as context.sql resolves) and the children's own entries.
SELECT h.tenant_id, h.key, cap.value AS capacity, cap.present,
       held.allocated, held.non_numeric
FROM holders h
LEFT JOIN LATERAL (
    SELECT CASE WHEN ce.sensitive THEN NULL ELSE ce.value END AS value, true AS present
    FROM tenant_closure ch
    JOIN config_entries ce ON ce.tenant_id = ch.ancestor_id AND ce.key = h.key
    WHERE ch.descendant_id = h.tenant_id
    ORDER BY ce.locked DESC, CASE WHEN ce.locked THEN -ch.depth ELSE ch.depth END
    LIMIT 1
) AS cap ON true
CROSS JOIN LATERAL (
    SELECT coalesce(sum((ce.value #>> '{}')::numeric)
                        FILTER (WHERE jsonb_typeof(ce.value) = 'number'), 0) AS allocated,
           count(*) FILTER (WHERE ce.value IS NULL
                                  OR jsonb_typeof(ce.value) <> 'number') AS non_numeric
    FROM tenants k
    JOIN config_entries ce ON ce.tenant_id = k.id AND ce.key = h.key
    WHERE k.parent_id = h.tenant_id
) AS held
ORDER BY h.tenant_id, h.key;
