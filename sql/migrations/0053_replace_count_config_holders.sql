-- Two transactions giving one tenant its first config entries at once (other keys: no
-- entry lock orders them) could fail with a unique violation of
-- tenant_config_holders_path_key (a 500 of PUT /config/{key}). The count's upsert of
-- migration 0028, INSERT ... ON CONFLICT (tenant_id) DO UPDATE, has the primary key as
-- its only arbiter: a row the other transaction inserts after this one's check of
-- tenant_id, and before its own insert into the indexes, is waited for in the path's
-- unique index, which is no arbiter, and once committed is a unique violation there
-- instead of a row to add to (tests/test_config_holders.py reproduces it).
--
-- Now a statement adding entries first adds to the rows of tenants that have one (the
-- usual case: the UPDATE takes the row's lock and sees concurrent changes, as the
-- removals' does; a row a concurrent removal took away is skipped, its tenant inserted
-- below). Only tenants left without a row are inserted, in a subtransaction: when the
-- path's index reports the row of a concurrent first entry (committed by then: the
-- index waited for it), the insert runs again and adds to that row. Any other unique
-- violation, or the same one a fourth time, is raised. Removals and TRUNCATE are as
-- they were.

CREATE OR REPLACE FUNCTION count_config_holders() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    tenants_added integer;
    counted       uuid[];
    attempts      integer := 0;
    violated      text;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM tenant_config_holders;
    ELSIF TG_OP = 'INSERT' THEN
        -- 1. Tenants that have a row: the count grows.
        WITH added AS (
            SELECT n.tenant_id, count(*)::integer AS entries
            FROM new_rows n
            GROUP BY n.tenant_id
        ),
        updated AS (
            UPDATE tenant_config_holders h
            SET entries = h.entries + a.entries
            FROM added a
            WHERE h.tenant_id = a.tenant_id
            RETURNING h.tenant_id
        )
        SELECT (SELECT count(*) FROM added), coalesce(array_agg(u.tenant_id), '{}')
        INTO tenants_added, counted
        FROM updated u;
        IF cardinality(counted) = tenants_added THEN
            RETURN NULL;
        END IF;
        -- 2. The others' first entries.
        LOOP
            BEGIN
                INSERT INTO tenant_config_holders AS h (tenant_id, ancestry_path, entries)
                SELECT t.id, t.ancestry_path, a.entries
                FROM (SELECT n.tenant_id, count(*)::integer AS entries
                      FROM new_rows n
                      WHERE NOT EXISTS (SELECT 1 FROM unnest(counted) AS c(tenant_id)
                                        WHERE c.tenant_id = n.tenant_id)
                      GROUP BY n.tenant_id) AS a
                JOIN tenants t ON t.id = a.tenant_id
                ON CONFLICT (tenant_id) DO UPDATE SET entries = h.entries + excluded.entries;
                EXIT;
            EXCEPTION WHEN unique_violation THEN
                GET STACKED DIAGNOSTICS violated = CONSTRAINT_NAME;
                attempts := attempts + 1;
                IF violated IS DISTINCT FROM 'tenant_config_holders_path_key'
                   OR attempts > 3 THEN
                    RAISE;
                END IF;
            END;
        END LOOP;
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
