-- Retention and GDPR redaction of audit entries only through functions the serving role
-- cannot imitate (docs/security.md "Database roles"). The guards of migrations 0009 and
-- 0025 let in anyone holding UPDATE/DELETE who set a session variable; now they let in
-- only the NOLOGIN role tenant_service_audit, which is current_user solely inside the
-- SECURITY DEFINER functions below (it owns them). Retention's checkpoints are recorded
-- in audit_purge_checkpoints, which only those functions write, so verification can tell
-- them from an audit.purged entry anyone with INSERT could add.

-- The role is cluster-wide: create it once (another database may have made it already,
-- perhaps at this very moment).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tenant_service_audit') THEN
        CREATE ROLE tenant_service_audit NOLOGIN;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END
$$;

-- A migrating user that is not a superuser must be able to act as the role to hand it
-- the functions (PostgreSQL 16 and later: the SET option, which a role's creator lacks
-- by default; before: membership).
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RETURN;
    END IF;
    IF current_setting('server_version_num')::integer >= 160000 THEN
        IF NOT pg_has_role(current_user, 'tenant_service_audit', 'SET') THEN
            EXECUTE format('GRANT tenant_service_audit TO %I WITH SET TRUE', current_user);
        END IF;
    ELSIF NOT pg_has_role(current_user, 'tenant_service_audit', 'MEMBER') THEN
        EXECUTE format('GRANT tenant_service_audit TO %I', current_user);
    END IF;
END
$$;

-- What retention removed, one row per batch: the id and body of its audit.purged entry.
CREATE TABLE audit_purge_checkpoints (
    id          uuid PRIMARY KEY,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    changes     jsonb NOT NULL,
    CONSTRAINT audit_purge_checkpoints_object CHECK (jsonb_typeof(changes) = 'object')
);

INSERT INTO audit_purge_checkpoints (id, recorded_at, changes)
SELECT a.id, a.created_at, a.changes
FROM audit_logs a
WHERE a.action = 'audit.purged'
  AND jsonb_typeof(a.changes) = 'object';

-- The tables only the owner role writes: by INSERT, and the deleted tenants' notes are
-- also removed once redaction used them.
CREATE FUNCTION audit_owner_tables_guard() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF current_user = 'tenant_service_audit'
       AND (TG_OP = 'INSERT' OR (TG_OP = 'DELETE' AND TG_TABLE_NAME = 'audit_deleted_tenants'))
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION '% is written by the audit functions only (% refused)', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

-- Tenants deleted, with the transaction that deleted them: redaction only follows the
-- deletion of its tenants in its own transaction (a GDPR purge, retention of archived
-- tenants), so no caller can name the id of a key, a webhook or an entry instead.
CREATE TABLE audit_deleted_tenants (
    id         uuid NOT NULL,
    xact       bigint NOT NULL,
    deleted_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT audit_deleted_tenants_pkey PRIMARY KEY (id, xact)
);

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['audit_purge_checkpoints', 'audit_deleted_tenants'] LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE INSERT ON %I FOR EACH ROW '
                       'EXECUTE FUNCTION audit_owner_tables_guard()', t || '_guard', t);
        -- No UPDATE by anyone, DELETE as the guard says (a statement trigger: it fires
        -- even when no row matches).
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %I FOR EACH STATEMENT '
                       'EXECUTE FUNCTION audit_owner_tables_guard()', t || '_append_only', t);
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %I FOR EACH STATEMENT '
                       'EXECUTE FUNCTION audit_logs_refuse_truncate()', t || '_no_truncate', t);
    END LOOP;
END
$$;

CREATE FUNCTION audit_note_deleted_tenants() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
AS $$
BEGIN
    INSERT INTO audit_deleted_tenants (id, xact)
    SELECT o.id, txid_current()
    FROM old_rows o
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER tenants_audit_note_deleted
    AFTER DELETE ON tenants REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION audit_note_deleted_tenants();

-- Entries: only the owner role deletes (inside audit_purge_batch) or redacts (inside
-- audit_redact_tenants, and then only `changes` into the marker). No session variable.
CREATE OR REPLACE FUNCTION audit_logs_guard() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF current_user = 'tenant_service_audit' THEN
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
        IF NEW.changes = '{"redacted": true}'::jsonb
           AND (NEW.id, NEW.tenant_id, NEW.actor_id, NEW.actor_type, NEW.action,
                NEW.resource_type, NEW.resource_id, NEW.request_id, NEW.ip_address,
                NEW.created_at)
               IS NOT DISTINCT FROM
               (OLD.id, OLD.tenant_id, OLD.actor_id, OLD.actor_type, OLD.action,
                OLD.resource_type, OLD.resource_id, OLD.request_id, OLD.ip_address,
                OLD.created_at)
        THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION 'audit log entries cannot be changed or deleted (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

