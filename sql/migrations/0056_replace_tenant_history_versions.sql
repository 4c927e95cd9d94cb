-- The history trigger (migrations 0044, 0046, 0047, 0049, 0054) reads each noted tenant
-- and its open version once for both of its writes. Its tenant statement found the open
-- versions, closed those that differ from the live row (probing tenants_pkey again for
-- the comparison), then read the tenants a second time and probed each tenant's versions
-- a second time for the versions to open. Reading each tenant with its open version once,
-- into a materialized CTE both writes use, takes out two of the five index probes per
-- noted tenant: for a move of 10,001 tenants at 1,000,000, 445,000 -> 355,000 buffers
-- (docs/performance.md, "Round 14"). What is closed and
-- what is opened is unchanged; the config and permission statements are as in 0047.

CREATE OR REPLACE FUNCTION record_context_history() RETURNS trigger
LANGUAGE plpgsql
SET enable_nestloop = on
SET plan_cache_mode = force_generic_plan
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
        -- Each noted live tenant with its open version, if any: the newest end of its
        -- versions, one backward probe of tenant_history_valid_to_idx per tenant (0054),
        -- and whether that version still shows the row. Both writes below read this
        -- once: 0054 probed each tenant's versions twice and tenants_pkey three times.
        -- Versions of a gone tenant were deleted above, so none is left open to close.
        WITH
        noted AS MATERIALIZED (
            SELECT t.id, t.parent_id, t.name, t.slug, t.ancestry_path, t.depth, t.metadata,
                   t.isolation_strategy, t.region, t.status, t.deleted_at, t.created_at,
                   t.updated_at, v.valid_from AS open_from,
                   v.valid_from IS NOT NULL
                   AND (t.parent_id, t.name, t.slug, t.ancestry_path, t.depth, t.metadata,
                        t.isolation_strategy, t.region, t.status, t.deleted_at,
                        t.created_at, t.updated_at)
                       IS NOT DISTINCT FROM
                       (v.parent_id, v.name, v.slug, v.ancestry_path, v.depth, v.metadata,
                        v.isolation_strategy, v.region, v.status, v.deleted_at,
                        v.created_at, v.updated_at) AS unchanged
            FROM tenants t
            LEFT JOIN LATERAL (
                SELECT h.*
                FROM tenant_history h
                WHERE h.tenant_id = t.id
                ORDER BY h.valid_to DESC
                LIMIT 1
            ) AS v ON v.valid_to = open_to
            WHERE t.id = ANY (tenanted)
        ),
        -- Close the open versions that differ from the live row: a probe per row of
        -- noted (the CTE is the outer side of the join). valid_to = open_to, true of
        -- every open version, makes the probe exact in either index: by tenant_id alone
        -- (a plan seen with only valid_from to match) tenant_history_valid_to_idx reads
        -- every version of the tenant.
        closed AS (
            UPDATE tenant_history h SET valid_to = rev
            FROM noted o
            WHERE h.tenant_id = o.id AND h.valid_from = o.open_from AND h.valid_to = open_to
              AND NOT o.unchanged
            RETURNING 1
        )
        -- Open a version for each live row without an identical open one.
        INSERT INTO tenant_history (tenant_id, valid_from, parent_id, name, slug,
                                    ancestry_path, depth, metadata, isolation_strategy,
                                    region, status, deleted_at, created_at, updated_at)
        SELECT o.id, rev, o.parent_id, o.name, o.slug, o.ancestry_path, o.depth, o.metadata,
               o.isolation_strategy, o.region, o.status, o.deleted_at, o.created_at,
               o.updated_at
        FROM noted o
        WHERE NOT o.unchanged;
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

