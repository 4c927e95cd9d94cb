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
-- What retention recorded about the links and entries it removed (audit.purged entries).
SELECT a.changes
FROM audit_logs a
WHERE a.action = 'audit.purged'
ORDER BY a.id;

-- name: find_unchained_audit_entry :one
-- The oldest entry without a link (written with the chain trigger disabled), if any.
SELECT a.id, a.created_at
FROM audit_logs a
WHERE NOT EXISTS (SELECT 1 FROM audit_chain c WHERE c.entry_id = a.id)
ORDER BY a.id
LIMIT 1;

-- name: delete_expired_audit_entries :many
-- One batch of audit entries created before cutoff, after (after_at, after_id), with the
-- numbers of their links (the links stay: verification shows them as purged).
WITH doomed AS (
    -- the batch, oldest first, skipping rows another purge holds
    SELECT x.id
    FROM audit_logs x
    WHERE x.created_at < :'cutoff'
      AND x.created_at >= :'after_at'
      AND (x.created_at, x.id) > (:'after_at', :'after_id')
    ORDER BY x.created_at, x.id
    LIMIT :'row_limit'
    FOR UPDATE SKIP LOCKED
),
gone AS (
    -- the entries themselves (the guard lets retention delete before the cutoff)
    DELETE FROM audit_logs a
    WHERE a.id IN (SELECT id FROM doomed)
    RETURNING a.created_at, a.id
)
SELECT g.created_at AS at, g.id, c.seq
FROM gone g
LEFT JOIN audit_chain c ON c.entry_id = g.id;

-- name: find_audit_chain_anchor :one
-- The oldest link whose entry is still kept (keep_seq; NULL when none), the oldest link
-- kept at all (first_seq) and the newest (last_seq).
SELECT (SELECT c.seq
        FROM audit_chain c
        WHERE EXISTS (SELECT 1 FROM audit_logs a WHERE a.id = c.entry_id)
        ORDER BY c.seq
        LIMIT 1) AS keep_seq,
       (SELECT min(c.seq) FROM audit_chain c) AS first_seq,
       (SELECT max(c.seq) FROM audit_chain c) AS last_seq;

-- name: allow_audit_chain_cut :exec
-- Open the link guard for links up to through_seq, until this transaction ends.
SELECT set_config('tenant_service.audit_chain_cut', (:'through_seq')::bigint::text, true);

-- name: delete_audit_chain_links :value
-- Remove the links up to through_seq (every one of them has lost its entry); returns how
-- many went.
WITH gone AS (
    DELETE FROM audit_chain c
    WHERE c.seq <= :'through_seq'
    RETURNING 1
)
SELECT count(*) AS deleted
FROM gone;