-- Links: only the owner role deletes (retention cutting the chain's start).
CREATE OR REPLACE FUNCTION audit_chain_guard() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_user = 'tenant_service_audit' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit chain links cannot be changed or deleted (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

-- One batch of retention: delete up to row_limit entries created before cutoff, after
-- (after_at, after_id), oldest first; drop the links before the oldest kept entry (never
-- the newest link: the next one chains to it); record the checkpoint and write it as the
-- audit.purged entry entry_id of the actor given, so every batch shows in the log. The
-- cutoff must be at least a day old (the shortest retention; an hour of slack for the
-- callers' clocks), so no caller can remove fresh entries. Returns no row when nothing
-- was old enough.
CREATE FUNCTION audit_purge_batch(cutoff timestamptz, after_at timestamptz, after_id uuid,
                                  row_limit integer, entry_id uuid, actor_id text,
                                  actor_type text, request_id text, ip_address text)
RETURNS TABLE (purge_id uuid, purge_changes jsonb, purged integer,
               purged_last_at timestamptz, purged_last_id uuid)
LANGUAGE plpgsql
SECURITY DEFINER
AS $$
DECLARE
    gone_seqs  bigint[];
    n          integer;
    at_last    timestamptz;
    id_last    uuid;
    keep_seq   bigint;
    first_seq  bigint;
    last_seq   bigint;
    start_seq  bigint;
    removed    integer := 0;
    start_link jsonb := 'null'::jsonb;
    ranges     jsonb;
    body       jsonb;
BEGIN
    IF cutoff IS NULL OR cutoff > now() - interval '23 hours' THEN
        RAISE EXCEPTION 'audit retention keeps at least a day of entries (cutoff % refused)',
            cutoff USING ERRCODE = 'insufficient_privilege';
    END IF;
    WITH doomed AS (
        -- the batch, oldest first, skipping rows another purge holds
        SELECT x.id
        FROM audit_logs x
        WHERE x.created_at < cutoff
          AND x.created_at >= after_at
          AND (x.created_at, x.id) > (after_at, after_id)
        ORDER BY x.created_at, x.id
        LIMIT greatest(coalesce(row_limit, 1), 1)
        FOR UPDATE SKIP LOCKED
    ),
    gone AS (
        DELETE FROM audit_logs a
        WHERE a.id IN (SELECT d.id FROM doomed d)
        RETURNING a.created_at, a.id
    )
    SELECT count(*)::integer,
           (array_agg(g.created_at ORDER BY g.created_at DESC, g.id DESC))[1],
           (array_agg(g.id ORDER BY g.created_at DESC, g.id DESC))[1],
           array_agg(c.seq ORDER BY c.seq) FILTER (WHERE c.seq IS NOT NULL)
    INTO n, at_last, id_last, gone_seqs
    FROM gone g
    LEFT JOIN audit_chain c ON c.entry_id = g.id;
    IF n = 0 THEN
        RETURN;
    END IF;
    -- the removed links' numbers as [first, last] runs
    SELECT coalesce(jsonb_agg(jsonb_build_array(r.lo, r.hi) ORDER BY r.lo), '[]'::jsonb)
    INTO ranges
    FROM (SELECT min(s.seq) AS lo, max(s.seq) AS hi
          FROM (SELECT u.seq, u.seq - row_number() OVER (ORDER BY u.seq) AS run
                FROM unnest(coalesce(gone_seqs, '{}'::bigint[])) AS u(seq)) AS s
          GROUP BY s.run) AS r;
    SELECT (SELECT c.seq
            FROM audit_chain c
            WHERE EXISTS (SELECT 1 FROM audit_logs a WHERE a.id = c.entry_id)
            ORDER BY c.seq
            LIMIT 1),
           (SELECT min(c.seq) FROM audit_chain c),
           (SELECT max(c.seq) FROM audit_chain c)
    INTO keep_seq, first_seq, last_seq;
    IF first_seq IS NOT NULL THEN
        start_seq := least(coalesce(keep_seq, last_seq), last_seq);
        IF first_seq < start_seq THEN
            DELETE FROM audit_chain c WHERE c.seq < start_seq;
            GET DIAGNOSTICS removed = ROW_COUNT;
        END IF;
        SELECT jsonb_build_object('seq', c.seq, 'prev_hash', encode(c.prev_hash, 'hex'))
        INTO start_link
        FROM audit_chain c
        WHERE c.seq = start_seq;
    END IF;
    body := jsonb_build_object(
        'cutoff', to_char(cutoff AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'entries', n,
        'seqs', ranges,
        'links_removed', removed,
        'chain_start', start_link);
    INSERT INTO audit_purge_checkpoints (id, changes) VALUES (entry_id, body);
    INSERT INTO audit_logs (id, tenant_id, actor_id, actor_type, action, resource_type,
                            resource_id, changes, request_id, ip_address)
    VALUES (entry_id, NULL, actor_id, actor_type, 'audit.purged', 'audit_log', NULL, body,
            request_id, ip_address);
    RETURN QUERY SELECT entry_id, body, n, at_last, id_last;
END
$$;

-- A GDPR purge: replace `changes` with the redaction marker on every entry that names one
-- of tenant_ids (entries of those tenants, entries about them, and entries of others whose
-- changes mention one). Only tenants this transaction deleted: the purge deletes them
-- first. Returns how many entries were redacted now.
CREATE FUNCTION audit_redact_tenants(tenant_ids uuid[]) RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
AS $$
DECLARE
    n bigint;
BEGIN
    IF EXISTS (SELECT 1 FROM tenants t WHERE t.id = ANY(tenant_ids))
       OR EXISTS (SELECT 1
                  FROM unnest(tenant_ids) AS u(id)
                  WHERE NOT EXISTS (SELECT 1
                                    FROM audit_deleted_tenants d
                                    WHERE d.id = u.id
                                      AND d.xact = txid_current()))
    THEN
        RAISE EXCEPTION 'only the entries of tenants this transaction purged can be redacted'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    WITH purged AS (
        -- the purged tenants' ids, one row each
        SELECT unnest(tenant_ids) AS id
    ),
    redacted AS (
        UPDATE audit_logs a
        SET changes = '{"redacted": true}'::jsonb
        WHERE a.changes IS DISTINCT FROM '{"redacted": true}'::jsonb
          AND (a.tenant_id IN (SELECT p.id FROM purged p)
               OR a.resource_id IN (SELECT p.id::text FROM purged p)
               -- any UUID written in the changes that is one of the purged tenants
               OR EXISTS (SELECT 1
                          FROM regexp_matches(a.changes::text,
                                              '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}',
                                              'g') AS m(found)
                          WHERE m.found[1]::uuid IN (SELECT p.id FROM purged p)))
        RETURNING 1
    )
    SELECT count(*) INTO n FROM redacted;
    -- The notes served (no tenant id outlives a purge): this transaction's, and any an
    -- earlier transaction left unused (only this transaction's could ever serve).
    DELETE FROM audit_deleted_tenants;
    RETURN n;
END
$$;

-- The functions run as their owner with this schema's search path (temporary objects
-- last, so a caller's temporary table never stands in for one of ours); the owner gets
-- exactly the rights they use.
DO $$
DECLARE
    here text := current_schema();
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO tenant_service_audit', here);
    EXECUTE format('ALTER FUNCTION audit_purge_batch(timestamptz, timestamptz, uuid, integer, '
                   'uuid, text, text, text, text) SET search_path = %I, pg_temp', here);
    EXECUTE format('ALTER FUNCTION audit_redact_tenants(uuid[]) SET search_path = %I, pg_temp',
                   here);
    EXECUTE format('ALTER FUNCTION audit_note_deleted_tenants() SET search_path = %I, pg_temp',
                   here);
END
$$;
GRANT SELECT, INSERT, DELETE, UPDATE (changes) ON audit_logs TO tenant_service_audit;
-- INSERT: PostgreSQL 18 runs the deferred chain trigger of the audit.purged entry as
-- the role that wrote it.
GRANT SELECT, INSERT, DELETE ON audit_chain TO tenant_service_audit;
GRANT SELECT, INSERT ON audit_purge_checkpoints TO tenant_service_audit;
GRANT SELECT ON tenants TO tenant_service_audit;
GRANT SELECT, INSERT, DELETE ON audit_deleted_tenants TO tenant_service_audit;
-- A new owner needs CREATE on the schema while it takes the functions over (a
-- superuser's ALTER skips that check); it keeps only USAGE.
DO $$
DECLARE
    here text := current_schema();
BEGIN
    EXECUTE format('GRANT CREATE ON SCHEMA %I TO tenant_service_audit', here);
    ALTER FUNCTION audit_purge_batch(timestamptz, timestamptz, uuid, integer, uuid, text, text,
                                     text, text)
        OWNER TO tenant_service_audit;
    ALTER FUNCTION audit_redact_tenants(uuid[]) OWNER TO tenant_service_audit;
    ALTER FUNCTION audit_note_deleted_tenants() OWNER TO tenant_service_audit;
    EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM tenant_service_audit', here);
END
$$;
