-- Tenants and the hierarchy. Reads go through the tenant_details view (tenant plus its
-- own config); tree queries join tenant_closure; ordering uses ancestry_path ("C"
-- collation, so path order is depth-first pre-order).
--
-- Locking protocol: a move locks the roots of the trees it touches
-- FOR UPDATE in id order; creates, archives and restores lock the same roots FOR SHARE
-- first. Paths are therefore never rewritten under a concurrent create or archive.

-- name: get_tenant :one
-- One tenant with its own config.
SELECT td.id, td.parent_id, td.name, td.slug, td.ancestry_path, td.depth, td.metadata,
       td.isolation_strategy, td.region, td.status, td.deleted_at, td.created_at,
       td.updated_at, td.config
FROM tenant_details td
WHERE td.id = :'tenant_id';

-- name: get_tenants_by_ids :many
-- Several tenants by id (any order; the caller orders them).
SELECT td.id, td.parent_id, td.name, td.slug, td.ancestry_path, td.depth, td.metadata,
       td.isolation_strategy, td.region, td.status, td.deleted_at, td.created_at,
       td.updated_at, td.config
FROM tenant_details td
WHERE td.id = ANY(:'tenant_ids'::uuid[]);

-- name: get_tenant_by_slug :one
-- One tenant by its slug.
SELECT td.id, td.parent_id, td.name, td.slug, td.ancestry_path, td.depth, td.metadata,
       td.isolation_strategy, td.region, td.status, td.deleted_at, td.created_at,
       td.updated_at, td.config
FROM tenant_details td
WHERE td.slug = :'slug';

-- name: get_tenant_node :one
-- The tree position of one tenant, without locks.
SELECT id, parent_id, ancestry_path, depth, status, isolation_strategy, region
FROM tenants
WHERE id = :'tenant_id';

-- name: get_tenant_nodes :many
-- Tree positions of several tenants, without locks (to learn which roots to lock).
SELECT id, parent_id, ancestry_path, depth, status, isolation_strategy, region
FROM tenants
WHERE id = ANY(:'tenant_ids'::uuid[]);

-- name: lock_tree_roots_shared :many
-- Shared lock on tree roots in id order: a concurrent move of these trees waits.
SELECT id
FROM tenants
WHERE id = ANY(:'root_ids'::uuid[])
ORDER BY id
FOR SHARE;

-- name: lock_tree_roots_exclusive :many
-- Exclusive lock on tree roots in id order, taken by moves.
SELECT id
FROM tenants
WHERE id = ANY(:'root_ids'::uuid[])
ORDER BY id
FOR UPDATE;

-- name: lock_tenant_and_root_shared :many
-- The tenant and the root of its tree, share-locked root first (the order writes lock
-- roots and tenants in), with their positions: a move of the tree and an archive of the
-- tenant wait. Two rows, one for a root, none when the tenant does not exist. A tenant
-- moved to another tree before its lock comes back with its new path, whose root is not
-- among the rows: the caller starts over. tenants_pkey probes.
WITH
-- 1. The root of the tenant's tree, as the statement's snapshot has it.
seen AS (
    SELECT split_part(s.ancestry_path, '/', 2)::uuid AS root_id
    FROM tenants s
    WHERE s.id = :'tenant_id'
)
SELECT t.id, t.parent_id, t.ancestry_path, t.depth, t.status, t.isolation_strategy, t.region
FROM tenants t
WHERE t.id = :'tenant_id' OR t.id = (SELECT root_id FROM seen)
ORDER BY t.id = :'tenant_id'
FOR SHARE OF t;

-- name: lock_tenant_nodes_shared :many
-- Shared lock on tenants (parents of new children) in id order; returns their positions.
SELECT id, parent_id, ancestry_path, depth, status, isolation_strategy, region
FROM tenants
WHERE id = ANY(:'tenant_ids'::uuid[])
ORDER BY id
FOR SHARE;

