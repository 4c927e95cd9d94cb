-- "Who resolves to what": a key's resolved value across a subtree (docs/constraints.md).

-- name: stream_resolved_key_json :many
-- The tenants of the subtree at :'path' (itself included) where :'key' resolves to a
-- value, in depth-first pre-order from the path :'start' on (the subtree's own path, or
-- a page cursor's path followed by ' ', which sorts after it and before its
-- descendants), one JSON document per row, read through a cursor in chunks. Resolved
-- as context.sql resolves (the highest lock, else the nearest entry) and masked as GET
-- /context masks (a sensitive value is '***'). Filters, each NULL for none: the shown
-- value (jsonb equality), the source tenant, inherited, locked. Active tenants only.
SELECT t.id,
       json_build_object(
           'tenant_id', t.id,
           'key', :'key'::text,
           'value', w.shown,
           'source_tenant_id', w.source_tenant_id,
           'inherited', w.source_tenant_id <> t.id,
           'locked', w.locked
       )::text AS document
FROM tenants t
-- 1. Per tenant of the range (tenants_ancestry_path_key, in order): its winning entry of
--    the key on its chain (tenant_closure_descendant_idx, then config_entries_pkey per
--    ancestor); no entry, no row.
CROSS JOIN LATERAL (
    SELECT CASE WHEN ce.sensitive THEN '"***"'::jsonb ELSE ce.value END AS shown,
           ce.locked, ce.tenant_id AS source_tenant_id
    FROM tenant_closure c
    JOIN config_entries ce ON ce.tenant_id = c.ancestor_id AND ce.key = :'key'::text
    WHERE c.descendant_id = t.id
    ORDER BY ce.locked DESC, CASE WHEN ce.locked THEN -c.depth ELSE c.depth END
    LIMIT 1
) AS w
WHERE t.ancestry_path >= :'start'::text
  AND t.ancestry_path < :'path'::text || '0'
  AND t.status = 'active'
  -- 2. The filters.
  AND (:'value'::jsonb IS NULL OR w.shown = :'value'::jsonb)
  AND (:'source_tenant_id'::uuid IS NULL OR w.source_tenant_id = :'source_tenant_id'::uuid)
  AND (:'inherited'::boolean IS NULL OR (w.source_tenant_id <> t.id) = :'inherited'::boolean)
  AND (:'locked'::boolean IS NULL OR w.locked = :'locked'::boolean)
ORDER BY t.ancestry_path;
