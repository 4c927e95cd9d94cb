-- Webhook deliveries: the workers' queue and the API's history, statistics and dead
-- letters. Deliveries are inserted by the fan-out in outbox.sql (insert_events).
--
-- A worker claims a delivery by leasing it: leased_by names the worker, lease_expires_at
-- bounds the claim, and next_attempt_at moves to the lease's end, so a crashed worker's
-- delivery becomes due again by itself when its lease runs out. Results are written only
-- while the claim is still the worker's own (leased_by and lease_expires_at match).
-- Channel webhook_deliveries is notified whenever deliveries become due, to wake workers.
--
-- scope_tenant_id: NULL for a global caller, else the caller's tenant; a scoped caller
-- sees deliveries of webhooks inside its subtree only (never of global webhooks).

-- name: claim_due_deliveries :many
-- Lease up to batch_size due deliveries to worker for lease_seconds seconds, skipping
-- rows other workers are claiming; returns what an attempt needs: the webhook as it is
-- now, and the event.
WITH due AS (
    -- pending deliveries whose time has come (a live lease keeps next_attempt_at ahead)
    SELECT d.id
    FROM webhook_deliveries d
    WHERE d.status = 'pending'
      AND d.next_attempt_at <= now()
    ORDER BY d.next_attempt_at
    LIMIT :'batch_size'::integer
    FOR UPDATE SKIP LOCKED
)
UPDATE webhook_deliveries d
SET leased_by = :'worker',
    lease_expires_at = now() + make_interval(secs => :'lease_seconds'::float8),
    next_attempt_at = now() + make_interval(secs => :'lease_seconds'::float8)
FROM due, webhooks w, events e
WHERE d.id = due.id
  AND w.id = d.webhook_id
  AND e.id = d.event_id
RETURNING d.id, d.attempts, d.max_attempts, d.lease_expires_at,
          w.id AS webhook_id, w.url, w.active, w.encrypted_secret,
          w.previous_encrypted_secret, w.previous_secret_expires_at,
          e.id AS event_id, e.type AS event_type, e.payload,
          e.created_at AS event_created_at;

-- name: seconds_until_next_delivery :value
-- Seconds until the earliest pending delivery is due (negative: overdue; NULL: none).
SELECT extract(epoch FROM (min(next_attempt_at) - clock_timestamp()))::float8 AS seconds
FROM webhook_deliveries
WHERE status = 'pending';

-- name: record_delivery_success :exec
-- Attempt succeeded: the delivery is done, if the claim (worker, lease_expires_at) is
-- still ours. duration_seconds is how long the attempt took.
UPDATE webhook_deliveries
SET status = 'success',
    attempts = attempts + 1,
    last_attempt_at = now() - make_interval(secs => :'duration_seconds'::float8),
    last_response_code = :'response_code',
    last_error = NULL,
    next_attempt_at = NULL,
    lease_expires_at = NULL,
    leased_by = NULL,
    updated_at = now()
WHERE id = :'delivery_id'
  AND leased_by = :'worker'
  AND lease_expires_at = :'lease_expires_at';

-- name: record_delivery_failure :one
-- Attempt failed: dead letter (failed) when it was the last allowed attempt, else
-- pending again after retry_in_seconds of backoff, if the claim (worker,
-- lease_expires_at) is still ours. duration_seconds is how long the attempt took.
UPDATE webhook_deliveries
SET attempts = attempts + 1,
    status = CASE WHEN attempts + 1 >= max_attempts THEN 'failed' ELSE 'pending' END,
    next_attempt_at = CASE
                          WHEN attempts + 1 >= max_attempts THEN NULL
                          ELSE now() + make_interval(secs => :'retry_in_seconds'::float8)
                      END,
    last_attempt_at = now() - make_interval(secs => :'duration_seconds'::float8),
    last_response_code = :'response_code',
    last_error = :'error',
    lease_expires_at = NULL,
    leased_by = NULL,
    updated_at = now()
