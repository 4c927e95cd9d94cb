-- Bulk seeding for the benchmark suite (bench/seed.py). Not loaded by the service.
-- Seeding loads an empty, migrated database with COPY the way pg_restore does: the
-- indexes and foreign keys of the loaded tables are dropped first and rebuilt once at
-- the end (a sorted index build beats millions of random B-tree inserts and per-row
-- foreign-key triggers). The DDL comes from the catalog, so names and definitions stay
-- exactly those of the migrations.
-- The seeded rows are data that existed before the history began: the load does not
-- note them for the revision log (its revision triggers are off for the transaction),
-- and the history is started at its end the way migration 0044 started it for the data
-- that existed then (one open version of every row, valid from the newest revision).

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

-- name: list_bulk_load_revision_triggers :many
-- Disable and enable DDL for the enabled triggers of the seeded tables (table_names) that
-- note inserted rows for the revision log (note_tenant_changes, note_entry_changes): a
-- seed with them on makes one revision of every seeded row at commit, and the history
-- records a version of each through it (most of a 10,000,000-tenant seed's time).
SELECT format('ALTER TABLE %I DISABLE TRIGGER %I', t.tgrelid::regclass::text, t.tgname)
           AS disable_ddl,
       format('ALTER TABLE %I ENABLE TRIGGER %I', t.tgrelid::regclass::text, t.tgname)
           AS enable_ddl
FROM pg_trigger t
WHERE t.tgrelid = ANY (:'table_names'::regclass[])
  AND NOT t.tgisinternal
  AND t.tgenabled = 'O'
  AND t.tgfoid IN ('note_tenant_changes'::regproc, 'note_entry_changes'::regproc)
  AND t.tgtype & 4 <> 0  -- fires on INSERT (TRIGGER_TYPE_INSERT)
ORDER BY t.tgrelid::regclass::text, t.tgname;

-- name: start_seeded_history :exec
-- Start the history of the resolved view for the seeded rows as migration 0044 started it
-- for the rows that existed (with the expiry of 0046 and the keys of 0047): the horizon at
-- the newest revision (0 on a fresh database) from now, and one open version of every
-- tenant, config entry and permission policy valid from it. One statement, one snapshot
-- (each data-modifying WITH runs whether read or not).
WITH
horizon AS (
    UPDATE history_horizon h
    SET kept_from = (SELECT coalesce(max(r.revision), 0) FROM context_revisions r),
        kept_since = now()
    RETURNING h.kept_from
),
tenant_versions AS (
    INSERT INTO tenant_history (tenant_id, valid_from, parent_id, name, slug, ancestry_path,
                                depth, metadata, isolation_strategy, region, status,
                                deleted_at, created_at, updated_at)
    SELECT t.id, h.kept_from, t.parent_id, t.name, t.slug, t.ancestry_path, t.depth,
           t.metadata, t.isolation_strategy, t.region, t.status, t.deleted_at, t.created_at,
           t.updated_at
    FROM tenants t CROSS JOIN horizon h
),
config_versions AS (
    INSERT INTO config_history (tenant_id, key, valid_from, value, encrypted_value, locked,
                                sensitive, reveal_to_descendants, updated_at, expires_at)
    SELECT c.tenant_id, c.key, h.kept_from, c.value, c.encrypted_value, c.locked,
           c.sensitive, c.reveal_to_descendants, c.updated_at, c.expires_at
    FROM config_entries c CROSS JOIN horizon h
),
config_keys AS (
    INSERT INTO config_history_keys (tenant_id, key)
    SELECT c.tenant_id, c.key FROM config_entries c
),
permission_versions AS (
    INSERT INTO permission_history (tenant_id, key, valid_from, value, mode, expires_at)
    SELECT p.tenant_id, p.key, h.kept_from, p.value, p.mode, p.expires_at
    FROM permission_policies p CROSS JOIN horizon h
),
permission_keys AS (
    INSERT INTO permission_history_keys (tenant_id, key)
    SELECT p.tenant_id, p.key FROM permission_policies p
)
SELECT h.kept_from FROM horizon h;

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
-- for every table of the database: the history started at the load's end holds a row
-- per seeded row, and left to autovacuum such tables were vacuumed and analysed about a
-- minute after the seed, in the middle of whichever measurement ran then
-- (docs/performance.md, "Round 10").
VACUUM (ANALYZE);

-- name: checkpoint_after_seeding :exec
-- Write the seeded pages out now, so no checkpoint of the load runs during measurements.
CHECKPOINT;
