-- Bookkeeping for sql/migrations: which files ran, when, and with what content.

-- name: create_migrations_table
-- Create the table recording applied migrations (run under the migration lock).
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: lock_migrations
-- Take the session-level advisory lock that serializes concurrent starts.
SELECT pg_advisory_lock($1::bigint);

-- name: unlock_migrations
-- Release the migration lock.
SELECT pg_advisory_unlock($1::bigint);

-- name: list_applied_migrations
-- Every applied migration in order.
SELECT version, name, checksum
FROM schema_migrations
ORDER BY version;

-- name: record_migration
-- Record that a migration file ran.
INSERT INTO schema_migrations (version, name, checksum)
VALUES ($1, $2, $3);

-- name: latest_migration_version
-- The newest applied migration, or NULL on a database never migrated (readiness probe).
SELECT max(version) AS version
FROM schema_migrations;

-- name: migrations_table_exists
-- Whether this database has been migrated at all.
SELECT to_regclass('schema_migrations') IS NOT NULL AS present;
