-- Lists of descendants (stream_descendants_json) probed config_entries_pkey once per
-- listed tenant to learn whether it has entries: at 1,000,000 tenants, 10,000 probes
-- took 30 to 40 of the statement's 70 to 90 ms, though most tenants have none
-- (docs/performance.md, "Descendants at 1,000,000 (round 5)"). The tenants that do have
-- entries are kept here by path, so that a list finds them with one range scan merged
-- with its own. Nothing here changes a document's bytes.

-- 1. The tenants that have config entries of their own, with their path and how many.
--    Kept exact by the triggers below in the writing statement's transaction, whatever
--    code writes config_entries; the service's SQL never writes this table. Its rows are
--    its own, not the tenants' (a count in the tenant's row would update that row, which
--    entry writes share-lock: docs/decisions.md). The path index carries the tenant id,
--    so the list's merge reads the index alone.
CREATE TABLE tenant_config_holders (
    tenant_id     uuid PRIMARY KEY CONSTRAINT tenant_config_holders_tenant_fk
                      REFERENCES tenants (id) ON DELETE CASCADE,
    ancestry_path text COLLATE "C" NOT NULL,
    -- the tenant's rows in config_entries (0 only inside the statement removing them)
    entries       integer NOT NULL CONSTRAINT tenant_config_holders_entries_check
                      CHECK (entries >= 0),
    CONSTRAINT tenant_config_holders_path_key UNIQUE (ancestry_path) INCLUDE (tenant_id)
);

INSERT INTO tenant_config_holders (tenant_id, ancestry_path, entries)
SELECT t.id, t.ancestry_path, c.entries
FROM (SELECT ce.tenant_id, count(*)::integer AS entries
      FROM config_entries ce
      GROUP BY ce.tenant_id) AS c
JOIN tenants t ON t.id = c.tenant_id;

-- 2. Each statement that adds or removes entries adds the difference per tenant, once
--    per statement (transition tables). An upsert that updates counts only the rows it
--    inserted. The path is read from the tenant's row: every writer of entries holds its
--    tree root's share lock, so no move runs meanwhile (docs/decisions.md, "Tree
--    locks"). Removed entries lower the count first (the UPDATE takes the row's lock and
--    sees concurrent additions), then a tenant left with none leaves the table. The row
--    of a tenant deleted by the same statement (a cascade) is gone already, and nothing
--    matches it.
CREATE FUNCTION count_config_holders() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM tenant_config_holders;
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO tenant_config_holders AS h (tenant_id, ancestry_path, entries)
        SELECT t.id, t.ancestry_path, a.entries
        FROM (SELECT n.tenant_id, count(*)::integer AS entries
              FROM new_rows n
              GROUP BY n.tenant_id) AS a
        JOIN tenants t ON t.id = a.tenant_id
        ON CONFLICT (tenant_id) DO UPDATE SET entries = h.entries + excluded.entries;
    ELSE
        UPDATE tenant_config_holders h
        SET entries = h.entries - g.entries
        FROM (SELECT o.tenant_id, count(*)::integer AS entries
              FROM old_rows o
              GROUP BY o.tenant_id) AS g
        WHERE h.tenant_id = g.tenant_id;
        DELETE FROM tenant_config_holders h
        USING (SELECT DISTINCT o.tenant_id FROM old_rows o) AS g
        WHERE h.tenant_id = g.tenant_id
          AND h.entries = 0;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER config_entries_insert_holders
    AFTER INSERT ON config_entries REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_config_holders();
CREATE TRIGGER config_entries_delete_holders
    AFTER DELETE ON config_entries REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_config_holders();
CREATE TRIGGER config_entries_truncate_holders
    AFTER TRUNCATE ON config_entries
    FOR EACH STATEMENT EXECUTE FUNCTION count_config_holders();

-- 3. An entry never moves to another tenant (no code does): refused, so that the counts
--    stay exact.
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

-- 4. A move rewrites the paths of a subtree: the holders among them follow. One probe of
--    the primary key per updated tenant (no join of the transition tables, which a plan
--    kept from a small statement would nest: migration 0021); a path ends with its
--    tenant's own id, so no rewritten path collides with another's old one.
CREATE FUNCTION move_config_holders() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tenant_config_holders h
    SET ancestry_path = n.ancestry_path
    FROM new_rows n
    WHERE h.tenant_id = n.id
      AND h.ancestry_path <> n.ancestry_path;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tenants_update_holders
    AFTER UPDATE ON tenants REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION move_config_holders();
