-- The cost curve to 10 million tenants (bench/curve.py): where a seeded database's space
-- goes, and how often its reads were served from shared buffers. Not loaded by the
-- service.

-- name: list_relation_sizes :many
-- The database's tables, largest first: estimated rows (from the last ANALYZE), the heap
-- with its TOAST, and all its indexes, in bytes.
SELECT c.relname AS table_name,
       greatest(c.reltuples, 0)::bigint AS estimated_rows,
       pg_table_size(c.oid) AS table_bytes,
       pg_indexes_size(c.oid) AS index_bytes
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r' AND n.nspname = current_schema()
ORDER BY pg_total_relation_size(c.oid) DESC, c.relname
LIMIT :'table_limit'::integer;

-- name: database_bytes :value
-- The whole database's size on disk, in bytes.
SELECT pg_database_size(current_database());

-- name: reset_database_statistics :exec
-- Start this database's block counters (and other statistics) from zero.
SELECT pg_stat_reset();

-- name: buffer_counters :one
-- Blocks of this database found in shared buffers and read from the operating system
-- (its page cache or the disk) since the counters were reset.
SELECT d.blks_hit, d.blks_read
FROM pg_stat_database d
WHERE d.datname = current_database();
