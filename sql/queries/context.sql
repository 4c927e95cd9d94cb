-- The resolved context of a tenant: its config and permissions after inheritance, in
-- one statement (one round trip) whatever the depth. Archived ancestors are not
-- filtered out: an active tenant never has one, and archiving keeps a tenant's entries.

-- name: resolve_tenant_context :one
-- A tenant's position with its resolved config and permissions (no row: unknown id).
WITH
-- 1. The chain from the root down to the tenant: each ancestor with its distance from
--    the tenant (0 = the tenant itself). One range of tenant_closure_descendant_idx.
chain AS (
    SELECT c.ancestor_id AS tenant_id, c.depth AS distance
    FROM tenant_closure c
    WHERE c.descendant_id = :'tenant_id'
),
-- 2. Config: every entry on the chain (config_entries_pkey per ancestor). Per key, a
--    locked entry beats any unlocked one, the highest lock (nearest the root) winning;
--    without a lock the nearest entry wins.
config_winners AS (
    SELECT DISTINCT ON (ce.key)
           ce.key, ce.value, ce.encrypted_value, ce.sensitive, ce.locked,
           ce.reveal_to_descendants, ce.tenant_id AS source_tenant_id
    FROM chain ch
    JOIN config_entries ce ON ce.tenant_id = ch.tenant_id
    ORDER BY ce.key,
             ce.locked DESC,
             CASE WHEN ce.locked THEN -ch.distance ELSE ch.distance END
),
-- 3. Permissions: every policy on the chain (permission_policies_pkey per ancestor),
--    except LOCAL policies of ancestors (LOCAL applies to its own tenant only). Per
--    key, the LOCKED policy nearest the root wins; otherwise the nearest policy.
permission_winners AS (
    SELECT DISTINCT ON (pp.key)
           pp.key, pp.value, pp.mode, pp.tenant_id AS source_tenant_id
    FROM chain ch
    JOIN permission_policies pp ON pp.tenant_id = ch.tenant_id
    WHERE ch.distance = 0 OR pp.mode <> 'LOCAL'
    ORDER BY pp.key,
             (pp.mode = 'LOCKED') DESC,
             CASE WHEN pp.mode = 'LOCKED' THEN -ch.distance ELSE ch.distance END
)
-- 4. The tenant row (tenants_pkey) with both winner sets as JSON arrays in key order.
SELECT t.id, t.ancestry_path, t.depth, t.isolation_strategy, t.status,
       coalesce((SELECT jsonb_agg(to_jsonb(w) ORDER BY w.key) FROM config_winners w),
                '[]'::jsonb) AS config,
       coalesce((SELECT jsonb_agg(to_jsonb(p) ORDER BY p.key) FROM permission_winners p),
                '[]'::jsonb) AS permissions
FROM tenants t
WHERE t.id = :'tenant_id';

-- name: render_tenant_context :one
-- A tenant's position with its masked context document rendered as JSON text (no row:
-- unknown id). The same resolution as resolve_tenant_context; sensitive values are
-- '***', so no decryption is needed and the text is sent as it is.
WITH
-- 1. The chain from the root down to the tenant (tenant_closure_descendant_idx).
chain AS (
    SELECT c.ancestor_id AS tenant_id, c.depth AS distance
    FROM tenant_closure c
    WHERE c.descendant_id = :'tenant_id'
),
-- 2. Config winners per key: the highest lock, else the nearest entry.
config_winners AS (
    SELECT DISTINCT ON (ce.key)
           ce.key, ce.value, ce.sensitive, ce.locked, ce.tenant_id AS source_tenant_id
    FROM chain ch
    JOIN config_entries ce ON ce.tenant_id = ch.tenant_id
    ORDER BY ce.key,
             ce.locked DESC,
             CASE WHEN ce.locked THEN -ch.distance ELSE ch.distance END
),
-- 3. Permission winners per key: the highest LOCKED policy, else the nearest one;
--    ancestors' LOCAL policies do not count.
permission_winners AS (
    SELECT DISTINCT ON (pp.key)
           pp.key, pp.value, pp.mode, pp.tenant_id AS source_tenant_id
    FROM chain ch
    JOIN permission_policies pp ON pp.tenant_id = ch.tenant_id
    WHERE ch.distance = 0 OR pp.mode <> 'LOCAL'
    ORDER BY pp.key,
             (pp.mode = 'LOCKED') DESC,
             CASE WHEN pp.mode = 'LOCKED' THEN -ch.distance ELSE ch.distance END
)
-- 4. The tenant row (tenants_pkey) and the document, objects in key order (json, not
--    jsonb, keeps that order).
SELECT t.id, t.ancestry_path, t.depth, t.status,
       json_build_object(
           'tenant_id', t.id,
           'ancestry_path', t.ancestry_path,
           'depth', t.depth,
           'isolation_strategy', t.isolation_strategy,
           'resolved_config', coalesce(
               (SELECT json_object_agg(w.key, json_build_object(
                           'key', w.key,
                           'value', CASE WHEN w.sensitive THEN '"***"'::jsonb ELSE w.value END,
                           'source_tenant_id', w.source_tenant_id,
                           'inherited', w.source_tenant_id <> t.id,
                           'locked', w.locked) ORDER BY w.key)
                FROM config_winners w),
               '{}'::json),
           'resolved_permissions', coalesce(
               (SELECT json_object_agg(p.key, json_build_object(
                           'key', p.key,
                           'value', p.value,
                           'mode', p.mode,
                           'source_tenant_id', p.source_tenant_id,
                           'locked', p.mode = 'LOCKED',
                           'delegated', p.source_tenant_id <> t.id AND p.mode <> 'LOCKED')
                       ORDER BY p.key)
                FROM permission_winners p),
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
