-- GDPR purge (hard delete of a subtree). A purge runs under the tree root's exclusive
-- lock, as a move does, and removes rows child tables first so each count is exact;
-- audit entries stay, redacted (audit_logs.sql). The export reads through the other
-- areas' queries.

-- name: lock_subtree_for_purge :many
-- Lock every tenant of tenant_id's subtree for update, in id order; returns their ids.
-- Writers that lock a tenant row (PATCH, config) finish first or find it gone.
SELECT t.id
FROM tenant_closure c
JOIN tenants t ON t.id = c.descendant_id
WHERE c.ancestor_id = :'tenant_id'
ORDER BY t.id
FOR UPDATE OF t;

-- name: delete_deliveries_of_tenants :one
-- Deliveries of the purged tenants' webhooks and of their events (other webhooks that
-- received those events included), and other webhooks' failure streaks whose source is
-- a purged tenant.
WITH streaks_gone AS (
    -- failure streaks of ancestors' webhooks counted for a purged tenant's subtree
    DELETE FROM webhook_source_health s
    WHERE s.source_id = ANY(:'tenant_ids'::uuid[])
    RETURNING 1
),
gone AS (
    -- the deleted rows
    DELETE FROM webhook_deliveries d
    WHERE d.webhook_id IN (SELECT w.id FROM webhooks w
                           WHERE w.tenant_id = ANY(:'tenant_ids'::uuid[]))
       OR d.event_id IN (SELECT e.id FROM events e
                         WHERE e.tenant_id = ANY(:'tenant_ids'::uuid[]))
    RETURNING 1
)
SELECT count(*) AS deleted
FROM gone;

-- name: delete_events_of_tenants :one
-- The purged tenants' events.
WITH gone AS (
    -- the deleted rows
    DELETE FROM events
    WHERE tenant_id = ANY(:'tenant_ids'::uuid[])
    RETURNING 1
)
SELECT count(*) AS deleted
FROM gone;

-- name: find_events_mentioning_tenants :many
-- Events of other tenants whose payload names one of the purged tenant_ids, e.g. the
-- tenant.moved event of a child that was moved out of the purged subtree.
SELECT e.id, e.payload
FROM events e
WHERE (e.tenant_id IS NULL OR e.tenant_id <> ALL(:'tenant_ids'::uuid[]))
  AND EXISTS (SELECT 1
              FROM regexp_matches(e.payload::text,
                                  '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}',
                                  'g') AS m(found)
              WHERE m.found[1]::uuid = ANY(:'tenant_ids'::uuid[]));

-- name: replace_event_payloads :exec
-- Store redacted payloads from parallel arrays (event id, payload).
UPDATE events e
SET payload = r.payload
FROM unnest(:'event_ids'::uuid[], :'payloads'::jsonb[]) AS r(id, payload)
WHERE e.id = r.id;

-- name: delete_webhooks_of_tenants :one
-- The purged tenants' webhooks.
WITH gone AS (
    -- the deleted rows
    DELETE FROM webhooks
    WHERE tenant_id = ANY(:'tenant_ids'::uuid[])
    RETURNING 1
)
SELECT count(*) AS deleted
FROM gone;

-- name: delete_consents_of_tenants :one
-- The purged tenants' consent records.
WITH gone AS (
    -- the deleted rows
    DELETE FROM consents
    WHERE tenant_id = ANY(:'tenant_ids'::uuid[])
    RETURNING 1
)
SELECT count(*) AS deleted
FROM gone;

-- name: delete_config_of_tenants :one
-- The purged tenants' config entries.
WITH gone AS (
    -- the deleted rows
    DELETE FROM config_entries
    WHERE tenant_id = ANY(:'tenant_ids'::uuid[])
    RETURNING 1
)
SELECT count(*) AS deleted
FROM gone;

-- name: delete_permissions_of_tenants :one
-- The purged tenants' permission policies.
WITH gone AS (
    -- the deleted rows
    DELETE FROM permission_policies
    WHERE tenant_id = ANY(:'tenant_ids'::uuid[])
    RETURNING 1
)
SELECT count(*) AS deleted
FROM gone;

-- name: delete_api_keys_of_tenants :one
-- The purged tenants' API keys; with their ids (the key cache drops them at once).
WITH gone AS (
    -- the deleted rows
    DELETE FROM api_keys
    WHERE tenant_id = ANY(:'tenant_ids'::uuid[])
    RETURNING id
)
SELECT count(*) AS deleted, coalesce(array_agg(id), '{}'::uuid[]) AS ids
FROM gone;

-- name: delete_roles_of_tenants :one
-- The purged tenants' roles (keys elsewhere holding one fall back to their own scopes);
-- with their ids (the key cache drops keys holding them at once).
WITH gone AS (
    -- the deleted rows
    DELETE FROM roles
    WHERE tenant_id = ANY(:'tenant_ids'::uuid[])
    RETURNING id
)
SELECT count(*) AS deleted, coalesce(array_agg(id), '{}'::uuid[]) AS ids
FROM gone;

-- name: delete_closure_of_tenants :one
-- Every closure row of the purged tenants (as descendant; the subtree is whole, so this
-- covers the rows where they are ancestors too).
WITH gone AS (
    -- the deleted rows
    DELETE FROM tenant_closure
    WHERE descendant_id = ANY(:'tenant_ids'::uuid[])
    RETURNING 1
)
SELECT count(*) AS deleted
FROM gone;

-- name: delete_tenants :one
-- The purged tenants themselves, in one statement (parent and child together).
WITH gone AS (
    -- the deleted rows
    DELETE FROM tenants
    WHERE id = ANY(:'tenant_ids'::uuid[])
    RETURNING 1
)
SELECT count(*) AS deleted
FROM gone;
