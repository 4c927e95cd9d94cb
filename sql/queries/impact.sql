-- Impact previews (dry runs, docs/decisions.md "Issue 21"): what a change would do to
-- the resolved context of a subtree, computed set-based and written nowhere. The
-- resolution rules are those of the context (migration 0052): per key a locked entry
-- beats any unlocked one (the highest lock winning), else the nearest entry wins
-- (config_entry_rank); ancestors' LOCAL policies do not count, the highest LOCKED policy
-- wins, else the nearest (permission_policy_counts, permission_policy_rank). The
-- candidates here are proposed entries and chains after a move, not what the tables
-- hold, so context_config_winners cannot serve; the functions are inlined.

-- name: preview_config_change :many
-- Tenants of tenant_id's subtree whose resolution of key would change if tenant_id's own
-- entry were replaced by (new_value, new_locked, new_sensitive), or removed when
-- removing; one page after after_id in id order (row_limit), each row with the total.
WITH
-- 1. Every tenant whose resolution of the key can change: the tenant and its subtree.
subtree AS (
    SELECT c.descendant_id AS tenant_id
    FROM tenant_closure c
    WHERE c.ancestor_id = :'tenant_id'
),
-- 2. The key's entries on any chain through the subtree: at the tenant's ancestors
--    and inside the subtree (config_entries_pkey per tenant).
current_entries AS (
    SELECT ce.tenant_id, ce.value, ce.sensitive, ce.locked
    FROM config_entries ce
    WHERE ce.key = :'key'
      AND ce.tenant_id IN (SELECT a.ancestor_id
                           FROM tenant_closure a
                           WHERE a.descendant_id = :'tenant_id'
                           UNION ALL
                           SELECT s.tenant_id FROM subtree s)
),
-- 3. The same entries with the change applied to the tenant's own.
proposed_entries AS (
    SELECT e.tenant_id, e.value, e.sensitive, e.locked
    FROM current_entries e
    WHERE e.tenant_id <> :'tenant_id'
    UNION ALL
    SELECT :'tenant_id'::uuid, :'new_value'::jsonb, :'new_sensitive'::boolean,
           :'new_locked'::boolean
    WHERE NOT :'removing'::boolean
),
-- 4. Each subtree tenant's winner now (closure rows of its chain; config_entry_rank).
before AS (
    SELECT DISTINCT ON (s.tenant_id)
           s.tenant_id, e.tenant_id AS source_tenant_id, e.value, e.sensitive, e.locked
    FROM subtree s
    JOIN tenant_closure c ON c.descendant_id = s.tenant_id
    JOIN current_entries e ON e.tenant_id = c.ancestor_id
    ORDER BY s.tenant_id, config_entry_rank(e.locked, c.depth)
),
-- 5. ... and after the change.
after AS (
    SELECT DISTINCT ON (s.tenant_id)
           s.tenant_id, e.tenant_id AS source_tenant_id, e.value, e.sensitive, e.locked
    FROM subtree s
    JOIN tenant_closure c ON c.descendant_id = s.tenant_id
    JOIN proposed_entries e ON e.tenant_id = c.ancestor_id
    ORDER BY s.tenant_id, config_entry_rank(e.locked, c.depth)
),
-- 6. The tenants whose winner differs (another source, value, lock or sensitivity; a
--    sensitive value written again counts as a change: ciphertexts are not compared).
changed AS (
    SELECT s.tenant_id,
           b.source_tenant_id AS old_source, b.value AS old_value,
           b.sensitive AS old_sensitive, b.locked AS old_locked,
           a.source_tenant_id AS new_source, a.value AS new_value,
           a.sensitive AS new_sensitive, a.locked AS new_locked
    FROM subtree s
    LEFT JOIN before b ON b.tenant_id = s.tenant_id
    LEFT JOIN after a ON a.tenant_id = s.tenant_id
    WHERE (b.source_tenant_id, b.value, b.sensitive, b.locked)
              IS DISTINCT FROM (a.source_tenant_id, a.value, a.sensitive, a.locked)
       OR a.source_tenant_id = :'tenant_id' AND a.sensitive
)
-- 7. One page, with the total.
SELECT ch.tenant_id, ch.old_source, ch.old_value, ch.old_sensitive, ch.old_locked,
       ch.new_source, ch.new_value, ch.new_sensitive, ch.new_locked,
       (SELECT count(*) FROM changed) AS total
