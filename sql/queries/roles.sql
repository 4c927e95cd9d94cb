-- Roles: named bundles of scopes, global (tenant_id null) or owned by a tenant. Reads
-- join the owning tenant's ancestry path for subtree checks.

-- name: insert_role
-- Store a new role.
INSERT INTO roles (id, tenant_id, name, description, scopes)
VALUES ($1, $2, $3, $4, $5);

-- name: get_role
-- One role with its tenant's ancestry path.
SELECT r.id, r.tenant_id, r.name, r.description, r.scopes, r.created_at, r.updated_at,
       t.ancestry_path AS tenant_path
FROM roles r
LEFT JOIN tenants t ON t.id = r.tenant_id
WHERE r.id = $1;

-- name: lock_role
-- One role locked for a change (or a deletion), with its tenant's ancestry path.
SELECT r.id, r.tenant_id, r.name, r.description, r.scopes, r.created_at, r.updated_at,
       t.ancestry_path AS tenant_path
FROM roles r
LEFT JOIN tenants t ON t.id = r.tenant_id
WHERE r.id = $1
FOR UPDATE OF r;

-- name: list_roles
-- Roles in id order: $1 only this tenant's roles (or any), $2 only roles inside this
-- tenant's subtree (or any; global roles lie outside every subtree).
SELECT r.id, r.tenant_id, r.name, r.description, r.scopes, r.created_at, r.updated_at,
       t.ancestry_path AS tenant_path
FROM roles r
LEFT JOIN tenants t ON t.id = r.tenant_id
WHERE ($1::uuid IS NULL OR r.tenant_id = $1)
  AND ($2::uuid IS NULL OR EXISTS (
        SELECT 1 FROM tenant_closure c
        WHERE c.ancestor_id = $2 AND c.descendant_id = r.tenant_id))
ORDER BY r.id;

-- name: update_role
-- Replace a role's name, description and scopes (PATCH has merged them already).
UPDATE roles
SET name = $2,
    description = $3,
    scopes = $4,
    updated_at = now()
WHERE id = $1;

-- name: delete_role
-- Delete a role; keys holding it fall back to their own scopes (ON DELETE SET NULL).
DELETE FROM roles
WHERE id = $1;
