-- A tenant's own permission policies. Resolution across ancestors:
-- context_permission_winners (migration 0052).
-- mode: INHERIT (tenant and descendants, overridable below), LOCKED (whole subtree, not
-- overridable), LOCAL (the tenant only).

-- name: list_permission_policies :many
-- A tenant's own policies in key order.
SELECT tenant_id, key, value, mode, expires_at, created_at, updated_at
FROM permission_policies
WHERE tenant_id = :'tenant_id'
ORDER BY key;

-- name: get_permission_policy :one
-- One of a tenant's own policies.
SELECT tenant_id, key, value, mode, expires_at, created_at, updated_at
FROM permission_policies
WHERE tenant_id = :'tenant_id'
  AND key = :'key';

-- name: find_locked_permission_keys :many
-- Which of the keys a LOCKED policy holds at tenant_id or any ancestor, with the highest
-- one (permission_policy_rank, migration 0052: of LOCKED policies, the highest ranks
-- first; every policy here is LOCKED, so the rank is asked for that mode, which keeps
-- the scan of permission_policies_locked_idx index-only). Only LOCKED policies are read,
-- which context_permission_winners could not do: its key is the only column a filter
-- can reach inside it.
SELECT DISTINCT ON (pp.key) pp.key, pp.tenant_id
FROM tenant_closure c
JOIN permission_policies pp ON pp.tenant_id = c.ancestor_id AND pp.mode = 'LOCKED'
WHERE c.descendant_id = :'tenant_id'
  AND pp.key = ANY(:'keys'::text[])
ORDER BY pp.key, permission_policy_rank('LOCKED', c.depth);

-- name: upsert_permission_policy :one
-- Create or replace one policy (with its expiry).
INSERT INTO permission_policies (tenant_id, key, value, mode, expires_at)
VALUES (:'tenant_id', :'key', :'value', :'mode', :'expires_at')
ON CONFLICT (tenant_id, key) DO UPDATE
SET value = excluded.value,
    mode = excluded.mode,
    expires_at = excluded.expires_at,
    updated_at = now()
RETURNING tenant_id, key, value, mode, expires_at, created_at, updated_at;

-- name: delete_permission_policy :one
-- Remove one policy; returns it (no row: there was none).
DELETE FROM permission_policies
WHERE tenant_id = :'tenant_id'
  AND key = :'key'
RETURNING tenant_id, key, value, mode, expires_at, created_at, updated_at;

-- name: delete_expired_permission_policies :many
-- Remove up to batch_size policies whose expiry has passed, soonest first, skipping rows
-- another transaction holds; returns them.
WITH
-- 1. The due policies this transaction claims (permission_policies_expires_at_idx).
due AS (
    SELECT pp.tenant_id, pp.key
    FROM permission_policies pp
    WHERE pp.expires_at <= now()
    ORDER BY pp.expires_at
    LIMIT :'batch_size'::integer
    FOR UPDATE SKIP LOCKED
)
-- 2. Gone.
DELETE FROM permission_policies pp
USING due d
WHERE pp.tenant_id = d.tenant_id
  AND pp.key = d.key
RETURNING pp.tenant_id, pp.key, pp.value, pp.mode, pp.expires_at, pp.created_at,
          pp.updated_at;
