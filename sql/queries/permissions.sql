-- A tenant's own permission policies. Resolution across ancestors is in context.sql.
-- mode: INHERIT (tenant and descendants, overridable below), LOCKED (whole subtree, not
-- overridable), LOCAL (the tenant only).

-- name: list_permission_policies :many
-- A tenant's own policies in key order.
SELECT tenant_id, key, value, mode, created_at, updated_at
FROM permission_policies
WHERE tenant_id = :'tenant_id'
ORDER BY key;

-- name: get_permission_policy :one
-- One of a tenant's own policies.
SELECT tenant_id, key, value, mode, created_at, updated_at
FROM permission_policies
WHERE tenant_id = :'tenant_id'
  AND key = :'key';

-- name: find_locked_permission_keys :many
-- Which of the keys a LOCKED policy holds at tenant_id or any ancestor, with the highest
-- one.
SELECT DISTINCT ON (pp.key) pp.key, pp.tenant_id
FROM tenant_closure c
JOIN permission_policies pp ON pp.tenant_id = c.ancestor_id AND pp.mode = 'LOCKED'
WHERE c.descendant_id = :'tenant_id'
  AND pp.key = ANY(:'keys'::text[])
ORDER BY pp.key, c.depth DESC;

-- name: upsert_permission_policy :one
-- Create or replace one policy.
INSERT INTO permission_policies (tenant_id, key, value, mode)
VALUES (:'tenant_id', :'key', :'value', :'mode')
ON CONFLICT (tenant_id, key) DO UPDATE
SET value = excluded.value,
    mode = excluded.mode,
    updated_at = now()
RETURNING tenant_id, key, value, mode, created_at, updated_at;

-- name: delete_permission_policy :one
-- Remove one policy; returns it (no row: there was none).
DELETE FROM permission_policies
WHERE tenant_id = :'tenant_id'
  AND key = :'key'
RETURNING tenant_id, key, value, mode, created_at, updated_at;

-- name: lock_permission_keys :value
-- Writes of one key in one tree wait for each other only along a line of descent: a
-- write at T holds (T, key) exclusively and (A, key) shared for every ancestor A of T,
-- so writes at siblings run at once, while a write at A (locking the key, say) and a
-- write below A take turns and the second sees the first's committed row. Parallel
-- arrays: paths (the ancestry path of each tenant written), keys, and exclusive (false:
-- the path's last tenant is held shared too, as for a child being created under it).
-- Locks are taken in one global order (by lock key), so two writers never deadlock.
SELECT count(CASE WHEN k.exclusive
                  THEN pg_advisory_xact_lock(hashtext('permission_policies'), k.lock_key)
                  ELSE pg_advisory_xact_lock_shared(hashtext('permission_policies'), k.lock_key)
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
