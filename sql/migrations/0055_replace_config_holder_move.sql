-- The holders of a moved subtree follow it by one probe of tenant_config_holders_pkey per
-- updated tenant, as migration 0028 meant, whatever the size of the update. Without join
-- settings the planner hashed the whole holder table once the transition table held a
-- few thousand rows: a move of 10,001 tenants at 1,000,000 tenants read all 232,649
-- holders (7,894 pages), spilled the hash to disk in 16 batches and took 160 to 280 ms,
-- in both directions, to update no row; by probes, 30,000 buffers and 25 to 50 ms
-- (docs/performance.md, "Round 14"). The statement is as
-- in 0028.

CREATE OR REPLACE FUNCTION move_config_holders() RETURNS trigger
LANGUAGE plpgsql
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
BEGIN
    UPDATE tenant_config_holders h
    SET ancestry_path = n.ancestry_path
    FROM new_rows n
    WHERE h.tenant_id = n.id
      AND h.ancestry_path <> n.ancestry_path;
    RETURN NULL;
END;
$$;
