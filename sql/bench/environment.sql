-- Benchmark databases (bench/environment.py). Not loaded by the service.

-- name: database_ddl :one
-- Drop and create statements for database database_name, its name quoted as an identifier.
SELECT format('DROP DATABASE IF EXISTS %I WITH (FORCE)', :'database_name'::text)
           AS drop_ddl,
       format('CREATE DATABASE %I', :'database_name'::text) AS create_ddl;

-- name: server_version :value
-- The server's version line, for the machine description.
SELECT version();

-- name: shared_buffers_mb :value
-- The server's shared_buffers in megabytes.
SELECT setting::bigint * current_setting('block_size')::bigint / 1048576
FROM pg_settings
WHERE name = 'shared_buffers';

-- name: shared_buffers_ddl :value
-- The ALTER SYSTEM statement sizing shared_buffers (such as '512MB') at the next start
-- (ALTER SYSTEM takes no parameters, so the value is quoted by format()).
SELECT format('ALTER SYSTEM SET shared_buffers = %L', :'shared_buffers'::text);

-- name: vacuum_after_moves :exec
-- After the moves (whose largest rewrites 100,001 tenants' closure rows, paths and
-- history), vacuum and analyse now rather than leave it to autovacuum: left alone it
-- vacuumed tenant_closure, tenants and the history for about 40 s at 1,000,000 tenants,
-- during the measurements that follow (docs/performance.md, "Round 14").
VACUUM (ANALYZE);
