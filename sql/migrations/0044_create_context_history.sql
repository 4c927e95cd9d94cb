-- History of the resolved view (docs/history.md, docs/decisions/history.md): versioned
-- copies of tenants, config entries and permission policies, each valid for a range of
-- revisions [valid_from, valid_to) (valid_to = max bigint while current), written at
-- commit by a trigger on the revision log (migration 0033), in the transaction of the
-- change, so no write path is left out. Sensitive values are kept encrypted as in the
-- live table. Kept HISTORY_RETENTION_DAYS, purged by purge-expired.

-- Each revision's commit time and audit entries, kept as long as the history (the
-- revision log itself is kept for a shorter time).
CREATE TABLE history_revisions (
    revision     bigint PRIMARY KEY,
    committed_at timestamptz NOT NULL,
    audit_ids    uuid[] NOT NULL
);
-- "the last revision committed at or before t"
CREATE INDEX history_revisions_committed_at_idx ON history_revisions (committed_at, revision);

-- The oldest revision the history answers exactly, and from which time.
CREATE TABLE history_horizon (
    only_row   boolean PRIMARY KEY DEFAULT true CONSTRAINT history_horizon_one CHECK (only_row),
    kept_from  bigint NOT NULL,
    kept_since timestamptz NOT NULL
);

CREATE TABLE tenant_history (
    tenant_id          uuid NOT NULL,
    valid_from         bigint NOT NULL,
    valid_to           bigint NOT NULL DEFAULT 9223372036854775807,
    parent_id          uuid,
    name               text NOT NULL,
    slug               text NOT NULL,
    ancestry_path      text COLLATE "C" NOT NULL,
    depth              integer NOT NULL,
    metadata           jsonb NOT NULL,
    isolation_strategy text NOT NULL,
    region             text NOT NULL,
    status             text NOT NULL,
    deleted_at         timestamptz,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    CONSTRAINT tenant_history_pkey PRIMARY KEY (tenant_id, valid_from)
);
-- "the version valid at r": valid_to > r, newest ranges first to end
CREATE INDEX tenant_history_valid_to_idx ON tenant_history (tenant_id, valid_to);
-- Closed versions only (retention, reverts): open ones are found per tenant, and an
-- index of every open version would tempt the planner to read them all.
CREATE INDEX tenant_history_purge_idx ON tenant_history (valid_to)
    WHERE valid_to < 9223372036854775807;
CREATE INDEX tenant_history_valid_from_idx ON tenant_history (valid_from);

CREATE TABLE config_history (
    tenant_id             uuid NOT NULL,
    key                   text NOT NULL,
    valid_from            bigint NOT NULL,
    valid_to              bigint NOT NULL DEFAULT 9223372036854775807,
    value                 jsonb,
    encrypted_value       text,
    locked                boolean NOT NULL,
    sensitive             boolean NOT NULL,
    reveal_to_descendants boolean NOT NULL,
    updated_at            timestamptz NOT NULL,
    CONSTRAINT config_history_pkey PRIMARY KEY (tenant_id, key, valid_from)
);
CREATE INDEX config_history_valid_to_idx ON config_history (tenant_id, valid_to);
CREATE INDEX config_history_purge_idx ON config_history (valid_to)
    WHERE valid_to < 9223372036854775807;
-- what one revision changed (reverts)
CREATE INDEX config_history_valid_from_idx ON config_history (valid_from);

CREATE TABLE permission_history (
    tenant_id  uuid NOT NULL,
    key        text NOT NULL,
    valid_from bigint NOT NULL,
    valid_to   bigint NOT NULL DEFAULT 9223372036854775807,
    value      boolean NOT NULL,
    mode       text NOT NULL,
    CONSTRAINT permission_history_pkey PRIMARY KEY (tenant_id, key, valid_from)
);
CREATE INDEX permission_history_valid_to_idx ON permission_history (tenant_id, valid_to);
CREATE INDEX permission_history_purge_idx ON permission_history (valid_to)
    WHERE valid_to < 9223372036854775807;
CREATE INDEX permission_history_valid_from_idx ON permission_history (valid_from);

