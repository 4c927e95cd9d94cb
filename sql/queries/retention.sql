-- Retention (POST /maintenance/purge-expired). Every delete is bounded ($2 rows) and
-- keyset-paged from the last row removed ($3, $4), so a large purge is many short
-- transactions rather than one long lock; the count queries answer a dry run with
-- the same conditions.

-- name: count_expired_deliveries
-- Finished (success or failed) deliveries last touched before $1.
SELECT count(*) AS total
FROM webhook_deliveries
WHERE status <> 'pending'
  AND updated_at < $1;

-- name: delete_expired_deliveries
-- One batch of finished deliveries last touched before $1, after ($3, $4).
DELETE FROM webhook_deliveries d
WHERE d.id IN (SELECT x.id
               FROM webhook_deliveries x
               WHERE x.status <> 'pending'
                 AND x.updated_at < $1
                 AND x.updated_at >= $3
                 AND (x.updated_at, x.id) > ($3, $4)
               ORDER BY x.updated_at, x.id
               LIMIT $2
               FOR UPDATE SKIP LOCKED)
RETURNING d.updated_at AS at, d.id;

-- name: count_expired_events
-- Events created before $1 whose deliveries are all gone or finished before $1.
SELECT count(*) AS total
FROM events e
WHERE e.created_at < $1
  AND NOT EXISTS (SELECT 1
                  FROM webhook_deliveries d
                  WHERE d.event_id = e.id
                    AND (d.status = 'pending' OR d.updated_at >= $1));

-- name: delete_expired_events
-- One batch of events created before $1 that no delivery refers to any more.
DELETE FROM events e
WHERE e.id IN (SELECT x.id
               FROM events x
               WHERE x.created_at < $1
                 AND x.created_at >= $3
                 AND (x.created_at, x.id) > ($3, $4)
                 AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = x.id)
               ORDER BY x.created_at, x.id
               LIMIT $2
               FOR UPDATE SKIP LOCKED)
RETURNING e.created_at AS at, e.id;

-- name: count_expired_consents
-- Consent records that ended (revoked or expired) before $1.
SELECT count(*) AS total
FROM consents
WHERE (revoked_at IS NOT NULL OR expires_at IS NOT NULL)
  AND least(revoked_at, expires_at) < $1;

-- name: delete_expired_consents
-- One batch of consent records that ended before $1.
DELETE FROM consents c
WHERE c.id IN (SELECT x.id
               FROM consents x
               WHERE (x.revoked_at IS NOT NULL OR x.expires_at IS NOT NULL)
                 AND least(x.revoked_at, x.expires_at) < $1
                 AND least(x.revoked_at, x.expires_at) >= $3
                 AND (least(x.revoked_at, x.expires_at), x.id) > ($3, $4)
               ORDER BY least(x.revoked_at, x.expires_at), x.id
               LIMIT $2
               FOR UPDATE SKIP LOCKED)
RETURNING least(c.revoked_at, c.expires_at) AS at, c.id;

-- name: allow_audit_retention
-- Open the audit guard for deleting entries created before $1, until this transaction ends.
SELECT set_config('tenant_service.audit_retention_before', $1::timestamptz::text, true);

-- name: count_expired_audit_logs
-- Audit entries created before $1.
SELECT count(*) AS total
FROM audit_logs
WHERE created_at < $1;

-- name: delete_expired_audit_logs
-- One batch of audit entries created before $1.
DELETE FROM audit_logs a
WHERE a.id IN (SELECT x.id
               FROM audit_logs x
               WHERE x.created_at < $1
                 AND x.created_at >= $3
                 AND (x.created_at, x.id) > ($3, $4)
               ORDER BY x.created_at, x.id
               LIMIT $2
               FOR UPDATE SKIP LOCKED)
RETURNING a.created_at AS at, a.id;

-- name: count_expired_archived_tenants
-- Tenants archived before $1 whose whole subtree was archived before $1 too (a purge
-- takes children first, so only those can go).
SELECT count(*) AS total
FROM tenants t
WHERE t.status = 'archived'
  AND t.deleted_at < $1
  AND NOT EXISTS (SELECT 1
                  FROM tenant_closure c
                  JOIN tenants d ON d.id = c.descendant_id
                  WHERE c.ancestor_id = t.id
                    AND c.depth > 0
                    AND NOT (d.status = 'archived' AND d.deleted_at < $1));

-- name: find_expired_archived_leaves
-- One batch of tenants archived before $1 that have no children left, with their paths.
SELECT t.id, t.ancestry_path
FROM tenants t
WHERE t.status = 'archived'
  AND t.deleted_at < $1
  AND NOT EXISTS (SELECT 1 FROM tenants c WHERE c.parent_id = t.id)
ORDER BY t.deleted_at, t.id
LIMIT $2;

-- name: lock_expired_archived_leaves
-- Lock the candidates ($2) that are still archived before $1, childless and in their
-- tree; returns those locked.
SELECT t.id, t.ancestry_path
FROM tenants t
WHERE t.id = ANY($2::uuid[])
  AND t.status = 'archived'
  AND t.deleted_at < $1
  AND NOT EXISTS (SELECT 1 FROM tenants c WHERE c.parent_id = t.id)
ORDER BY t.id
FOR UPDATE OF t;