-- name: lock_tenant_node :one
-- Lock one tenant for update; returns its position.
SELECT id, parent_id, ancestry_path, depth, status, isolation_strategy, region
FROM tenants
WHERE id = :'tenant_id'
FOR UPDATE;

-- name: find_existing_slugs :many
-- Which of these slugs are taken (archived tenants keep theirs until purged).
SELECT slug
FROM tenants
WHERE slug = ANY(:'slugs'::text[]);

-- name: insert_tenants :exec
-- Insert tenants from parallel arrays, one row per array index.
INSERT INTO tenants (id, parent_id, name, slug, ancestry_path, depth, metadata,
                     isolation_strategy, region)
SELECT n.id, n.parent_id, n.name, n.slug, n.ancestry_path, n.depth, n.metadata,
       n.isolation_strategy, n.region
FROM unnest(:'tenant_ids'::uuid[], :'parent_ids'::uuid[], :'names'::text[],
            :'slugs'::text[], :'ancestry_paths'::text[], :'depths'::integer[],
            :'metadata_values'::jsonb[],
            :'isolation_strategies'::text[], :'regions'::text[])
     AS n(id, parent_id, name, slug, ancestry_path, depth, metadata, isolation_strategy,
          region);

-- name: insert_closure_for_new_tenants :exec
-- Closure rows for new tenants (parallel arrays tenant_ids and parent_ids; the parents
-- are already linked).
INSERT INTO tenant_closure (ancestor_id, descendant_id, depth)
-- each new tenant is its own ancestor at distance 0
SELECT n.id, n.id, 0
FROM unnest(:'tenant_ids'::uuid[]) AS n(id)
UNION ALL
-- every ancestor of the parent (the parent included) is one level further from the child
SELECT c.ancestor_id, n.id, c.depth + 1
FROM unnest(:'tenant_ids'::uuid[], :'parent_ids'::uuid[]) AS n(id, parent_id)
JOIN tenant_closure c ON c.descendant_id = n.parent_id;

-- name: list_tenants :many
-- One page of all tenants in id order after cursor_id (NULL: from the start);
-- status_filter is active, archived or all.
SELECT td.id, td.parent_id, td.name, td.slug, td.ancestry_path, td.depth, td.metadata,
       td.isolation_strategy, td.region, td.status, td.deleted_at, td.created_at,
       td.updated_at, td.config
