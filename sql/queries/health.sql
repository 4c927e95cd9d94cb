-- Readiness.

-- name: ping_database
-- The cheapest round trip: is the database answering?
SELECT 1 AS ok;