FROM changed ch
WHERE ch.tenant_id > :'after_id'
ORDER BY ch.tenant_id
LIMIT :'row_limit';

-- name: list_shadowed_config_entries :many
-- Descendants' own entries for key that a lock at tenant_id would override (at most
-- row_limit, in tenant id order), each row with the total.
WITH shadowed AS (
    -- the descendants' own entries (config_entries_pkey per descendant)
    SELECT ce.tenant_id, ce.value, ce.sensitive, ce.locked
    FROM tenant_closure c
    JOIN config_entries ce ON ce.tenant_id = c.descendant_id AND ce.key = :'key'
    WHERE c.ancestor_id = :'tenant_id'
      AND c.depth > 0
)
SELECT s.tenant_id, s.value, s.sensitive, s.locked, (SELECT count(*) FROM shadowed) AS total
FROM shadowed s
ORDER BY s.tenant_id
LIMIT :'row_limit';

-- name: preview_permission_change :many
-- Tenants of tenant_id's subtree whose resolution of permission key would change if
-- tenant_id's own policy were replaced by (new_value, new_mode), or removed when
-- removing; one page after after_id in id order (row_limit), each row with the total.
WITH
-- 1. Every tenant whose resolution of the key can change: the tenant and its subtree.
subtree AS (
    SELECT c.descendant_id AS tenant_id
    FROM tenant_closure c
    WHERE c.ancestor_id = :'tenant_id'
),
-- 2. The key's policies on any chain through the subtree (permission_policies_pkey).
current_policies AS (
    SELECT pp.tenant_id, pp.value, pp.mode
    FROM permission_policies pp
    WHERE pp.key = :'key'
      AND pp.tenant_id IN (SELECT a.ancestor_id
                           FROM tenant_closure a
                           WHERE a.descendant_id = :'tenant_id'
                           UNION ALL
                           SELECT s.tenant_id FROM subtree s)
),
-- 3. The same policies with the change applied to the tenant's own.
proposed_policies AS (
    SELECT p.tenant_id, p.value, p.mode
    FROM current_policies p
    WHERE p.tenant_id <> :'tenant_id'
    UNION ALL
    SELECT :'tenant_id'::uuid, :'new_value'::boolean, :'new_mode'::text
    WHERE NOT :'removing'::boolean
),
-- 4. Each subtree tenant's winner now (permission_policy_counts: ancestors' LOCAL
--    policies do not apply; permission_policy_rank: the LOCKED policy nearest the root
--    wins, else the nearest policy).
before AS (
    SELECT DISTINCT ON (s.tenant_id)
           s.tenant_id, p.tenant_id AS source_tenant_id, p.value, p.mode
    FROM subtree s
    JOIN tenant_closure c ON c.descendant_id = s.tenant_id
    JOIN current_policies p ON p.tenant_id = c.ancestor_id
    WHERE permission_policy_counts(p.mode, c.depth)
    ORDER BY s.tenant_id, permission_policy_rank(p.mode, c.depth)
),
-- 5. ... and after the change.
after AS (
    SELECT DISTINCT ON (s.tenant_id)
           s.tenant_id, p.tenant_id AS source_tenant_id, p.value, p.mode
    FROM subtree s
    JOIN tenant_closure c ON c.descendant_id = s.tenant_id
    JOIN proposed_policies p ON p.tenant_id = c.ancestor_id
    WHERE permission_policy_counts(p.mode, c.depth)
    ORDER BY s.tenant_id, permission_policy_rank(p.mode, c.depth)
),
-- 6. The tenants whose winner differs (another source, value or mode).
changed AS (
    SELECT s.tenant_id,
           b.source_tenant_id AS old_source, b.value AS old_value, b.mode AS old_mode,
           a.source_tenant_id AS new_source, a.value AS new_value, a.mode AS new_mode
    FROM subtree s
    LEFT JOIN before b ON b.tenant_id = s.tenant_id
    LEFT JOIN after a ON a.tenant_id = s.tenant_id
    WHERE (b.source_tenant_id, b.value, b.mode)
          IS DISTINCT FROM (a.source_tenant_id, a.value, a.mode)
)
-- 7. One page, with the total.
SELECT ch.tenant_id, ch.old_source, ch.old_value, ch.old_mode,
       ch.new_source, ch.new_value, ch.new_mode,
       (SELECT count(*) FROM changed) AS total
