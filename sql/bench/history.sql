-- The cost of the history of the resolved view (bench/history_cost.py,
-- bench/history_http.py): days of history loaded in bulk, and the moments the reads
-- name. Not loaded by the service.

-- name: revision_sequence_position :value
-- The last revision drawn so far.
SELECT s.last_value FROM context_revision_seq s;

-- name: backdate_history_revisions :exec
-- Move every recorded revision's commit time back by seconds (before loaded days).
UPDATE history_revisions
SET committed_at = now() - make_interval(secs => :'seconds'::float8);

-- name: backdate_history_horizon :exec
-- Move the start of the kept history back by seconds.
UPDATE history_horizon
SET kept_since = now() - make_interval(secs => :'seconds'::float8);

-- name: load_history_revisions :exec
-- Revisions after_revision + 1 .. after_revision + revision_count, committed every
-- step_seconds and the last one now.
INSERT INTO history_revisions (revision, committed_at, audit_ids)
SELECT :'after_revision'::bigint + g,
       now() - make_interval(secs => (:'revision_count'::integer - g) * :'step_seconds'::float8),
       '{}'
FROM generate_series(1, :'revision_count'::integer) AS g;

-- name: move_revision_sequence :exec
-- Draw the next revision after the loaded ones.
SELECT setval('context_revision_seq', :'last_revision'::bigint);

-- name: load_config_history :exec
-- One config version per loaded revision, as the commit trigger would have written it.
WITH
-- 1. Each write: a chain member (the first ten tenant_ids) every fourth one, else any
--    tenant; one of 8 keys.
writes AS (
    SELECT :'after_revision'::bigint + g AS revision,
           CASE WHEN g % 4 = 0
                THEN (:'tenant_ids'::uuid[])[1 + floor(random() * 10)::int]
                ELSE (:'tenant_ids'::uuid[])[1 + floor(random() * cardinality(:'tenant_ids'::uuid[]))::int]
           END AS tenant_id,
           'k' || floor(random() * 8)::int AS key
    FROM generate_series(1, :'revision_count'::integer) AS g
)
-- 2. Each version lasts until the next write of its key; the last ends after the days.
INSERT INTO config_history (tenant_id, key, valid_from, valid_to, value, locked, sensitive,
                            reveal_to_descendants, updated_at)
SELECT w.tenant_id, w.key, w.revision,
       coalesce(lead(w.revision) OVER (PARTITION BY w.tenant_id, w.key ORDER BY w.revision),
                :'after_revision'::bigint + :'revision_count'::integer + 1),
       to_jsonb(w.revision), false, false, false, now()
FROM writes w;

-- name: load_config_history_keys :exec
-- The keys of every config version, as the commit trigger notes them.
INSERT INTO config_history_keys (tenant_id, key)
SELECT DISTINCT h.tenant_id, h.key FROM config_history h
ON CONFLICT (tenant_id, key) DO NOTHING;

-- name: first_tenant_at_depth :value
-- The first tenant created at that depth (the chain's leaf in these benchmarks).
SELECT t.id FROM tenants t
WHERE t.depth = :'depth'::integer
ORDER BY t.created_at, t.id
LIMIT 1;

-- name: loaded_history_span :one
-- The first revision after the tenants were created, and the newest recorded one.
SELECT (SELECT max(th.valid_from) FROM tenant_history th) + 1 AS first_revision,
       (SELECT max(hr.revision) FROM history_revisions hr) AS newest_revision;

-- name: revision_a_day_before_newest :value
-- The last revision committed at least a day before the newest one
-- (history_revisions_committed_at_idx backwards).
SELECT hr.revision FROM history_revisions hr
WHERE hr.committed_at <= (SELECT max(n.committed_at) FROM history_revisions n)
                         - interval '1 day'
ORDER BY hr.committed_at DESC, hr.revision DESC
LIMIT 1;

-- name: revision_committed_at :value
-- When a revision committed.
SELECT hr.committed_at FROM history_revisions hr WHERE hr.revision = :'revision'::bigint;
