-- A tenant's masked context document as text, exactly as render_tenant_context
-- (sql/queries/context.sql) renders it for GET /context: used where many contexts are
-- rendered in one statement (the stream of context changes, hydration, batch reads).
CREATE FUNCTION context_document(target tenants) RETURNS text
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
    -- 4. The document, objects in key order (json, not jsonb, keeps that order).
    SELECT json_build_object(
               'tenant_id', target.id,
               'ancestry_path', target.ancestry_path,
               'depth', target.depth,
               'isolation_strategy', target.isolation_strategy,
               'resolved_config', coalesce(
                   (SELECT json_object_agg(w.key, json_build_object(
                               'key', w.key,
                               'value', CASE WHEN w.sensitive THEN '"***"'::jsonb ELSE w.value END,
                               'source_tenant_id', w.source_tenant_id,
                               'inherited', w.source_tenant_id <> target.id,
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
                               'delegated', p.source_tenant_id <> target.id
                                            AND p.mode <> 'LOCKED')
                           ORDER BY p.key)
                    FROM permission_winners p),
                   '{}'::json)
           )::text
$$;
