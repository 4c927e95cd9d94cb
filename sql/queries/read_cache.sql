-- Announcements for the per-process read cache (service/caches/read_cache.py).

-- name: announce_marker :value
-- Send a marker on the tenant data channel (heard after every change committed before
-- it) and return the primary's WAL position, at or past each of those commits: the
-- consistency token of the write that sends it, in the same round trip.
WITH sent AS (
    -- the marker itself (pg_notify returns void; delivered when this statement commits)
    SELECT pg_notify('tenant_service_tenant_data', 'marker:' || :'token'::text)
)
SELECT pg_current_wal_lsn() AS position
FROM sent;
