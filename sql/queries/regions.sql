-- Data-residency regions of tenants. A migration runs under the tree root's exclusive
-- lock, so no create or move of that tree interleaves with it.

-- name: migrate_tenant_regions :many
-- Set region on tenant_id and, when include_descendants, on its whole subtree (archived
-- tenants included: their data stays where their label says); returns the tenants
-- changed.
UPDATE tenants t
SET region = :'region', updated_at = now()
FROM tenant_closure c
WHERE c.ancestor_id = :'tenant_id'
  AND c.descendant_id = t.id
  AND (:'include_descendants'::boolean OR c.depth = 0)
  AND t.region <> :'region'
RETURNING t.id;
