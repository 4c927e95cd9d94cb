-- API keys: stored by HMAC only.

-- name: insert_api_key
-- Store a new key (its hash, never its text).
INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, environment, scopes, role_id,
                      rate_limit_max, rate_limit_window, rate_limit_window_seconds,
                      expires_at, rotated_from)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
RETURNING id, tenant_id, name, prefix, environment, scopes, role_id, rate_limit_max,
          rate_limit_window, rate_limit_window_seconds, created_at, last_used_at,
          expires_at, revoked_at, rotated_from;

-- name: get_api_key_for_auth
-- The key a hash belongs to, with its role's scopes, for authentication.
SELECT k.id, k.tenant_id, k.scopes, k.environment, k.rate_limit_max,
       k.rate_limit_window_seconds, k.expires_at, k.revoked_at, k.last_used_at,
       r.scopes AS role_scopes
FROM api_keys k
LEFT JOIN roles r ON r.id = k.role_id
WHERE k.key_hash = $1;

-- name: count_api_keys
-- How many keys exist (a first development start creates one when there are none).
SELECT count(*) AS total
FROM api_keys;

-- name: touch_api_key
-- Record that a key was used, at most once a minute.
UPDATE api_keys
SET last_used_at = now()
WHERE id = $1
  AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute');

-- name: lock_key_bootstrap
-- Serialize the first-start creation of a development key across processes.
SELECT pg_advisory_xact_lock(7310452118900002);
