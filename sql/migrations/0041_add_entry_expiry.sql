-- Expiring overrides (docs/decisions/change-requests.md): a config entry or permission
-- policy may carry expires_at; the expiry worker removes it then, as a delete by the
-- service. The tenant document leaves expires_at out (its config map shows values
-- only); the context shows it on the entries that have one, so context_document
-- (migration 0034) is rendered again with it.

ALTER TABLE config_entries ADD COLUMN expires_at timestamptz;
ALTER TABLE permission_policies ADD COLUMN expires_at timestamptz;

-- The expiry worker's claim: the due entries, soonest first.
CREATE INDEX config_entries_expires_at_idx ON config_entries (expires_at)
    WHERE expires_at IS NOT NULL;
CREATE INDEX permission_policies_expires_at_idx ON permission_policies (expires_at)
    WHERE expires_at IS NOT NULL;

CREATE OR REPLACE FUNCTION context_document(target tenants) RETURNS text
LANGUAGE sql STABLE
AS $$
    WITH
    -- 1. The chain from the root down to the tenant (tenant_closure_descendant_idx).
    chain AS (
        SELECT c.ancestor_id AS tenant_id, c.depth AS distance
        FROM tenant_closure c
        WHERE c.descendant_id = target.id
    ),
    -- 2. Config winners per key: the highest lock, else the nearest entry.
    config_winners AS (
        SELECT DISTINCT ON (ce.key)
               ce.key, ce.value, ce.sensitive, ce.locked, ce.expires_at,
               ce.tenant_id AS source_tenant_id
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
               pp.key, pp.value, pp.mode, pp.expires_at, pp.tenant_id AS source_tenant_id
        FROM chain ch
        JOIN permission_policies pp ON pp.tenant_id = ch.tenant_id
        WHERE ch.distance = 0 OR pp.mode <> 'LOCAL'
        ORDER BY pp.key,
                 (pp.mode = 'LOCKED') DESC,
                 CASE WHEN pp.mode = 'LOCKED' THEN -ch.distance ELSE ch.distance END
    )
    -- 4. The document, objects in key order (json, not jsonb, keeps that order).
    SELECT json_build_object(
               'tenant_id', target.id,
               'ancestry_path', target.ancestry_path,
               'depth', target.depth,
               'isolation_strategy', target.isolation_strategy,
               'resolved_config', coalesce(
                   (SELECT json_object_agg(w.key, CASE WHEN w.expires_at IS NULL THEN json_build_object(
                               'key', w.key,
                               'value', CASE WHEN w.sensitive THEN '"***"'::jsonb ELSE w.value END,
                               'source_tenant_id', w.source_tenant_id,
                               'inherited', w.source_tenant_id <> target.id,
                               'locked', w.locked)
                           ELSE json_build_object(
                               'key', w.key,
                               'value', CASE WHEN w.sensitive THEN '"***"'::jsonb ELSE w.value END,
                               'source_tenant_id', w.source_tenant_id,
                               'inherited', w.source_tenant_id <> target.id,
                               'locked', w.locked,
                               'expires_at', svc_iso_time(w.expires_at)) END ORDER BY w.key)
                    FROM config_winners w),
                   '{}'::json),
               'resolved_permissions', coalesce(
                   (SELECT json_object_agg(p.key, CASE WHEN p.expires_at IS NULL THEN json_build_object(
                               'key', p.key,
                               'value', p.value,
                               'mode', p.mode,
                               'source_tenant_id', p.source_tenant_id,
                               'locked', p.mode = 'LOCKED',
                               'delegated', p.source_tenant_id <> target.id
                                            AND p.mode <> 'LOCKED')
                           ELSE json_build_object(
                               'key', p.key,
                               'value', p.value,
                               'mode', p.mode,
                               'source_tenant_id', p.source_tenant_id,
                               'locked', p.mode = 'LOCKED',
                               'delegated', p.source_tenant_id <> target.id
                                            AND p.mode <> 'LOCKED',
                               'expires_at', svc_iso_time(p.expires_at)) END
                           ORDER BY p.key)
                    FROM permission_winners p),
                   '{}'::json)
           )::text
$$;
