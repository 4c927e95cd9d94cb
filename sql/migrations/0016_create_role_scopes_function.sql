-- The scopes an API key gets from its role, judged against the tree as it is now: a
-- global role's scopes always; a tenant role's scopes only while the role's owner is the
-- key's tenant or one of its ancestors; none ('{}') once the key's tenant lies outside
-- the owner's subtree (a key must never keep power from a subtree it has left). Moves
-- that would strand a key so are refused (409 ROLE_OUTSIDE_SUBTREE); this is the second
-- line, for assignments made before that check existed or written by hand.
-- NULL in, NULL out: a key without a role uses its own scopes. A plain STABLE SQL
-- function, inlined by the planner; one tenant_closure primary-key probe per key.
CREATE FUNCTION svc_role_scopes(role_tenant_id uuid, role_scopes text[], key_tenant_id uuid)
RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN role_scopes IS NULL OR role_tenant_id IS NULL THEN role_scopes
        WHEN EXISTS (SELECT 1 FROM tenant_closure c
                     WHERE c.ancestor_id = role_tenant_id
                       AND c.descendant_id = key_tenant_id) THEN role_scopes
        ELSE '{}'::text[]
    END
$$;
