-- History of the resolved view (migration 0044, docs/history.md): revisions by time, the
-- kept horizon, and contexts and tenants as they were at a revision. A version is valid
-- at revision r when valid_from <= r < valid_to.

-- name: history_bounds :one
-- The oldest revision the history answers, since when, and the newest committed revision;
-- with at given, the last revision committed at or before it (NULL: none kept). Commit
-- times grow with revisions (both taken under the commit-order lock), so the last one is
-- one backward probe of history_revisions_committed_at_idx; max(revision) with a filter
-- on the time would walk back over every revision committed since.
SELECT h.kept_from, h.kept_since,
       (SELECT coalesce(max(r.revision), 0) FROM context_revisions r) AS newest,
       (SELECT hr.revision FROM history_revisions hr
        WHERE hr.committed_at <= :'at'::timestamptz
        ORDER BY hr.committed_at DESC, hr.revision DESC
        LIMIT 1) AS at_revision
FROM history_horizon h;

-- name: render_tenant_context_at :one
-- The moment asked resolved against the kept history (as history_bounds resolves it), and
-- the tenant's position at that revision r with its masked context document as
-- render_tenant_context renders it (NULL id and document: the tenant did not exist at
-- r). The moment is the revision given, else the last revision committed at or before
-- at (the horizon's when none). One statement, so the bounds and the document come from
-- one snapshot without a transaction around two.
WITH
-- 0. The kept history's bounds, and r.
bounds AS (
    SELECT h.kept_from, h.kept_since,
           (SELECT coalesce(max(cr.revision), 0) FROM context_revisions cr) AS newest,
           coalesce(:'revision'::bigint,
                    greatest((SELECT hr.revision FROM history_revisions hr
                              WHERE hr.committed_at <= :'at'::timestamptz
                              ORDER BY hr.committed_at DESC, hr.revision DESC
                              LIMIT 1),
                             h.kept_from)) AS revision
    FROM history_horizon h
    LIMIT 1  -- the table holds one row; without statistics the planner guesses more
),
-- 1. The tenant's version valid at r (tenant_history_valid_to_idx).
node AS (
    SELECT th.tenant_id AS id, th.ancestry_path, th.depth, th.isolation_strategy, th.status
    FROM tenant_history th
    WHERE th.tenant_id = :'tenant_id' AND th.valid_to > (SELECT b.revision FROM bounds b)
      AND th.valid_from <= (SELECT b.revision FROM bounds b)
),
-- 2. The chain at r, read from the tenant's path then (root first, itself last), with
--    each ancestor's distance from the tenant.
chain AS (
    SELECT part::uuid AS tenant_id, n.depth + 1 - x.ord::integer AS distance
    FROM node n,
         unnest(string_to_array(ltrim(n.ancestry_path, '/'), '/')) WITH ORDINALITY AS x(part, ord)
),
-- 3. Every key each chain member ever had in the history: one range of
--    config_history_keys_pkey / permission_history_keys_pkey per member (OFFSET 0 keeps
--    the lookup per member, never a scan of the whole table).
config_keys AS (
    SELECT ch.tenant_id, ch.distance, k.key
    FROM chain ch
    CROSS JOIN LATERAL (
        SELECT hk.key FROM config_history_keys hk WHERE hk.tenant_id = ch.tenant_id OFFSET 0
    ) AS k
),
permission_keys AS (
    SELECT ch.tenant_id, ch.distance, k.key
    FROM chain ch
    CROSS JOIN LATERAL (
        SELECT hk.key FROM permission_history_keys hk WHERE hk.tenant_id = ch.tenant_id OFFSET 0
    ) AS k
),
-- 4. Per (member, key) the version begun last at or before r (the pkey backwards), kept
--    when it was still valid at r.
config_at AS (
    SELECT k.distance, v.*
    FROM config_keys k
    CROSS JOIN LATERAL (
        SELECT h.key, h.value, h.sensitive, h.locked, h.expires_at, h.tenant_id, h.valid_to
        FROM config_history h
        WHERE h.tenant_id = k.tenant_id AND h.key = k.key
          AND h.valid_from <= (SELECT b.revision FROM bounds b)
        ORDER BY h.valid_from DESC
        LIMIT 1
    ) AS v
    WHERE v.valid_to > (SELECT b.revision FROM bounds b)
),
permission_at AS (
    SELECT k.distance, v.*
    FROM permission_keys k
    CROSS JOIN LATERAL (
        SELECT h.key, h.value, h.mode, h.expires_at, h.tenant_id, h.valid_to
        FROM permission_history h
        WHERE h.tenant_id = k.tenant_id AND h.key = k.key
          AND h.valid_from <= (SELECT b.revision FROM bounds b)
        ORDER BY h.valid_from DESC
        LIMIT 1
    ) AS v
    WHERE v.valid_to > (SELECT b.revision FROM bounds b)
),
-- 5. Config winners at r per key, by the rules of context_config_winners (migration
--    0052; the versions come from the history, not from config_entries, so that
--    function cannot serve): config_entry_rank orders them, inlined.
config_winners AS (
    SELECT DISTINCT ON (ce.key)
           ce.key, ce.value, ce.sensitive, ce.locked, ce.expires_at,
           ce.tenant_id AS source_tenant_id
    FROM config_at ce
    ORDER BY ce.key, config_entry_rank(ce.locked, ce.distance)
),
-- 6. Permission winners at r, by the rules of context_permission_winners:
--    permission_policy_counts and permission_policy_rank, inlined.
permission_winners AS (
    SELECT DISTINCT ON (pp.key)
           pp.key, pp.value, pp.mode, pp.expires_at, pp.tenant_id AS source_tenant_id
    FROM permission_at pp
    WHERE permission_policy_counts(pp.mode, pp.distance)
    ORDER BY pp.key, permission_policy_rank(pp.mode, pp.distance)
)
-- 7. The bounds, and the document built as render_tenant_context builds it (expires_at
--    shown when set).
SELECT b.kept_from, b.kept_since, b.newest, b.revision,
       d.id, d.ancestry_path, d.depth, d.status, d.document
FROM bounds b
LEFT JOIN (
    SELECT t.id, t.ancestry_path, t.depth, t.status,
           json_build_object(
               'tenant_id', t.id,
               'ancestry_path', t.ancestry_path,
               'depth', t.depth,
               'isolation_strategy', t.isolation_strategy,
               'resolved_config', coalesce(
                   (SELECT json_object_agg(w.key, CASE WHEN w.expires_at IS NULL THEN
                           json_build_object(
                               'key', w.key,
                               'value', CASE WHEN w.sensitive THEN '"***"'::jsonb ELSE w.value END,
                               'source_tenant_id', w.source_tenant_id,
                               'inherited', w.source_tenant_id <> t.id,
                               'locked', w.locked)
                           ELSE json_build_object(
                               'key', w.key,
                               'value', CASE WHEN w.sensitive THEN '"***"'::jsonb ELSE w.value END,
                               'source_tenant_id', w.source_tenant_id,
                               'inherited', w.source_tenant_id <> t.id,
                               'locked', w.locked,
                               'expires_at', svc_iso_time(w.expires_at)) END ORDER BY w.key)
                    FROM config_winners w),
                   '{}'::json),
               'resolved_permissions', coalesce(
                   (SELECT json_object_agg(p.key, CASE WHEN p.expires_at IS NULL THEN
                           json_build_object(
                               'key', p.key,
                               'value', p.value,
                               'mode', p.mode,
                               'source_tenant_id', p.source_tenant_id,
                               'locked', p.mode = 'LOCKED',
                               'delegated', p.source_tenant_id <> t.id AND p.mode <> 'LOCKED')
                           ELSE json_build_object(
                               'key', p.key,
                               'value', p.value,
                               'mode', p.mode,
                               'source_tenant_id', p.source_tenant_id,
                               'locked', p.mode = 'LOCKED',
                               'delegated', p.source_tenant_id <> t.id AND p.mode <> 'LOCKED',
                               'expires_at', svc_iso_time(p.expires_at)) END
                           ORDER BY p.key)
                    FROM permission_winners p),
                   '{}'::json)
           )::text AS document
    FROM node t
) AS d ON true;

-- name: get_tenant_at :one
-- One tenant as it was at revision r, with its own config then (sensitive values
-- '***', as tenant_details shows them); no row: it did not exist at r.
SELECT th.tenant_id AS id, th.parent_id, th.name, th.slug, th.ancestry_path, th.depth,
       th.metadata, th.isolation_strategy, th.region, th.status, th.deleted_at,
       th.created_at, th.updated_at,
       coalesce((SELECT jsonb_object_agg(ce.key, CASE WHEN ce.sensitive
                                                      THEN to_jsonb('***'::text)
                                                      ELSE ce.value END)
                 FROM config_history ce
                 WHERE ce.tenant_id = th.tenant_id AND ce.valid_to > :'revision'::bigint
                   AND ce.valid_from <= :'revision'::bigint),
                '{}'::jsonb) AS config
FROM tenant_history th
WHERE th.tenant_id = :'tenant_id' AND th.valid_to > :'revision'::bigint
  AND th.valid_from <= :'revision'::bigint;

-- name: list_context_change_revisions :many
-- The revisions in (from, to] that changed a version of the tenant or of a config entry
-- or permission policy of any tenant on one of its paths in that range: the only
-- revisions at which its resolved context can change (ascending).
WITH
-- 1. The tenant's versions overlapping the range, and every tenant on their paths.
versions AS (
    SELECT th.valid_from, th.valid_to, th.ancestry_path
    FROM tenant_history th
    WHERE th.tenant_id = :'tenant_id' AND th.valid_to > :'from_revision'::bigint
      AND th.valid_from <= :'to_revision'::bigint
),
chain AS (
    SELECT DISTINCT part::uuid AS tenant_id
    FROM versions v, unnest(string_to_array(ltrim(v.ancestry_path, '/'), '/')) AS x(part)
),
-- 2. Every bound of those versions and of the chain's entries inside the range.
bounds AS (
    SELECT v.valid_from AS revision FROM versions v
    UNION SELECT v.valid_to FROM versions v
    -- per chain member one range of *_history_valid_to_idx (OFFSET 0: see
    -- render_tenant_context_at)
    UNION SELECT b FROM chain ch,
                   LATERAL (SELECT ce.valid_from, ce.valid_to FROM config_history ce
                            WHERE ce.tenant_id = ch.tenant_id
                              AND ce.valid_to > :'from_revision'::bigint
                            OFFSET 0) AS ce,
                   LATERAL (VALUES (ce.valid_from), (ce.valid_to)) AS y(b)
    UNION SELECT b FROM chain ch,
                   LATERAL (SELECT pp.valid_from, pp.valid_to FROM permission_history pp
                            WHERE pp.tenant_id = ch.tenant_id
                              AND pp.valid_to > :'from_revision'::bigint
                            OFFSET 0) AS pp,
                   LATERAL (VALUES (pp.valid_from), (pp.valid_to)) AS y(b)
)
SELECT b.revision
FROM bounds b
WHERE b.revision > :'from_revision'::bigint AND b.revision <= :'to_revision'::bigint
ORDER BY b.revision;

-- name: get_history_revision :one
-- One kept revision: when it committed and its audit entries.
SELECT revision, committed_at, audit_ids
FROM history_revisions
WHERE revision = :'revision'::bigint;

-- name: delete_expired_history :value
-- Forget the history before the newest revision committed before cutoff (always keeping
-- the newest revision): versions that ended at or before it, and older revisions; the
-- horizon moves to it. How many rows were removed.
WITH
-- 1. The new horizon (history_revisions_committed_at_idx, backwards).
horizon AS (
    SELECT hr.revision, hr.committed_at
    FROM history_revisions hr
    WHERE hr.committed_at < :'cutoff'::timestamptz
      AND hr.revision > (SELECT kept_from FROM history_horizon)
    ORDER BY hr.committed_at DESC, hr.revision DESC
    LIMIT 1
),
-- 2. Versions no revision at or after the horizon can see (the *_purge_idx ranges).
tenants_gone AS (
    DELETE FROM tenant_history th USING horizon h
    WHERE th.valid_to <= h.revision AND th.valid_to < 9223372036854775807
    RETURNING 1
),
config_gone AS (
    DELETE FROM config_history ce USING horizon h
    WHERE ce.valid_to <= h.revision AND ce.valid_to < 9223372036854775807
    RETURNING 1
),
permissions_gone AS (
    DELETE FROM permission_history pp USING horizon h
    WHERE pp.valid_to <= h.revision AND pp.valid_to < 9223372036854775807
    RETURNING 1
),
revisions_gone AS (
    DELETE FROM history_revisions hr USING horizon h WHERE hr.revision < h.revision
    RETURNING 1
),
-- 3. The horizon row.
moved AS (
    UPDATE history_horizon hh SET kept_from = h.revision, kept_since = h.committed_at
    FROM horizon h
    RETURNING 1
)
SELECT (SELECT count(*) FROM tenants_gone) + (SELECT count(*) FROM config_gone)
       + (SELECT count(*) FROM permissions_gone) + (SELECT count(*) FROM revisions_gone)
       AS removed;

-- name: count_expired_history :value
-- How many rows delete_expired_history would remove now (dry runs).
WITH horizon AS (
    SELECT hr.revision
    FROM history_revisions hr
    WHERE hr.committed_at < :'cutoff'::timestamptz
      AND hr.revision > (SELECT kept_from FROM history_horizon)
    ORDER BY hr.committed_at DESC, hr.revision DESC
    LIMIT 1
)
SELECT (SELECT count(*) FROM tenant_history th, horizon h
          WHERE th.valid_to <= h.revision AND th.valid_to < 9223372036854775807)
       + (SELECT count(*) FROM config_history ce, horizon h
          WHERE ce.valid_to <= h.revision AND ce.valid_to < 9223372036854775807)
       + (SELECT count(*) FROM permission_history pp, horizon h
          WHERE pp.valid_to <= h.revision AND pp.valid_to < 9223372036854775807)
       + (SELECT count(*) FROM history_revisions hr, horizon h WHERE hr.revision < h.revision)
       AS removed;

-- name: list_revision_entry_changes :many
-- What revision r did to config entries and permission policies: per (kind, tenant,
-- key) the version it ended (before) and the one it began (after), as JSON (NULL:
-- none), the tenant's path now (NULL: gone), and the later revisions that changed the
-- same key at the same tenant (conflicts of a revert).
WITH
-- 1. The keys r touched (the *_valid_from_idx and *_purge_idx equalities).
touched AS (
    SELECT 'config' AS kind, ce.tenant_id, ce.key FROM config_history ce
    WHERE ce.valid_from = :'revision'::bigint
       OR (ce.valid_to = :'revision'::bigint AND ce.valid_to < 9223372036854775807)
    UNION
    SELECT 'permission', pp.tenant_id, pp.key FROM permission_history pp
    WHERE pp.valid_from = :'revision'::bigint
       OR (pp.valid_to = :'revision'::bigint AND pp.valid_to < 9223372036854775807)
),
-- 2. Per key: every version's bounds (config_history_pkey / permission_history_pkey).
versions AS (
    SELECT x.kind, x.tenant_id, x.key, ce.valid_from, ce.valid_to,
           jsonb_build_object('value', ce.value, 'encrypted_value', ce.encrypted_value,
                              'locked', ce.locked, 'sensitive', ce.sensitive,
                              'reveal_to_descendants', ce.reveal_to_descendants,
                              'expires_at', ce.expires_at) AS entry
    FROM touched x
    JOIN config_history ce ON ce.tenant_id = x.tenant_id AND ce.key = x.key
    WHERE x.kind = 'config'
    UNION ALL
    SELECT x.kind, x.tenant_id, x.key, pp.valid_from, pp.valid_to,
           jsonb_build_object('value', pp.value, 'mode', pp.mode, 'expires_at', pp.expires_at)
    FROM touched x
    JOIN permission_history pp ON pp.tenant_id = x.tenant_id AND pp.key = x.key
    WHERE x.kind = 'permission'
)
-- 3. Before, after, the later revisions, and where the tenant is now (tenants_pkey).
SELECT v.kind, v.tenant_id, v.key,
       (array_agg(v.entry) FILTER (WHERE v.valid_to = :'revision'::bigint))[1] AS before,
       (array_agg(v.entry) FILTER (WHERE v.valid_from = :'revision'::bigint))[1] AS after,
       coalesce(array_agg(DISTINCT b.later ORDER BY b.later)
                    FILTER (WHERE b.later > :'revision'::bigint
                              AND b.later < 9223372036854775807),
                '{}') AS later_revisions,
       t.ancestry_path AS path_now
FROM versions v
CROSS JOIN LATERAL (VALUES (v.valid_from), (v.valid_to)) AS b(later)
LEFT JOIN tenants t ON t.id = v.tenant_id
GROUP BY v.kind, v.tenant_id, v.key, t.ancestry_path
ORDER BY v.tenant_id, v.kind, v.key;

-- name: count_revision_tenant_changes :value
-- How many tenants revision r created, moved, archived, restored or renamed (versions
-- of tenant_history it began, tenant_history_valid_from_idx).
SELECT count(*) AS changed
FROM tenant_history th
WHERE th.valid_from = :'revision'::bigint;

-- name: restore_config_entry :exec
-- Put a config entry back as a version of the history held it (encrypted as it was, with
-- its expiry).
INSERT INTO config_entries (tenant_id, key, value, encrypted_value, locked, sensitive,
                            reveal_to_descendants, expires_at)
VALUES (:'tenant_id', :'key', :'value'::jsonb, :'encrypted_value', :'locked', :'sensitive',
        :'reveal_to_descendants', :'expires_at'::timestamptz)
ON CONFLICT (tenant_id, key) DO UPDATE
SET value = EXCLUDED.value, encrypted_value = EXCLUDED.encrypted_value,
    locked = EXCLUDED.locked, sensitive = EXCLUDED.sensitive,
    reveal_to_descendants = EXCLUDED.reveal_to_descendants,
    expires_at = EXCLUDED.expires_at, updated_at = now();

-- name: restore_permission_policy :exec
-- Put a permission policy back as a version of the history held it, with its expiry.
INSERT INTO permission_policies (tenant_id, key, value, mode, expires_at)
VALUES (:'tenant_id', :'key', :'value', :'mode', :'expires_at'::timestamptz)
ON CONFLICT (tenant_id, key) DO UPDATE
SET value = EXCLUDED.value, mode = EXCLUDED.mode, expires_at = EXCLUDED.expires_at,
    updated_at = now();

-- name: remove_config_entry :exec
-- Remove a config entry a reverted revision had created.
DELETE FROM config_entries WHERE tenant_id = :'tenant_id' AND key = :'key';

-- name: remove_permission_policy :exec
-- Remove a permission policy a reverted revision had created.
DELETE FROM permission_policies WHERE tenant_id = :'tenant_id' AND key = :'key';

-- name: list_later_moves :many
-- Of the given tenants, each revision after r that moved it (a version begun after r
-- whose path differs from the one before it), in revision order (tenant_history_pkey).
SELECT th.tenant_id, th.valid_from AS revision
FROM unnest(:'tenant_ids'::uuid[]) AS x(id)
JOIN tenant_history th ON th.tenant_id = x.id AND th.valid_from > :'revision'::bigint
JOIN tenant_history prior ON prior.tenant_id = th.tenant_id AND prior.valid_to = th.valid_from
WHERE prior.ancestry_path <> th.ancestry_path
ORDER BY th.tenant_id, th.valid_from;
