-- Revisions and their log (migration 0033, docs/context-delivery.md): what the stream
-- of context changes, hydration and batch reads ask.

-- name: current_revision :value
-- The newest committed revision (0 before the first); commit order is revision order,
-- so every smaller revision is committed too. context_revisions_pkey, backwards.
SELECT coalesce(max(revision), 0) AS revision
FROM context_revisions;

-- name: revision_horizon :one
-- The newest revision retention removed (a position below it cannot be followed) and
-- the oldest one kept (NULL: none yet).
SELECT h.purged_through,
       (SELECT min(revision) FROM context_revisions) AS oldest_kept
FROM context_revision_horizon h;

-- name: list_context_changes :many
-- One page of the log after the position (after_revision, after_idx) up to
-- through_revision, of tenants that are (path) or were (left_path) at or below root_id
-- and scope_id (NULL: no scope), in revision then index order; document-only rows are
-- left out. A group row (change 'below', migration 0051) stands for its members at
-- idx, idx + 1, ...: each is a 'context' row of a tenant inside the subtree.
WITH
-- 1. The root and the scope where they are now (tenants_pkey): a group whose anchor is
--    above them holds some tenants inside them.
place AS (
    SELECT (SELECT t.ancestry_path FROM tenants t
            WHERE t.id = :'root_id'::uuid) AS root_path,
           (SELECT t.ancestry_path FROM tenants t
            WHERE t.id = :'scope_id'::uuid) AS scope_path
),
-- 2. The log rows from the one holding the position on (context_revision_tenants_pkey
--    range; a group that starts before the position may hold tenants after it), of
--    tenants inside or leaving the subtree, and groups anchored inside or above it.
logged AS (
    SELECT r.revision, r.idx, r.tenant_id, r.change, r.members,
           coalesce(strpos(r.path || '/', '/' || :'root_id'::text || '/') > 0
                    AND (:'scope_id'::text IS NULL
                         OR strpos(r.path || '/', '/' || :'scope_id'::text || '/') > 0),
                    false) AS inside
    FROM context_revision_tenants r
    CROSS JOIN place p
    WHERE (r.revision, r.idx) >= (
              :'after_revision'::bigint,
              coalesce((SELECT max(h.idx) FROM context_revision_tenants h
                        WHERE h.revision = :'after_revision'::bigint
                          AND h.idx <= :'after_idx'::integer), 0))
      AND r.revision <= :'through_revision'::bigint
      AND r.change <> 'document'
      AND ((strpos(r.path || '/', '/' || :'root_id'::text || '/') > 0
            AND (:'scope_id'::text IS NULL
                 OR strpos(r.path || '/', '/' || :'scope_id'::text || '/') > 0))
           OR (strpos(r.left_path || '/', '/' || :'root_id'::text || '/') > 0
               AND (:'scope_id'::text IS NULL
                    OR strpos(r.left_path || '/', '/' || :'scope_id'::text || '/') > 0))
           OR (r.change = 'below'
               AND (strpos(r.path || '/', '/' || :'root_id'::text || '/') > 0
                    OR strpos(p.root_path || '/', '/' || r.tenant_id::text || '/') > 0)
               AND (:'scope_id'::text IS NULL
                    OR strpos(r.path || '/', '/' || :'scope_id'::text || '/') > 0
                    OR strpos(p.scope_path || '/', '/' || r.tenant_id::text || '/') > 0)))
)
-- 3. One row per tenant: a group's members in order, each after the position; when the
--    group's anchor is not inside the subtree (it is above the root or the scope), only
--    the members inside it now (tenants_pkey).
SELECT l.revision, l.idx + m.ord::integer - 1 AS idx, m.tenant_id,
       CASE WHEN l.change = 'below' THEN 'context' ELSE l.change END AS change,
       l.inside OR l.change = 'below' AS inside
