-- Bulk seeding for the benchmark suite (bench/seed.py). Not loaded by the service.
-- Seeding loads an empty, migrated database with COPY the way pg_restore does: the
-- indexes and foreign keys of the loaded tables are dropped first and rebuilt once at
-- the end (a sorted index build beats millions of random B-tree inserts and per-row
-- foreign-key triggers). The DDL comes from the catalog, so names and definitions stay
-- exactly those of the migrations.

-- name: list_bulk_load_constraints :many
-- Drop and re-create DDL for the primary, unique and foreign keys of (and into) the
-- seeded tables (table_names).
SELECT format('ALTER TABLE %I DROP CONSTRAINT %I', c.conrelid::regclass::text, c.conname)
           AS drop_ddl,
       format('ALTER TABLE %I ADD CONSTRAINT %I %s', c.conrelid::regclass::text, c.conname,
              pg_get_constraintdef(c.oid)) AS create_ddl
FROM pg_constraint c
WHERE (c.conrelid = ANY (:'table_names'::regclass[])
       OR c.confrelid = ANY (:'table_names'::regclass[]))
  AND c.contype IN ('p', 'u', 'f')
-- foreign keys last on create (they need the primary keys), first on drop
ORDER BY (c.contype = 'f'), c.conname;

-- name: list_bulk_load_indexes :many
-- Drop and re-create DDL for the plain indexes (not backing a constraint) of the seeded
-- tables (table_names).
SELECT format('DROP INDEX %I', i.indexrelid::regclass::text) AS drop_ddl,
       pg_get_indexdef(i.indexrelid) AS create_ddl
FROM pg_index i
WHERE i.indrelid = ANY (:'table_names'::regclass[])
  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
ORDER BY i.indexrelid::regclass::text;

-- name: count_tenants :value
-- How many tenants the database holds (seeding refuses a non-empty database).
SELECT count(*) FROM tenants;

-- name: count_seeded_rows :one
-- Rows per seeded table, for the seeding report.
SELECT (SELECT count(*) FROM tenants) AS tenants,
       (SELECT count(*) FROM tenant_closure) AS closure_rows,
       (SELECT count(*) FROM config_entries) AS config_entries,
       (SELECT count(*) FROM permission_policies) AS permission_policies;

-- name: vacuum_seeded_tables :exec
-- Planner statistics and the visibility map after the load (index-only scans need it),
-- for every table of the database: the load's triggers also filled the history and the
-- revision log (a row per tenant), and left to autovacuum those tables were vacuumed
-- and analysed about a minute after the seed, in the middle of whichever measurement
-- ran then (docs/performance.md, "Round 10").
VACUUM (ANALYZE);

-- name: checkpoint_after_seeding :exec
-- Write the seeded pages out now, so no checkpoint of the load runs during measurements.
CHECKPOINT;
