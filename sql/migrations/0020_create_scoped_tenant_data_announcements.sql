-- Scoped change announcements for the read cache (service/caches/read_cache.py).
-- Migration 0015 announced only "something changed" and every process emptied its whole
-- cache. These statement triggers read the statement's transition tables and announce
-- what changed on the same channel, tenant_service_tenant_data, as space-separated
-- items of one letter and a tenant id:
--   o<id>  the tenant's own row changed (not its position): its tenant document and its
--          context;
--   c<id>  its config entries or permission policies changed: its tenant document and
--          the contexts of the tenant and of every tenant below it;
--   s<id>  its position changed (a move) or it was deleted: the tenant documents and
--          contexts of its whole subtree (a cached entry keeps the path it was read
--          with, and the id of a moved subtree's top lies on both the old and the new
--          path).
-- Above 200 items (the payload limit is 8000 bytes) or on TRUNCATE the payload is '*',
-- everything. Items are sorted, so equal announcements of one transaction fold into one.
-- NOTIFY is transactional: a rolled-back change announces nothing.
--
-- Left out, because nothing about them can be cached yet: tenant inserts, and entries
-- and policies of tenants inserted by the same transaction (a batch create's fan-out).

DROP TRIGGER config_entries_tenant_data_change ON config_entries;
DROP TRIGGER permission_policies_tenant_data_change ON permission_policies;
DROP TRIGGER tenants_tenant_data_change ON tenants;
DROP FUNCTION notify_tenant_data_change();

-- Send a set of items, or '*' when they would not fit.
CREATE FUNCTION announce_tenant_data(items text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF items IS NULL OR cardinality(items) = 0 THEN
        RETURN;
    ELSIF cardinality(items) > 200 THEN
        PERFORM pg_notify('tenant_service_tenant_data', '*');
    ELSE
        PERFORM pg_notify('tenant_service_tenant_data', array_to_string(items, ' '));
    END IF;
END;
$$;

-- Config entries and permission policies: 'c' for each tenant whose rows changed.
CREATE FUNCTION announce_entry_changes() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    touched uuid[];
    items text[];
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('tenant_service_tenant_data', '*');
        RETURN NULL;
    END IF;
    -- 1. The tenants whose rows the statement touched (both sides of an update).
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(DISTINCT n.tenant_id) INTO touched FROM new_rows n;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(DISTINCT o.tenant_id) INTO touched FROM old_rows o;
    ELSE
        SELECT array_agg(DISTINCT u.tenant_id) INTO touched
        FROM (SELECT tenant_id FROM new_rows UNION ALL SELECT tenant_id FROM old_rows) AS u;
    END IF;
    WITH
    -- 2. Less the tenants this transaction created (their row version is ours):
    --    nobody could have read them before the commit.
    announced AS (
        SELECT 'c' || tc.tenant_id::text AS item
        FROM unnest(touched) AS tc(tenant_id)
        WHERE NOT EXISTS (SELECT 1 FROM tenants t
                          WHERE t.id = tc.tenant_id AND t.xmin = pg_current_xact_id()::xid)
        ORDER BY 1
        LIMIT 201
    )
    SELECT array_agg(item ORDER BY item) INTO items FROM announced;
    PERFORM announce_tenant_data(items);
    RETURN NULL;
END;
$$;

-- Tenants: 's' for the top of each moved (or deleted) subtree, 'o' for other updates.
CREATE FUNCTION announce_tenant_changes() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    items text[];
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('tenant_service_tenant_data', '*');
        RETURN NULL;
    ELSIF TG_OP = 'DELETE' THEN
        -- A deleted tenant whose parent stays: the top of a deleted subtree.
        SELECT array_agg(item ORDER BY item) INTO items
        FROM (SELECT 's' || o.id::text AS item
              FROM old_rows o
              WHERE NOT EXISTS (SELECT 1 FROM old_rows p WHERE p.id = o.parent_id)
              ORDER BY 1
              LIMIT 201) AS tops;
    ELSE
        WITH
        -- 1. Each updated row, with whether its path changed and both its parents.
        changed AS MATERIALIZED (
            SELECT n.id, o.parent_id AS old_parent, n.parent_id AS new_parent,
                   n.ancestry_path <> o.ancestry_path AS moved
            FROM new_rows n
            JOIN old_rows o ON o.id = n.id
        ),
        moved AS (
            SELECT id FROM changed WHERE moved
        ),
        -- 2. A moved row whose old or new parent did not move with it is the top of a
        --    moved subtree; the rows below it are covered by its 's'.
        items AS (
            SELECT 's' || c.id::text AS item
            FROM changed c
            WHERE c.moved
              AND (NOT EXISTS (SELECT 1 FROM moved m WHERE m.id = c.old_parent)
                   OR NOT EXISTS (SELECT 1 FROM moved m WHERE m.id = c.new_parent))
            UNION ALL
            SELECT 'o' || c.id::text
            FROM changed c
            WHERE NOT c.moved
            ORDER BY 1
            LIMIT 201
        )
        SELECT array_agg(item ORDER BY item) INTO items FROM items;
    END IF;
    PERFORM announce_tenant_data(items);
    RETURN NULL;
END;
$$;

-- Transition tables need one trigger per event.
CREATE TRIGGER config_entries_insert_announce
    AFTER INSERT ON config_entries REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION announce_entry_changes();
CREATE TRIGGER config_entries_update_announce
    AFTER UPDATE ON config_entries REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION announce_entry_changes();
CREATE TRIGGER config_entries_delete_announce
    AFTER DELETE ON config_entries REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION announce_entry_changes();
CREATE TRIGGER config_entries_truncate_announce
    AFTER TRUNCATE ON config_entries
    FOR EACH STATEMENT EXECUTE FUNCTION announce_entry_changes();

CREATE TRIGGER permission_policies_insert_announce
    AFTER INSERT ON permission_policies REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION announce_entry_changes();
CREATE TRIGGER permission_policies_update_announce
    AFTER UPDATE ON permission_policies REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION announce_entry_changes();
CREATE TRIGGER permission_policies_delete_announce
    AFTER DELETE ON permission_policies REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION announce_entry_changes();
CREATE TRIGGER permission_policies_truncate_announce
    AFTER TRUNCATE ON permission_policies
    FOR EACH STATEMENT EXECUTE FUNCTION announce_entry_changes();

CREATE TRIGGER tenants_update_announce
    AFTER UPDATE ON tenants REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION announce_tenant_changes();
CREATE TRIGGER tenants_delete_announce
    AFTER DELETE ON tenants REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION announce_tenant_changes();
CREATE TRIGGER tenants_truncate_announce
    AFTER TRUNCATE ON tenants
    FOR EACH STATEMENT EXECUTE FUNCTION announce_tenant_changes();
