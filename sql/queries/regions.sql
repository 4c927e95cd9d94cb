-- Data-residency regions of tenants. A migration runs under the tree root's exclusive
-- lock, so no create or move of that tree interleaves with it.

-- name: migrate_tenant_regions
-- Set region $2 on tenant $1 and, when $3, on its whole subtree (archived tenants
-- included: their data stays where their label says); returns the tenants changed.
UPDATE tenants t
SET region = $2, updated_at = now()
FROM tenant_closure c
WHERE c.ancestor_id = $1
  AND c.descendant_id = t.id
  AND ($3::boolean OR c.depth = 0)
  AND t.region <> $2
RETURNING t.id;
