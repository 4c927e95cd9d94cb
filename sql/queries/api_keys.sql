-- API keys: stored by HMAC only. Reads that answer requests join the key's role (for its
-- effective scopes) and its tenant's ancestry path (for subtree checks).

-- name: insert_api_key
-- Store a new key (its hash, never its text).
INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, environment, scopes, role_id,
                      rate_limit_max, rate_limit_window, rate_limit_window_seconds,
                      expires_at, rotated_from)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
RETURNING id, tenant_id, name, prefix, environment, scopes, role_id, rate_limit_max,
          rate_limit_window, rate_limit_window_seconds, created_at, last_used_at,
          expires_at, revoked_at, rotated_from;

-- name: get_api_key
-- One key with its role's scopes and its tenant's ancestry path.
SELECT k.id, k.tenant_id, k.name, k.prefix, k.environment, k.scopes, k.role_id,
       k.rate_limit_max, k.rate_limit_window, k.rate_limit_window_seconds, k.created_at,
       k.last_used_at, k.expires_at, k.revoked_at, k.rotated_from,
       r.scopes AS role_scopes, t.ancestry_path AS tenant_path
FROM api_keys k
LEFT JOIN roles r ON r.id = k.role_id
LEFT JOIN tenants t ON t.id = k.tenant_id
WHERE k.id = $1;

-- name: lock_api_key
-- One key locked for a change, with its role's scopes and its tenant's ancestry path.
SELECT k.id, k.tenant_id, k.name, k.prefix, k.environment, k.scopes, k.role_id,
       k.rate_limit_max, k.rate_limit_window, k.rate_limit_window_seconds, k.created_at,
       k.last_used_at, k.expires_at, k.revoked_at, k.rotated_from,
       r.scopes AS role_scopes, t.ancestry_path AS tenant_path
FROM api_keys k
LEFT JOIN roles r ON r.id = k.role_id
LEFT JOIN tenants t ON t.id = k.tenant_id
WHERE k.id = $1
FOR UPDATE OF k;

-- name: list_api_keys
-- A keyset page of keys in id order: $1 only this tenant's keys (or any), $2 only keys
-- inside this tenant's subtree (or any), $3 include revoked keys, $4 after this id.
SELECT k.id, k.tenant_id, k.name, k.prefix, k.environment, k.scopes, k.role_id,
       k.rate_limit_max, k.rate_limit_window, k.rate_limit_window_seconds, k.created_at,
       k.last_used_at, k.expires_at, k.revoked_at, k.rotated_from,
       r.scopes AS role_scopes, t.ancestry_path AS tenant_path
FROM api_keys k
LEFT JOIN roles r ON r.id = k.role_id
LEFT JOIN tenants t ON t.id = k.tenant_id
WHERE ($1::uuid IS NULL OR k.tenant_id = $1)
  AND ($2::uuid IS NULL OR EXISTS (
        SELECT 1 FROM tenant_closure c
        WHERE c.ancestor_id = $2 AND c.descendant_id = k.tenant_id))
  -- A key inside its rotation grace period is still usable, so it is listed.
  AND ($3::boolean OR k.revoked_at IS NULL OR k.revoked_at > now())
  AND ($4::uuid IS NULL OR k.id > $4)
ORDER BY k.id
LIMIT $5;

-- name: list_dormant_api_keys
-- Usable keys (not revoked, not expired) whose last use, or creation when never used,
-- lies more than $1 days back; $2 limits them to a tenant's subtree (or any).
SELECT k.id, k.tenant_id, k.name, k.prefix, k.environment, k.scopes, k.role_id,
       k.rate_limit_max, k.rate_limit_window, k.rate_limit_window_seconds, k.created_at,
       k.last_used_at, k.expires_at, k.revoked_at, k.rotated_from,
       r.scopes AS role_scopes, t.ancestry_path AS tenant_path
FROM api_keys k
LEFT JOIN roles r ON r.id = k.role_id
LEFT JOIN tenants t ON t.id = k.tenant_id
WHERE (k.revoked_at IS NULL OR k.revoked_at > now())
  AND (k.expires_at IS NULL OR k.expires_at > now())
  AND coalesce(k.last_used_at, k.created_at) < now() - make_interval(days => $1)
  AND ($2::uuid IS NULL OR EXISTS (
        SELECT 1 FROM tenant_closure c
        WHERE c.ancestor_id = $2 AND c.descendant_id = k.tenant_id))
ORDER BY k.id;

-- name: update_api_key
-- Replace a key's editable settings (PATCH has merged them already).
UPDATE api_keys
SET name = $2,
    scopes = $3,
    rate_limit_max = $4,
    rate_limit_window = $5,
    rate_limit_window_seconds = $6,
    expires_at = $7
WHERE id = $1;

-- name: revoke_api_key
-- Revoke a key now ($2 = 0) or after a grace period of $2 seconds (rotation).
UPDATE api_keys
SET revoked_at = now() + make_interval(secs => $2)
WHERE id = $1
RETURNING revoked_at;

-- name: set_api_key_role
-- Assign a role to a key, or remove it (null).
UPDATE api_keys
SET role_id = $2
WHERE id = $1;

-- name: list_api_keys_with_role
-- The keys holding a role and their own scopes (what they fall back to without it).
SELECT id, scopes
FROM api_keys
WHERE role_id = $1
ORDER BY id;

-- name: get_api_key_for_auth
-- The key a hash belongs to, with its role's scopes, for authentication.
SELECT k.id, k.tenant_id, k.scopes, k.role_id, k.environment, k.rate_limit_max,
       k.rate_limit_window_seconds, k.expires_at, k.revoked_at, k.last_used_at,
       r.scopes AS role_scopes
FROM api_keys k
LEFT JOIN roles r ON r.id = k.role_id
WHERE k.key_hash = $1;

-- name: count_api_keys
-- How many keys exist (a first development start creates one when there are none).
SELECT count(*) AS total
FROM api_keys;

-- name: touch_api_keys
-- Record when keys were used ($1 ids, $2 times of use), at most once a minute per key
-- whichever process reports the use.
UPDATE api_keys k
SET last_used_at = u.used_at
FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, used_at)
WHERE k.id = u.id
  AND (k.last_used_at IS NULL OR k.last_used_at <= u.used_at - interval '1 minute');

-- name: lock_key_bootstrap
-- Serialize the first-start creation of a development key across processes.
SELECT pg_advisory_xact_lock(7310452118900002);
