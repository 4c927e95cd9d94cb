-- The resolved context of a tenant: its config and permissions after inheritance, in
-- one statement (one round trip) whatever the depth. Archived ancestors are not
-- filtered out: an active tenant never has one, and archiving keeps a tenant's entries.

-- name: resolve_tenant_context :one
-- A tenant's position with its resolved config and permissions (no row: unknown id).
-- The winners per key are context_config_winners and context_permission_winners
-- (migration 0052: the inheritance rules, stated once), inlined by the planner: one
-- range of tenant_closure_descendant_idx each, then config_entries_pkey /
-- permission_policies_pkey per ancestor.
SELECT t.id, t.ancestry_path, t.depth, t.isolation_strategy, t.status,
       coalesce((SELECT jsonb_agg(to_jsonb(w) ORDER BY w.key)
                 FROM context_config_winners(:'tenant_id') w),
                '[]'::jsonb) AS config,
       coalesce((SELECT jsonb_agg(to_jsonb(p) ORDER BY p.key)
                 FROM context_permission_winners(:'tenant_id') p),
                '[]'::jsonb) AS permissions
FROM tenants t
WHERE t.id = :'tenant_id';

-- name: render_tenant_context :one
-- A tenant's position with its masked context document rendered as JSON text (no row:
-- unknown id). The same resolution as resolve_tenant_context; sensitive values are
-- '***', so no decryption is needed and the text is sent as it is. The document is
-- tenant_context_document's (migration 0052), inlined: tenants_pkey, then the winners'
-- indexes. It is given :'tenant_id' rather than t.id (the same value): the winners then
-- depend on the parameter alone and are read once, planned for that tenant's chain.
SELECT t.id, t.ancestry_path, t.depth, t.status, d.document
FROM tenants t
CROSS JOIN LATERAL tenant_context_document(:'tenant_id', t.ancestry_path, t.depth,
                                           t.isolation_strategy) AS d
WHERE t.id = :'tenant_id';

-- name: render_tenant_contexts :many
-- Several tenants' positions with their masked context documents (as
-- render_tenant_context), in the order of tenant_ids; unknown ids have no row.
SELECT t.id, t.ancestry_path, t.depth, t.status, d.document
FROM unnest(:'tenant_ids'::uuid[]) WITH ORDINALITY AS x(id, ord)
JOIN tenants t ON t.id = x.id
CROSS JOIN LATERAL tenant_context_document(t.id, t.ancestry_path, t.depth,
                                           t.isolation_strategy) AS d
ORDER BY x.ord;

-- name: stream_subtree_contexts :many
-- The masked context document of every active tenant at or below the tenant whose path
-- is :'path', in depth-first pre-order (one range of the "C" path index, itself
-- first), read through a cursor.
SELECT t.id, d.document
FROM tenants t
CROSS JOIN LATERAL tenant_context_document(t.id, t.ancestry_path, t.depth,
                                           t.isolation_strategy) AS d
WHERE t.ancestry_path >= :'path'::text
  AND t.ancestry_path < :'path'::text || '0'
  AND t.status = 'active'
ORDER BY t.ancestry_path;
