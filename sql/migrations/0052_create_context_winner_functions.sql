-- Each rule once (docs/decisions/context.md, "Inheritance rules in one place";
-- docs/decisions/tenants.md, "One renderer of the tenant document"). The inheritance
-- rules of the context were written out in every query that resolved a chain (the
-- context, its document, the lock checks, the previews, the history), the context
-- document twice (render_tenant_context and context_document), and a tenant's document
-- in three renderers (the tenant_documents view, tenant_document_texts and the trigger
-- of migration 0029). Here each is stated once. Nothing changes an answer.

-- 1. The order of precedence on a chain, as inlinable SQL functions (a single SELECT of
--    an expression, not STRICT: the planner puts the expression itself in the query).
--    distance is how far above the tenant the entry sits (0: the tenant itself).
--    Config: a locked entry beats any unlocked one, the highest lock (nearest the root)
--    winning; without a lock the nearest entry wins. Lowest rank first: locks rank
--    -1 - distance (below every unlocked rank, the highest lock lowest), the others
--    their distance. Per key, the rank orders the candidates; no two tie (one entry per
--    tenant and key).
CREATE FUNCTION config_entry_rank(locked boolean, distance integer) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN locked THEN -1 - distance ELSE distance END
$$;

--    Permissions: ancestors' LOCAL policies do not count (LOCAL applies to its own
--    tenant only); of those that count, the LOCKED policy nearest the root wins, else
--    the nearest policy.
CREATE FUNCTION permission_policy_counts(mode text, distance integer) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT distance = 0 OR mode <> 'LOCAL'
$$;

CREATE FUNCTION permission_policy_rank(mode text, distance integer) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN mode = 'LOCKED' THEN -1 - distance ELSE distance END
$$;

-- 2. A tenant's winning config entries and permission policies, one per key: the rules
--    above over its chain (tenant_closure_descendant_idx, then config_entries_pkey /
--    permission_policies_pkey per ancestor). Set-returning SQL functions of one SELECT,
--    STABLE, not STRICT, no SET clause, not SECURITY DEFINER: called in FROM, the
--    planner inlines them as a subquery (no Function Scan), so a caller's filter on the
--    key reaches the index and unused columns are never read
--    (tests/test_context_winner_plans.py). Archived ancestors count: resolution does not
--    look at status.
CREATE FUNCTION context_config_winners(target uuid)
RETURNS TABLE (key text, value jsonb, encrypted_value text, sensitive boolean,
               locked boolean, reveal_to_descendants boolean, expires_at timestamptz,
               source_tenant_id uuid)
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT DISTINCT ON (ce.key)
           ce.key, ce.value, ce.encrypted_value, ce.sensitive, ce.locked,
           ce.reveal_to_descendants, ce.expires_at, ce.tenant_id AS source_tenant_id
    FROM tenant_closure c
    JOIN config_entries ce ON ce.tenant_id = c.ancestor_id
    WHERE c.descendant_id = target
    ORDER BY ce.key, config_entry_rank(ce.locked, c.depth)
$$;

CREATE FUNCTION context_permission_winners(target uuid)
RETURNS TABLE (key text, value boolean, mode text, expires_at timestamptz,
               source_tenant_id uuid)
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT DISTINCT ON (pp.key)
           pp.key, pp.value, pp.mode, pp.expires_at, pp.tenant_id AS source_tenant_id
    FROM tenant_closure c
    JOIN permission_policies pp ON pp.tenant_id = c.ancestor_id
    WHERE c.descendant_id = target
      AND permission_policy_counts(pp.mode, c.depth)
    ORDER BY pp.key, permission_policy_rank(pp.mode, c.depth)
$$;

-- 3. A tenant's masked context document (GET /context), rendered once: sensitive values
--    '***', objects in key order (json, not jsonb, keeps that order), expires_at shown
--    on the entries that have one. A set-returning SQL function of one row, which a
--    query joins laterally to the tenant's row and the planner inlines: the statement is
--    planned once with its prepared statement, not per call as a function's body is.
--    It takes the tenant's own fields as arguments, which its caller has read already.
CREATE FUNCTION tenant_context_document(target_id uuid, target_path text,
                                        target_depth integer, target_isolation text)
