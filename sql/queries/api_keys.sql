-- API keys: stored by HMAC only. Reads that answer requests join the key's role (for its
-- effective scopes: svc_role_scopes gives none while the key's tenant lies outside the
-- role's owner subtree, migration 0016) and its tenant's ancestry path (subtree checks).

-- name: insert_api_key :one
-- Store a new key (its hash, never its text).
INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, environment, scopes, role_id,
                      rate_limit_max, rate_limit_window, rate_limit_window_seconds,
                      expires_at, rotated_from)
VALUES (:'key_id', :'tenant_id', :'name', :'prefix', :'key_hash', :'environment',
        :'scopes', :'role_id', :'rate_limit_max', :'rate_limit_window',
        :'rate_limit_window_seconds', :'expires_at', :'rotated_from')
RETURNING id, tenant_id, name, prefix, environment, scopes, role_id, rate_limit_max,
          rate_limit_window, rate_limit_window_seconds, created_at, last_used_at,
          expires_at, revoked_at, rotated_from;

-- name: get_api_key :one
-- One key with its role's scopes and its tenant's ancestry path.
SELECT k.id, k.tenant_id, k.name, k.prefix, k.environment, k.scopes, k.role_id,
       k.rate_limit_max, k.rate_limit_window, k.rate_limit_window_seconds, k.created_at,
       k.last_used_at, k.expires_at, k.revoked_at, k.rotated_from,
       svc_role_scopes(r.tenant_id, r.scopes, k.tenant_id) AS role_scopes,
       t.ancestry_path AS tenant_path
FROM api_keys k
LEFT JOIN roles r ON r.id = k.role_id
LEFT JOIN tenants t ON t.id = k.tenant_id
WHERE k.id = :'key_id';

-- name: lock_api_key :one
-- One key locked for a change, with its role's scopes and its tenant's ancestry path.
SELECT k.id, k.tenant_id, k.name, k.prefix, k.environment, k.scopes, k.role_id,
       k.rate_limit_max, k.rate_limit_window, k.rate_limit_window_seconds, k.created_at,
       k.last_used_at, k.expires_at, k.revoked_at, k.rotated_from,
       svc_role_scopes(r.tenant_id, r.scopes, k.tenant_id) AS role_scopes,
       t.ancestry_path AS tenant_path
FROM api_keys k
LEFT JOIN roles r ON r.id = k.role_id
LEFT JOIN tenants t ON t.id = k.tenant_id
WHERE k.id = :'key_id'
FOR UPDATE OF k;

-- name: list_api_keys :many
-- A keyset page of keys in id order: only tenant_id's own keys (NULL: any), only keys
-- inside subtree_root_id's subtree (NULL: any), revoked ones too when include_revoked,
-- after cursor_id (NULL: from the start).
SELECT k.id, k.tenant_id, k.name, k.prefix, k.environment, k.scopes, k.role_id,
       k.rate_limit_max, k.rate_limit_window, k.rate_limit_window_seconds, k.created_at,
       k.last_used_at, k.expires_at, k.revoked_at, k.rotated_from,
       svc_role_scopes(r.tenant_id, r.scopes, k.tenant_id) AS role_scopes,
       t.ancestry_path AS tenant_path
FROM api_keys k
LEFT JOIN roles r ON r.id = k.role_id
LEFT JOIN tenants t ON t.id = k.tenant_id
WHERE (:'tenant_id'::uuid IS NULL OR k.tenant_id = :'tenant_id')
  AND (:'subtree_root_id'::uuid IS NULL OR EXISTS (
        SELECT 1 FROM tenant_closure c
        WHERE c.ancestor_id = :'subtree_root_id' AND c.descendant_id = k.tenant_id))
  -- A key inside its rotation grace period is still usable, so it is listed.
  AND (:'include_revoked'::boolean OR k.revoked_at IS NULL OR k.revoked_at > now())
  AND (:'cursor_id'::uuid IS NULL OR k.id > :'cursor_id')
ORDER BY k.id
LIMIT :'page_size'::integer;

-- name: list_dormant_api_keys :many
-- Usable keys (not revoked, not expired) whose last use, or creation when never used,
-- lies more than dormant_days days back; only inside subtree_root_id's subtree (NULL: any).
SELECT k.id, k.tenant_id, k.name, k.prefix, k.environment, k.scopes, k.role_id,
       k.rate_limit_max, k.rate_limit_window, k.rate_limit_window_seconds, k.created_at,
       k.last_used_at, k.expires_at, k.revoked_at, k.rotated_from,
       svc_role_scopes(r.tenant_id, r.scopes, k.tenant_id) AS role_scopes,
       t.ancestry_path AS tenant_path
FROM api_keys k
LEFT JOIN roles r ON r.id = k.role_id
LEFT JOIN tenants t ON t.id = k.tenant_id
WHERE (k.revoked_at IS NULL OR k.revoked_at > now())
  AND (k.expires_at IS NULL OR k.expires_at > now())
  AND coalesce(k.last_used_at, k.created_at)
      < now() - make_interval(days => :'dormant_days'::integer)
  AND (:'subtree_root_id'::uuid IS NULL OR EXISTS (
        SELECT 1 FROM tenant_closure c
        WHERE c.ancestor_id = :'subtree_root_id' AND c.descendant_id = k.tenant_id))
