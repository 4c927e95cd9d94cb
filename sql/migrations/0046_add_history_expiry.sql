-- Expiring entries (migration 0041) in the history of the resolved view (migration 0044):
-- each config and permission version keeps the expiry it had, so a context read as of a
-- moment shows `expires_at` as GET /context showed it then, a change of expiry alone is a
-- new version (and a difference in a diff), and a revert puts an entry back with its
-- expiry (docs/decisions/history.md).

ALTER TABLE config_history ADD COLUMN expires_at timestamptz;
ALTER TABLE permission_history ADD COLUMN expires_at timestamptz;

-- The open versions of live entries take the live expiry; closed versions did not record
-- theirs and stay without one.
UPDATE config_history h SET expires_at = c.expires_at
FROM config_entries c
WHERE h.valid_to = 9223372036854775807 AND c.tenant_id = h.tenant_id AND c.key = h.key
  AND c.expires_at IS NOT NULL;
UPDATE permission_history h SET expires_at = p.expires_at
FROM permission_policies p
WHERE h.valid_to = 9223372036854775807 AND p.tenant_id = h.tenant_id AND p.key = h.key
  AND p.expires_at IS NOT NULL;

-- The commit trigger of migration 0044, comparing and copying expires_at too.
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
        )
        INSERT INTO config_history (tenant_id, key, valid_from, value, encrypted_value, locked,
                                    sensitive, reveal_to_descendants, updated_at, expires_at)
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
                    (h.value, h.locked, h.sensitive, h.reveal_to_descendants, h.updated_at,
                     h.expires_at));

        WITH closed AS (
            UPDATE permission_history h SET valid_to = rev
            WHERE h.tenant_id = ANY (entried) AND h.valid_to = open_to
              AND NOT EXISTS (
                  SELECT 1 FROM permission_policies p
                  WHERE p.tenant_id = h.tenant_id AND p.key = h.key
                    AND p.value = h.value AND p.mode = h.mode
                    AND p.expires_at IS NOT DISTINCT FROM h.expires_at)
            RETURNING 1
        )
        INSERT INTO permission_history (tenant_id, key, valid_from, value, mode, expires_at)
        SELECT p.tenant_id, p.key, rev, p.value, p.mode, p.expires_at
        FROM permission_policies p
        WHERE p.tenant_id = ANY (entried)
          AND NOT EXISTS (
              SELECT 1 FROM permission_history h
              WHERE h.tenant_id = p.tenant_id AND h.key = p.key AND h.valid_to = open_to
                AND p.value = h.value AND p.mode = h.mode
                AND p.expires_at IS NOT DISTINCT FROM h.expires_at);
    END IF;
    RETURN NULL;
END;
$$;
