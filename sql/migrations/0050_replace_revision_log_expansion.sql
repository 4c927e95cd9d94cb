-- The revision log's rows for the tenants below a changed entry (most rows of an entry
-- write: one per tenant of the subtree) are classified directly: migration 0048 gave
-- each of them a note of its own, grouped every note per tenant (three ordered
-- aggregates) and looked the tenant up twice. Only the noted tenants (those the
-- statements touched) are grouped now; a tenant only below a changed one is looked up
-- once, and its change is 'context' when active, else 'document', as the grouped form
-- concluded for it. The commit-order lock is held for this statement, so every write
-- waiting for the lock waited for that work too (docs/decisions/revisions.md).
--
-- The log rows' foreign key goes for the same reason: its check ran once per row (one
-- per tenant of a changed subtree) inside that statement. Retention deletes the rows
-- with their revision (sql/queries/revisions.sql, delete_expired_revisions), and only
-- commit_context_revision writes them, after the revision's own row.
--
-- The noted tenants and those below are joined to each other (both sides of a seed or a
-- large move hold a row per tenant), so the function runs with nested loops off again:
-- its plan is kept for the connection, made for whatever notes came first. Its tenant
-- lookups stay per-row probes (LATERAL ... OFFSET 0 cannot be anything else), whose
-- forbidden-nested-loop cost no longer JIT-compiles the statement: jit is off for it.

ALTER TABLE context_revision_tenants DROP CONSTRAINT context_revision_tenants_revision_fk;

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
    -- 2. Each tenant below one whose entries changed ('s'), as the tree is now
    --    (tenant_closure_pkey ranges): its context changes with the entries above it.
    below AS (
        SELECT DISTINCT c.descendant_id AS tenant_id
        FROM (SELECT DISTINCT p.tenant_id
              FROM context_change_pending p
              WHERE p.xid = me AND p.what = 's') AS s
        CROSS JOIN LATERAL (
            SELECT c.descendant_id FROM tenant_closure c
            WHERE c.ancestor_id = s.tenant_id AND c.depth > 0
            OFFSET 0
        ) AS c
    ),
    -- 3. What the revision did to each tenant. A noted tenant: by its state before and
    --    after (tenants_pkey). A tenant only below a changed one (most rows, one probe
    --    each): nothing else happened to it, so its context changed if it is active,
    --    else only its document.
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
                   WHEN n.context OR b.tenant_id IS NOT NULL THEN 'context'
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
        LEFT JOIN below b ON b.tenant_id = n.tenant_id
        UNION ALL
        SELECT b.tenant_id,
               CASE WHEN t.status = 'active' THEN t.ancestry_path END,
               CASE WHEN t.status = 'active' THEN 'context' ELSE 'document' END,
               t.ancestry_path,
               t.ancestry_path
        FROM below b
        CROSS JOIN LATERAL (
            SELECT t.status, t.ancestry_path FROM tenants t
            WHERE t.id = b.tenant_id
            OFFSET 0
        ) AS t
        WHERE NOT EXISTS (SELECT 1 FROM notes n WHERE n.tenant_id = b.tenant_id)
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
