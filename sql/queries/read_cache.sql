-- Announcements for the per-process read cache (service/caches/read_cache.py).

-- name: announce_marker :exec
-- Send a marker on the tenant data channel; heard after every change committed before it.
SELECT pg_notify('tenant_service_tenant_data', 'marker:' || :'token'::text);
