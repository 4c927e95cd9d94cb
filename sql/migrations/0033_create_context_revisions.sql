-- Revisions (docs/decisions/revisions.md): every committed transaction that changes a
-- tenant, its config entries or its permission policies gets the next revision, an
-- integer that only grows, and a log of which tenants' documents and contexts it changed.
--
-- During the transaction, statement triggers on the three tables note each tenant a
-- statement may have changed (with the path and state it had then) in
-- context_change_pending. At commit, a deferred constraint trigger takes the audit
-- chain's advisory lock (migration 0025: one lock, so no lock order between the two),
-- draws the revision from a sequence and turns the notes into the log. The lock is held
-- until the commit is visible, so a revision is drawn only after every smaller one has
-- committed (or rolled back, leaving a gap): no reader sees revision n+1 before n.

CREATE SEQUENCE context_revision_seq AS bigint;

-- One row per revision: when it committed and the audit entries of its transaction.
CREATE TABLE context_revisions (
    revision     bigint PRIMARY KEY,
    committed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    audit_ids    uuid[] NOT NULL DEFAULT '{}',
    tenant_count integer NOT NULL
);
CREATE INDEX context_revisions_committed_at_idx ON context_revisions (committed_at);

-- One row per tenant a revision changed, idx in path order within the revision:
--   context   its document and resolved context may have changed; path: where it is
--   document  only its tenant document changed (name, slug, metadata), or a tenant that
--             stays archived
--   moved     it moved from left_path to path (its context changed with it)
--   archived  it was archived at left_path
--   purged    it was deleted at left_path
-- path is NULL unless the tenant is active after the revision.
CREATE TABLE context_revision_tenants (
    revision  bigint NOT NULL CONSTRAINT context_revision_tenants_revision_fk
                  REFERENCES context_revisions (revision) ON DELETE CASCADE,
    idx       integer NOT NULL,
    tenant_id uuid NOT NULL,
    change    text NOT NULL,
    path      text COLLATE "C",
    left_path text COLLATE "C",
    CONSTRAINT context_revision_tenants_pkey PRIMARY KEY (revision, idx),
    CONSTRAINT context_revision_tenants_change_check
        CHECK (change IN ('context', 'document', 'moved', 'archived', 'purged'))
);

-- Retention removes the oldest revisions; a position at or past purged_through can still
-- be followed exactly.
CREATE TABLE context_revision_horizon (
    only_row       boolean PRIMARY KEY DEFAULT true CONSTRAINT context_revision_horizon_one CHECK (only_row),
    purged_through bigint NOT NULL
);
INSERT INTO context_revision_horizon (only_row, purged_through) VALUES (true, 0);

-- Notes of open transactions (unlogged: they never outlive their transaction).
--   what: 'c' context may change, 's' contexts of it and its subtree may change, 'd'
--   document only, 'n' inserted, 'a' an audit entry
CREATE UNLOGGED TABLE context_change_pending (
    xid       xid8 NOT NULL,
    seq       bigint GENERATED ALWAYS AS IDENTITY,
    what      "char" NOT NULL,
    tenant_id uuid,
    path      text COLLATE "C",
    active    boolean,
    audit_id  uuid
);
CREATE INDEX context_change_pending_xid_idx ON context_change_pending (xid, tenant_id, seq);

-- One row per transaction with notes: its insert queues the commit-time trigger once.
CREATE UNLOGGED TABLE context_change_marks (
    xid xid8 PRIMARY KEY
);

CREATE FUNCTION note_context_change_mark() RETURNS void
LANGUAGE sql AS $$
    INSERT INTO context_change_marks (xid) VALUES (pg_current_xact_id())
    ON CONFLICT (xid) DO NOTHING
$$;

