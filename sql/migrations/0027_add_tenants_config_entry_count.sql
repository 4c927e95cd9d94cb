-- Whether a tenant has config entries of its own, kept in its row: a list of 10,000
-- descendants probed config_entries_pkey once per tenant to find, for most of them,
-- nothing (about 25 ms of a 75 ms statement at 1,000,000 tenants; docs/performance.md,
-- "Descendants at 1,000,000 (round 4)"). tenants.config_entry_count is the number of the
-- tenant's rows in config_entries, kept exact by the triggers below on every write
-- (insert, upsert, delete, a purge, a cascade, a truncate, whichever code path), in the
-- writing statement's transaction; the service's SQL never writes it. tenant_details
-- (migration 0028) aggregates a tenant's entries only when its count is not 0.
-- docs/decisions.md, "A count of config entries in the tenant's row".

ALTER TABLE tenants
    ADD COLUMN config_entry_count integer NOT NULL DEFAULT 0
        CONSTRAINT tenants_config_entry_count_check CHECK (config_entry_count >= 0);

-- 1. The counts of existing entries.
UPDATE tenants t
SET config_entry_count = c.entries
FROM (SELECT ce.tenant_id, count(*)::integer AS entries
      FROM config_entries ce
      GROUP BY ce.tenant_id) AS c
WHERE t.id = c.tenant_id;

-- 2. Every statement that adds or removes entries adds the difference per tenant, once
--    per statement (transition tables: a batch of entries for many tenants is one
--    UPDATE). An upsert that updates counts only its inserted rows (PostgreSQL puts
--    the others in the UPDATE's transition tables). The row of a tenant deleted in
--    the same statement (a cascade) is gone, and the UPDATE skips it.
--    These triggers fire after the announcing ones of migration 0020 (AFTER triggers of
--    one event fire in name order: "..._announce" before "..._count"): the announcement
--    leaves out tenants whose row this transaction wrote (created, it assumes), and
--    the count's UPDATE writes the row.
CREATE FUNCTION count_config_entries() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        UPDATE tenants SET config_entry_count = 0 WHERE config_entry_count <> 0;
    ELSIF TG_OP = 'INSERT' THEN
        UPDATE tenants t
        SET config_entry_count = t.config_entry_count + c.entries
        FROM (SELECT n.tenant_id, count(*)::integer AS entries
              FROM new_rows n
              GROUP BY n.tenant_id) AS c
        WHERE t.id = c.tenant_id;
    ELSE
        UPDATE tenants t
        SET config_entry_count = t.config_entry_count - c.entries
        FROM (SELECT o.tenant_id, count(*)::integer AS entries
              FROM old_rows o
              GROUP BY o.tenant_id) AS c
        WHERE t.id = c.tenant_id;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER config_entries_insert_count
    AFTER INSERT ON config_entries REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_config_entries();
CREATE TRIGGER config_entries_delete_count
    AFTER DELETE ON config_entries REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_config_entries();
CREATE TRIGGER config_entries_truncate_count
    AFTER TRUNCATE ON config_entries
    FOR EACH STATEMENT EXECUTE FUNCTION count_config_entries();

-- 3. An entry never moves to another tenant (no code does; a row trigger would write
--    the tenants' rows before the statement's announcement, which would then leave
--    them out): refused, so that the counts stay exact.
CREATE FUNCTION refuse_config_entry_tenant_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a config entry cannot move to another tenant'
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;

CREATE TRIGGER config_entries_tenant_change_refused
    BEFORE UPDATE OF tenant_id ON config_entries
    FOR EACH ROW WHEN (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id)
    EXECUTE FUNCTION refuse_config_entry_tenant_change();

-- 4. The count's own writes announce nothing about the tenant (its entries' triggers
--    announced them): migration 0021's function, with the rows whose count changed
--    left out.
CREATE OR REPLACE FUNCTION announce_tenant_changes() RETURNS trigger
LANGUAGE plpgsql
SET enable_nestloop = off
AS $$
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
            -- (a row whose count of config entries changed was written by the count's
            -- trigger, nothing else: its entries announced themselves)
            WHERE n.config_entry_count = o.config_entry_count
        ),
        moved AS (
            SELECT id FROM changed WHERE moved
        ),
        -- 2. A moved row whose old or new parent did not move with it is the top of a
        --    moved subtree; the rows below it are covered by its 's'.
        items AS (
            SELECT 's' || c.id::text AS item
            FROM changed c
            -- anti-joins the planner can hash (correlated NOT EXISTS over a CTE was
            -- planned as a scan per row: quadratic in the size of a moved subtree)
            LEFT JOIN moved mo ON mo.id = c.old_parent
            LEFT JOIN moved mn ON mn.id = c.new_parent
            WHERE c.moved
              AND (mo.id IS NULL OR mn.id IS NULL)
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
