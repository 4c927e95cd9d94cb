-- A moved or deleted subtree's announcement in time linear in its size. 0020's trigger
-- found the tops of moved subtrees with correlated NOT EXISTS over a CTE, and PL/pgSQL
-- keeps the plan it made for the first statements of a session: planned for a
-- one-row transition table, it scanned per row, so a move of 10,000 tenants after a few
-- small changes spent 14 to 19 seconds in the trigger. The same rule as anti-joins, and
-- no nested loops in this function, whatever row counts a kept plan was made for.

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
