-- Every write read all of tenants (and, for entry writes below a tenant, tenant_closure)
-- at commit: the revision functions of migration 0033 run with enable_nestloop off (so
-- that a transaction with very many notes is never planned as nested loops over row
-- counts a kept plan was made for), and with nested loops off their joins of a few notes
-- to tenants and tenant_closure became hash joins over whole tables. At 1,000,000
-- tenants a tenant create took 264 ms and a move of one tenant 265 ms (2.2 and 3.2 ms
-- before revisions); config writes alike. The lookups in tenants and tenant_closure are
-- now index probes per note (LATERAL subqueries kept apart by OFFSET 0, or = ANY of the
-- noted ids), which no planner setting turns into scans. commit_context_revision no
-- longer turns nested loops off: its only joins are those lookups, and on PostgreSQL 15
-- a nested loop the setting forbids still costs 10^10 in the plan, enough to JIT-compile
-- the statement at every commit (about 0.4 s). note_entry_changes keeps the setting for
-- its joins of transition tables (docs/decisions/revisions.md).

CREATE OR REPLACE FUNCTION note_entry_changes() RETURNS trigger
LANGUAGE plpgsql
SET enable_nestloop = off
AS $$
DECLARE
    touched uuid[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(DISTINCT n.tenant_id) INTO touched FROM new_rows n;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(DISTINCT o.tenant_id) INTO touched FROM old_rows o;
    ELSIF TG_TABLE_NAME = 'config_entries' THEN
        SELECT array_agg(DISTINCT u.tenant_id) INTO touched
        FROM (SELECT n.tenant_id
              FROM new_rows n
              JOIN old_rows o ON o.tenant_id = n.tenant_id AND o.key = n.key
              WHERE (n.value, n.locked, n.sensitive, n.reveal_to_descendants, n.updated_at)
                    IS DISTINCT FROM
                    (o.value, o.locked, o.sensitive, o.reveal_to_descendants, o.updated_at)
              UNION ALL
              -- a row whose key changed is on one side only
              SELECT n.tenant_id FROM new_rows n
              WHERE NOT EXISTS (SELECT 1 FROM old_rows o
                                WHERE o.tenant_id = n.tenant_id AND o.key = n.key)
              UNION ALL
              SELECT o.tenant_id FROM old_rows o
              WHERE NOT EXISTS (SELECT 1 FROM new_rows n
                                WHERE o.tenant_id = n.tenant_id AND o.key = n.key)) AS u;
    ELSE
        SELECT array_agg(DISTINCT u.tenant_id) INTO touched
        FROM (SELECT tenant_id FROM new_rows UNION ALL SELECT tenant_id FROM old_rows) AS u;
    END IF;
    IF touched IS NULL THEN
        RETURN NULL;
    END IF;
    -- Each touched tenant as it is now ('s': its subtree's contexts may change; the
    -- tenants below it are read at commit, as the tree is then). A tenant deleted by
    -- this statement's cascade is noted by its own delete.
    INSERT INTO context_change_pending (xid, what, tenant_id, path, active)
    SELECT pg_current_xact_id(), 's', t.id, t.ancestry_path, t.status = 'active'
    FROM tenants t
    WHERE t.id = ANY (touched);
    IF FOUND THEN
        PERFORM note_context_change_mark();
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION commit_context_revision() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    me       xid8 := pg_current_xact_id();
    rev      bigint;
    audits   uuid[];
    counted  integer;
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
    INSERT INTO context_revisions (revision, audit_ids, tenant_count)
    VALUES (rev, audits, 0);
    WITH
    -- 1. The notes, and each tenant below one whose entries changed ('s'), as the tree
    --    is now (tenant_closure_pkey ranges); those come last, so a tenant's own notes
    --    (a move into the subtree in this transaction) tell its state before.
    noted AS (
        SELECT p.tenant_id, p.seq, p.what, p.path, p.active
        FROM context_change_pending p
        WHERE p.xid = me AND p.tenant_id IS NOT NULL
        UNION ALL
        SELECT t.id, 9223372036854775807, 'c', t.ancestry_path, t.status = 'active'
        FROM (SELECT DISTINCT p.tenant_id
              FROM context_change_pending p
              WHERE p.xid = me AND p.what = 's') AS s
        CROSS JOIN LATERAL (
            SELECT c.descendant_id FROM tenant_closure c
            WHERE c.ancestor_id = s.tenant_id AND c.depth > 0
            OFFSET 0
        ) AS c
        CROSS JOIN LATERAL (
            SELECT t.id, t.ancestry_path, t.status FROM tenants t
            WHERE t.id = c.descendant_id
            OFFSET 0
        ) AS t
    ),
    -- 2. Per tenant: its first note (the state before) and whether any note may change
    --    its context.
    notes AS (
        SELECT p.tenant_id,
               (array_agg(p.what ORDER BY p.seq))[1] AS first_what,
               (array_agg(p.path ORDER BY p.seq))[1] AS first_path,
               (array_agg(p.active ORDER BY p.seq))[1] AS first_active,
               bool_or(p.what IN ('c', 'n', 's')) AS context
        FROM noted p
        GROUP BY p.tenant_id
    ),
    -- 3. The state after (tenants_pkey), and what the revision did to the tenant.
    classified AS (
        SELECT n.tenant_id, t.id IS NOT NULL AS exists_now,
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
    INSERT INTO context_revision_tenants (revision, idx, tenant_id, change, path, left_path)
    SELECT rev,
           (row_number() OVER (ORDER BY coalesce(c.now_path, c.before_path), c.tenant_id))::integer - 1,
           c.tenant_id, c.change, c.path,
           CASE WHEN c.change IN ('moved', 'archived', 'purged') THEN c.before_path END
    FROM classified c
    WHERE c.change IS NOT NULL;
    GET DIAGNOSTICS counted = ROW_COUNT;
    UPDATE context_revisions SET tenant_count = counted WHERE revision = rev;
    DELETE FROM context_change_pending WHERE xid = me;
    PERFORM pg_notify('tenant_service_revisions', rev::text);
    RETURN NULL;
END;
$$;
