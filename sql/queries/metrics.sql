-- Values /metrics reads when it is scraped.

-- name: count_deliveries_by_status
-- Webhook delivery queue depth: how many deliveries are in each status right now.
SELECT status, count(*) AS deliveries
FROM webhook_deliveries
GROUP BY status;
