-- A tenant's own config entries. Resolution across ancestors: context_config_winners
-- (migration 0052).

-- name: list_config_entries :many
-- A tenant's own entries in key order (sensitive ones still encrypted).
SELECT tenant_id, key, value, encrypted_value, locked, sensitive, reveal_to_descendants,
       expires_at, created_at, updated_at
FROM config_entries
WHERE tenant_id = :'tenant_id'
ORDER BY key;

-- name: find_locked_config_keys :many
-- Which of the keys are locked at tenant_id or any ancestor of it, with the highest lock
-- (config_entry_rank, migration 0052: of locked entries, the highest ranks first; every
-- entry here is locked, so the rank is asked for a lock, which keeps the scan of
-- config_entries_locked_idx index-only). Only locked entries are read, which
-- context_config_winners could not do: its key is the only column a filter can reach
-- inside it.
SELECT DISTINCT ON (ce.key) ce.key, ce.tenant_id
FROM tenant_closure c
JOIN config_entries ce ON ce.tenant_id = c.ancestor_id AND ce.locked
WHERE c.descendant_id = :'tenant_id'
  AND ce.key = ANY(:'keys'::text[])
ORDER BY ce.key, config_entry_rank(true, c.depth);

-- name: insert_config_for_new_tenants :exec
-- Plain entries of newly created tenants from parallel arrays (tenant, key, JSON text).
INSERT INTO config_entries (tenant_id, key, value)
SELECT e.tenant_id, e.key, e.value::jsonb
FROM unnest(:'tenant_ids'::uuid[], :'keys'::text[], :'json_values'::text[])
     AS e(tenant_id, key, value);

-- name: upsert_config_values :exec
-- Set values (JSON text) of tenant_id's keys from parallel arrays; a new entry starts
-- unlocked, an existing one keeps its lock.
INSERT INTO config_entries (tenant_id, key, value, encrypted_value, sensitive)
SELECT :'tenant_id'::uuid, e.key, e.value::jsonb, e.encrypted_value, e.sensitive
FROM unnest(:'keys'::text[], :'json_values'::text[], :'encrypted_values'::text[],
            :'sensitive_flags'::boolean[])
     AS e(key, value, encrypted_value, sensitive)
ON CONFLICT (tenant_id, key) DO UPDATE
SET value = excluded.value,
    encrypted_value = excluded.encrypted_value,
    sensitive = excluded.sensitive,
    updated_at = now();

-- name: delete_config_keys :exec
-- Remove some of tenant_id's entries.
DELETE FROM config_entries
WHERE tenant_id = :'tenant_id'
  AND key = ANY(:'keys'::text[]);

-- name: get_config_entry :one
-- One of a tenant's own entries (sensitive ones still encrypted).
SELECT tenant_id, key, value, encrypted_value, locked, sensitive, reveal_to_descendants,
       expires_at, created_at, updated_at
FROM config_entries
WHERE tenant_id = :'tenant_id'
  AND key = :'key';

-- name: check_config_write :one
-- What a write of one key at a tenant checks once it holds the key locks, in one round
-- trip (three statements before): the highest tenant above it holding the key locked
-- (:'parent_id' is the tenant's parent, NULL for a root: none), the nearest protected
-- tenant at or above it, and the tenant's own entry of the key (sensitive still
-- encrypted). Always one row; a column is NULL where there is none. Read after the key
-- locks, so a lock or entry written by a writer the locks waited for is seen.
WITH
-- 1. the key locked above the tenant, the highest lock first (find_locked_config_keys)
locking AS (
    SELECT ce.tenant_id
    FROM tenant_closure c
    JOIN config_entries ce ON ce.tenant_id = c.ancestor_id AND ce.locked
    WHERE c.descendant_id = :'parent_id'
      AND ce.key = :'key'
    ORDER BY config_entry_rank(true, c.depth)
    LIMIT 1
),
-- 2. the nearest protected tenant at or above the tenant (find_protecting_tenant)
protecting AS (
    SELECT p.tenant_id
    FROM tenant_closure c
    JOIN protected_tenants p ON p.tenant_id = c.ancestor_id
    WHERE c.descendant_id = :'tenant_id'
    ORDER BY c.depth
    LIMIT 1
)
SELECT (SELECT l.tenant_id FROM locking l) AS locked_by,
       (SELECT p.tenant_id FROM protecting p) AS protected_by,
       ce.tenant_id, ce.key, ce.value, ce.encrypted_value, ce.locked, ce.sensitive,
       ce.reveal_to_descendants, ce.expires_at, ce.created_at, ce.updated_at
FROM (VALUES (1)) AS one (row)
LEFT JOIN config_entries ce ON ce.tenant_id = :'tenant_id' AND ce.key = :'key';

-- name: upsert_config_entry :one
-- Create or replace one entry whole (value or ciphertext, lock, sensitivity, sharing,
-- expiry).
INSERT INTO config_entries (tenant_id, key, value, encrypted_value, locked, sensitive,
                            reveal_to_descendants, expires_at)
VALUES (:'tenant_id', :'key', :'value', :'encrypted_value', :'locked', :'sensitive',
        :'reveal_to_descendants', :'expires_at')
ON CONFLICT (tenant_id, key) DO UPDATE
SET value = excluded.value,
    encrypted_value = excluded.encrypted_value,
    locked = excluded.locked,
    sensitive = excluded.sensitive,
    reveal_to_descendants = excluded.reveal_to_descendants,
    expires_at = excluded.expires_at,
    updated_at = now()
RETURNING tenant_id, key, value, encrypted_value, locked, sensitive, reveal_to_descendants,
          expires_at, created_at, updated_at;

-- name: delete_config_entry :one
-- Remove one entry; returns it (no row: there was none).
DELETE FROM config_entries
WHERE tenant_id = :'tenant_id'
  AND key = :'key'
RETURNING tenant_id, key, value, encrypted_value, locked, sensitive, reveal_to_descendants,
          expires_at, created_at, updated_at;

-- name: delete_expired_config_entries :many
-- Remove up to batch_size entries whose expiry has passed, soonest first, skipping rows
-- another transaction holds (another process's expiry or a write under way: the next
-- round sees them again); returns them.
WITH
-- 1. The due entries this transaction claims (config_entries_expires_at_idx).
due AS (
    SELECT ce.tenant_id, ce.key
    FROM config_entries ce
    WHERE ce.expires_at <= now()
    ORDER BY ce.expires_at
    LIMIT :'batch_size'::integer
    FOR UPDATE SKIP LOCKED
)
-- 2. Gone.
DELETE FROM config_entries ce
USING due d
WHERE ce.tenant_id = d.tenant_id
  AND ce.key = d.key
RETURNING ce.tenant_id, ce.key, ce.value, ce.encrypted_value, ce.locked, ce.sensitive,
          ce.reveal_to_descendants, ce.expires_at, ce.created_at, ce.updated_at;