-- What exists now is the history's start.
INSERT INTO history_horizon (only_row, kept_from, kept_since)
SELECT true, coalesce(max(revision), 0), now() FROM context_revisions;

INSERT INTO tenant_history (tenant_id, valid_from, parent_id, name, slug, ancestry_path,
                            depth, metadata, isolation_strategy, region, status,
                            deleted_at, created_at, updated_at)
SELECT t.id, h.kept_from, t.parent_id, t.name, t.slug, t.ancestry_path, t.depth,
       t.metadata, t.isolation_strategy, t.region, t.status, t.deleted_at, t.created_at,
       t.updated_at
FROM tenants t CROSS JOIN history_horizon h;

INSERT INTO config_history (tenant_id, key, valid_from, value, encrypted_value, locked,
                            sensitive, reveal_to_descendants, updated_at)
SELECT c.tenant_id, c.key, h.kept_from, c.value, c.encrypted_value, c.locked, c.sensitive,
       c.reveal_to_descendants, c.updated_at
FROM config_entries c CROSS JOIN history_horizon h;

INSERT INTO permission_history (tenant_id, key, valid_from, value, mode)
SELECT p.tenant_id, p.key, h.kept_from, p.value, p.mode
FROM permission_policies p CROSS JOIN history_horizon h;

-- At commit, when the revision is drawn (an AFTER INSERT on the revision log, inside
-- commit_context_revision, under the commit-order lock): each tenant the transaction
-- noted gets its versions closed where the live row differs or is gone, and a new version
-- of each live row that has none open. A tenant that no longer exists (a purge) takes its
-- history with it.
-- It runs inside commit_context_revision, which turns nested loops off; its lookups are
-- per tenant through the indexes, so it turns them back on.
CREATE FUNCTION record_context_history() RETURNS trigger
LANGUAGE plpgsql
SET enable_nestloop = on
AS $$
DECLARE
    rev      bigint := NEW.revision;
    open_to  constant bigint := 9223372036854775807;
    tenanted uuid[];
    entried  uuid[];
    gone     uuid[];