FROM tenant_details td
WHERE td.id > coalesce(:'cursor_id'::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
  AND (:'status_filter'::text = 'all' OR td.status = :'status_filter'::text)
ORDER BY td.id
LIMIT :'page_size'::integer;

-- name: list_subtree_tenants :many
-- One page of a subtree (root_id and its descendants) in id order after cursor_id,
-- driven by the closure key.
SELECT td.id, td.parent_id, td.name, td.slug, td.ancestry_path, td.depth, td.metadata,
       td.isolation_strategy, td.region, td.status, td.deleted_at, td.created_at,
       td.updated_at, td.config
FROM tenant_closure c
JOIN tenant_details td ON td.id = c.descendant_id
WHERE c.ancestor_id = :'root_id'
  AND c.descendant_id > coalesce(:'cursor_id'::uuid,
                                 '00000000-0000-0000-0000-000000000000'::uuid)
  AND (:'status_filter'::text = 'all' OR td.status = :'status_filter'::text)
ORDER BY c.descendant_id
LIMIT :'page_size'::integer;

-- name: list_children :many
-- Direct children of parent_id in id order after cursor_id (page_size NULL: no limit).
SELECT td.id, td.parent_id, td.name, td.slug, td.ancestry_path, td.depth, td.metadata,
       td.isolation_strategy, td.region, td.status, td.deleted_at, td.created_at,
       td.updated_at, td.config
FROM tenant_details td
WHERE td.parent_id = :'parent_id'
  AND td.id > coalesce(:'cursor_id'::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
  AND (:'status_filter'::text = 'all' OR td.status = :'status_filter'::text)
ORDER BY td.id
LIMIT :'page_size'::integer;

-- name: list_children_json :one
-- Direct children of a tenant in id order after the cursor, as list_children, rendered
-- as one JSON array text (the documents of tenant_document_texts, migration 0052) of at
-- most page_size tenants (NULL: all), plus next_cursor: the last listed id when another
-- child follows, else NULL. The array is put together as json_agg puts rows together
-- (', ' and a line break and a space between two), byte for byte the answer before.
WITH fetched AS (
    -- the page and one child more, which only tells whether another page follows
    SELECT d.id, d.document
    FROM tenant_document_texts d
    WHERE d.parent_id = :'parent_id'
      AND d.id > coalesce(:'cursor_id'::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
      AND (:'status_filter'::text = 'all' OR d.status = :'status_filter'::text)
    ORDER BY d.id
    LIMIT :'page_size'::integer + 1
),
page AS (
    -- the page itself: the first page_size of them
    SELECT f.id, f.document
    FROM fetched f
    ORDER BY f.id
    LIMIT :'page_size'::integer
)
SELECT coalesce((SELECT '[' || string_agg(p.document, E', \n ' ORDER BY p.id) || ']'
                 FROM page p), '[]') AS body,
       CASE WHEN (SELECT count(*) FROM fetched) > :'page_size'::integer
            THEN (SELECT p.id FROM page p ORDER BY p.id DESC LIMIT 1)
       END AS next_cursor;

-- name: list_ancestors_json :value
-- Ancestors of a tenant, root first, ending at its parent, as one JSON array text (the
-- documents of tenant_document_texts, put together as list_children_json puts them). A
-- tenant-scoped caller whose tenant is visible_root_id (NULL: a global caller, who sees
-- all) gets only those inside its own subtree: paths holding the segment
-- '/<visible_root_id>', the test of Principal.can_see_path (segments are fixed-length
-- uuids, so a substring is a whole segment).
SELECT coalesce('[' || string_agg(d.document, E', \n ' ORDER BY c.depth DESC) || ']', '[]')
       AS body
FROM tenant_closure c
JOIN tenant_document_texts d ON d.id = c.ancestor_id
WHERE c.descendant_id = :'tenant_id'
  AND c.depth > 0
  AND (:'visible_root_id'::uuid IS NULL
       OR strpos(d.ancestry_path, '/' || :'visible_root_id'::text) > 0);

-- name: plan_descendants_as_merges :exec
-- For the rest of the transaction, join only by merging inputs read in order: run before
-- stream_descendants_json, whose join with tenant_config_holders must never become a
-- nested loop (a rescan of the holders' range per listed tenant) or a hash and a sort
-- (nothing streamed before the whole list is read). On a small or badly estimated
-- range the planner would pick either. The settings end with the transaction.
SELECT set_config('enable_nestloop', 'off', true) AS nestloop,
       set_config('enable_hashjoin', 'off', true) AS hashjoin,
       set_config('enable_sort', 'off', true) AS sort;

-- name: stream_descendants_json :many
-- Descendants of the tenant whose path is :'path' in depth-first pre-order, one JSON
-- document per row (as tenant_document_texts has it), read through a cursor in chunks:
-- one range scan of the path index ("C" collation: every descendant's path lies between
-- '<path>/' and '<path>0', as '0' follows '/'), starting after the path :'after' when
-- set (a page's cursor). Down to absolute depth :'max_depth' (NULL: all levels);
-- archived ones only when :'include_archived'. A document is the parts its row carries
-- (migration 0029) around its path, depth and config (assemble_tenant_document,
-- migration 0052, inlined); the config is aggregated only for
-- the tenants found in tenant_config_holders (migration 0028), whose range is merged
-- with the list's in path order (after plan_descendants_as_merges, in the same
-- transaction), and masked as tenant_details masks it.
SELECT t.id,
       assemble_tenant_document(
           t.document_head, t.ancestry_path, t.depth,
           CASE WHEN h.tenant_id IS NULL THEN '{}'
                ELSE (SELECT jsonb_object_agg(ce.key, CASE WHEN ce.sensitive
                                                          THEN to_jsonb('***'::text)
                                                          ELSE ce.value END)
                      FROM config_entries ce
                      WHERE ce.tenant_id = t.id)::text
           END,
           t.document_tail) AS document
FROM tenants t
LEFT JOIN (
    -- the tenants of the same range that have entries
    SELECT ch.tenant_id, ch.ancestry_path
    FROM tenant_config_holders ch
    WHERE ch.ancestry_path > coalesce(:'after'::text, :'path'::text || '/')
      AND ch.ancestry_path < :'path'::text || '0'
) AS h ON h.ancestry_path = t.ancestry_path
WHERE t.ancestry_path > coalesce(:'after'::text, :'path'::text || '/')
  AND t.ancestry_path < :'path'::text || '0'
  AND t.depth <= coalesce(:'max_depth'::integer, 2147483647)
  AND (:'include_archived'::boolean OR t.status = 'active')
ORDER BY t.ancestry_path;

-- name: count_descendants_capped :value
-- How many tenants stream_descendants_json would list (same range and filters), counted
-- up to :'cap' only: whether a whole list is heavy, asked before rendering any of it
-- when a heavy list could not get a slot at once. Reads the path index and the heap
-- rows of at most :'cap' tenants (and the archived ones skipped), no config, no JSON.
SELECT count(*)::integer AS listed
FROM (
    SELECT 1
    FROM tenants t
    WHERE t.ancestry_path > coalesce(:'after'::text, :'path'::text || '/')
      AND t.ancestry_path < :'path'::text || '0'
      AND t.depth <= coalesce(:'max_depth'::integer, 2147483647)
      AND (:'include_archived'::boolean OR t.status = 'active')
    ORDER BY t.ancestry_path  -- the path index's order: without it a capped scan may
    LIMIT :'cap'::integer     -- be planned as a sequential one that stops early
) AS capped;

-- name: has_active_children :value
-- Whether a tenant has at least one active child (archive needs none).
SELECT EXISTS (
    SELECT 1 FROM tenants WHERE parent_id = :'tenant_id' AND status = 'active'
) AS present;

-- name: update_tenant_fields :exec
-- Set a tenant's name, slug and metadata.
UPDATE tenants
SET name = :'name', slug = :'slug', metadata = :'metadata', updated_at = now()
WHERE id = :'tenant_id';

-- name: archive_tenant :value
-- Soft-delete a tenant; returns the moment it was archived.
UPDATE tenants
SET status = 'archived', deleted_at = now(), updated_at = now()
WHERE id = :'tenant_id'
RETURNING deleted_at;

-- name: restore_tenant :exec
-- Bring an archived tenant back.
UPDATE tenants
SET status = 'active', deleted_at = NULL, updated_at = now()
WHERE id = :'tenant_id';

-- name: subtree_height :one
-- Levels below a tenant (0 for a leaf) and the size of its subtree, itself included.
SELECT max(depth) AS height, count(*) AS size
FROM tenant_closure
WHERE ancestor_id = :'tenant_id';

-- name: detach_subtree_closure :exec
-- Move step 1: unlink every node of tenant_id's subtree from every strict ancestor of
-- tenant_id.
DELETE FROM tenant_closure c
USING tenant_closure sub, tenant_closure anc
WHERE sub.ancestor_id = :'tenant_id'       -- each node of the moved subtree
  AND anc.descendant_id = :'tenant_id'     -- each ancestor being left behind
  AND anc.depth > 0
  AND c.ancestor_id = anc.ancestor_id
  AND c.descendant_id = sub.descendant_id;

-- name: attach_subtree_closure :exec
-- Move step 2: link every node of tenant_id's subtree to new_parent_id and its
-- ancestors.
INSERT INTO tenant_closure (ancestor_id, descendant_id, depth)
SELECT anc.ancestor_id, sub.descendant_id, anc.depth + sub.depth + 1
FROM tenant_closure anc
JOIN tenant_closure sub ON sub.ancestor_id = :'tenant_id'
WHERE anc.descendant_id = :'new_parent_id';

-- name: rewrite_subtree_paths :exec
-- Move step 3: swap the path prefix old_path for new_path and shift depths by depth_delta
-- across the subtree; the moved tenant itself gets new_parent_id (NULL: it becomes a
-- root).
UPDATE tenants t
SET ancestry_path = :'new_path'::text
                    || substr(t.ancestry_path, length(:'old_path'::text) + 1),
    depth = t.depth + :'depth_delta'::integer,
    parent_id = CASE WHEN t.id = :'tenant_id' THEN :'new_parent_id'::uuid
                     ELSE t.parent_id END,
    updated_at = now()
FROM tenant_closure c
WHERE c.ancestor_id = :'tenant_id'
  AND c.descendant_id = t.id;

-- name: list_root_tenants :many
-- One page of root tenants (no parent) in id order after cursor_id; status_filter is
-- active, archived or all. tenants_parent_id_idx serves "parent_id IS NULL" in id order.
SELECT td.id, td.parent_id, td.name, td.slug, td.ancestry_path, td.depth, td.metadata,
       td.isolation_strategy, td.region, td.status, td.deleted_at, td.created_at,
       td.updated_at, td.config
FROM tenant_details td
WHERE td.parent_id IS NULL
  AND td.id > coalesce(:'cursor_id'::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
  AND (:'status_filter'::text = 'all' OR td.status = :'status_filter'::text)
ORDER BY td.id
LIMIT :'page_size'::integer;

-- name: search_tenants :many
-- One page of tenants whose name or slug contains search_text, case-insensitively and
-- literally (strpos, so % and _ are no wildcards), in id order after cursor_id.
-- subtree_root_id keeps a subtree (NULL: everywhere), parent_id the children of one
-- parent (NULL: any), roots_only roots only; status_filter is active, archived or all. A
-- filtered walk of the primary key: it stops once the page is full, and reads the whole
-- table only when matches are rare.
SELECT td.id, td.parent_id, td.name, td.slug, td.ancestry_path, td.depth, td.metadata,
       td.isolation_strategy, td.region, td.status, td.deleted_at, td.created_at,
       td.updated_at, td.config
FROM tenant_details td
WHERE (strpos(lower(td.name), lower(:'search_text'::text)) > 0
       OR strpos(td.slug, lower(:'search_text'::text)) > 0)
  AND (:'subtree_root_id'::uuid IS NULL OR EXISTS (
          SELECT 1 FROM tenant_closure c
          WHERE c.ancestor_id = :'subtree_root_id'::uuid AND c.descendant_id = td.id))
  AND (:'parent_id'::uuid IS NULL OR td.parent_id = :'parent_id'::uuid)
  AND (NOT :'roots_only'::boolean OR td.parent_id IS NULL)
  AND td.id > coalesce(:'cursor_id'::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
  AND (:'status_filter'::text = 'all' OR td.status = :'status_filter'::text)
ORDER BY td.id
LIMIT :'page_size'::integer;

-- name: count_children :many
-- How many direct children each of parent_ids has (archived ones too when
-- include_archived); tenants without children have no row. One index range per parent.
SELECT parent_id, count(*)::integer AS children
FROM tenants
WHERE parent_id = ANY(:'parent_ids'::uuid[])
  AND (:'include_archived'::boolean OR status = 'active')
GROUP BY parent_id;
