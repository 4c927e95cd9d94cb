-- The audit chain (migration 0025): one link per audit entry, written at commit by a
-- trigger; read here to verify it and to export it, trimmed only by retention.

-- name: get_audit_chain_head :one
-- The newest link's number and hash (none before the first entry), and the oldest link
-- still kept.
SELECT n.seq AS head_seq, n.entry_hash AS head_hash,
       (SELECT min(c.seq) FROM audit_chain c) AS first_seq
FROM (SELECT 1) AS one_row
LEFT JOIN LATERAL (SELECT c.seq, c.entry_hash
                   FROM audit_chain c
                   ORDER BY c.seq DESC
                   LIMIT 1) AS n ON true;

-- name: list_audit_chain_links :many
-- Links from_seq..to_seq in order (at most row_limit), each with its entry (NULL columns
-- when the entry is gone) and `changes` in jsonb's text form, the digested bytes.
WITH page AS (
    -- the links, by primary key
    SELECT c.seq, c.entry_id, c.changes_digest, c.prev_hash, c.entry_hash
    FROM audit_chain c
    WHERE c.seq >= :'from_seq'
      AND c.seq <= :'to_seq'
    ORDER BY c.seq
    LIMIT :'row_limit'
)
SELECT p.seq, p.entry_id, p.changes_digest, p.prev_hash, p.entry_hash,
       a.id, a.tenant_id, a.actor_id, a.actor_type, a.action, a.resource_type,
       a.resource_id, a.changes, a.changes::text AS changes_text, a.request_id,
       a.ip_address, a.created_at
FROM page p
-- one primary-key lookup per link (LIMIT keeps the planner from hashing the whole log)
LEFT JOIN LATERAL (SELECT x.id, x.tenant_id, x.actor_id, x.actor_type, x.action,
                          x.resource_type, x.resource_id, x.changes, x.request_id,
                          x.ip_address, x.created_at
                   FROM audit_logs x
                   WHERE x.id = p.entry_id
                   LIMIT 1) AS a ON true
ORDER BY p.seq;

-- name: get_audit_chain_link_hash :value
-- The hash of one link (NULL when it is not kept).
SELECT c.entry_hash
FROM audit_chain c
WHERE c.seq = :'seq';

-- name: list_audit_chain_checkpoints :many
-- What retention recorded about the links and entries it removed (only retention's
-- function writes these rows; an audit.purged entry alone proves nothing).
SELECT p.changes
FROM audit_purge_checkpoints p
ORDER BY p.recorded_at, p.id;

-- name: find_unrecorded_audit_checkpoint :one
-- The oldest audit.purged entry that retention did not record (no checkpoint with its id
-- and body), if any.
SELECT a.id
FROM audit_logs a
WHERE a.action = 'audit.purged'
  AND NOT EXISTS (SELECT 1
                  FROM audit_purge_checkpoints p
                  WHERE p.id = a.id
                    AND p.changes = a.changes)
ORDER BY a.id
LIMIT 1;

-- name: find_unchained_audit_entry :one
-- The oldest entry without a link (written with the chain trigger disabled), if any.
SELECT a.id, a.created_at
FROM audit_logs a
WHERE NOT EXISTS (SELECT 1 FROM audit_chain c WHERE c.entry_id = a.id)
ORDER BY a.id
LIMIT 1;

-- name: purge_audit_batch :one
-- One batch of retention, done by migration 0031's audit_purge_batch (the only way to
-- delete entries), which also writes its audit.purged entry (entry_id, by the actor
-- given): no row when nothing was old enough, else the checkpoint it recorded, how many
-- entries went and the newest of them.
SELECT b.purge_id, b.purge_changes, b.purged, b.purged_last_at, b.purged_last_id
FROM audit_purge_batch(:'cutoff'::timestamptz, :'after_at'::timestamptz, :'after_id'::uuid,
                       :'row_limit'::integer, :'entry_id'::uuid, :'actor_id'::text,
                       :'actor_type'::text, :'request_id'::text, :'ip_address'::text) AS b;
