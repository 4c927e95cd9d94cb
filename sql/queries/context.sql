-- The resolved context of a tenant: its config and permissions after inheritance, in
-- one statement (one round trip) whatever the depth. Archived ancestors are not
-- filtered out: an active tenant never has one, and archiving keeps a tenant's entries.

-- name: resolve_tenant_context
-- A tenant's position with its resolved config and permissions (no row: unknown id).
WITH
-- 1. The chain from the root down to the tenant: each ancestor with its distance from
--    the tenant (0 = the tenant itself). One range of tenant_closure_descendant_idx.
chain AS (
    SELECT c.ancestor_id AS tenant_id, c.depth AS distance
    FROM tenant_closure c
    WHERE c.descendant_id = $1
),
-- 2. Config: every entry on the chain (config_entries_pkey per ancestor). Per key, a
--    locked entry beats any unlocked one, the highest lock (nearest the root) winning;
--    without a lock the nearest entry wins.
config_winners AS (
    SELECT DISTINCT ON (ce.key)
           ce.key, ce.value, ce.encrypted_value, ce.sensitive, ce.locked,
           ce.tenant_id AS source_tenant_id
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
WHERE t.id = $1;