WHERE id = :'delivery_id'
  AND leased_by = :'worker'
  AND lease_expires_at = :'lease_expires_at'
RETURNING status, attempts;

-- name: park_delivery :exec
-- The webhook was deactivated: the delivery goes to the dead letters unattempted, with
-- reason reason, so it can be retried once the webhook is active again.
UPDATE webhook_deliveries
SET status = 'failed',
    next_attempt_at = NULL,
    last_error = :'reason',
    lease_expires_at = NULL,
    leased_by = NULL,
    updated_at = now()
WHERE id = :'delivery_id'
  AND leased_by = :'worker'
  AND lease_expires_at = :'lease_expires_at';

-- name: release_delivery :one
-- Give a claimed delivery back unattempted (the worker is stopping): due at once, and
-- workers elsewhere are woken to take it.
WITH released AS (
    -- the delivery, if the claim is still ours
    UPDATE webhook_deliveries
    SET next_attempt_at = now(),
        lease_expires_at = NULL,
        leased_by = NULL
    WHERE id = :'delivery_id'
      AND leased_by = :'worker'
      AND lease_expires_at = :'lease_expires_at'
    RETURNING id
),
-- wake the other workers (sent when the statement commits)
notified AS (
    SELECT pg_notify('webhook_deliveries', '') FROM released
)
SELECT (SELECT count(*) FROM released) AS released,
       (SELECT count(*) FROM notified) AS woken;

-- name: get_delivery :one
-- One delivery with its webhook's tenant and that tenant's path (for the scope check).
SELECT d.id, d.webhook_id, d.event_id, d.event_type, d.status, d.attempts,
       d.max_attempts, d.next_attempt_at, d.last_attempt_at, d.last_response_code,
       d.last_error, d.lease_expires_at, d.leased_by, d.created_at, d.updated_at,
       w.tenant_id AS webhook_tenant_id, t.ancestry_path AS tenant_path
FROM webhook_deliveries d
JOIN webhooks w ON w.id = d.webhook_id
LEFT JOIN tenants t ON t.id = w.tenant_id
WHERE d.id = :'delivery_id';

-- name: list_webhook_deliveries :many
-- One page of a webhook's deliveries, newest first, before cursor_id (NULL: from the
-- newest), in status_filter (NULL: any), at most page_size rows.
SELECT d.id, d.webhook_id, d.event_id, d.event_type, d.status, d.attempts,
       d.max_attempts, d.next_attempt_at, d.last_attempt_at, d.last_response_code,
       d.last_error, d.lease_expires_at, d.leased_by, d.created_at, d.updated_at