RETURNS TABLE (document text)
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT json_build_object(
               'tenant_id', target_id,
               'ancestry_path', target_path,
               'depth', target_depth,
               'isolation_strategy', target_isolation,
               'resolved_config', coalesce(
                   (SELECT json_object_agg(w.key, CASE WHEN w.expires_at IS NULL THEN
                           json_build_object(
                               'key', w.key,
                               'value', CASE WHEN w.sensitive THEN '"***"'::jsonb ELSE w.value END,
                               'source_tenant_id', w.source_tenant_id,
                               'inherited', w.source_tenant_id <> target_id,
                               'locked', w.locked)
                           ELSE json_build_object(
                               'key', w.key,
                               'value', CASE WHEN w.sensitive THEN '"***"'::jsonb ELSE w.value END,
                               'source_tenant_id', w.source_tenant_id,
                               'inherited', w.source_tenant_id <> target_id,
                               'locked', w.locked,
                               'expires_at', svc_iso_time(w.expires_at)) END ORDER BY w.key)
                    FROM context_config_winners(target_id) w),
                   '{}'::json),
               'resolved_permissions', coalesce(
                   (SELECT json_object_agg(p.key, CASE WHEN p.expires_at IS NULL THEN
                           json_build_object(
                               'key', p.key,
                               'value', p.value,
                               'mode', p.mode,
                               'source_tenant_id', p.source_tenant_id,
                               'locked', p.mode = 'LOCKED',
                               'delegated', p.source_tenant_id <> target_id
                                            AND p.mode <> 'LOCKED')
                           ELSE json_build_object(
                               'key', p.key,
                               'value', p.value,
                               'mode', p.mode,
                               'source_tenant_id', p.source_tenant_id,
                               'locked', p.mode = 'LOCKED',
                               'delegated', p.source_tenant_id <> target_id
                                            AND p.mode <> 'LOCKED',
                               'expires_at', svc_iso_time(p.expires_at)) END
                           ORDER BY p.key)
                    FROM context_permission_winners(target_id) p),
                   '{}'::json)
           )::text
$$;

--    context_document (migrations 0034, 0041) stays for replicas of the release before
--    during a rollout (migrations only add, docs/operations.md); it answers through the
--    function above. Nothing of this release calls it.
CREATE OR REPLACE FUNCTION context_document(target tenants) RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT d.document
    FROM tenant_context_document(target.id, target.ancestry_path, target.depth,
                                 target.isolation_strategy) d
$$;

-- 4. The tenant document, rendered once: the row's own fields by the trigger of
--    migration 0029 (document_head and document_tail, written with the row), put
--    together around the path, the depth and the config by assemble_tenant_document,
--    which every list uses (children, ancestors, descendants). tenant_details gains the
--    two parts (added at the end: the columns before keep their place, and every query
--    names its columns).
CREATE OR REPLACE VIEW tenant_details AS
SELECT t.id, t.parent_id, t.name, t.slug, t.ancestry_path, t.depth, t.metadata,
       t.isolation_strategy, t.region, t.status, t.deleted_at, t.created_at, t.updated_at,
       CASE WHEN (SELECT true FROM config_entries held WHERE held.tenant_id = t.id LIMIT 1)
            THEN coalesce((SELECT jsonb_object_agg(ce.key,
                                                   CASE WHEN ce.sensitive
                                                        THEN to_jsonb('***'::text)
                                                        ELSE ce.value END)
                           FROM config_entries ce
                           WHERE ce.tenant_id = t.id), '{}'::jsonb)
            ELSE '{}'::jsonb
       END AS config,
       t.document_head,
       t.document_tail
FROM tenants t;

--    The config as text (jsonb's): '{}' for none. Inlinable like the functions above.
CREATE FUNCTION assemble_tenant_document(head text, path text, depth integer,
                                         config text, tail text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT head || path || '","depth":' || depth::text || ',"config":' || config || tail
$$;

--    tenant_document_texts (migration 0027) has not been read since migration 0029; it
--    becomes the lists' view of the documents: each tenant's document beside the
--    columns the lists filter and sort on (the path keeps its "C" collation).
--    tenant_documents (migration 0014) is no longer read either; it stays for replicas of
--    the release before during a rollout (migrations only add, docs/operations.md).
DROP VIEW tenant_document_texts;

CREATE VIEW tenant_document_texts AS
SELECT td.id,
       td.parent_id,
       td.ancestry_path,
       td.depth,
       td.status,
       assemble_tenant_document(td.document_head, td.ancestry_path, td.depth,
                                td.config::text, td.document_tail) AS document
FROM tenant_details td;
