-- The tenants below a changed entry are logged as one row per changed subtree (a group)
-- instead of one row each. A config write two levels below a root of a 1,000,000-tenant
-- forest changes the contexts of about 650 tenants: their 650 rows (a tenant lookup, a
-- sort by path and an index entry each) were most of the write's work at commit, all of
-- it under the commit-order lock, so that the log capped the write rate
-- (docs/decisions/revisions.md, "Groups").
--
-- A group row: change 'below', tenant_id the tenant whose entries changed (the anchor),
-- path its path, members the tenants below it that the revision did not touch
-- otherwise, nearest first (by depth below the anchor, then id: a parent before its
-- children; archived ones too, which the readers skip as they skip any tenant that is
-- not active when they render it).
-- It stands for the indexes idx .. idx + cardinality(members) - 1 of its revision; the readers
-- (sql/queries/revisions.sql) expand it, so a subscriber still sees one position per
-- tenant. The tenants the statements touched keep a row each, first in the revision.

ALTER TABLE context_revision_tenants ADD COLUMN members uuid[];
ALTER TABLE context_revision_tenants DROP CONSTRAINT context_revision_tenants_change_check;
ALTER TABLE context_revision_tenants ADD CONSTRAINT context_revision_tenants_change_check
    CHECK (change IN ('context', 'document', 'moved', 'archived', 'purged', 'below'));
ALTER TABLE context_revision_tenants ADD CONSTRAINT context_revision_tenants_members_check
    CHECK ((change = 'below') = (members IS NOT NULL));

CREATE OR REPLACE FUNCTION commit_context_revision() RETURNS trigger
LANGUAGE plpgsql
SET enable_nestloop = off
SET jit = off
AS $$
DECLARE
    me       xid8 := pg_current_xact_id();
    rev      bigint;
    audits   uuid[];
    counted  integer;
    grouped  integer;
    noted    uuid[];
