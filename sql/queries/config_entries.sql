-- A tenant's own config entries. Resolution across ancestors is in context.sql.

-- name: list_config_entries
-- A tenant's own entries in key order (sensitive ones still encrypted).
SELECT tenant_id, key, value, encrypted_value, locked, sensitive, created_at, updated_at
FROM config_entries
WHERE tenant_id = $1
ORDER BY key;

-- name: find_locked_config_keys
-- Which of keys $2 are locked at tenant $1 or any ancestor of it, with the highest lock.
SELECT DISTINCT ON (ce.key) ce.key, ce.tenant_id
FROM tenant_closure c
JOIN config_entries ce ON ce.tenant_id = c.ancestor_id AND ce.locked
WHERE c.descendant_id = $1
  AND ce.key = ANY($2::text[])
ORDER BY ce.key, c.depth DESC;

-- name: insert_config_for_new_tenants
-- Plain entries of newly created tenants from parallel arrays (tenant, key, JSON text).
INSERT INTO config_entries (tenant_id, key, value)
SELECT e.tenant_id, e.key, e.value::jsonb
FROM unnest($1::uuid[], $2::text[], $3::text[]) AS e(tenant_id, key, value);

-- name: upsert_config_values
-- Set values (JSON text) of tenant $1's keys; a new entry starts unlocked, an existing one
-- keeps its lock.
INSERT INTO config_entries (tenant_id, key, value, encrypted_value, sensitive)
SELECT $1, e.key, e.value::jsonb, e.encrypted_value, e.sensitive
FROM unnest($2::text[], $3::text[], $4::text[], $5::boolean[])
     AS e(key, value, encrypted_value, sensitive)
ON CONFLICT (tenant_id, key) DO UPDATE
SET value = excluded.value,
    encrypted_value = excluded.encrypted_value,
    sensitive = excluded.sensitive,
    updated_at = now();

-- name: delete_config_keys
-- Remove some of tenant $1's entries.
DELETE FROM config_entries
WHERE tenant_id = $1
  AND key = ANY($2::text[]);

-- name: get_config_entry
-- One of a tenant's own entries (sensitive ones still encrypted).
SELECT tenant_id, key, value, encrypted_value, locked, sensitive, created_at, updated_at
FROM config_entries
WHERE tenant_id = $1
  AND key = $2;

-- name: upsert_config_entry
-- Create or replace one entry whole (value or ciphertext, lock, sensitivity).
INSERT INTO config_entries (tenant_id, key, value, encrypted_value, locked, sensitive)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (tenant_id, key) DO UPDATE
SET value = excluded.value,
    encrypted_value = excluded.encrypted_value,
    locked = excluded.locked,
    sensitive = excluded.sensitive,
    updated_at = now()
RETURNING tenant_id, key, value, encrypted_value, locked, sensitive, created_at, updated_at;

-- name: delete_config_entry
-- Remove one entry; returns it (no row: there was none).
DELETE FROM config_entries
WHERE tenant_id = $1
  AND key = $2
RETURNING tenant_id, key, value, encrypted_value, locked, sensitive, created_at, updated_at;

-- name: lock_config_keys
-- Serialize writes of the same keys in the same tree until the transaction ends, so a
-- write below cannot slip past an ancestor that is locking the key at that moment.
-- Arrays $1 (tree root ids) and $2 (keys); locks are taken in one global order.
SELECT count(pg_advisory_xact_lock(hashtext('config_entries'), k.lock_key)) AS locked
FROM (
    SELECT DISTINCT hashtext(r.root_id::text || '/' || r.key) AS lock_key
    FROM unnest($1::uuid[], $2::text[]) AS r(root_id, key)
    ORDER BY 1
) AS k;
