-- A tenant's own config entries. Resolution across ancestors is in context.sql.

-- name: list_config_entries :many
-- A tenant's own entries in key order (sensitive ones still encrypted).
SELECT tenant_id, key, value, encrypted_value, locked, sensitive, reveal_to_descendants,
       created_at, updated_at
FROM config_entries
WHERE tenant_id = :'tenant_id'
ORDER BY key;

-- name: find_locked_config_keys :many
-- Which of the keys are locked at tenant_id or any ancestor of it, with the highest lock.
SELECT DISTINCT ON (ce.key) ce.key, ce.tenant_id
FROM tenant_closure c
JOIN config_entries ce ON ce.tenant_id = c.ancestor_id AND ce.locked
WHERE c.descendant_id = :'tenant_id'
  AND ce.key = ANY(:'keys'::text[])
ORDER BY ce.key, c.depth DESC;

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
       created_at, updated_at
FROM config_entries
WHERE tenant_id = :'tenant_id'
  AND key = :'key';

-- name: upsert_config_entry :one
-- Create or replace one entry whole (value or ciphertext, lock, sensitivity, sharing).
INSERT INTO config_entries (tenant_id, key, value, encrypted_value, locked, sensitive,
                            reveal_to_descendants)
VALUES (:'tenant_id', :'key', :'value', :'encrypted_value', :'locked', :'sensitive',
        :'reveal_to_descendants')
ON CONFLICT (tenant_id, key) DO UPDATE
SET value = excluded.value,
    encrypted_value = excluded.encrypted_value,
    locked = excluded.locked,
    sensitive = excluded.sensitive,
    reveal_to_descendants = excluded.reveal_to_descendants,
    updated_at = now()
RETURNING tenant_id, key, value, encrypted_value, locked, sensitive, reveal_to_descendants,
          created_at, updated_at;

-- name: delete_config_entry :one
-- Remove one entry; returns it (no row: there was none).
DELETE FROM config_entries
WHERE tenant_id = :'tenant_id'
  AND key = :'key'
RETURNING tenant_id, key, value, encrypted_value, locked, sensitive, reveal_to_descendants,
          created_at, updated_at;

-- name: lock_config_keys :value
-- Writes of one key in one tree wait for each other only along a line of descent: a
-- write at T holds (T, key) exclusively and (A, key) shared for every ancestor A of T,
-- so writes at siblings run at once, while a write at A (locking the key, say) and a
-- write below A take turns and the second sees the first's committed row. Parallel
-- arrays: paths (the ancestry path of each tenant written), keys, and exclusive (false:
-- the path's last tenant is held shared too, as for a child being created under it).
-- Locks are taken in one global order (by lock key), so two writers never deadlock.
SELECT count(CASE WHEN k.exclusive
                  THEN pg_advisory_xact_lock(hashtext('config_entries'), k.lock_key)
                  ELSE pg_advisory_xact_lock_shared(hashtext('config_entries'), k.lock_key)
             END) AS locked
FROM (
    -- every tenant on every path with its key; exclusive only for a path's own tenant
    SELECT hashtext(s.tenant_id || '/' || r.key) AS lock_key,
           bool_or(r.exclusive AND s.ord = s.last) AS exclusive
    FROM unnest(:'paths'::text[], :'keys'::text[], :'exclusive'::boolean[])
             AS r(path, key, exclusive)
    CROSS JOIN LATERAL (
        SELECT u.tenant_id, u.ord, count(*) OVER () AS last
        FROM unnest(string_to_array(ltrim(r.path, '/'), '/')) WITH ORDINALITY
                 AS u(tenant_id, ord)
    ) AS s
    GROUP BY 1
    ORDER BY 1
) AS k;
