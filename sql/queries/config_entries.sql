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
