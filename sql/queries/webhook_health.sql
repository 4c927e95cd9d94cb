-- Webhook endpoint health (migration 0026): statistics, the failure streak that
-- disables an endpoint, and recovery after an outage.

-- name: note_webhook_attempt :one
-- Count one attempt of webhook_id for event_id (succeeded or not; dead: it was the
-- delivery's last); a success ends the endpoint's failure streak and that of the
-- event's source. Returns the endpoint's streak as it is now.
WITH source AS (
    -- where the event came from, seen from the webhook's tenant: that tenant itself
    -- (the nil UUID for a global webhook's events without a tenant), else the tenant
    -- right below it on the event tenant's path (its root for a global webhook), else
    -- (a moved or purged tenant) the event's tenant
    SELECT coalesce(
               CASE
                   WHEN e.tenant_id IS NOT DISTINCT FROM w.tenant_id THEN w.tenant_id
                   WHEN w.tenant_id IS NULL
                       THEN nullif(split_part(et.ancestry_path, '/', 2), '')::uuid
                   WHEN starts_with(et.ancestry_path, wt.ancestry_path || '/')
                       THEN nullif(split_part(et.ancestry_path, '/', wt.depth + 3), '')::uuid
               END,
               e.tenant_id,
               '00000000-0000-0000-0000-000000000000'::uuid) AS source_id
    FROM webhooks w
    JOIN events e ON e.id = :'event_id'
    LEFT JOIN tenants wt ON wt.id = w.tenant_id
    LEFT JOIN tenants et ON et.id = e.tenant_id
    WHERE w.id = :'webhook_id'
),
-- a success ends the source's streak
source_ended AS (
    DELETE FROM webhook_source_health s
    USING source
    WHERE :'succeeded'::boolean
      AND s.webhook_id = :'webhook_id'
      AND s.source_id = source.source_id
    RETURNING s.source_id
),
-- a failure starts or extends it
source_failing AS (
    INSERT INTO webhook_source_health AS s (webhook_id, source_id, failing_since, dead_letters)
    SELECT :'webhook_id', source.source_id, now(),
           CASE WHEN :'dead'::boolean THEN 1 ELSE 0 END
    FROM source
    WHERE NOT :'succeeded'::boolean
    ON CONFLICT (webhook_id, source_id) DO UPDATE
    SET dead_letters = s.dead_letters + excluded.dead_letters
    RETURNING s.source_id
)
INSERT INTO webhook_health AS h (webhook_id, attempts_succeeded, attempts_failed,
                                 last_success_at, last_failure_at, failing_since,
                                 dead_letters)
VALUES (:'webhook_id',
        CASE WHEN :'succeeded'::boolean THEN 1 ELSE 0 END,
        CASE WHEN :'succeeded'::boolean THEN 0 ELSE 1 END,
        CASE WHEN :'succeeded'::boolean THEN now() END,
        CASE WHEN :'succeeded'::boolean THEN NULL ELSE now() END,
        CASE WHEN :'succeeded'::boolean THEN NULL ELSE now() END,
        CASE WHEN :'dead'::boolean THEN 1 ELSE 0 END)
ON CONFLICT (webhook_id) DO UPDATE
SET attempts_succeeded = h.attempts_succeeded + excluded.attempts_succeeded,
    attempts_failed = h.attempts_failed + excluded.attempts_failed,
    last_success_at = coalesce(excluded.last_success_at, h.last_success_at),
    last_failure_at = coalesce(excluded.last_failure_at, h.last_failure_at),
    failing_since = CASE WHEN :'succeeded'::boolean THEN NULL
                         ELSE coalesce(h.failing_since, now()) END,
    dead_letters = CASE WHEN :'succeeded'::boolean THEN 0
                        ELSE h.dead_letters + excluded.dead_letters END
RETURNING h.failing_since, h.dead_letters, now() AS noted_at;

-- name: list_failing_webhook_sources :many
-- The sources whose deliveries to webhook_id are failing now, each with its streak;
-- own: the source is the webhook's own tenant (the nil UUID for a global webhook).
SELECT s.source_id,
       s.source_id = coalesce(w.tenant_id, '00000000-0000-0000-0000-000000000000'::uuid) AS own,
       s.failing_since, s.dead_letters, now() AS noted_at
FROM webhook_source_health s
JOIN webhooks w ON w.id = s.webhook_id
WHERE s.webhook_id = :'webhook_id'
ORDER BY s.failing_since;

-- name: list_webhook_health :many
-- The health rows of these webhooks (webhooks without attempts have none).
SELECT h.webhook_id, h.attempts_succeeded, h.attempts_failed, h.last_success_at,
       h.last_failure_at, h.failing_since, h.dead_letters, h.disabled_reason, h.disabled_at
FROM webhook_health h
WHERE h.webhook_id = ANY (:'webhook_ids'::uuid[]);

-- name: mark_webhook_disabled :exec
-- The service disabled webhook_id for reason.
UPDATE webhook_health
SET disabled_reason = :'reason',
    disabled_at = now()
WHERE webhook_id = :'webhook_id';

-- name: reset_webhook_streak :exec
-- Re-enabled: a fresh start (no failure streak of any source, no reason); the
-- statistics stay.
WITH sources_cleared AS (
    -- every source's streak ends too
    DELETE FROM webhook_source_health
    WHERE webhook_id = :'webhook_id'
    RETURNING source_id
)
UPDATE webhook_health
SET failing_since = NULL,
    dead_letters = 0,
    disabled_reason = NULL,
    disabled_at = NULL
WHERE webhook_id = :'webhook_id';

-- name: requeue_webhook_failures :value
-- Every failed delivery of webhook_id created at or after since back to pending, due
-- now, attempts cleared, max_attempts allowed; returns how many.
WITH requeued AS (
    -- the dead letters of the outage
    UPDATE webhook_deliveries d
    SET status = 'pending',
        attempts = 0,
        max_attempts = :'max_attempts',
        next_attempt_at = now(),
        lease_expires_at = NULL,
        leased_by = NULL,
        updated_at = now()
    WHERE d.webhook_id = :'webhook_id'
      AND d.status = 'failed'
      AND d.created_at >= :'since'
    RETURNING d.id
),
-- wake the workers (sent when the transaction commits)
notified AS (
    SELECT pg_notify('webhook_deliveries', '') FROM (SELECT 1 FROM requeued LIMIT 1) AS any_row
)
SELECT (SELECT count(*) FROM requeued) AS requeued, (SELECT count(*) FROM notified) AS woken;