BEGIN
    INSERT INTO history_revisions (revision, committed_at, audit_ids)
    VALUES (rev, NEW.committed_at, NEW.audit_ids);
    -- Tenants whose rows changed ('c', 'n', 'd') and tenants whose entries changed ('s').
    SELECT array_agg(DISTINCT p.tenant_id) FILTER (WHERE p.what IN ('c', 'n', 'd')),
           array_agg(DISTINCT p.tenant_id) FILTER (WHERE p.what = 's')
    INTO tenanted, entried
    FROM context_change_pending p
    WHERE p.xid = pg_current_xact_id() AND p.tenant_id IS NOT NULL;

    -- Each table in one statement (one snapshot): close the open versions that differ
    -- from the live row or whose row is gone, and open a version for each live row
    -- without an identical open one.
    IF tenanted IS NOT NULL THEN
        SELECT array_agg(x.id) INTO gone
        FROM unnest(tenanted) AS x(id)
        WHERE NOT EXISTS (SELECT 1 FROM tenants t WHERE t.id = x.id);
        IF gone IS NOT NULL THEN
            -- A purge forgets the tenant's ids everywhere in the history: its versions,
            -- and every version of another tenant whose path ran through it (one
            -- moved out of its subtree earlier). Purges are rare; this reads the table.
            DELETE FROM tenant_history h
            WHERE h.tenant_id = ANY (gone)
               OR EXISTS (SELECT 1 FROM unnest(gone) AS g(id)
                          WHERE strpos(h.ancestry_path, g.id::text) > 0);
            DELETE FROM config_history WHERE tenant_id = ANY (gone);
            DELETE FROM permission_history WHERE tenant_id = ANY (gone);
        END IF;
        -- What GET /tenants/{id} and a context show (not the rendered texts).
        WITH closed AS (
            UPDATE tenant_history h SET valid_to = rev
            WHERE h.tenant_id = ANY (tenanted) AND h.valid_to = open_to
              AND NOT EXISTS (
                  SELECT 1 FROM tenants t
                  WHERE t.id = h.tenant_id
                    AND (t.parent_id, t.name, t.slug, t.ancestry_path, t.depth, t.metadata,
                         t.isolation_strategy, t.region, t.status, t.deleted_at,
                         t.created_at, t.updated_at)
                        IS NOT DISTINCT FROM
                        (h.parent_id, h.name, h.slug, h.ancestry_path, h.depth, h.metadata,
                         h.isolation_strategy, h.region, h.status, h.deleted_at,
                         h.created_at, h.updated_at))
            RETURNING 1
        )
        INSERT INTO tenant_history (tenant_id, valid_from, parent_id, name, slug,
                                    ancestry_path, depth, metadata, isolation_strategy,
                                    region, status, deleted_at, created_at, updated_at)
        SELECT t.id, rev, t.parent_id, t.name, t.slug, t.ancestry_path, t.depth, t.metadata,
               t.isolation_strategy, t.region, t.status, t.deleted_at, t.created_at,
               t.updated_at
        FROM tenants t
        WHERE t.id = ANY (tenanted)
          AND NOT EXISTS (
              SELECT 1 FROM tenant_history h
              WHERE h.tenant_id = t.id AND h.valid_to = open_to
                AND (t.parent_id, t.name, t.slug, t.ancestry_path, t.depth, t.metadata,
                     t.isolation_strategy, t.region, t.status, t.deleted_at, t.created_at,
                     t.updated_at)
                    IS NOT DISTINCT FROM
                    (h.parent_id, h.name, h.slug, h.ancestry_path, h.depth, h.metadata,
                     h.isolation_strategy, h.region, h.status, h.deleted_at, h.created_at,
                     h.updated_at));
    END IF;

    IF entried IS NOT NULL THEN
        -- Config entries: a re-encryption alone (key rotation keeps updated_at) is no new
        -- version; a new sensitive value is (its updated_at moves).
        WITH closed AS (
            UPDATE config_history h SET valid_to = rev
            WHERE h.tenant_id = ANY (entried) AND h.valid_to = open_to
              AND NOT EXISTS (
                  SELECT 1 FROM config_entries c
                  WHERE c.tenant_id = h.tenant_id AND c.key = h.key
                    AND (c.value, c.locked, c.sensitive, c.reveal_to_descendants, c.updated_at)
                        IS NOT DISTINCT FROM
                        (h.value, h.locked, h.sensitive, h.reveal_to_descendants, h.updated_at))
            RETURNING 1
        )
        INSERT INTO config_history (tenant_id, key, valid_from, value, encrypted_value, locked,
                                    sensitive, reveal_to_descendants, updated_at)
        SELECT c.tenant_id, c.key, rev, c.value, c.encrypted_value, c.locked, c.sensitive,
               c.reveal_to_descendants, c.updated_at
        FROM config_entries c
        WHERE c.tenant_id = ANY (entried)
          AND NOT EXISTS (
              SELECT 1 FROM config_history h
              WHERE h.tenant_id = c.tenant_id AND h.key = c.key AND h.valid_to = open_to
                AND (c.value, c.locked, c.sensitive, c.reveal_to_descendants, c.updated_at)
                    IS NOT DISTINCT FROM
                    (h.value, h.locked, h.sensitive, h.reveal_to_descendants, h.updated_at));

        WITH closed AS (
            UPDATE permission_history h SET valid_to = rev
            WHERE h.tenant_id = ANY (entried) AND h.valid_to = open_to
              AND NOT EXISTS (
                  SELECT 1 FROM permission_policies p
                  WHERE p.tenant_id = h.tenant_id AND p.key = h.key
                    AND p.value = h.value AND p.mode = h.mode)
            RETURNING 1
        )
        INSERT INTO permission_history (tenant_id, key, valid_from, value, mode)
        SELECT p.tenant_id, p.key, rev, p.value, p.mode
        FROM permission_policies p
        WHERE p.tenant_id = ANY (entried)
          AND NOT EXISTS (
              SELECT 1 FROM permission_history h
              WHERE h.tenant_id = p.tenant_id AND h.key = p.key AND h.valid_to = open_to
                AND p.value = h.value AND p.mode = h.mode);
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER context_revisions_record_history
    AFTER INSERT ON context_revisions
    FOR EACH ROW EXECUTE FUNCTION record_context_history();
