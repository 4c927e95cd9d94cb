-- Tenants and the hierarchy. Reads go through the tenant_details view (tenant plus its
-- own config); tree queries join tenant_closure; ordering uses ancestry_path ("C"
-- collation, so path order is depth-first pre-order).
--
-- Locking protocol (DESIGN.md section 3): a move locks the roots of the trees it touches
-- FOR UPDATE in id order; creates, archives and restores lock the same roots FOR SHARE
-- first. Paths are therefore never rewritten under a concurrent create or archive.

-- name: get_tenant
-- One tenant with its own config.
SELECT td.*
FROM tenant_details td
WHERE td.id = $1;

-- name: get_tenants_by_ids
-- Several tenants by id (any order; the caller orders them).
SELECT td.*
FROM tenant_details td
WHERE td.id = ANY($1::uuid[]);

-- name: get_tenant_by_slug
-- One tenant by its slug.
SELECT td.*
FROM tenant_details td
WHERE td.slug = $1;

-- name: get_tenant_node
-- The tree position of one tenant, without locks.
SELECT id, parent_id, ancestry_path, depth, status, isolation_strategy, region
FROM tenants
WHERE id = $1;

-- name: get_tenant_nodes
-- Tree positions of several tenants, without locks (to learn which roots to lock).
SELECT id, parent_id, ancestry_path, depth, status, isolation_strategy, region
FROM tenants
WHERE id = ANY($1::uuid[]);

-- name: lock_tree_roots_shared
-- Shared lock on tree roots in id order: a concurrent move of these trees waits.
SELECT id
FROM tenants
WHERE id = ANY($1::uuid[])
ORDER BY id
FOR SHARE;

-- name: lock_tree_roots_exclusive
-- Exclusive lock on tree roots in id order, taken by moves.
SELECT id
FROM tenants
WHERE id = ANY($1::uuid[])
ORDER BY id
FOR UPDATE;

-- name: lock_tenant_nodes_shared
-- Shared lock on tenants (parents of new children) in id order; returns their positions.
SELECT id, parent_id, ancestry_path, depth, status, isolation_strategy, region
FROM tenants
WHERE id = ANY($1::uuid[])
ORDER BY id
FOR SHARE;

-- name: lock_tenant_node
-- Lock one tenant for update; returns its position.
SELECT id, parent_id, ancestry_path, depth, status, isolation_strategy, region
FROM tenants
WHERE id = $1
FOR UPDATE;

-- name: find_existing_slugs
-- Which of these slugs are taken (archived tenants keep theirs until purged).
SELECT slug
FROM tenants
WHERE slug = ANY($1::text[]);

-- name: insert_tenants
-- Insert tenants from parallel arrays, one row per array index.
INSERT INTO tenants (id, parent_id, name, slug, ancestry_path, depth, metadata,
                     isolation_strategy, region)
SELECT n.id, n.parent_id, n.name, n.slug, n.ancestry_path, n.depth, n.metadata,
       n.isolation_strategy, n.region
FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::integer[],
            $7::jsonb[], $8::text[], $9::text[])
     AS n(id, parent_id, name, slug, ancestry_path, depth, metadata, isolation_strategy, region);

-- name: insert_closure_for_new_tenants
-- Closure rows for new tenants ($1 ids, $2 their parents; parents already linked).
INSERT INTO tenant_closure (ancestor_id, descendant_id, depth)
-- each new tenant is its own ancestor at distance 0
SELECT n.id, n.id, 0
FROM unnest($1::uuid[]) AS n(id)
UNION ALL
-- every ancestor of the parent (the parent included) is one level further from the child
SELECT c.ancestor_id, n.id, c.depth + 1
FROM unnest($1::uuid[], $2::uuid[]) AS n(id, parent_id)
JOIN tenant_closure c ON c.descendant_id = n.parent_id;