FROM webhook_deliveries d
WHERE d.webhook_id = :'webhook_id'
  AND d.id < coalesce(:'cursor_id'::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
  AND (:'status_filter'::text IS NULL OR d.status = :'status_filter'::text)
ORDER BY d.id DESC
LIMIT :'page_size'::integer;

-- name: delivery_stats :one
-- Delivery counts by status within the caller's scope (scope_tenant_id), optionally for
-- webhook_id only (NULL: every webhook).
SELECT count(*) AS total,
       count(*) FILTER (WHERE d.status = 'pending') AS pending,
       count(*) FILTER (WHERE d.status = 'success') AS success,
       count(*) FILTER (WHERE d.status = 'failed') AS failed
FROM webhook_deliveries d
JOIN webhooks w ON w.id = d.webhook_id
WHERE (:'scope_tenant_id'::uuid IS NULL
       OR w.tenant_id IN (SELECT c.descendant_id
                          FROM tenant_closure c
                          WHERE c.ancestor_id = :'scope_tenant_id'))
  AND (:'webhook_id'::uuid IS NULL OR d.webhook_id = :'webhook_id');

-- name: list_failed_deliveries :many
-- Dead letters within the caller's scope (scope_tenant_id), optionally of webhook_id only,
-- newest first, before cursor_id, at most page_size, with their webhook and event.
SELECT d.id, d.webhook_id, d.event_id, d.event_type, d.status, d.attempts,
       d.max_attempts, d.next_attempt_at, d.last_attempt_at, d.last_response_code,
       d.last_error, d.lease_expires_at, d.leased_by, d.created_at, d.updated_at,
       w.url AS webhook_url, w.tenant_id AS webhook_tenant_id,
       e.tenant_id AS event_tenant_id, e.payload AS event_payload,
       e.created_at AS event_created_at
FROM webhook_deliveries d
JOIN webhooks w ON w.id = d.webhook_id
JOIN events e ON e.id = d.event_id
WHERE d.status = 'failed'
  AND (:'scope_tenant_id'::uuid IS NULL
       OR w.tenant_id IN (SELECT c.descendant_id
                          FROM tenant_closure c
                          WHERE c.ancestor_id = :'scope_tenant_id'))
  AND (:'webhook_id'::uuid IS NULL OR d.webhook_id = :'webhook_id')
  AND d.id < coalesce(:'cursor_id'::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
ORDER BY d.id DESC
LIMIT :'page_size'::integer;

-- name: retry_delivery :one
-- A failed delivery back to pending, due now, its attempts cleared and its allowance
-- set to max_attempts; returns the row when it was failed (nothing otherwise).
WITH retried AS (
    -- the delivery, if it was failed
    UPDATE webhook_deliveries
    SET status = 'pending',
        attempts = 0,
        max_attempts = :'max_attempts',
        next_attempt_at = now(),
        lease_expires_at = NULL,
        leased_by = NULL,
        updated_at = now()
    WHERE id = :'delivery_id'
      AND status = 'failed'
    RETURNING id, webhook_id, event_id, event_type, status, attempts, max_attempts,
              next_attempt_at, last_attempt_at, last_response_code, last_error,
              lease_expires_at, leased_by, created_at, updated_at
),
-- wake the workers (sent when the transaction commits)
notified AS (
    SELECT pg_notify('webhook_deliveries', '')
    FROM (SELECT 1 FROM retried LIMIT 1) AS any_row
)
SELECT r.id, r.webhook_id, r.event_id, r.event_type, r.status, r.attempts,
       r.max_attempts, r.next_attempt_at, r.last_attempt_at, r.last_response_code,
       r.last_error, r.lease_expires_at, r.leased_by, r.created_at, r.updated_at,
       (SELECT count(*) FROM notified) AS woken
FROM retried r;

-- name: retry_failed_deliveries :one
-- Every failed delivery within the caller's scope (scope_tenant_id), optionally of
-- webhook_id only, back to pending, due now, attempts cleared, allowance max_attempts;
-- returns how many.
WITH retried AS (
    -- the failed deliveries in scope
    UPDATE webhook_deliveries d
    SET status = 'pending',
        attempts = 0,
        max_attempts = :'max_attempts',
        next_attempt_at = now(),
        lease_expires_at = NULL,
        leased_by = NULL,
        updated_at = now()
    FROM webhooks w
    WHERE w.id = d.webhook_id
      AND d.status = 'failed'
      AND (:'scope_tenant_id'::uuid IS NULL
           OR w.tenant_id IN (SELECT c.descendant_id FROM tenant_closure c
                              WHERE c.ancestor_id = :'scope_tenant_id'))
      AND (:'webhook_id'::uuid IS NULL OR d.webhook_id = :'webhook_id')
    RETURNING d.id
),
-- wake the workers (sent when the transaction commits)
notified AS (
    SELECT pg_notify('webhook_deliveries', '')
    FROM (SELECT 1 FROM retried LIMIT 1) AS any_row
)
SELECT (SELECT count(*) FROM retried) AS retried, (SELECT count(*) FROM notified) AS woken;
