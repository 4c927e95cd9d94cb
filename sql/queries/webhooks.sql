-- Webhook subscriptions. Reads carry the ancestry path of the webhook's tenant (NULL for
-- a global webhook) so the use case can check a tenant-scoped caller's subtree.
-- Secrets are stored encrypted (v1:...), associated data bound to the webhook id.

-- name: insert_webhook
-- Store a new webhook; returns it with its tenant's path.
WITH inserted AS (
    INSERT INTO webhooks (id, tenant_id, url, events, encrypted_secret, description, active,
                          include_descendants)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
    RETURNING *
)
SELECT i.*, t.ancestry_path AS tenant_path
FROM inserted i
LEFT JOIN tenants t ON t.id = i.tenant_id;

-- name: get_webhook
-- One webhook with its tenant's path.
SELECT w.*, t.ancestry_path AS tenant_path
FROM webhooks w
LEFT JOIN tenants t ON t.id = w.tenant_id
WHERE w.id = $1;

-- name: lock_webhook
-- One webhook locked for a change or a rotation (NO KEY: fan-outs that reference it
-- need not wait), with its tenant's path.
SELECT w.*, t.ancestry_path AS tenant_path
FROM webhooks w
LEFT JOIN tenants t ON t.id = w.tenant_id
WHERE w.id = $1
FOR NO KEY UPDATE OF w;

-- name: list_webhooks
-- Webhooks in id order: all ($1 NULL) or those of $1's subtree (never global ones),
-- optionally only those of tenant $2.
SELECT w.*, t.ancestry_path AS tenant_path
FROM webhooks w
LEFT JOIN tenants t ON t.id = w.tenant_id
WHERE ($1::uuid IS NULL
       OR w.tenant_id IN (SELECT c.descendant_id FROM tenant_closure c WHERE c.ancestor_id = $1))
  AND ($2::uuid IS NULL OR w.tenant_id = $2)
ORDER BY w.id;

-- name: update_webhook
-- Replace a webhook's editable fields and secrets; returns it with its tenant's path.
WITH updated AS (
    UPDATE webhooks
    SET url = $2, events = $3, description = $4, active = $5, include_descendants = $6,
        encrypted_secret = $7, previous_encrypted_secret = $8,
        previous_secret_expires_at = $9, updated_at = now()
    WHERE id = $1
    RETURNING *
)
SELECT u.*, t.ancestry_path AS tenant_path
FROM updated u
LEFT JOIN tenants t ON t.id = u.tenant_id;

-- name: rotate_webhook_secret
-- New secret $2; the old one keeps signing (as the previous secret) for $3 seconds.
WITH rotated AS (
    UPDATE webhooks
    SET previous_encrypted_secret = encrypted_secret,
        previous_secret_expires_at = now() + make_interval(secs => $3::float8),
        encrypted_secret = $2,
        updated_at = now()
    WHERE id = $1
    RETURNING *
)
SELECT r.*, t.ancestry_path AS tenant_path
FROM rotated r
LEFT JOIN tenants t ON t.id = r.tenant_id;

-- name: delete_webhook
-- Remove a webhook; its deliveries go with it (foreign key cascade).
DELETE FROM webhooks
WHERE id = $1;
