-- Announcements for the per-process read cache (service/caches/read_cache.py).

-- name: announce_marker :one
-- Send a marker on the tenant data channel (heard after every change committed before
-- it) and return the primary's WAL position, at or past each of those commits (the
-- consistency token of the write that sends it), and the newest revision, at or past
-- the write's own (its X-Revision), in the same round trip.
WITH sent AS (
    -- the marker itself (pg_notify returns void; delivered when this statement commits)
    SELECT pg_notify('tenant_service_tenant_data', 'marker:' || :'token'::text)
)
SELECT pg_current_wal_lsn() AS position,
       (SELECT coalesce(max(revision), 0) FROM context_revisions) AS revision
FROM sent;