FROM logged l
CROSS JOIN LATERAL unnest(
    CASE WHEN l.change = 'below' THEN l.members ELSE ARRAY[l.tenant_id] END
) WITH ORDINALITY AS m(tenant_id, ord)
WHERE (l.revision, l.idx + m.ord::integer - 1)
          > (:'after_revision'::bigint, :'after_idx'::integer)
  AND (l.change <> 'below'
       OR l.inside
       OR EXISTS (SELECT 1 FROM tenants t
                  WHERE t.id = m.tenant_id
                    AND strpos(t.ancestry_path || '/', '/' || :'root_id'::text || '/') > 0
                    AND (:'scope_id'::text IS NULL
                         OR strpos(t.ancestry_path || '/',
                                   '/' || :'scope_id'::text || '/') > 0)))
ORDER BY l.revision, l.idx, m.ord
LIMIT :'page_size'::integer;

-- name: list_revision_tenants :many
-- The log of one revision: each tenant it changed, in index order (tests, tools). A
-- group's members are 'context' rows with the path each has now (the log keeps only
-- their anchor's), or 'document' rows without one when not active now.
SELECT r.idx + m.ord::integer - 1 AS idx, m.tenant_id,
       CASE WHEN r.change <> 'below' THEN r.change
            WHEN t.status = 'active' THEN 'context'
            ELSE 'document' END AS change,
       CASE WHEN r.change <> 'below' THEN r.path
            WHEN t.status = 'active' THEN t.ancestry_path END AS path,
       r.left_path
FROM context_revision_tenants r
CROSS JOIN LATERAL unnest(
    CASE WHEN r.change = 'below' THEN r.members ELSE ARRAY[r.tenant_id] END
) WITH ORDINALITY AS m(tenant_id, ord)
LEFT JOIN tenants t ON r.change = 'below' AND t.id = m.tenant_id
WHERE r.revision = :'revision'::bigint
ORDER BY r.idx, m.ord;

-- name: get_revision :one
-- One revision's row: when it committed, its audit entries and how many tenants it
-- changed.
SELECT revision, committed_at, audit_ids, tenant_count
FROM context_revisions
WHERE revision = :'revision'::bigint;

-- name: delete_expired_revisions :value
-- Remove up to batch_size of the oldest revisions committed before cutoff and their
-- tenant rows, always keeping the newest, and move the horizon past
-- them; how many were removed.
WITH
-- 1. The oldest expired revisions (context_revisions_pkey order), never the newest.
doomed AS (
    SELECT r.revision
    FROM context_revisions r
    WHERE r.committed_at < :'cutoff'
      AND r.revision < (SELECT max(revision) FROM context_revisions)
    ORDER BY r.revision
    LIMIT :'batch_size'::integer
    FOR UPDATE SKIP LOCKED
),
-- 2. Gone (context_revisions_pkey).
removed AS (
    DELETE FROM context_revisions r
    USING doomed d
    WHERE r.revision = d.revision
    RETURNING r.revision
),
-- 3. Their tenant rows (context_revision_tenants_pkey ranges): no foreign key deletes
--    them, since checking one per log row cost every write under the commit-order lock.
removed_tenants AS (
    DELETE FROM context_revision_tenants t
    USING doomed d
    WHERE t.revision = d.revision
),
-- 4. The horizon: the newest revision removed.
moved AS (
    UPDATE context_revision_horizon h
    SET purged_through = greatest(h.purged_through, (SELECT max(revision) FROM removed))
    WHERE EXISTS (SELECT 1 FROM removed)
    RETURNING h.purged_through
)
SELECT (SELECT count(*) FROM removed) + 0 * (SELECT count(*) FROM moved) AS removed;

-- name: count_expired_revisions :value
-- Revisions committed before cutoff that retention would remove (never the newest).
SELECT count(*) AS total
FROM context_revisions r
WHERE r.committed_at < :'cutoff'
  AND r.revision < (SELECT max(revision) FROM context_revisions);