FROM changed ch
WHERE ch.tenant_id > :'after_id'
ORDER BY ch.tenant_id
LIMIT :'row_limit';

-- name: list_shadowed_permission_policies :many
-- Descendants' own policies for key that a LOCKED policy at tenant_id would override
-- (at most row_limit, in tenant id order), each row with the total.
WITH shadowed AS (
    -- the descendants' own policies (permission_policies_pkey per descendant)
    SELECT pp.tenant_id, pp.value, pp.mode
    FROM tenant_closure c
    JOIN permission_policies pp ON pp.tenant_id = c.descendant_id AND pp.key = :'key'
    WHERE c.ancestor_id = :'tenant_id'
      AND c.depth > 0
)
SELECT s.tenant_id, s.value, s.mode, (SELECT count(*) FROM shadowed) AS total
FROM shadowed s
ORDER BY s.tenant_id
LIMIT :'row_limit';

-- name: preview_move :many
-- Tenants of tenant_id's subtree whose resolved config or permissions would change if
-- the subtree moved under new_parent_id (NULL: to the top), each with its changed
-- entries as JSON; one page after after_id in id order (row_limit), with the total.
WITH
-- 1. The subtree, each tenant with its depth below tenant_id.
subtree AS (
    SELECT c.descendant_id AS tenant_id, c.depth AS below
    FROM tenant_closure c
    WHERE c.ancestor_id = :'tenant_id'
),
-- 2. Each subtree tenant's chain of ancestors now, with distances.
chain_before AS (
    SELECT s.tenant_id, c.ancestor_id, c.depth AS distance
    FROM subtree s
    JOIN tenant_closure c ON c.descendant_id = s.tenant_id
),
-- 3. ... and after the move: the part inside the subtree stays, the new parent's chain
--    replaces the old one above it.
chain_after AS (
    SELECT s.tenant_id, c.ancestor_id, c.depth AS distance
    FROM subtree s
    JOIN tenant_closure c ON c.descendant_id = s.tenant_id AND c.depth <= s.below
    UNION ALL
    SELECT s.tenant_id, p.ancestor_id, s.below + 1 + p.depth
    FROM subtree s
    JOIN tenant_closure p ON p.descendant_id = :'new_parent_id'
),
-- 4. Config winners per (tenant, key) before and after (config_entry_rank); sensitive
--    values masked.
config_before AS (
    SELECT DISTINCT ON (ch.tenant_id, ce.key)
           ch.tenant_id, ce.key, ce.tenant_id AS source_tenant_id, ce.locked, ce.sensitive,
           CASE WHEN ce.sensitive THEN '"***"'::jsonb ELSE ce.value END AS value
    FROM chain_before ch
    JOIN config_entries ce ON ce.tenant_id = ch.ancestor_id
    ORDER BY ch.tenant_id, ce.key, config_entry_rank(ce.locked, ch.distance)
),
config_after AS (
    SELECT DISTINCT ON (ch.tenant_id, ce.key)
           ch.tenant_id, ce.key, ce.tenant_id AS source_tenant_id, ce.locked, ce.sensitive,
           CASE WHEN ce.sensitive THEN '"***"'::jsonb ELSE ce.value END AS value
    FROM chain_after ch
    JOIN config_entries ce ON ce.tenant_id = ch.ancestor_id
    ORDER BY ch.tenant_id, ce.key, config_entry_rank(ce.locked, ch.distance)
),
-- 5. Permission winners per (tenant, key) before and after (permission_policy_counts
--    and permission_policy_rank).
permission_before AS (
    SELECT DISTINCT ON (ch.tenant_id, pp.key)
           ch.tenant_id, pp.key, pp.tenant_id AS source_tenant_id, pp.value, pp.mode
    FROM chain_before ch
    JOIN permission_policies pp ON pp.tenant_id = ch.ancestor_id
    WHERE permission_policy_counts(pp.mode, ch.distance)
    ORDER BY ch.tenant_id, pp.key, permission_policy_rank(pp.mode, ch.distance)
),
permission_after AS (
    SELECT DISTINCT ON (ch.tenant_id, pp.key)
           ch.tenant_id, pp.key, pp.tenant_id AS source_tenant_id, pp.value, pp.mode
    FROM chain_after ch
    JOIN permission_policies pp ON pp.tenant_id = ch.ancestor_id
    WHERE permission_policy_counts(pp.mode, ch.distance)
    ORDER BY ch.tenant_id, pp.key, permission_policy_rank(pp.mode, ch.distance)
),
-- 6. Every (tenant, kind, key) whose winner differs, old and new as JSON (NULL: unset).
changes AS (
    SELECT coalesce(b.tenant_id, a.tenant_id) AS tenant_id, 'config' AS kind,
           coalesce(b.key, a.key) AS key,
           CASE WHEN b.tenant_id IS NOT NULL THEN jsonb_build_object(
               'value', b.value, 'source_tenant_id', b.source_tenant_id, 'locked', b.locked,
               'sensitive', b.sensitive) END AS old,
           CASE WHEN a.tenant_id IS NOT NULL THEN jsonb_build_object(
               'value', a.value, 'source_tenant_id', a.source_tenant_id, 'locked', a.locked,
               'sensitive', a.sensitive) END AS new
    FROM config_before b
    FULL JOIN config_after a ON a.tenant_id = b.tenant_id AND a.key = b.key
    WHERE (b.source_tenant_id, b.value, b.locked, b.sensitive)
          IS DISTINCT FROM (a.source_tenant_id, a.value, a.locked, a.sensitive)
    UNION ALL
    SELECT coalesce(b.tenant_id, a.tenant_id), 'permission', coalesce(b.key, a.key),
           CASE WHEN b.tenant_id IS NOT NULL THEN jsonb_build_object(
               'value', b.value, 'source_tenant_id', b.source_tenant_id, 'mode', b.mode) END,
           CASE WHEN a.tenant_id IS NOT NULL THEN jsonb_build_object(
               'value', a.value, 'source_tenant_id', a.source_tenant_id, 'mode', a.mode) END
    FROM permission_before b
    FULL JOIN permission_after a ON a.tenant_id = b.tenant_id AND a.key = b.key
    WHERE (b.source_tenant_id, b.value, b.mode)
          IS DISTINCT FROM (a.source_tenant_id, a.value, a.mode)
),
-- 7. Per tenant, its changes in (kind, key) order.
per_tenant AS (
    SELECT ch.tenant_id,
           jsonb_agg(jsonb_build_object('kind', ch.kind, 'key', ch.key, 'old', ch.old,
                                        'new', ch.new)
                     ORDER BY ch.kind, ch.key) AS entries
    FROM changes ch
    GROUP BY ch.tenant_id
)
-- 8. One page of tenants, with the total.
SELECT p.tenant_id, p.entries, (SELECT count(*) FROM per_tenant) AS total
FROM per_tenant p
WHERE p.tenant_id > :'after_id'
ORDER BY p.tenant_id
LIMIT :'row_limit';
