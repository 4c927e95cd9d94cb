-- The history trigger (migrations 0044, 0046, 0047, 0049) finds each noted tenant's open
-- version through tenant_history_valid_to_idx, newest end first, whatever the number of
-- versions the tenant has. Its tenant statement asked for valid_to = open_to among the
-- noted tenants' versions: in a generic plan (0049) the planner has no value to estimate
-- that filter with, so tenant_history_pkey (tenant_id, valid_from) and
-- tenant_history_valid_to_idx (tenant_id, valid_to) cost the same, and which one it took
-- depended on the statistics of the day. On the bench's 10,000,000-tenant database it
-- took the primary key and read every version of every moved tenant: a move of 1,000
-- tenants with about 100 versions each touched 98,000 buffers in 46 ms in that scan and
-- 99,000 in 66 ms in the insert's check, against 5,000 (4 ms) and 6,000 (5 ms) through
-- the index at 1,000,000 (docs/performance.md, "Round 12"). Only the tenant statement
-- changes; the config and permission statements are as in 0047.

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
        -- Each noted tenant's open version, if any: the newest end of its versions, one
        -- backward probe of tenant_history_valid_to_idx per tenant. The statement filtered
        -- on valid_to = open_to, which the planner cannot tell from any other value of a
        -- generic plan; at 10,000,000 tenants it read every version of each tenant through
        -- tenant_history_pkey instead (98,000 buffers for the 1,000 tenants of a move
        -- whose tenants had about 100 versions each, against 5,000 through this index).
        WITH
        open_versions AS MATERIALIZED (
            SELECT v.tenant_id, v.valid_from
            FROM unnest(tenanted) AS x(id)
            CROSS JOIN LATERAL (
                SELECT h.tenant_id, h.valid_from, h.valid_to
                FROM tenant_history h
                WHERE h.tenant_id = x.id
                ORDER BY h.valid_to DESC
                LIMIT 1
            ) AS v
            WHERE v.valid_to = open_to
        ),
        -- Close the open versions that differ from the live row or whose row is gone.
        closed AS (
            UPDATE tenant_history h SET valid_to = rev
            FROM open_versions o
            WHERE h.tenant_id = o.tenant_id AND h.valid_from = o.valid_from
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
        -- Open a version for each live row without an identical open one (the statement's
        -- snapshot: the open versions as they were before it closed any). The same probe
        -- per tenant, not a join with open_versions: a nested loop over that CTE's rows
        -- for each tenant would grow with the square of a move's size.
        INSERT INTO tenant_history (tenant_id, valid_from, parent_id, name, slug,
                                    ancestry_path, depth, metadata, isolation_strategy,
                                    region, status, deleted_at, created_at, updated_at)
        SELECT t.id, rev, t.parent_id, t.name, t.slug, t.ancestry_path, t.depth, t.metadata,
               t.isolation_strategy, t.region, t.status, t.deleted_at, t.created_at,
               t.updated_at
        FROM tenants t
        WHERE t.id = ANY (tenanted)
          AND NOT EXISTS (
              SELECT 1
              FROM (SELECT * FROM tenant_history n
                    WHERE n.tenant_id = t.id
                    ORDER BY n.valid_to DESC
                    LIMIT 1) AS h
              WHERE h.valid_to = open_to
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

