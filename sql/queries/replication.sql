-- Streaming replication: positions for read routing and consistency tokens.

-- name: current_wal_position :value
-- The primary's WAL write position; read after a commit it is at or past the commit record.
SELECT pg_current_wal_lsn() AS position;

-- name: replica_state :one
-- Whether this server is a standby, and the WAL position it has replayed.
SELECT
    pg_is_in_recovery() AS standby,
    coalesce(pg_last_wal_replay_lsn(), pg_current_wal_lsn()) AS replayed;

-- name: replay_position :value
-- What this standby has replayed (0 when it is no standby: never trusted as current).
-- Read in its own statement before a read, so that read's snapshot sees at least this.
SELECT coalesce(pg_last_wal_replay_lsn(), '0/0'::pg_lsn) AS position;
