-- The keys each tenant ever had in the history of the resolved view (migration 0044), so
-- that an as-of context finds a chain member's keys with one range scan instead of a
-- loose scan of its versions (one index probe per key); kept by the commit trigger as it
-- opens versions, removed with a purged tenant's history (docs/decisions/history.md).
-- A key whose versions retention removed stays listed: looking it up finds no version.

CREATE TABLE config_history_keys (
    tenant_id uuid NOT NULL,
    key       text NOT NULL,
    CONSTRAINT config_history_keys_pkey PRIMARY KEY (tenant_id, key)
);

CREATE TABLE permission_history_keys (
    tenant_id uuid NOT NULL,
    key       text NOT NULL,
    CONSTRAINT permission_history_keys_pkey PRIMARY KEY (tenant_id, key)
);

INSERT INTO config_history_keys (tenant_id, key)
SELECT DISTINCT h.tenant_id, h.key FROM config_history h;

INSERT INTO permission_history_keys (tenant_id, key)
SELECT DISTINCT h.tenant_id, h.key FROM permission_history h;

-- The commit trigger of migration 0046, noting the keys of the versions it opens.
CREATE OR REPLACE FUNCTION record_context_history() RETURNS trigger
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
            DELETE FROM config_history_keys WHERE tenant_id = ANY (gone);
            DELETE FROM permission_history_keys WHERE tenant_id = ANY (gone);
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
                    AND (c.value, c.locked, c.sensitive, c.reveal_to_descendants, c.updated_at,
                         c.expires_at)
                        IS NOT DISTINCT FROM
                        (h.value, h.locked, h.sensitive, h.reveal_to_descendants, h.updated_at,
                         h.expires_at))
            RETURNING 1
        ),
        opened AS (
            INSERT INTO config_history (tenant_id, key, valid_from, value, encrypted_value,
                                        locked, sensitive, reveal_to_descendants, updated_at,
                                        expires_at)
            SELECT c.tenant_id, c.key, rev, c.value, c.encrypted_value, c.locked, c.sensitive,
                   c.reveal_to_descendants, c.updated_at, c.expires_at
            FROM config_entries c
            WHERE c.tenant_id = ANY (entried)
              AND NOT EXISTS (
                  SELECT 1 FROM config_history h
                  WHERE h.tenant_id = c.tenant_id AND h.key = c.key AND h.valid_to = open_to
                    AND (c.value, c.locked, c.sensitive, c.reveal_to_descendants, c.updated_at,
                         c.expires_at)
                        IS NOT DISTINCT FROM
                        (h.value, h.locked, h.sensitive, h.reveal_to_descendants,
                         h.updated_at, h.expires_at))
            RETURNING tenant_id, key
        )
        INSERT INTO config_history_keys (tenant_id, key)
        SELECT DISTINCT o.tenant_id, o.key FROM opened o
        ON CONFLICT (tenant_id, key) DO NOTHING;

        WITH closed AS (
            UPDATE permission_history h SET valid_to = rev
            WHERE h.tenant_id = ANY (entried) AND h.valid_to = open_to
              AND NOT EXISTS (
                  SELECT 1 FROM permission_policies p
                  WHERE p.tenant_id = h.tenant_id AND p.key = h.key
                    AND p.value = h.value AND p.mode = h.mode
                    AND p.expires_at IS NOT DISTINCT FROM h.expires_at)
            RETURNING 1
        ),
        opened AS (
            INSERT INTO permission_history (tenant_id, key, valid_from, value, mode, expires_at)
            SELECT p.tenant_id, p.key, rev, p.value, p.mode, p.expires_at
            FROM permission_policies p
            WHERE p.tenant_id = ANY (entried)
              AND NOT EXISTS (
                  SELECT 1 FROM permission_history h
                  WHERE h.tenant_id = p.tenant_id AND h.key = p.key AND h.valid_to = open_to
                    AND p.value = h.value AND p.mode = h.mode
                    AND p.expires_at IS NOT DISTINCT FROM h.expires_at)
            RETURNING tenant_id, key
        )
        INSERT INTO permission_history_keys (tenant_id, key)
        SELECT DISTINCT o.tenant_id, o.key FROM opened o
        ON CONFLICT (tenant_id, key) DO NOTHING;
    END IF;
    RETURN NULL;
END;
$$;
