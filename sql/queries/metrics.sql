-- Values /metrics reads when it is scraped.

-- name: count_deliveries_by_status :many
-- Undelivered and dead-lettered deliveries, each counted through its partial index and
-- only up to 10,001 rows, so a scrape costs the same whatever the table holds
-- (10,001 reads as "more than 10,000"; service.metrics.COUNT_CAP).
-- Step "pending": rows of webhook_deliveries_due_idx, at most 10,001.
WITH pending AS (
    SELECT 1
    FROM webhook_deliveries
    WHERE status = 'pending'
    LIMIT 10001
),
-- Step "failed": rows of webhook_deliveries_failed_idx, at most 10,001.
failed AS (
    SELECT 1
    FROM webhook_deliveries
    WHERE status = 'failed'
    LIMIT 10001
)
SELECT 'pending' AS status, (SELECT count(*) FROM pending) AS deliveries
UNION ALL
SELECT 'failed' AS status, (SELECT count(*) FROM failed) AS deliveries;