-- Config entries and permission policies: each tenant whose rows changed (its subtree is
-- read at commit). An update that re-encrypts a value (key rotation) changes nothing
-- shown.
CREATE FUNCTION note_entry_changes() RETURNS trigger
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
    FROM unnest(touched) AS x(tenant_id)
    JOIN tenants t ON t.id = x.tenant_id;
    IF FOUND THEN
        PERFORM note_context_change_mark();
    END IF;
    RETURN NULL;
END;
$$;

-- Tenants: inserts ('n'), deletes and updates of what a context shows ('c', with the
-- path and state before), other updates ('d').
CREATE FUNCTION note_tenant_changes() RETURNS trigger
LANGUAGE plpgsql
SET enable_nestloop = off
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO context_change_pending (xid, what, tenant_id, path, active)
        SELECT pg_current_xact_id(), 'n', n.id, NULL, NULL
        FROM new_rows n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO context_change_pending (xid, what, tenant_id, path, active)
        SELECT pg_current_xact_id(), 'c', o.id, o.ancestry_path, o.status = 'active'
        FROM old_rows o;
    ELSE
        INSERT INTO context_change_pending (xid, what, tenant_id, path, active)
        SELECT pg_current_xact_id(),
               CASE WHEN (n.ancestry_path, n.depth, n.parent_id, n.isolation_strategy,
                          n.status)
                         IS DISTINCT FROM
                         (o.ancestry_path, o.depth, o.parent_id, o.isolation_strategy,
                          o.status)
                    THEN 'c' ELSE 'd' END,
               o.id, o.ancestry_path, o.status = 'active'
        FROM old_rows o
        JOIN new_rows n ON n.id = o.id;
    END IF;
    IF FOUND THEN
        PERFORM note_context_change_mark();
    END IF;
    RETURN NULL;
END;
$$;

-- Audit entries: linked to the revision of their transaction (if it gets one).
CREATE FUNCTION note_audit_entries() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO context_change_pending (xid, what, audit_id)
    SELECT pg_current_xact_id(), 'a', n.id FROM new_rows n;
    IF FOUND THEN
        PERFORM note_context_change_mark();
    END IF;
    RETURN NULL;
END;
$$;

-- At commit: the revision and its log, from the transaction's notes. Per tenant, the
-- first note holds the state before the transaction; the tenants table the state after.
CREATE FUNCTION commit_context_revision() RETURNS trigger
LANGUAGE plpgsql
SET enable_nestloop = off
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
        JOIN tenant_closure c ON c.ancestor_id = s.tenant_id AND c.depth > 0
        JOIN tenants t ON t.id = c.descendant_id
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
        LEFT JOIN tenants t ON t.id = n.tenant_id
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

CREATE CONSTRAINT TRIGGER context_change_marks_commit
    AFTER INSERT ON context_change_marks
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION commit_context_revision();

-- Transition tables need one trigger per event.
CREATE TRIGGER config_entries_insert_revision
    AFTER INSERT ON config_entries REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION note_entry_changes();
CREATE TRIGGER config_entries_update_revision
    AFTER UPDATE ON config_entries REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION note_entry_changes();
CREATE TRIGGER config_entries_delete_revision
    AFTER DELETE ON config_entries REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION note_entry_changes();

CREATE TRIGGER permission_policies_insert_revision
    AFTER INSERT ON permission_policies REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION note_entry_changes();
CREATE TRIGGER permission_policies_update_revision
    AFTER UPDATE ON permission_policies REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION note_entry_changes();
CREATE TRIGGER permission_policies_delete_revision
    AFTER DELETE ON permission_policies REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION note_entry_changes();

CREATE TRIGGER tenants_insert_revision
    AFTER INSERT ON tenants REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION note_tenant_changes();
CREATE TRIGGER tenants_update_revision
    AFTER UPDATE ON tenants REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION note_tenant_changes();
CREATE TRIGGER tenants_delete_revision
    AFTER DELETE ON tenants REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION note_tenant_changes();

CREATE TRIGGER audit_logs_insert_revision
    AFTER INSERT ON audit_logs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION note_audit_entries();
