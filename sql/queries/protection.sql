-- Protected subtrees (migration 0042): which tenants only change through change
-- requests.

-- name: find_protecting_tenant :value
-- The nearest protected tenant at or above any of the tenants (NULL: none is inside a
-- protected subtree). tenant_closure_descendant_idx ranges.
SELECT p.tenant_id
FROM tenant_closure c
JOIN protected_tenants p ON p.tenant_id = c.ancestor_id
WHERE c.descendant_id = ANY(:'tenant_ids'::uuid[])
ORDER BY c.depth
LIMIT 1;

-- name: get_protection :one
-- A tenant's own protection (no row: the tenant itself is not marked).
SELECT tenant_id, protected_at, protected_by
FROM protected_tenants
WHERE tenant_id = :'tenant_id';

-- name: insert_protection :one
-- Mark a tenant protected; no row when it already was.
INSERT INTO protected_tenants (tenant_id, protected_by)
VALUES (:'tenant_id', :'protected_by')
ON CONFLICT (tenant_id) DO NOTHING
RETURNING tenant_id, protected_at, protected_by;

-- name: delete_protection :one
-- Unmark a tenant; no row when it was not marked.
DELETE FROM protected_tenants
WHERE tenant_id = :'tenant_id'
RETURNING tenant_id, protected_at, protected_by;
