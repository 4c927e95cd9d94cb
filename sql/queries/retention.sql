-- Retention (POST /maintenance/purge-expired). Every delete is bounded (batch_size
-- rows) and keyset-paged from the last row removed (after_at, after_id), so a large
-- purge is many short transactions rather than one long lock; the count queries answer
-- a dry run with the same conditions.

-- name: count_expired_deliveries :value
-- Finished (success or failed) deliveries last touched before cutoff.
SELECT count(*) AS total
FROM webhook_deliveries
WHERE status <> 'pending'
  AND updated_at < :'cutoff';

-- name: delete_expired_deliveries :many
-- One batch of finished deliveries last touched before cutoff, after (after_at, after_id).
DELETE FROM webhook_deliveries d
WHERE d.id IN (SELECT x.id
               FROM webhook_deliveries x
               WHERE x.status <> 'pending'
                 AND x.updated_at < :'cutoff'
                 AND x.updated_at >= :'after_at'
                 AND (x.updated_at, x.id) > (:'after_at', :'after_id')
               ORDER BY x.updated_at, x.id
               LIMIT :'batch_size'::integer
               FOR UPDATE SKIP LOCKED)
RETURNING d.updated_at AS at, d.id;

-- name: count_expired_events :value
-- Events created before cutoff whose deliveries are all gone or finished before cutoff.
SELECT count(*) AS total
FROM events e
WHERE e.created_at < :'cutoff'
  AND NOT EXISTS (SELECT 1
                  FROM webhook_deliveries d
                  WHERE d.event_id = e.id
                    AND (d.status = 'pending' OR d.updated_at >= :'cutoff'));

-- name: delete_expired_events :many
-- One batch of events created before cutoff that no delivery refers to any more.
DELETE FROM events e
WHERE e.id IN (SELECT x.id
               FROM events x
               WHERE x.created_at < :'cutoff'
                 AND x.created_at >= :'after_at'
                 AND (x.created_at, x.id) > (:'after_at', :'after_id')
                 AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = x.id)
               ORDER BY x.created_at, x.id
               LIMIT :'batch_size'::integer
               FOR UPDATE SKIP LOCKED)
RETURNING e.created_at AS at, e.id;

-- name: count_expired_consents :value
-- Consent records that ended (revoked or expired) before cutoff.
SELECT count(*) AS total
FROM consents
WHERE (revoked_at IS NOT NULL OR expires_at IS NOT NULL)
  AND least(revoked_at, expires_at) < :'cutoff';

-- name: delete_expired_consents :many
-- One batch of consent records that ended before cutoff.
DELETE FROM consents c
WHERE c.id IN (SELECT x.id
               FROM consents x
               WHERE (x.revoked_at IS NOT NULL OR x.expires_at IS NOT NULL)
                 AND least(x.revoked_at, x.expires_at) < :'cutoff'
                 AND least(x.revoked_at, x.expires_at) >= :'after_at'
                 AND (least(x.revoked_at, x.expires_at), x.id) > (:'after_at', :'after_id')
               ORDER BY least(x.revoked_at, x.expires_at), x.id
               LIMIT :'batch_size'::integer
               FOR UPDATE SKIP LOCKED)
RETURNING least(c.revoked_at, c.expires_at) AS at, c.id;

-- name: count_expired_audit_logs :value
-- Audit entries created before cutoff.
SELECT count(*) AS total
FROM audit_logs
WHERE created_at < :'cutoff';

-- name: count_expired_archived_tenants :value
-- Tenants archived before cutoff whose whole subtree was archived before cutoff too (a
-- purge takes children first, so only those can go).
SELECT count(*) AS total
FROM tenants t
WHERE t.status = 'archived'
  AND t.deleted_at < :'cutoff'
  AND NOT EXISTS (SELECT 1
                  FROM tenant_closure c
                  JOIN tenants d ON d.id = c.descendant_id
                  WHERE c.ancestor_id = t.id
                    AND c.depth > 0
                    AND NOT (d.status = 'archived' AND d.deleted_at < :'cutoff'));

-- name: find_expired_archived_leaves :many
-- One batch of tenants archived before cutoff that have no children left, with their paths.
SELECT t.id, t.ancestry_path
FROM tenants t
WHERE t.status = 'archived'
  AND t.deleted_at < :'cutoff'
  AND NOT EXISTS (SELECT 1 FROM tenants c WHERE c.parent_id = t.id)
ORDER BY t.deleted_at, t.id
LIMIT :'batch_size'::integer;

-- name: lock_expired_archived_leaves :many
-- Lock the candidates tenant_ids that are still archived before cutoff, childless and in
-- their tree; returns those locked.
SELECT t.id, t.ancestry_path
FROM tenants t
WHERE t.id = ANY(:'tenant_ids'::uuid[])
  AND t.status = 'archived'
  AND t.deleted_at < :'cutoff'
  AND NOT EXISTS (SELECT 1 FROM tenants c WHERE c.parent_id = t.id)
ORDER BY t.id
FOR UPDATE OF t;

-- name: count_expired_idempotency_keys :value
-- Idempotency-Key records written before cutoff (24 hours before the run).
SELECT count(*) AS total
FROM idempotency_keys
WHERE created_at < :'cutoff';

-- name: delete_expired_idempotency_keys :many
-- One batch of Idempotency-Key records written before cutoff.
DELETE FROM idempotency_keys k
WHERE k.id IN (SELECT x.id
               FROM idempotency_keys x
               WHERE x.created_at < :'cutoff'
                 AND x.created_at >= :'after_at'
                 AND (x.created_at, x.id) > (:'after_at', :'after_id')
               ORDER BY x.created_at, x.id
               LIMIT :'batch_size'::integer
               FOR UPDATE SKIP LOCKED)
RETURNING k.created_at AS at, k.id;
