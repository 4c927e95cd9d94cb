-- Readiness.

-- name: ping_database :value
-- The cheapest round trip: is the database answering?
SELECT 1 AS ok;
