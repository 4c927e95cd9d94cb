-- Tenants: a forest kept three ways that must always agree.
--   parent_id        the edge itself (the source of truth for one level);
--   tenant_closure   every (ancestor, descendant) pair, for indexed ancestor and
--                    descendant queries without recursion;
--   ancestry_path    '/root/.../self' with depth, for pre-order sorting, prefix range
--                    scans and cheap "is X inside Y's subtree" checks on a single row.
-- Moves rewrite the closure rows and paths of a whole subtree in one transaction.

-- UUIDv7 for ids made inside SQL (fan-out rows); PostgreSQL 15 has no uuidv7().
CREATE FUNCTION svc_uuid7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
    SELECT encode(
        set_bit(
            set_bit(
                overlay(uuid_send(gen_random_uuid())
                        PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                        FROM 1 FOR 6),
                52, 1),
            53, 1),
        'hex')::uuid
$$;

CREATE TABLE tenants (
    id                 uuid PRIMARY KEY,
    parent_id          uuid CONSTRAINT tenants_parent_fk REFERENCES tenants (id),
    name               text NOT NULL,
    slug               text NOT NULL,
    -- "C" collation: byte order, so ORDER BY ancestry_path is depth-first pre-order and
    -- the btree serves prefix ranges.
    ancestry_path      text COLLATE "C" NOT NULL,
    depth              integer NOT NULL,
    metadata           jsonb NOT NULL DEFAULT '{}'::jsonb,
    isolation_strategy text NOT NULL,
    region             text NOT NULL,
    status             text NOT NULL DEFAULT 'active',
    deleted_at         timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tenants_slug_key UNIQUE (slug),
    CONSTRAINT tenants_name_length CHECK (char_length(name) BETWEEN 1 AND 255),
    CONSTRAINT tenants_slug_format CHECK (slug ~ '^[a-z][a-z0-9_]{0,62}$'),
    CONSTRAINT tenants_isolation_strategy_check
        CHECK (isolation_strategy IN ('SHARED_RLS', 'SCHEMA_PER_TENANT', 'DB_PER_TENANT')),
    CONSTRAINT tenants_status_check CHECK (status IN ('active', 'archived')),
    CONSTRAINT tenants_archived_has_deleted_at CHECK ((status = 'archived') = (deleted_at IS NOT NULL)),
    CONSTRAINT tenants_root_depth CHECK ((parent_id IS NULL) = (depth = 0)),
    CONSTRAINT tenants_not_own_parent CHECK (parent_id <> id),
    CONSTRAINT tenants_metadata_object CHECK (jsonb_typeof(metadata) = 'object')
);

-- Children of a tenant in id order (children endpoint, HAS_CHILDREN check, list ?parent_id=).
CREATE INDEX tenants_parent_id_idx ON tenants (parent_id, id);
-- Descendants in pre-order by prefix range; also proves paths are unique.
CREATE UNIQUE INDEX tenants_ancestry_path_key ON tenants (ancestry_path);

CREATE TABLE tenant_closure (
    ancestor_id   uuid NOT NULL CONSTRAINT tenant_closure_ancestor_fk
                      REFERENCES tenants (id) ON DELETE CASCADE,
    descendant_id uuid NOT NULL CONSTRAINT tenant_closure_descendant_fk
                      REFERENCES tenants (id) ON DELETE CASCADE,
    depth         integer NOT NULL CONSTRAINT tenant_closure_depth_check CHECK (depth >= 0),
    -- Descendants of X: an index range on ancestor_id, ids in order, depth at hand.
    CONSTRAINT tenant_closure_pkey PRIMARY KEY (ancestor_id, descendant_id) INCLUDE (depth)
);
-- Ancestors of X: one index range on descendant_id, index-only.
CREATE INDEX tenant_closure_descendant_idx ON tenant_closure (descendant_id) INCLUDE (ancestor_id, depth);
