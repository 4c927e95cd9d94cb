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
-- context_document's (migration 0052), written out here so that the statement is
-- planned once as a prepared statement rather than per call inside the function; the
-- objects are in key order (json, not jsonb, keeps that order).
SELECT t.id, t.ancestry_path, t.depth, t.status,
       json_build_object(
           'tenant_id', t.id,
           'ancestry_path', t.ancestry_path,
           'depth', t.depth,
           'isolation_strategy', t.isolation_strategy,
           'resolved_config', coalesce(
               (SELECT json_object_agg(w.key, CASE WHEN w.expires_at IS NULL THEN
                       json_build_object(
                           'key', w.key,
                           'value', CASE WHEN w.sensitive THEN '"***"'::jsonb ELSE w.value END,
                           'source_tenant_id', w.source_tenant_id,
                           'inherited', w.source_tenant_id <> t.id,
                           'locked', w.locked)
                       ELSE json_build_object(
                           'key', w.key,
                           'value', CASE WHEN w.sensitive THEN '"***"'::jsonb ELSE w.value END,
                           'source_tenant_id', w.source_tenant_id,
                           'inherited', w.source_tenant_id <> t.id,
                           'locked', w.locked,
                           'expires_at', svc_iso_time(w.expires_at)) END ORDER BY w.key)
                FROM context_config_winners(:'tenant_id') w),
               '{}'::json),
           'resolved_permissions', coalesce(
               (SELECT json_object_agg(p.key, CASE WHEN p.expires_at IS NULL THEN
                       json_build_object(
                           'key', p.key,
                           'value', p.value,
                           'mode', p.mode,
                           'source_tenant_id', p.source_tenant_id,
                           'locked', p.mode = 'LOCKED',
                           'delegated', p.source_tenant_id <> t.id AND p.mode <> 'LOCKED')
                       ELSE json_build_object(
                           'key', p.key,
                           'value', p.value,
                           'mode', p.mode,
                           'source_tenant_id', p.source_tenant_id,
                           'locked', p.mode = 'LOCKED',
                           'delegated', p.source_tenant_id <> t.id AND p.mode <> 'LOCKED',
                           'expires_at', svc_iso_time(p.expires_at)) END
                       ORDER BY p.key)
                FROM context_permission_winners(:'tenant_id') p),
               '{}'::json)
       )::text AS document
FROM tenants t
WHERE t.id = :'tenant_id';

-- name: render_tenant_contexts :many
-- Several tenants' positions with their masked context documents (as
-- render_tenant_context), in the order of tenant_ids; unknown ids have no row.
SELECT t.id, t.ancestry_path, t.depth, t.status, context_document(t) AS document
FROM unnest(:'tenant_ids'::uuid[]) WITH ORDINALITY AS x(id, ord)
JOIN tenants t ON t.id = x.id
ORDER BY x.ord;

-- name: stream_subtree_contexts :many
-- The masked context document of every active tenant at or below the tenant whose path
-- is :'path', in depth-first pre-order (one range of the "C" path index, itself
-- first), read through a cursor.
SELECT t.id, context_document(t) AS document
FROM tenants t
WHERE t.ancestry_path >= :'path'::text
  AND t.ancestry_path < :'path'::text || '0'
  AND t.status = 'active'
ORDER BY t.ancestry_path;
