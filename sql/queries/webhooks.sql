-- Webhook subscriptions. Reads carry the ancestry path of the webhook's tenant (NULL for
-- a global webhook) so the use case can check a tenant-scoped caller's subtree.
-- Secrets are stored encrypted (v1:...), associated data bound to the webhook id.

-- name: insert_webhook :one
-- Store a new webhook; returns it with its tenant's path.
WITH inserted AS (
    -- the new row, every column
    INSERT INTO webhooks (id, tenant_id, url, events, encrypted_secret, description, active,
                          include_descendants)
    VALUES (:'webhook_id', :'tenant_id', :'url', :'events', :'encrypted_secret',
            :'description', :'active', :'include_descendants')
    RETURNING id, tenant_id, url, events, encrypted_secret, previous_encrypted_secret,
              previous_secret_expires_at, description, active, include_descendants,
              created_at, updated_at
)
SELECT i.id, i.tenant_id, i.url, i.events, i.encrypted_secret,
       i.previous_encrypted_secret, i.previous_secret_expires_at, i.description,
       i.active, i.include_descendants, i.created_at, i.updated_at,
       t.ancestry_path AS tenant_path
FROM inserted i
LEFT JOIN tenants t ON t.id = i.tenant_id;

-- name: get_webhook :one
-- One webhook with its tenant's path.
SELECT w.id, w.tenant_id, w.url, w.events, w.encrypted_secret,
       w.previous_encrypted_secret, w.previous_secret_expires_at, w.description,
       w.active, w.include_descendants, w.created_at, w.updated_at,
       t.ancestry_path AS tenant_path
FROM webhooks w
LEFT JOIN tenants t ON t.id = w.tenant_id
WHERE w.id = :'webhook_id';

-- name: lock_webhook :one
-- One webhook locked for a change or a rotation (NO KEY: fan-outs that reference it
-- need not wait), with its tenant's path.
SELECT w.id, w.tenant_id, w.url, w.events, w.encrypted_secret,
       w.previous_encrypted_secret, w.previous_secret_expires_at, w.description,
       w.active, w.include_descendants, w.created_at, w.updated_at,
       t.ancestry_path AS tenant_path
FROM webhooks w
LEFT JOIN tenants t ON t.id = w.tenant_id
WHERE w.id = :'webhook_id'
FOR NO KEY UPDATE OF w;

-- name: list_webhooks :many
-- Webhooks in id order: all (scope_tenant_id NULL) or those of scope_tenant_id's subtree
-- (never global ones), optionally only those of tenant_id (NULL: any).
SELECT w.id, w.tenant_id, w.url, w.events, w.encrypted_secret,
       w.previous_encrypted_secret, w.previous_secret_expires_at, w.description,
       w.active, w.include_descendants, w.created_at, w.updated_at,
       t.ancestry_path AS tenant_path
FROM webhooks w
LEFT JOIN tenants t ON t.id = w.tenant_id
WHERE (:'scope_tenant_id'::uuid IS NULL
       OR w.tenant_id IN (SELECT c.descendant_id
                          FROM tenant_closure c
                          WHERE c.ancestor_id = :'scope_tenant_id'))
  AND (:'tenant_id'::uuid IS NULL OR w.tenant_id = :'tenant_id')
ORDER BY w.id;

-- name: update_webhook :one
-- Replace a webhook's editable fields and secrets; returns it with its tenant's path.
WITH updated AS (
    -- the row as stored now, every column
    UPDATE webhooks
    SET url = :'url',
        events = :'events',
        description = :'description',
        active = :'active',
        include_descendants = :'include_descendants',
        encrypted_secret = :'encrypted_secret',
        previous_encrypted_secret = :'previous_encrypted_secret',
        previous_secret_expires_at = :'previous_secret_expires_at',
        updated_at = now()
    WHERE id = :'webhook_id'
    RETURNING id, tenant_id, url, events, encrypted_secret, previous_encrypted_secret,
              previous_secret_expires_at, description, active, include_descendants,
              created_at, updated_at
)
SELECT u.id, u.tenant_id, u.url, u.events, u.encrypted_secret,
       u.previous_encrypted_secret, u.previous_secret_expires_at, u.description,
       u.active, u.include_descendants, u.created_at, u.updated_at,
       t.ancestry_path AS tenant_path
FROM updated u
LEFT JOIN tenants t ON t.id = u.tenant_id;

-- name: rotate_webhook_secret :one
-- New secret encrypted_secret; the old one keeps signing (as the previous secret) for
-- overlap_seconds.
WITH rotated AS (
    -- the row with its secrets shifted, every column
    UPDATE webhooks
    SET previous_encrypted_secret = encrypted_secret,
        previous_secret_expires_at
            = now() + make_interval(secs => :'overlap_seconds'::float8),
        encrypted_secret = :'encrypted_secret',
        updated_at = now()
    WHERE id = :'webhook_id'
    RETURNING id, tenant_id, url, events, encrypted_secret, previous_encrypted_secret,
              previous_secret_expires_at, description, active, include_descendants,
              created_at, updated_at
)
SELECT r.id, r.tenant_id, r.url, r.events, r.encrypted_secret,
       r.previous_encrypted_secret, r.previous_secret_expires_at, r.description,
       r.active, r.include_descendants, r.created_at, r.updated_at,
       t.ancestry_path AS tenant_path
FROM rotated r
LEFT JOIN tenants t ON t.id = r.tenant_id;

-- name: delete_webhook :exec
-- Remove a webhook; its deliveries go with it (foreign key cascade).
DELETE FROM webhooks
WHERE id = :'webhook_id';