ORDER BY k.id;

-- name: update_api_key :exec
-- Replace a key's editable settings (PATCH has merged them already).
UPDATE api_keys
SET name = :'name',
    scopes = :'scopes',
    rate_limit_max = :'rate_limit_max',
    rate_limit_window = :'rate_limit_window',
    rate_limit_window_seconds = :'rate_limit_window_seconds',
    expires_at = :'expires_at'
WHERE id = :'key_id';

-- name: revoke_api_key :value
-- Revoke a key now (grace_seconds 0) or after a grace period of that many seconds
-- (rotation).
UPDATE api_keys
SET revoked_at = now() + make_interval(secs => :'grace_seconds'::float8)
WHERE id = :'key_id'
RETURNING revoked_at;

-- name: set_api_key_role :exec
-- Assign a role to a key, or remove it (null).
UPDATE api_keys
SET role_id = :'role_id'
WHERE id = :'key_id';

-- name: list_api_keys_with_role :many
-- The keys holding a role and their own scopes (what they fall back to without it).
SELECT id, scopes
FROM api_keys
WHERE role_id = :'role_id'
ORDER BY id;

-- name: get_api_key_for_auth :one
-- The key a hash belongs to, with its role's scopes, for authentication.
SELECT k.id, k.tenant_id, k.scopes, k.role_id, k.environment, k.rate_limit_max,
       k.rate_limit_window_seconds, k.expires_at, k.revoked_at, k.last_used_at,
       svc_role_scopes(r.tenant_id, r.scopes, k.tenant_id) AS role_scopes
FROM api_keys k
LEFT JOIN roles r ON r.id = k.role_id
WHERE k.key_hash = :'key_hash';

-- name: count_api_keys :value
-- How many keys exist (a first development start creates one when there are none).
SELECT count(*) AS total
FROM api_keys;

-- name: touch_api_keys :exec
-- Record when keys were used (parallel arrays key_ids and used_at), at most once a
-- minute per key whichever process reports the use.
UPDATE api_keys k
SET last_used_at = u.used_at
FROM unnest(:'key_ids'::uuid[], :'used_at'::timestamptz[]) AS u(id, used_at)
WHERE k.id = u.id
  AND (k.last_used_at IS NULL OR k.last_used_at <= u.used_at - interval '1 minute');

-- name: lock_key_bootstrap :exec
-- Serialize the first-start creation of a development key across processes.
SELECT pg_advisory_xact_lock(7310452118900002);

-- name: list_api_key_limits_with_role :many
-- The expiry and rate limit of every usable key a change of role :'role_id' reaches:
-- its holders, except keys outside the role's subtree (the role gives them nothing).
SELECT k.id, k.expires_at, k.rate_limit_max, k.rate_limit_window_seconds
FROM api_keys k
JOIN roles r ON r.id = k.role_id
WHERE k.role_id = :'role_id'::uuid
  AND (k.revoked_at IS NULL OR k.revoked_at > now())
  AND svc_role_scopes(r.tenant_id, r.scopes, k.tenant_id) <> '{}'::text[]
ORDER BY k.id;

-- name: list_api_keys_leaving_role_subtree :many
-- Usable keys in the subtree of :'tenant_id' holding a role owned outside that subtree
-- which a move under :'new_parent_id' (null: to the top) would take out of the role
-- owner's subtree. An owner inside the moved subtree travels along; an owner that is the
-- new parent or one of its ancestors keeps the key below it.
SELECT k.id AS api_key_id, r.id AS role_id, r.tenant_id AS role_tenant_id
FROM api_keys k
JOIN roles r ON r.id = k.role_id
JOIN tenant_closure moved ON moved.ancestor_id = :'tenant_id'::uuid
                         AND moved.descendant_id = k.tenant_id
WHERE r.tenant_id IS NOT NULL
  AND (k.revoked_at IS NULL OR k.revoked_at > now())
  AND NOT EXISTS (SELECT 1 FROM tenant_closure inside
                  WHERE inside.ancestor_id = :'tenant_id'::uuid
                    AND inside.descendant_id = r.tenant_id)
  AND NOT EXISTS (SELECT 1 FROM tenant_closure above
                  WHERE above.ancestor_id = r.tenant_id
                    AND above.descendant_id = :'new_parent_id'::uuid)
ORDER BY k.id;

-- name: count_api_keys_outside_role_subtree :value
-- How many usable keys hold role :'role_id' while their tenant lies outside the subtree
-- of the role's owner (assignments made before moves were checked, or by hand).
SELECT count(*) AS stranded
FROM api_keys k
JOIN roles r ON r.id = k.role_id
WHERE k.role_id = :'role_id'::uuid
  AND r.tenant_id IS NOT NULL
  AND (k.revoked_at IS NULL OR k.revoked_at > now())
  AND NOT EXISTS (SELECT 1 FROM tenant_closure c
                  WHERE c.ancestor_id = r.tenant_id
                    AND c.descendant_id = k.tenant_id);
