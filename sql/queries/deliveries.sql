-- Webhook deliveries: the workers' queue and the API's history, statistics and dead
-- letters. Deliveries are inserted by the fan-out in outbox.sql (insert_events).
--
-- A worker claims a delivery by leasing it: leased_by names the worker, lease_expires_at
-- bounds the claim, and next_attempt_at moves to the lease's end, so a crashed worker's
-- delivery becomes due again by itself when its lease runs out. Results are written only
-- while the claim is still the worker's own (leased_by and lease_expires_at match).
-- Channel webhook_deliveries is notified whenever deliveries become due, to wake workers.
--
-- Scope parameters: NULL for a global caller, else the caller's tenant; a scoped caller
-- sees deliveries of webhooks inside its subtree only (never of global webhooks).

-- name: claim_due_deliveries
-- Lease up to $2 due deliveries to worker $1 for $3 seconds, skipping rows other workers
-- are claiming; returns what an attempt needs: the webhook as it is now, and the event.
WITH due AS (
    -- pending deliveries whose time has come (a live lease keeps next_attempt_at ahead)
    SELECT d.id
    FROM webhook_deliveries d
    WHERE d.status = 'pending'
      AND d.next_attempt_at <= now()
    ORDER BY d.next_attempt_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
UPDATE webhook_deliveries d
SET leased_by = $1,
    lease_expires_at = now() + make_interval(secs => $3::float8),
    next_attempt_at = now() + make_interval(secs => $3::float8)
FROM due, webhooks w, events e
WHERE d.id = due.id
  AND w.id = d.webhook_id
  AND e.id = d.event_id
RETURNING d.id, d.attempts, d.max_attempts, d.lease_expires_at,
          w.id AS webhook_id, w.url, w.active, w.encrypted_secret,
          w.previous_encrypted_secret, w.previous_secret_expires_at,
          e.type AS event_type, e.payload, e.created_at AS event_created_at;

-- name: seconds_until_next_delivery
-- Seconds until the earliest pending delivery is due (negative: overdue; NULL: none).
SELECT extract(epoch FROM (min(next_attempt_at) - clock_timestamp()))::float8 AS seconds
FROM webhook_deliveries
WHERE status = 'pending';

-- name: record_delivery_success
-- Attempt succeeded: the delivery is done. $3 is the attempt's duration in seconds.
UPDATE webhook_deliveries
SET status = 'success',
    attempts = attempts + 1,
    last_attempt_at = now() - make_interval(secs => $3::float8),
    last_response_code = $4,
    last_error = NULL,
    next_attempt_at = NULL,
    lease_expires_at = NULL,
    leased_by = NULL,
    updated_at = now()
WHERE id = $1
  AND leased_by = $2
  AND lease_expires_at = $5;

-- name: record_delivery_failure
-- Attempt failed: dead letter (failed) when it was the last allowed attempt, else
-- pending again after $6 seconds of backoff. $3 is the attempt's duration in seconds.
UPDATE webhook_deliveries
SET attempts = attempts + 1,
    status = CASE WHEN attempts + 1 >= max_attempts THEN 'failed' ELSE 'pending' END,
    next_attempt_at = CASE WHEN attempts + 1 >= max_attempts THEN NULL
                           ELSE now() + make_interval(secs => $6::float8) END,
    last_attempt_at = now() - make_interval(secs => $3::float8),
    last_response_code = $4,
    last_error = $5,
    lease_expires_at = NULL,
    leased_by = NULL,
    updated_at = now()
WHERE id = $1
  AND leased_by = $2
  AND lease_expires_at = $7
RETURNING status, attempts;

-- name: park_delivery
-- The webhook was deactivated: the delivery goes to the dead letters unattempted, with
-- reason $4, so it can be retried once the webhook is active again.
UPDATE webhook_deliveries
SET status = 'failed',
    next_attempt_at = NULL,
    last_error = $4,
    lease_expires_at = NULL,
    leased_by = NULL,
    updated_at = now()
WHERE id = $1
  AND leased_by = $2
  AND lease_expires_at = $3;

-- name: release_delivery
-- Give a claimed delivery back unattempted (the worker is stopping): due at once, and
-- workers elsewhere are woken to take it.
WITH released AS (
    UPDATE webhook_deliveries
    SET next_attempt_at = now(),
        lease_expires_at = NULL,
        leased_by = NULL
    WHERE id = $1
      AND leased_by = $2
      AND lease_expires_at = $3
    RETURNING id
),
-- wake the other workers (sent when the statement commits)
notified AS (
    SELECT pg_notify('webhook_deliveries', '') FROM released
)
SELECT (SELECT count(*) FROM released) AS released, (SELECT count(*) FROM notified) AS woken;

-- name: get_delivery
-- One delivery with its webhook's tenant and that tenant's path (for the scope check).
SELECT d.*, w.tenant_id AS webhook_tenant_id, t.ancestry_path AS tenant_path
FROM webhook_deliveries d
JOIN webhooks w ON w.id = d.webhook_id
LEFT JOIN tenants t ON t.id = w.tenant_id
WHERE d.id = $1;

-- name: list_webhook_deliveries
-- One page of a webhook's deliveries, newest first, before cursor $2, status $3 (NULL:
-- any), at most $4 rows.
SELECT d.*
FROM webhook_deliveries d
WHERE d.webhook_id = $1
  AND d.id < coalesce($2::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
  AND ($3::text IS NULL OR d.status = $3::text)
ORDER BY d.id DESC
LIMIT $4;

-- name: delivery_stats
-- Delivery counts by status within scope $1, optionally for webhook $2 only.
SELECT count(*) AS total,
       count(*) FILTER (WHERE d.status = 'pending') AS pending,
       count(*) FILTER (WHERE d.status = 'success') AS success,
       count(*) FILTER (WHERE d.status = 'failed') AS failed
FROM webhook_deliveries d
JOIN webhooks w ON w.id = d.webhook_id
WHERE ($1::uuid IS NULL
       OR w.tenant_id IN (SELECT c.descendant_id FROM tenant_closure c WHERE c.ancestor_id = $1))
  AND ($2::uuid IS NULL OR d.webhook_id = $2);

-- name: list_failed_deliveries
-- Dead letters within scope $1 (optionally of webhook $2), newest first, before cursor
-- $3, at most $4, with their webhook and event.
SELECT d.*,
       w.url AS webhook_url, w.tenant_id AS webhook_tenant_id,
       e.tenant_id AS event_tenant_id, e.payload AS event_payload,
       e.created_at AS event_created_at
FROM webhook_deliveries d
JOIN webhooks w ON w.id = d.webhook_id
JOIN events e ON e.id = d.event_id
WHERE d.status = 'failed'
  AND ($1::uuid IS NULL
       OR w.tenant_id IN (SELECT c.descendant_id FROM tenant_closure c WHERE c.ancestor_id = $1))
  AND ($2::uuid IS NULL OR d.webhook_id = $2)
  AND d.id < coalesce($3::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
ORDER BY d.id DESC
LIMIT $4;

-- name: retry_delivery
-- A failed delivery back to pending, due now, its attempts cleared and its allowance
-- set to $2; returns the row when it was failed (nothing otherwise).
WITH retried AS (
    UPDATE webhook_deliveries
    SET status = 'pending',
        attempts = 0,
        max_attempts = $2,
        next_attempt_at = now(),
        lease_expires_at = NULL,
        leased_by = NULL,
        updated_at = now()
    WHERE id = $1
      AND status = 'failed'
    RETURNING *
),
-- wake the workers (sent when the transaction commits)
notified AS (
    SELECT pg_notify('webhook_deliveries', '') FROM (SELECT 1 FROM retried LIMIT 1) AS any_row
)
SELECT r.*, (SELECT count(*) FROM notified) AS woken
FROM retried r;

-- name: retry_failed_deliveries
-- Every failed delivery within scope $1 (optionally of webhook $2) back to pending, due
-- now, attempts cleared, allowance $3; returns how many.
WITH retried AS (
    UPDATE webhook_deliveries d
    SET status = 'pending',
        attempts = 0,
        max_attempts = $3,
        next_attempt_at = now(),
        lease_expires_at = NULL,
        leased_by = NULL,
        updated_at = now()
    FROM webhooks w
    WHERE w.id = d.webhook_id
      AND d.status = 'failed'
      AND ($1::uuid IS NULL
           OR w.tenant_id IN (SELECT c.descendant_id FROM tenant_closure c
                              WHERE c.ancestor_id = $1))
      AND ($2::uuid IS NULL OR d.webhook_id = $2)
    RETURNING d.id
),
-- wake the workers (sent when the transaction commits)
notified AS (
    SELECT pg_notify('webhook_deliveries', '') FROM (SELECT 1 FROM retried LIMIT 1) AS any_row
)
SELECT (SELECT count(*) FROM retried) AS retried, (SELECT count(*) FROM notified) AS woken;
