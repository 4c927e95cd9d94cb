-- Bookkeeping for sql/migrations: which files ran, when, and with what content.

-- name: create_migrations_table :exec
-- Create the table recording applied migrations (run under the migration lock).
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: lock_migrations :exec
-- Take the session-level advisory lock that serializes concurrent starts.
SELECT pg_advisory_lock(:'lock_id'::bigint);

-- name: unlock_migrations :exec
-- Release the migration lock.
SELECT pg_advisory_unlock(:'lock_id'::bigint);

-- name: list_applied_migrations :many
-- Every applied migration in order.
SELECT version, name, checksum
FROM schema_migrations
ORDER BY version;

-- name: record_migration :exec
-- Record that a migration file ran.
INSERT INTO schema_migrations (version, name, checksum)
VALUES (:'version', :'name', :'checksum');

-- name: latest_migration_version :value
-- The newest applied migration, or NULL on a database never migrated (readiness probe).
SELECT max(version) AS version
FROM schema_migrations;

-- name: migrations_table_exists :value
-- Whether this database has been migrated at all.
SELECT to_regclass('schema_migrations') IS NOT NULL AS present;

-- name: list_migration_history :many
-- Every applied migration with its time, oldest first (`migrate --status`).
SELECT version, name, checksum, applied_at
FROM schema_migrations
ORDER BY version;
