-- What the soak (bench/soak.py) checks in the database once its load has stopped. Not
-- loaded by the service.

-- name: count_unfinished_deliveries :value
-- Deliveries not (yet) delivered successfully: the soak waits for this to reach zero.
SELECT count(*) AS unfinished
FROM webhook_deliveries
WHERE status <> 'success';

-- name: count_events :value
-- Every event the soak's changes wrote.
SELECT count(*) AS events
FROM events;

-- name: count_events_without_delivery :value
-- Events that fanned out to no delivery (the soak's webhook subscribes to all of them).
SELECT count(*) AS events
FROM events e
WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id);

-- name: list_delivery_ids :many
-- Every delivery, to compare with what the receiver saw.
SELECT id
FROM webhook_deliveries;

-- name: sum_delivery_attempts :value
-- Attempts made over all deliveries (retries included).
SELECT coalesce(sum(attempts), 0) AS attempts
FROM webhook_deliveries;
