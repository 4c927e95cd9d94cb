-- Roles: named bundles of scopes, global (tenant_id null) or owned by a tenant. Reads
-- join the owning tenant's ancestry path for subtree checks.

-- name: insert_role :exec
-- Store a new role.
INSERT INTO roles (id, tenant_id, name, description, scopes)
VALUES (:'role_id', :'tenant_id', :'name', :'description', :'scopes');

-- name: get_role :one
-- One role with its tenant's ancestry path.
SELECT r.id, r.tenant_id, r.name, r.description, r.scopes, r.created_at, r.updated_at,
       t.ancestry_path AS tenant_path
FROM roles r
LEFT JOIN tenants t ON t.id = r.tenant_id
WHERE r.id = :'role_id';

-- name: lock_role :one
-- One role locked for a change (or a deletion), with its tenant's ancestry path.
SELECT r.id, r.tenant_id, r.name, r.description, r.scopes, r.created_at, r.updated_at,
       t.ancestry_path AS tenant_path
FROM roles r
LEFT JOIN tenants t ON t.id = r.tenant_id
WHERE r.id = :'role_id'
FOR UPDATE OF r;

-- name: list_roles :many
-- Roles in id order: only tenant_id's own roles (NULL: any), only roles inside
-- subtree_root_id's subtree (NULL: any; global roles lie outside every subtree).
SELECT r.id, r.tenant_id, r.name, r.description, r.scopes, r.created_at, r.updated_at,
       t.ancestry_path AS tenant_path
FROM roles r
LEFT JOIN tenants t ON t.id = r.tenant_id
WHERE (:'tenant_id'::uuid IS NULL OR r.tenant_id = :'tenant_id')
  AND (:'subtree_root_id'::uuid IS NULL OR EXISTS (
        SELECT 1 FROM tenant_closure c
        WHERE c.ancestor_id = :'subtree_root_id' AND c.descendant_id = r.tenant_id))
ORDER BY r.id;

-- name: update_role :exec
-- Replace a role's name, description and scopes (PATCH has merged them already).
UPDATE roles
SET name = :'name',
    description = :'description',
    scopes = :'scopes',
    updated_at = now()
WHERE id = :'role_id';

-- name: delete_role :exec
-- Delete a role; keys holding it fall back to their own scopes (ON DELETE SET NULL).
DELETE FROM roles
WHERE id = :'role_id';