BEGIN
    DELETE FROM context_change_marks WHERE xid = me;
    IF NOT EXISTS (SELECT 1 FROM context_change_pending
                   WHERE xid = me AND tenant_id IS NOT NULL) THEN
        DELETE FROM context_change_pending WHERE xid = me;  -- audit entries only
        RETURN NULL;
    END IF;
    -- The commit-order lock (the audit chain's, migration 0025), held until the commit.
    PERFORM pg_advisory_xact_lock(7310452118900025);
    rev := nextval('context_revision_seq');
    SELECT coalesce(array_agg(audit_id ORDER BY audit_id), '{}') INTO audits
    FROM context_change_pending
    WHERE xid = me AND what = 'a';
    INSERT INTO context_revision_tenants (revision, idx, tenant_id, change, path, left_path)
    WITH
    -- 1. Per noted tenant: its first note (the state before) and whether any note may
    --    change its context. Few rows: the tenants the statements touched.
    notes AS (
        SELECT p.tenant_id,
               (array_agg(p.what ORDER BY p.seq))[1] AS first_what,
               (array_agg(p.path ORDER BY p.seq))[1] AS first_path,
               (array_agg(p.active ORDER BY p.seq))[1] AS first_active,
               bool_or(p.what IN ('c', 'n', 's')) AS context
        FROM context_change_pending p
        WHERE p.xid = me AND p.tenant_id IS NOT NULL
        GROUP BY p.tenant_id
    ),
    -- 2. What the revision did to each noted tenant, by its state before and after
    --    (tenants_pkey). One below a tenant whose entries changed (an ancestor on its
    --    path has an 's' note: context_change_pending_xid_idx probes) has a new context.
    classified AS (
        SELECT n.tenant_id,
               CASE WHEN t.status = 'active' THEN t.ancestry_path END AS path,
               CASE
                   WHEN n.first_what = 'n' AND t.id IS NULL THEN NULL  -- came and went
                   WHEN t.id IS NULL THEN 'purged'
                   WHEN t.status <> 'active' AND coalesce(n.first_active, true)
                       THEN 'archived'
                   WHEN t.status <> 'active' THEN 'document'
                   WHEN n.first_what <> 'n' AND n.first_active
                        AND n.first_path <> t.ancestry_path THEN 'moved'
                   WHEN n.context THEN 'context'
                   WHEN EXISTS (
                       SELECT 1
                       FROM unnest(string_to_array(t.ancestry_path, '/')) AS a(id)
                       WHERE a.id <> '' AND a.id <> n.tenant_id::text
                         AND EXISTS (SELECT 1 FROM context_change_pending s
                                     WHERE s.xid = me AND s.tenant_id = a.id::uuid
                                       AND s.what = 's'
                                     OFFSET 0)
                   ) THEN 'context'
                   ELSE 'document'
               END AS change,
               CASE WHEN n.first_what <> 'n' THEN n.first_path END AS before_path,
               t.ancestry_path AS now_path
        FROM notes n
        LEFT JOIN LATERAL (
            SELECT t.id, t.status, t.ancestry_path FROM tenants t
            WHERE t.id = n.tenant_id
            OFFSET 0
        ) AS t ON true
    )
    SELECT rev,
           (row_number() OVER (ORDER BY coalesce(c.now_path, c.before_path), c.tenant_id))::integer - 1,
           c.tenant_id, c.change, c.path,
           CASE WHEN c.change IN ('moved', 'archived', 'purged') THEN c.before_path END
    FROM classified c
    WHERE c.change IS NOT NULL;
    GET DIAGNOSTICS counted = ROW_COUNT;
    -- The noted tenants' ids, when they are few (a single write's one or two): a group's
    -- members are then checked against this array, not probed one by one (a probe is
    -- an index scan started per member: 1.5 ms more for 527 members).
    IF counted <= 64 THEN
        SELECT coalesce(array_agg(DISTINCT p.tenant_id), '{}') INTO noted
        FROM context_change_pending p
        WHERE p.xid = me AND p.tenant_id IS NOT NULL;
    END IF;
    INSERT INTO context_revision_tenants (revision, idx, tenant_id, change, path, members)
    WITH
    -- 3. The tenants whose entries changed ('s' notes; tenants_pkey), leaving out
    --    those below another of them: that one's group holds their subtrees.
    anchors AS (
        SELECT s.tenant_id, t.ancestry_path
        FROM (SELECT DISTINCT p.tenant_id
              FROM context_change_pending p
              WHERE p.xid = me AND p.what = 's') AS s
        CROSS JOIN LATERAL (
            SELECT t.ancestry_path FROM tenants t
            WHERE t.id = s.tenant_id
            OFFSET 0
        ) AS t
        WHERE NOT EXISTS (
            SELECT 1
            FROM unnest(string_to_array(t.ancestry_path, '/')) AS a(id)
            WHERE a.id <> '' AND a.id <> s.tenant_id::text
              AND EXISTS (SELECT 1 FROM context_change_pending o
                          WHERE o.xid = me AND o.tenant_id = a.id::uuid AND o.what = 's'
                          OFFSET 0)
        )
    ),
    -- 4. Each anchor's tenants below it, nearest first (a parent before its
    --    children): one tenant_closure_pkey range read alone (an index-only scan, no
    --    row visited), leaving out the noted ones (their own rows say what happened to
    --    them; the array of them when they are few, else a probe of the notes per
    --    member). Archived ones stay: the readers skip them when they render contexts.
    --    Materialized: its arrays are used twice.
    groups AS MATERIALIZED (
        SELECT a.tenant_id, a.ancestry_path,
               ARRAY(SELECT c.descendant_id
                     FROM tenant_closure c
                     WHERE c.ancestor_id = a.tenant_id AND c.depth > 0
                       AND CASE WHEN noted IS NOT NULL
                                THEN c.descendant_id <> ALL (noted)
                                ELSE NOT EXISTS (
                                    SELECT 1 FROM context_change_pending p
                                    WHERE p.xid = me AND p.tenant_id = c.descendant_id
                                    OFFSET 0)
                           END
                     ORDER BY c.depth, c.descendant_id) AS members
        FROM anchors a
    ),
    -- 5. Each group's first index: after the noted tenants and the groups before it.
    placed AS (
        SELECT g.tenant_id, g.ancestry_path, g.members,
               counted + coalesce(sum(cardinality(g.members)) OVER (
                   ORDER BY g.ancestry_path ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
               ), 0)::integer AS idx
        FROM groups g
        WHERE cardinality(g.members) > 0
    )
    SELECT rev, p.idx, p.tenant_id, 'below', p.ancestry_path, p.members
    FROM placed p;
    SELECT coalesce(sum(cardinality(r.members)), 0)::integer INTO grouped
    FROM context_revision_tenants r
    WHERE r.revision = rev AND r.idx >= counted;
    INSERT INTO context_revisions (revision, audit_ids, tenant_count)
    VALUES (rev, audits, counted + grouped);
    DELETE FROM context_change_pending WHERE xid = me;
    PERFORM pg_notify('tenant_service_revisions', rev::text);
    RETURN NULL;
END;
$$;