-- name: list_tenants
-- One page of all tenants in id order after the cursor; $2 is active, archived or all.
SELECT td.*
FROM tenant_details td
WHERE td.id > coalesce($1::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
  AND ($2::text = 'all' OR td.status = $2::text)
ORDER BY td.id
LIMIT $3;

-- name: list_subtree_tenants
-- One page of a subtree ($1 and its descendants) in id order, driven by the closure key.
SELECT td.*
FROM tenant_closure c
JOIN tenant_details td ON td.id = c.descendant_id
WHERE c.ancestor_id = $1
  AND c.descendant_id > coalesce($2::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
  AND ($3::text = 'all' OR td.status = $3::text)
ORDER BY c.descendant_id
LIMIT $4;

-- name: list_children
-- Direct children of a tenant in id order after the cursor ($4 NULL: no limit).
SELECT td.*
FROM tenant_details td
WHERE td.parent_id = $1
  AND td.id > coalesce($2::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
  AND ($3::text = 'all' OR td.status = $3::text)
ORDER BY td.id
LIMIT $4;

-- name: list_children_json
-- Direct children of a tenant in id order after the cursor, as list_children, rendered
-- as one JSON array text (rows of tenant_documents) of at most $4 tenants ($4 NULL:
-- all), plus next_cursor: the last listed id when another child follows, else NULL.
WITH fetched AS (
    -- the page and one child more, which only tells whether another page follows
    SELECT d
    FROM tenant_documents d
    WHERE d.parent_id = $1
      AND d.id > coalesce($2::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
      AND ($3::text = 'all' OR d.status = $3::text)
    ORDER BY d.id
    LIMIT $4::integer + 1
),
page AS (
    -- the page itself: the first $4 of them
    SELECT f.d
    FROM fetched f
    ORDER BY (f.d).id
    LIMIT $4::integer
)
SELECT coalesce((SELECT json_agg(p.d ORDER BY (p.d).id) FROM page p), '[]')::text AS body,
       CASE WHEN (SELECT count(*) FROM fetched) > $4::integer
            THEN (SELECT (p.d).id FROM page p ORDER BY (p.d).id DESC LIMIT 1)
       END AS next_cursor;

-- name: list_ancestors_json
-- Ancestors of a tenant, root first, ending at its parent, as one JSON array text (rows
-- of tenant_documents). A tenant-scoped caller $2 (NULL: a global caller, who sees all)
-- gets only those inside its own subtree: paths holding the segment '/<$2>', the test of
-- Principal.can_see_path (segments are fixed-length uuids, so a substring is a whole
-- segment).
SELECT coalesce(json_agg(d ORDER BY c.depth DESC), '[]')::text AS body
FROM tenant_closure c
JOIN tenant_documents d ON d.id = c.ancestor_id
WHERE c.descendant_id = $1
  AND c.depth > 0
  AND ($2::uuid IS NULL OR strpos(d.ancestry_path, '/' || $2::text) > 0);

-- name: list_descendants_json
-- Descendants of the tenant whose path is $1, in depth-first pre-order, as one JSON
-- array text (rows of tenant_documents): one range scan of the path index ("C"
-- collation: every descendant's path lies between '<path>/' and '<path>0', as '0'
-- follows '/'). Down to absolute depth $2 (NULL: all levels); archived ones only when $3.
SELECT coalesce(json_agg(d ORDER BY d.ancestry_path), '[]')::text AS body
FROM tenant_documents d
WHERE d.ancestry_path > $1::text || '/'
  AND d.ancestry_path < $1::text || '0'
  AND d.depth <= coalesce($2::integer, 2147483647)
  AND ($3::boolean OR d.status = 'active');

-- name: has_active_children
-- Whether a tenant has at least one active child (archive needs none).
SELECT EXISTS (
    SELECT 1 FROM tenants WHERE parent_id = $1 AND status = 'active'
) AS present;

-- name: update_tenant_fields
-- Set a tenant's name, slug and metadata.
UPDATE tenants
SET name = $2, slug = $3, metadata = $4, updated_at = now()
WHERE id = $1;

-- name: archive_tenant
-- Soft-delete a tenant; returns the moment it was archived.
UPDATE tenants
SET status = 'archived', deleted_at = now(), updated_at = now()
WHERE id = $1
RETURNING deleted_at;

-- name: restore_tenant
-- Bring an archived tenant back.
UPDATE tenants
SET status = 'active', deleted_at = NULL, updated_at = now()
WHERE id = $1;

-- name: subtree_height
-- Levels below a tenant (0 for a leaf) and the size of its subtree, itself included.
SELECT max(depth) AS height, count(*) AS size
FROM tenant_closure
WHERE ancestor_id = $1;

-- name: detach_subtree_closure
-- Move step 1: unlink every node of $1's subtree from every strict ancestor of $1.
DELETE FROM tenant_closure c
USING tenant_closure sub, tenant_closure anc
WHERE sub.ancestor_id = $1                 -- each node of the moved subtree
  AND anc.descendant_id = $1               -- each ancestor being left behind
  AND anc.depth > 0
  AND c.ancestor_id = anc.ancestor_id
  AND c.descendant_id = sub.descendant_id;

-- name: attach_subtree_closure
-- Move step 2: link every node of $1's subtree to the new parent $2 and its ancestors.
INSERT INTO tenant_closure (ancestor_id, descendant_id, depth)
SELECT anc.ancestor_id, sub.descendant_id, anc.depth + sub.depth + 1
FROM tenant_closure anc
JOIN tenant_closure sub ON sub.ancestor_id = $1
WHERE anc.descendant_id = $2;

-- name: rewrite_subtree_paths
-- Move step 3: swap the path prefix $3 for $2 and shift depths by $4 across the subtree;
-- the moved tenant itself gets its new parent $5.
UPDATE tenants t
SET ancestry_path = $2::text || substr(t.ancestry_path, length($3::text) + 1),
    depth = t.depth + $4::integer,
    parent_id = CASE WHEN t.id = $1 THEN $5::uuid ELSE t.parent_id END,
    updated_at = now()
FROM tenant_closure c
WHERE c.ancestor_id = $1
  AND c.descendant_id = t.id;

-- name: list_root_tenants
-- One page of root tenants (no parent) in id order after the cursor; $2 is active,
-- archived or all. tenants_parent_id_idx serves "parent_id IS NULL" in id order.
SELECT td.*
FROM tenant_details td
WHERE td.parent_id IS NULL
  AND td.id > coalesce($1::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
  AND ($2::text = 'all' OR td.status = $2::text)
ORDER BY td.id
LIMIT $3;

-- name: search_tenants
-- One page of tenants whose name or slug contains $1, case-insensitively and literally
-- (strpos, so % and _ are no wildcards), in id order after the cursor $5. $2 keeps a
-- subtree (NULL: everywhere), $3 the children of one parent (NULL: any), $4 roots only;
-- $6 is active, archived or all; $7 the limit. A filtered walk of the primary key: it
-- stops once the page is full, and reads the whole table only when matches are rare.
SELECT td.*
FROM tenant_details td
WHERE (strpos(lower(td.name), lower($1::text)) > 0 OR strpos(td.slug, lower($1::text)) > 0)
  AND ($2::uuid IS NULL OR EXISTS (
          SELECT 1 FROM tenant_closure c
          WHERE c.ancestor_id = $2::uuid AND c.descendant_id = td.id))
  AND ($3::uuid IS NULL OR td.parent_id = $3::uuid)
  AND (NOT $4::boolean OR td.parent_id IS NULL)
  AND td.id > coalesce($5::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
  AND ($6::text = 'all' OR td.status = $6::text)
ORDER BY td.id
LIMIT $7;

-- name: count_children
-- How many direct children each of the tenants $1 has (archived ones too when $2);
-- tenants without children have no row. One index range per parent.
SELECT parent_id, count(*)::integer AS children
FROM tenants
WHERE parent_id = ANY($1::uuid[])
  AND ($2::boolean OR status = 'active')
GROUP BY parent_id;
